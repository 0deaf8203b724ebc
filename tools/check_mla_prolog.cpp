// `mlaops check mla_prolog_v2`: a MlaPrologV2WeightNz case (or one in a V3 cache mode) from the test-data builder
// (testkit/mla_prolog_test_data.h), the fast path mlaops::mla_prolog (plan, run; the plan
// printed with --explain) and the reference mla_prolog_ref, compared with the rules of
// tests/ops/mla_prolog/mla_prolog_harness.h.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "mlaops/mla_prolog.h"
#include "mlaops/status.h"
#include "reference/mla_prolog/mla_prolog_ref.h"
#include "testkit/compare.h"
#include "testkit/mla_prolog_test_data.h"
#include "tools/check_common.h"

namespace mlaops::tools::check {

int check_mla_prolog(const Options& o) {
  using testdata::HostTensor;
  testdata::MlaPrologCaseConfig cfg;
  const std::string sc = o.choice("scenario", {"no_quant", "partial", "partial_kvq", "full", "full_kvq"});
  cfg.scenario = sc == "no_quant"      ? MlaPrologScenario::kNoQuant
                 : sc == "partial"     ? MlaPrologScenario::kPartialQuantKvNoQuant
                 : sc == "partial_kvq" ? MlaPrologScenario::kPartialQuantKvQuant
                 : sc == "full"        ? MlaPrologScenario::kFullQuantKvNoQuant
                                       : MlaPrologScenario::kFullQuantKvQuant;
  if (o.has("tokens")) {
    if (o.has("batch") || o.has("seq")) bad("--tokens excludes --batch / --seq");
    cfg.bsh = false;
    cfg.B = o.i64("tokens", 1, 1 << 20);
    cfg.S = 1;
  } else {
    cfg.bsh = true;
    cfg.B = o.i64("batch", 1, 65536);
    cfg.S = o.i64("seq", 1, 1 << 20);
    if (cfg.B * cfg.S > (1 << 20)) bad("--batch * --seq exceeds 1048576 tokens");
  }
  cfg.N = o.i64("heads", 1, 1024);
  cfg.He = o.i64("hidden", 1, 65536);
  cfg.Hcq = o.i64("q-lora", 1, 65536);
  cfg.Hckv = o.i64("kv-lora", 1, 65536);
  cfg.D = o.i64("dim", 1, 65536);
  cfg.Dr = o.i64("rope-dim", 2, 65536);
  if (cfg.Dr % 2) bad("--rope-dim must be even");
  const std::string mode = o.choice("cache-mode", {"PA_BSND", "PA_NZ", "PA_BLK_BSND", "PA_BLK_NZ", "BSND", "TND"});
  for (int m = 0; m <= static_cast<int>(MlaPrologCacheMode::kTnd); ++m)
    if (mode == mla_prolog_cache_mode_name(static_cast<MlaPrologCacheMode>(m))) cfg.cache_mode = static_cast<MlaPrologCacheMode>(m);
  if (cfg.cache_mode == MlaPrologCacheMode::kBsnd && !cfg.bsh) bad("--cache-mode BSND needs --batch / --seq");
  if (cfg.cache_mode == MlaPrologCacheMode::kTnd && cfg.bsh) bad("--cache-mode TND needs --tokens");
  cfg.block_size = o.i64("block-size", 1, 1 << 20);
  // PA_BLK: whole blocks per batch (with --tokens every token is a batch of one, as actualSeqLen 1, 2, ..., T)
  const int64_t blocks = mla_prolog_cache_blocks(cfg.cache_mode)
                             ? cfg.batches() * ((cfg.S + cfg.block_size - 1) / cfg.block_size)
                             : (cfg.T() + cfg.block_size - 1) / cfg.block_size;
  cfg.block_num = o.set("block-num") ? o.i64("block-num", 0, 1 << 20) : blocks + 1;
  const std::string wf = o.choice("weight-form", {"nz", "nz2d", "nd"});
  cfg.weight_form = wf == "nz" ? testdata::WeightForm::kNz4d : wf == "nz2d" ? testdata::WeightForm::kNz2d : testdata::WeightForm::kNd;
  if (cfg.weight_form == testdata::WeightForm::kNd && cfg.scenario != MlaPrologScenario::kNoQuant)
    bad("--weight-form nd: int8 weights must be FRACTAL_NZ (use nz or nz2d)");
  cfg.smooth = o.flag("smooth");
  cfg.seed = static_cast<uint64_t>(o.i64("seed", 0));

  testdata::MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  const bool full_kvq = cfg.scenario == MlaPrologScenario::kFullQuantKvQuant;

  // inputs in aclnn prototype order (absent optional ones are skipped)
  const std::pair<const char*, const HostTensor*> inputs[] = {
      {"tokenX", &c.token_x},
      {"weightDq", &c.weight_dq},
      {"weightUqQr", &c.weight_uq_qr},
      {"weightUk", &c.weight_uk},
      {"weightDkvKr", &c.weight_dkv_kr},
      {"rmsnormGammaCq", &c.rmsnorm_gamma_cq},
      {"rmsnormGammaCkv", &c.rmsnorm_gamma_ckv},
      {"ropeSin", &c.rope_sin},
      {"ropeCos", &c.rope_cos},
      {"cacheIndex", &c.cache_index},
      {"kvCacheRef", &c.kv_cache},
      {"krCacheRef", &c.kr_cache},
      {"dequantScaleXOptional", &c.dequant_scale_x},
      {"dequantScaleWDqOptional", &c.dequant_scale_w_dq},
      {"dequantScaleWUqQrOptional", &c.dequant_scale_w_uq_qr},
      {"dequantScaleWDkvKrOptional", &c.dequant_scale_w_dkv_kr},
      {"quantScaleCkvOptional", &c.quant_scale_ckv},
      {"quantScaleCkrOptional", &c.quant_scale_ckr},
      {"smoothScalesCqOptional", &c.smooth_scales_cq},
      {"actualSeqLenOptional", &c.actual_seq_len},  // PA_BLK with --tokens (V3's argument)
  };
  int from_inputs = 0;
  if (!o.from_dir.empty())
    for (auto& [name, h] : inputs)
      if (h->present()) from_inputs += load_input(o.from_dir, name, storage_view(h->view));

  std::printf("mlaops check mla_prolog_v2: %s %s He=%lld Hcq=%lld N=%lld D=%lld Dr=%lld Hckv=%lld blocks=%lldx%lld %s "
              "weights=%s seed=%llu\n",
              mla_prolog_scenario_name(cfg.scenario),
              (cfg.bsh ? "B=" + std::to_string(cfg.B) + " S=" + std::to_string(cfg.S) : "T=" + std::to_string(cfg.B)).c_str(),
              static_cast<long long>(cfg.He), static_cast<long long>(cfg.Hcq), static_cast<long long>(cfg.N),
              static_cast<long long>(cfg.D), static_cast<long long>(cfg.Dr), static_cast<long long>(cfg.Hckv),
              static_cast<long long>(cfg.block_num), static_cast<long long>(cfg.block_size),
              mla_prolog_cache_mode_name(cfg.cache_mode), wf.c_str(), static_cast<unsigned long long>(cfg.seed));
  if (!o.from_dir.empty()) std::printf("inputs: %d read from %s, the rest generated\n", from_inputs, o.from_dir.c_str());

  // the reference on its own copies of the in/out tensors
  const HostTensor kv0 = c.kv_cache.clone(), kr0 = c.kr_cache.clone();
  HostTensor r_kv = c.kv_cache.clone(), r_kr = c.kr_cache.clone(), r_q = c.query_out.clone(),
             r_qr = c.query_rope_out.clone(), r_dqs = c.dequant_scale_q_nope_out.clone();
  MlaPrologParams rp = c.params();
  rp.kv_cache = r_kv.view;
  rp.kr_cache = r_kr.view;
  rp.query_out = r_q.view;
  rp.query_rope_out = r_qr.view;
  if (r_dqs.present()) rp.dequant_scale_q_nope_out = &r_dqs.view;
  if (mla_prolog_ref(rp) != kSuccess) bad(std::string("the reference rejects this case: ") + last_error_message());

  if (!o.save_dir.empty()) {
    make_dir(o.save_dir);
    for (auto& [name, h] : inputs)
      if (h->present()) save(o.save_dir, name, h == &c.kv_cache ? kv0.view : h == &c.kr_cache ? kr0.view : storage_view(h->view));
    save(o.save_dir, "queryOut", r_q.view);
    save(o.save_dir, "queryRopeOut", r_qr.view);
    if (full_kvq) save(o.save_dir, "dequantScaleQNopeOutOptional", r_dqs.view);
    save(o.save_dir, "kvCacheRef.out", r_kv.view);
    save(o.save_dir, "krCacheRef.out", r_kr.view);
    write_case_json(o, (std::filesystem::path(o.save_dir) / "case.json").string(),
                    o.has("tokens") ? std::vector<std::string>{"batch", "seq"} : std::vector<std::string>{});
    std::printf("saved: inputs, reference outputs and case.json in %s\n", o.save_dir.c_str());
  }

  // the implementation under test: the plan (phase 1, nothing written), then its run
  const MlaPrologParams p = c.params();
  OpPlan plan;
  const Status planned = mla_prolog_plan(p, &plan);
  explain_plan(o, planned, plan);
  NpyArray f_q, f_qr, f_dqs, f_kv, f_kr;
  TensorView g_q = c.query_out.view, g_qr = c.query_rope_out.view, g_dqs = c.dequant_scale_q_nope_out.view,
             g_kv = c.kv_cache.view, g_kr = c.kr_cache.view;
  if (!o.from_dir.empty()) {
    f_q = load_output(o.from_dir, "queryOut", r_q.view);
    f_qr = load_output(o.from_dir, "queryRopeOut", r_qr.view);
    f_kv = load_output(o.from_dir, "kvCacheRef.out", r_kv.view);
    f_kr = load_output(o.from_dir, "krCacheRef.out", r_kr.view);
    g_q = f_q.view, g_qr = f_qr.view, g_kv = f_kv.view, g_kr = f_kr.view;
    if (full_kvq) {
      f_dqs = load_output(o.from_dir, "dequantScaleQNopeOutOptional", r_dqs.view);
      g_dqs = f_dqs.view;
    }
  } else {
    std::vector<uint8_t> ws(static_cast<size_t>(plan.workspace_size()) + 1);
    const Status s = planned == kSuccess ? mla_prolog_run(plan, p, ws.data(), plan.workspace_size()) : planned;
    if (s != kSuccess) {
      std::printf("fast path (mlaops::mla_prolog) failed: %s\nresult: FAIL\n", last_error_message());
      return 1;
    }
  }
  print_fast_path_line(o, "mlaops::mla_prolog");

  // the rules of tests/ops/mla_prolog/mla_prolog_harness.h
  const bool quant_q = cfg.scenario != MlaPrologScenario::kNoQuant;
  const testing::Tolerance q_tol = testing::mla_prolog_query_tolerance(quant_q);
  std::vector<OutputCheck> checks;
  if (full_kvq) {
    checks.push_back({"queryOut", g_q, r_q.view, testing::int8_tolerance(0.02), Rule::kTolerance, nullptr});
    checks.push_back({"dequantScaleQNopeOutOptional", g_dqs, r_dqs.view, testing::fp32_tolerance(0.02),
                      Rule::kTolerance, nullptr});
  } else {
    checks.push_back({"queryOut", g_q, r_q.view, q_tol, Rule::kTolerance, nullptr});
  }
  checks.push_back({"queryRopeOut", g_qr, r_qr.view, q_tol, Rule::kTolerance, nullptr});
  auto cache_tol = [](const TensorView& v) {
    return v.dtype == DType::kInt8 ? testing::int8_tolerance(0.02) : testing::bf16_tolerance(2);
  };
  checks.push_back({"kvCacheRef (after)", g_kv, r_kv.view, cache_tol(r_kv.view), Rule::kTolerance, &kv0.view});
  checks.push_back({"krCacheRef (after)", g_kr, r_kr.view, cache_tol(r_kr.view), Rule::kTolerance, &kr0.view});
  return finish(checks);
}

}  // namespace mlaops::tools::check
