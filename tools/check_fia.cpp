// `mlaops check fia_v4`: a FusedInferAttentionScoreV4 case from the test-data builder
// (testkit/fia_test_data.h; optional pseShift / ALiBi and learnableSink), the fast path
// (plan + run; the plan printed with --explain) and the reference, compared with the rules of
// tests/ops/fia/fia_harness.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "reference/fia/fia_ref.h"
#include "testkit/compare.h"
#include "testkit/fia_test_data.h"
#include "tools/check_common.h"

namespace mlaops::tools::check {

int check_fia(const Options& o) {
  using fia_test::HostTensor;
  const std::string layout = o.raw("layout");
  FiaLayout in_l, out_l;
  if (!parse_fia_layout(layout, &in_l, &out_l)) bad("--layout: '" + layout + "' is not an inputLayout of FIA V4");
  const bool packed = fia_layout_is_packed(in_l);
  const int64_t B = o.i64("batch", 1, 65536);
  const int64_t N = o.i64("heads", 1, 4096);
  const int64_t KVN = o.i64("kv-heads", 1, 4096);
  if (N % KVN) bad("--heads must be a multiple of --kv-heads");
  std::vector<int64_t> q_lens = o.list("q-len", 0), kv_lens = o.list("kv-len", 0);
  auto per_batch = [&](std::vector<int64_t>& v, const char* name) {
    if (v.size() == 1) v.assign(static_cast<size_t>(B), v[0]);
    if (static_cast<int64_t>(v.size()) != B)
      bad(std::string("--") + name + ": " + std::to_string(v.size()) + " values for --batch " + std::to_string(B));
  };
  const bool q_list = q_lens.size() > 1, kv_list = kv_lens.size() > 1;
  per_batch(q_lens, "q-len");
  per_batch(kv_lens, "kv-len");
  const int64_t Sq = std::max<int64_t>(1, *std::max_element(q_lens.begin(), q_lens.end()));
  const int64_t Skv = *std::max_element(kv_lens.begin(), kv_lens.end());
  const int64_t D = o.i64("dim", 1, 65536);
  const int64_t Dv = o.set("value-dim") ? o.i64("value-dim", 1, 65536) : D;
  const int64_t Dr = o.i64("rope-dim", 0, 65536);
  const std::string dts = o.choice("dtype", {"bf16", "fp16"});
  const DType dtype = dts == "bf16" ? DType::kBFloat16 : DType::kFloat16;
  const int64_t sparse = o.i64("sparse-mode", 0, 4);
  const bool want_mask = o.flag("mask");
  if (want_mask && sparse > 1) bad("--mask applies to sparse modes 0 and 1 (2..4 always get the 2048x2048 template)");
  const int64_t block_size = o.i64("block-size", 0, 1 << 20);
  const std::string kvf = o.choice("kv-format", {"bnbsh", "bnnbsd", "nz"});
  const bool lse = o.flag("lse");
  const std::string pse = o.choice("pse", {"none", "random", "broadcast", "alibi"});
  const bool sink = o.flag("sink");
  const uint64_t seed = static_cast<uint64_t>(o.i64("seed", 0, UINT32_MAX));
  const double scale = o.set("scale") ? o.num("scale") : 1.0 / std::sqrt(static_cast<double>(D + Dr));
  if (static_cast<double>(B) * static_cast<double>(KVN) * static_cast<double>(Skv) * static_cast<double>(D + Dv + Dr) > 2e9 ||
      static_cast<double>(B) * static_cast<double>(N) * static_cast<double>(Sq) * static_cast<double>(D + Dr) > 2e9)
    bad("the case is too large for a check (over 2e9 elements in one tensor)");

  fia_test::FiaCanonical canon =
      fia_test::make_canonical(dtype, B, N, KVN, Sq, Skv, D, Dv, Dr, static_cast<uint32_t>(seed));
  if (q_list || packed) canon.act_q = q_lens;
  if (kv_list || block_size > 0 || packed) canon.act_kv = kv_lens;
  if (pse == "random" || pse == "broadcast") fia_test::set_random_pse(canon, pse == "broadcast", static_cast<uint32_t>(seed * 11 + 3));
  if (pse == "alibi") fia_test::set_alibi_pse(canon);
  if (sink) fia_test::set_random_sink(canon, static_cast<uint32_t>(seed * 17 + 1));

  fia_test::FiaRunConfig cfg;
  cfg.layout = layout;
  cfg.paged = block_size > 0;
  cfg.block_size = block_size > 0 ? block_size : 16;
  cfg.cache_rank = kvf == "bnbsh" ? 3 : kvf == "bnnbsd" ? 4 : 5;
  cfg.table_seed = static_cast<uint32_t>(seed * 13 + 5);
  cfg.lse = lse;
  cfg.scale = scale;
  cfg.sparse_mode = sparse;
  cfg.pre_tokens = o.i64("pre-tokens", INT32_MIN, INT64_MAX);
  cfg.next_tokens = o.i64("next-tokens", INT32_MIN, INT64_MAX);
  HostTensor mask;
  if (sparse >= 2) {
    mask = fia_test::template_mask_2048(DType::kBool, 2);
  } else if (sparse == 1 || want_mask) {
    std::mt19937 gen(static_cast<uint32_t>(seed * 31 + 7));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    mask = fia_test::make_mask3(DType::kBool, B, Sq, std::max<int64_t>(Skv, 1),
                                [&](int64_t, int64_t, int64_t) { return u(gen) < 0.3; });
  }
  if (mask.dtype != DType::kUndefined) cfg.mask = &mask;

  fia_test::FiaRunConfig ref_cfg = cfg;
  ref_cfg.out_dtype = DType::kFloat64;  // the harness compares with the unrounded float64 result
  std::unique_ptr<fia_test::FiaRun> ref = fia_test::build_fia_run(canon, ref_cfg);
  if (!ref) bad("--layout: cannot build the case");

  // inputs in aclnn prototype order
  struct In {
    const char* name;
    HostTensor* t;
    std::vector<int64_t>* ints;
    bool present;
  };
  auto inputs_of = [&](fia_test::FiaRun& r) {
    return std::vector<In>{
        {"query", &r.query, nullptr, true},
        {"key", &r.key, nullptr, true},
        {"value", &r.value, nullptr, true},
        {"pseShiftOptional", &r.pse, nullptr, r.params.pse_shift != nullptr},
        {"attenMaskOptional", &r.mask, nullptr, r.params.atten_mask != nullptr},
        {"actualSeqLengthsOptional", nullptr, &r.asl_q, r.params.actual_seq_lengths != nullptr},
        {"actualSeqLengthsKvOptional", nullptr, &r.asl_kv, r.params.actual_seq_lengths_kv != nullptr},
        {"blockTableOptional", &r.block_table, nullptr, r.params.block_table != nullptr},
        {"queryRopeOptional", &r.query_rope, nullptr, r.params.query_rope != nullptr},
        {"keyRopeOptional", &r.key_rope, nullptr, r.params.key_rope != nullptr},
        {"learnableSinkOptional", &r.sink, nullptr, r.params.learnable_sink != nullptr},
    };
  };
  int from_inputs = 0;
  if (!o.from_dir.empty())
    for (const In& in : inputs_of(*ref))
      if (in.present)
        from_inputs += in.t ? load_input(o.from_dir, in.name, in.t->view()) : load_int_array(o.from_dir, in.name, in.ints);

  std::string lens_txt = "Q_S=" + std::to_string(Sq) + " KV_S=" + std::to_string(Skv);
  if (!canon.act_q.empty() || !canon.act_kv.empty()) {
    auto join = [](const std::vector<int64_t>& v) {
      std::string s;
      for (int64_t x : v) {
        if (!s.empty()) s += ',';
        s += std::to_string(x);
      }
      return s;
    };
    lens_txt = "q-len " + join(q_lens) + " kv-len " + join(kv_lens);
  }
  std::printf("mlaops check fia_v4: %s %s B=%lld N=%lld KV_N=%lld %s D=%lld Dv=%lld rope=%lld sparse=%lld%s%s%s "
              "scale=%.6g %s lse=%s seed=%llu\n",
              layout.c_str(), dts.c_str(), static_cast<long long>(B), static_cast<long long>(N),
              static_cast<long long>(KVN), lens_txt.c_str(), static_cast<long long>(D), static_cast<long long>(Dv),
              static_cast<long long>(Dr), static_cast<long long>(sparse), cfg.mask ? " mask" : "",
              pse == "none" ? "" : (" pse=" + pse).c_str(), sink ? " sink" : "", scale,
              cfg.paged ? ("paged " + kvf + " block " + std::to_string(block_size)).c_str() : "contiguous",
              lse ? "yes" : "no", static_cast<unsigned long long>(seed));
  if (!o.from_dir.empty()) std::printf("inputs: %d read from %s, the rest generated\n", from_inputs, o.from_dir.c_str());

  if (fused_infer_attention_score_v4_ref(ref->params) != kSuccess)
    bad(std::string("the reference rejects this case: ") + last_error_message());

  if (!o.save_dir.empty()) {
    make_dir(o.save_dir);
    for (const In& in : inputs_of(*ref)) {
      if (!in.present) continue;
      if (in.t) {
        save(o.save_dir, in.name, in.t->view());
      } else {
        save_ints(o.save_dir, in.name, *in.ints);
      }
    }
    save(o.save_dir, "attentionOut", ref->out.view());
    if (lse) save(o.save_dir, "softmaxLse", ref->lse.view());
    write_case_json(o, (std::filesystem::path(o.save_dir) / "case.json").string(), {});
    std::printf("saved: inputs, reference outputs (attentionOut as float64) and case.json in %s\n", o.save_dir.c_str());
  }

  // the implementation under test
  TensorView g_out, g_lse;
  NpyArray f_out, f_lse;
  std::unique_ptr<fia_test::FiaRun> fast;
  TensorView like_out = ref->out.view();
  like_out.dtype = dtype;
  if (!o.from_dir.empty()) {
    f_out = load_output(o.from_dir, "attentionOut", like_out);
    g_out = f_out.view;
    if (lse) {
      f_lse = load_output(o.from_dir, "softmaxLse", ref->lse.view());
      g_lse = f_lse.view;
    }
  } else {
    fast = fia_test::build_fia_run(canon, cfg);
    OpPlan plan;
    Status s = fused_infer_attention_score_v4_plan(fast->params, &plan);
    explain_plan(o, s, plan);
    std::vector<uint64_t> ws(static_cast<size_t>(plan.workspace_size() / 8 + 1));
    if (s == kSuccess) s = fused_infer_attention_score_v4_run(plan, fast->params, ws.data(), plan.workspace_size());
    if (s != kSuccess) {
      std::printf("fast path (mlaops::fused_infer_attention_score_v4) failed: %s\nresult: FAIL\n",
                  last_error_message());
      return 1;
    }
    g_out = fast->out.view();
    if (lse) g_lse = fast->lse.view();
  }
  print_fast_path_line(o, "mlaops::fused_infer_attention_score_v4");

  // the rules of tests/ops/fia/fia_harness.h
  const testing::Tolerance out_tol = dtype == DType::kFloat16 ? testing::Tolerance{5e-3, 5e-3, 2e-3, 0.9999, 0, 0, 0, 0}
                                                              : testing::Tolerance{7.8e-3, 1e-2, 1.5e-2, 0.9995, 0, 0, 0, 0};
  std::vector<OutputCheck> checks;
  checks.push_back({"attentionOut", g_out, ref->out.view(), out_tol, Rule::kTolerance, nullptr, dtype});
  if (lse) checks.push_back({"softmaxLse", g_lse, ref->lse.view(), testing::fp32_tolerance(), Rule::kLse, nullptr});
  return finish(checks);
}

}  // namespace mlaops::tools::check
