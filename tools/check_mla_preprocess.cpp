// `mlaops check mla_preprocess`: a MlaPreprocess case from the test-data builder
// (testkit/mla_preprocess_test_data.h: the vendor test's data distributions), the fast
// path mlaops::mla_preprocess (plan, run; the plan printed with --explain) and the reference
// mla_preprocess_ref, compared with the rule of
// tests/ops/mla_preprocess/mla_preprocess_harness.h (the vendor's rule, docs/ops/mla_preprocess.md): float outputs and caches
// may have at most 0.1 % of their elements beyond max(0.003 |ref|, 0.003), int8 ones none beyond
// +-1; the cache elements one side wrote and the other left untouched must agree.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "mlaops/mla_preprocess.h"
#include "mlaops/status.h"
#include "reference/mla_preprocess/mla_preprocess_ref.h"
#include "testkit/compare.h"
#include "testkit/mla_preprocess_test_data.h"
#include "tools/check_common.h"

namespace mlaops::tools::check {

namespace {

// --cache-mode: 0..3 or the ATB names (any case).
MlaPreprocessCacheMode parse_cache_mode(const std::string& v) {
  std::string l;
  for (char c : v) l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (l == "0" || l == "kvcache") return MlaPreprocessCacheMode::kKvCache;
  if (l == "1" || l == "krope_ctkv") return MlaPreprocessCacheMode::kKropeCtkv;
  if (l == "2" || l == "int8_nzcache") return MlaPreprocessCacheMode::kInt8NzCache;
  if (l == "3" || l == "nzcache") return MlaPreprocessCacheMode::kNzCache;
  bad("--cache-mode: '" + v + "' is not one of 0 | 1 | 2 | 3 | kvcache | krope_ctkv | int8_nzcache | nzcache");
}

}  // namespace

int check_mla_preprocess(const Options& o) {
  using testdata::HostTensor;
  testdata::MlaPreprocessCaseConfig cfg;
  cfg.dtype = o.choice("dtype", {"bf16", "fp16"}) == "bf16" ? DType::kBFloat16 : DType::kFloat16;
  cfg.tokens = o.i64("tokens", 1, 1 << 20);
  cfg.heads = o.i64("heads", 1, 1024);
  cfg.hidden = o.i64("hidden", 1, 65536);
  cfg.Hcq = o.i64("q-lora", 1, 65536);
  cfg.Hckv = o.i64("kv-lora", 1, 65536);
  cfg.D = o.i64("dim", 1, 65536);
  cfg.Dr = o.i64("rope-dim", 2, 65536);
  if (cfg.Dr % 2) bad("--rope-dim must be even");
  cfg.cache_mode = parse_cache_mode(o.raw("cache-mode"));
  cfg.quant_mode = o.choice("quant-mode", {"0", "1"}) == "0" ? MlaPreprocessQuantMode::kPerTensorAsymm
                                                            : MlaPreprocessQuantMode::kPerTokenSymm;
  cfg.wuk_nz = o.choice("wuk-format", {"nd", "nz"}) == "nz";
  const std::string wf = o.choice("weight-form", {"nz", "nz_atb", "nz2d"});
  cfg.weight_form = wf == "nz"     ? testdata::MlaPreprocessWeightForm::kNz4d
                    : wf == "nz2d" ? testdata::MlaPreprocessWeightForm::kNz2d
                                   : testdata::MlaPreprocessWeightForm::kNzAtb;
  cfg.float_weights = o.flag("bf16-weights");
  cfg.epsilon = o.num("epsilon");
  if (!(cfg.epsilon >= 0)) bad("--epsilon must be >= 0");
  cfg.block_size = o.i64("block-size", 1, 1 << 20);
  cfg.block_num =
      o.set("block-num") ? o.i64("block-num", 1, 1 << 20) : (cfg.tokens + cfg.block_size - 1) / cfg.block_size + 1;
  cfg.seed = static_cast<uint64_t>(o.i64("seed", 0));

  // the layouts the builder packs (checked here: it does not check them itself)
  const MlaPreprocessCacheMode cm = cfg.cache_mode;
  const bool cm2 = cm == MlaPreprocessCacheMode::kInt8NzCache, rope_outputs = mla_preprocess_has_rope_outputs(cm);
  if (mla_preprocess_is_nz_cache(cm)) {
    const int64_t c0 = cm2 ? 32 : 16;
    if (cfg.Hckv % c0) bad("--kv-lora must be a multiple of " + std::to_string(c0) + " for the NZ cache of cacheMode " +
                           mla_preprocess_cache_mode_name(cm));
    if (cfg.Dr % 16) bad(std::string("--rope-dim must be a multiple of 16 for the NZ caches of cacheMode ") +
                         mla_preprocess_cache_mode_name(cm));
  }
  if (cfg.wuk_nz && (cfg.Hckv % 16 || cfg.D % 16)) bad("--wuk-format nz needs --kv-lora and --dim multiples of 16");
  const double T = static_cast<double>(cfg.tokens), N = static_cast<double>(cfg.heads);
  const double Hckv = static_cast<double>(cfg.Hckv), Dr = static_cast<double>(cfg.Dr);
  const double m1 = Hckv + Dr + static_cast<double>(cfg.Hcq), m2 = N * static_cast<double>(cfg.D + cfg.Dr);
  const double slots = static_cast<double>(cfg.block_num) * static_cast<double>(cfg.block_size);
  if (m1 * static_cast<double>(cfg.hidden) > 2e9 || m2 * static_cast<double>(cfg.Hcq) > 2e9 ||
      N * static_cast<double>(cfg.D) * Hckv > 2e9 || slots * (Hckv + Dr) > 2e9 || T * N * (Hckv + Dr) > 2e9 ||
      T * static_cast<double>(cfg.hidden) > 2e9)
    bad("the case is too large for a check (over 2e9 elements in one tensor)");

  testdata::MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);

  // inputs in aclnn prototype order (absent optional ones are skipped)
  const std::pair<const char*, const HostTensor*> inputs[] = {
      {"input", &c.input},
      {"gamma0", &c.gamma0},
      {"beta0", &c.beta0},
      {"quantScale0", &c.quant_scale0},
      {"quantOffset0", &c.quant_offset0},
      {"wdqkv", &c.wdqkv},
      {"deScale0", &c.de_scale0},
      {"bias0", &c.bias0},
      {"gamma1", &c.gamma1},
      {"beta1", &c.beta1},
      {"quantScale1", &c.quant_scale1},
      {"quantOffset1", &c.quant_offset1},
      {"wuq", &c.wuq},
      {"deScale1", &c.de_scale1},
      {"bias1", &c.bias1},
      {"gamma2", &c.gamma2},
      {"cos", &c.cos},
      {"sin", &c.sin},
      {"wuk", &c.wuk},
      {"kvCache", &c.kv_cache},
      {"kvCacheRope", &c.kv_cache_rope},
      {"slotMapping", &c.slot_mapping},
      {"ctkvScale", &c.ctkv_scale},
      {"qNopeScale", &c.q_nope_scale},
  };
  int from_inputs = 0;
  if (!o.from_dir.empty())
    for (auto& [name, h] : inputs)
      if (h->present()) from_inputs += load_input(o.from_dir, name, storage_view(h->view));

  std::printf("mlaops check mla_preprocess: %s T=%lld N=%lld He=%lld Hcq=%lld Hckv=%lld D=%lld Dr=%lld %s %s %s "
              "wuk=%s weights=%s blocks=%lldx%lld eps=%g seed=%llu\n",
              cfg.dtype == DType::kBFloat16 ? "bf16" : "fp16", static_cast<long long>(cfg.tokens),
              static_cast<long long>(cfg.heads), static_cast<long long>(cfg.hidden), static_cast<long long>(cfg.Hcq),
              static_cast<long long>(cfg.Hckv), static_cast<long long>(cfg.D), static_cast<long long>(cfg.Dr),
              mla_preprocess_cache_mode_name(cm),
              cfg.float_weights ? "doRmsNorm=false" : mla_preprocess_quant_mode_name(cfg.quant_mode),
              cfg.float_weights ? "dtype-weights" : "int8-weights", cfg.wuk_nz ? "nz" : "nd", wf.c_str(),
              static_cast<long long>(cfg.block_num), static_cast<long long>(cfg.block_size), cfg.epsilon,
              static_cast<unsigned long long>(cfg.seed));
  if (!o.from_dir.empty()) std::printf("inputs: %d read from %s, the rest generated\n", from_inputs, o.from_dir.c_str());

  // the reference on its own copies of the in/out tensors
  const HostTensor kv0 = c.kv_cache.clone(), kr0 = c.kv_cache_rope.clone();
  HostTensor r_kv = c.kv_cache.clone(), r_kr = c.kv_cache_rope.clone(), r_q = c.q_out.clone(),
             r_qr = c.q_rope_out.clone();
  MlaPreprocessParams rp = c.params();
  rp.kv_cache = r_kv.view;
  rp.kv_cache_out = r_kv.view;
  rp.q_out = r_q.view;
  if (rope_outputs) {
    rp.kv_cache_rope = &r_kr.view;
    rp.kr_cache_out = &r_kr.view;
    rp.q_rope_out = &r_qr.view;
  }
  if (mla_preprocess_ref(rp) != kSuccess) bad(std::string("the reference rejects this case: ") + last_error_message());

  if (!o.save_dir.empty()) {
    make_dir(o.save_dir);
    for (auto& [name, h] : inputs)
      if (h->present())
        save(o.save_dir, name, h == &c.kv_cache ? kv0.view : h == &c.kv_cache_rope ? kr0.view : storage_view(h->view));
    save(o.save_dir, "qOut", r_q.view);
    if (rope_outputs) save(o.save_dir, "qRopeOut", r_qr.view);
    save(o.save_dir, "kvCache.out", r_kv.view);
    if (rope_outputs) save(o.save_dir, "kvCacheRope.out", r_kr.view);
    write_case_json(o, (std::filesystem::path(o.save_dir) / "case.json").string(), {});
    std::printf("saved: inputs, reference outputs and case.json in %s\n", o.save_dir.c_str());
  }

  // the implementation under test: the plan (phase 1, nothing written), then its run
  const MlaPreprocessParams p = c.params();
  OpPlan plan;
  const Status planned = mla_preprocess_plan(p, &plan);
  explain_plan(o, planned, plan);
  NpyArray f_q, f_qr, f_kv, f_kr;
  TensorView g_q = c.q_out.view, g_qr = c.q_rope_out.view, g_kv = c.kv_cache.view, g_kr = c.kv_cache_rope.view;
  if (!o.from_dir.empty()) {
    f_q = load_output(o.from_dir, "qOut", r_q.view);
    f_kv = load_output(o.from_dir, "kvCache.out", r_kv.view);
    g_q = f_q.view, g_kv = f_kv.view;
    if (rope_outputs) {
      f_qr = load_output(o.from_dir, "qRopeOut", r_qr.view);
      f_kr = load_output(o.from_dir, "kvCacheRope.out", r_kr.view);
      g_qr = f_qr.view, g_kr = f_kr.view;
    }
  } else {
    std::vector<uint8_t> ws(static_cast<size_t>(plan.workspace_size()) + 1);
    const Status s = planned == kSuccess ? mla_preprocess_run(plan, p, ws.data(), plan.workspace_size()) : planned;
    if (s != kSuccess) {
      std::printf("fast path (mlaops::mla_preprocess) failed: %s\nresult: FAIL\n", last_error_message());
      return 1;
    }
  }
  print_fast_path_line(o, "mlaops::mla_preprocess");

  // the rules of tests/ops/mla_preprocess/mla_preprocess_harness.h: the vendor's; float outputs of
  // the dtype-weights path at mla_preprocess_dtype_weights_tolerance
  auto out = [&](const char* name, const TensorView& got, const TensorView& ref, const TensorView* initial) {
    if (cfg.float_weights && ref.dtype != DType::kInt8)
      return OutputCheck{name, got, ref, testing::mla_preprocess_dtype_weights_tolerance(ref.dtype), Rule::kTolerance,
                         initial};
    return OutputCheck{name, got, ref, testing::Tolerance{}, Rule::kVendor, initial};
  };
  std::vector<OutputCheck> checks;
  checks.push_back(out("qOut", g_q, r_q.view, nullptr));
  if (rope_outputs) checks.push_back(out("qRopeOut", g_qr, r_qr.view, nullptr));
  checks.push_back(out("kvCache (after)", g_kv, r_kv.view, &kv0.view));
  if (rope_outputs) checks.push_back(out("kvCacheRope (after)", g_kr, r_kr.view, &kr0.view));
  return finish(checks);
}

}  // namespace mlaops::tools::check
