// The MlaPrologV2 / V3 and MlaPreprocess rows of the performance coverage (coverage.h), and the
// per-call floor cases of the three operators.
//
//   * MlaPrologV2 / V3 (docs/ops/mla_prolog.md "Scenarios", "Cache modes"): every quant scenario
//     (NO_QUANT .. FULL_QUANT_KV_QUANT_PER_TILE) in cache mode PA_BSND, the W8A8 deployment
//     FULL_QUANT_KV_QUANT in PA_NZ, and the other cache modes (PA_NZ, PA_BLK_BSND, PA_BLK_NZ,
//     BSND, TND) in NO_QUANT; N 32, T 1 and 1024, DeepSeek-V3 sizes.
//   * MlaPreprocess (docs/ops/mla_preprocess.md): cache modes 0..3 (BF16 input, per-tensor
//     quant), per-token quant, FP16 input and the unquantised path; N 32, T 1 and 1024.
//   * the vendor shapes the operator tests replay (test_mla_prolog_aclnn's matrix of N x He,
//     test_mla_preprocess_aclnn's cases; testkit): T 1..8, where the per-call floor dominates.
// The calls are built by the test kit (testkit/mla_prolog_test_data.h,
// testkit/mla_preprocess_test_data.h: valid calls of every scenario); the weights rotate over
// copies of >= ctx.pool_bytes (WeightPool, bench_util.h) so that every call streams them from
// DRAM. Bytes: the weights, the input tokens, the outputs and the cache rows written; work: 2 T
// params per GEMM, on the int8 units for INT8 weights.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/coverage.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/plan.h"
#include "testkit/mla_preprocess_test_data.h"
#include "testkit/mla_prolog_test_data.h"

namespace bench {
namespace {

using mlaops::DType;
using mlaops::HostTensor;
using PCM = mlaops::MlaPrologCacheMode;
using Sc = mlaops::MlaPrologScenario;
using CM = mlaops::MlaPreprocessCacheMode;
using QM = mlaops::MlaPreprocessQuantMode;

double tensor_bytes(const HostTensor& h) { return static_cast<double>(h.bytes.size()); }

// 2 T rows x cols of a weight, to the int8 or the bf16 count by its dtype.
void add_gemm(Row& r, const HostTensor& w, double T, double params) {
  (w.view.dtype == DType::kInt8 ? r.ops_int8 : r.flops_bf16) += 2.0 * T * params;
}

// Times `call(workspace, bytes)` with the weights `ws` rotated over copies of >= ctx.pool_bytes
// (WeightPool, bench_util.h): each call first points views[i] (the call's views of ws[i]) at the
// next copy. T >= 128: half the reps, at least 3.
template <class WsSize, class Call>
void time_weights(RunContext& ctx, Row& r, double T, const std::vector<const HostTensor*>& ws,
                  const std::vector<mlaops::TensorView*>& views, WsSize ws_size, Call call) {
  std::vector<Buf> bufs;  // the bytes copied out of the test kit's tensors
  for (const HostTensor* h : ws) bufs.push_back(Buf{h->bytes, h->view});
  std::vector<const Buf*> ptrs;
  for (const Buf& b : bufs) ptrs.push_back(&b);
  WeightPool pool(ptrs, ctx.pool_bytes);
  const int reps = T >= 128 ? std::max(3, ctx.reps / 2) : ctx.reps;
  time_rotated(r, pool, reps, ws_size,
               [&](uint8_t* base) {
                 for (size_t i = 0; i < views.size(); ++i) views[i]->data = base + pool.off[i];
               },
               call);
}

// ---- MlaPrologV2 / V3 ----

mlaops::testdata::MlaPrologCaseConfig prolog_cfg(Size size, Sc sc, PCM mode, int64_t N, int64_t T) {
  mlaops::testdata::MlaPrologCaseConfig c;
  c.scenario = sc;
  c.cache_mode = mode;
  c.N = N;
  if (size == Size::kTiny) {
    c.He = 256, c.Hcq = 64, c.Hckv = 128, c.D = 16, c.Dr = 16;  // Hckv: per-tile KV quant needs a multiple of 128
  } else {
    c.He = 7168;
    mlaops::testdata::set_vendor_sizes(c);
  }
  c.bsh = mode != PCM::kTnd;
  c.B = c.bsh ? 1 : T, c.S = c.bsh ? T : 1;
  c.block_size = 128;
  c.block_num = (T + 127) / 128 + 1;
  c.smooth = sc == Sc::kPartialQuantKvQuant;
  c.seed = 5;
  return c;
}

Row prolog_row(RunContext& ctx, const mlaops::testdata::MlaPrologCaseConfig& cfg) {
  const mlaops::testdata::MlaPrologCase mc = mlaops::testdata::make_mla_prolog_case(cfg);
  mlaops::MlaPrologParams p = mc.params();
  Row r;
  mlaops::OpPlan plan;
  if (!plan_path(r, mlaops::mla_prolog_plan(p, &plan), plan)) return r;
  const double T = static_cast<double>(cfg.T());
  time_weights(
      ctx, r, T, {&mc.weight_dq, &mc.weight_uq_qr, &mc.weight_dkv_kr, &mc.weight_uk},
      {&p.weight_dq, &p.weight_uq_qr, &p.weight_dkv_kr, &p.weight_uk},
      [&](uint64_t* bytes) { return mlaops::mla_prolog_workspace_size(p, bytes); },
      [&](void* ws, uint64_t bytes) { return mlaops::mla_prolog(p, ws, bytes); });
  const double He = static_cast<double>(cfg.He), Hcq = static_cast<double>(cfg.Hcq), Hckv = static_cast<double>(cfg.Hckv);
  const double N = static_cast<double>(cfg.N), D = static_cast<double>(cfg.D), Dr = static_cast<double>(cfg.Dr);
  add_gemm(r, mc.weight_dq, T, He * Hcq);
  add_gemm(r, mc.weight_uq_qr, T, Hcq * N * (D + Dr));
  add_gemm(r, mc.weight_dkv_kr, T, He * (Hckv + Dr));
  add_gemm(r, mc.weight_uk, T, N * D * Hckv);
  const double kv_row = tensor_bytes(mc.kv_cache) / static_cast<double>(mc.kv_cache.numel()) * static_cast<double>(cfg.kv_row());
  const double kr_row = mc.kr_cache.numel() > 0 ? Dr * tensor_bytes(mc.kr_cache) / static_cast<double>(mc.kr_cache.numel()) : 0;
  r.bytes = tensor_bytes(mc.weight_dq) + tensor_bytes(mc.weight_uq_qr) + tensor_bytes(mc.weight_dkv_kr) +
            tensor_bytes(mc.weight_uk) + tensor_bytes(mc.token_x) + tensor_bytes(mc.query_out) +
            tensor_bytes(mc.query_rope_out) + T * (kv_row + kr_row);
  return r;
}

// ---- MlaPreprocess ----

mlaops::testdata::MlaPreprocessCaseConfig preprocess_cfg(Size size, DType dt, CM cm, QM qm, bool float_w, int64_t N,
                                                         int64_t T) {
  mlaops::testdata::MlaPreprocessCaseConfig c;
  c.dtype = dt;
  c.tokens = T;
  c.heads = N;
  if (size == Size::kTiny) {
    c.hidden = 256, c.Hckv = 64, c.Dr = 16, c.Hcq = 64, c.D = 16;
  } else {
    c.hidden = 7168, c.Hckv = 512, c.Dr = 64, c.Hcq = 1536, c.D = 128;
  }
  c.cache_mode = cm;
  c.quant_mode = qm;
  c.float_weights = float_w;
  c.block_size = 128;
  c.block_num = (T + 127) / 128 + 1;
  c.seed = 9;
  return c;
}

Row preprocess_row(RunContext& ctx, const mlaops::testdata::MlaPreprocessCaseConfig& cfg) {
  const mlaops::testdata::MlaPreprocessCase mc = mlaops::testdata::make_mla_preprocess_case(cfg);
  mlaops::MlaPreprocessParams p = mc.params();
  Row r;
  mlaops::OpPlan plan;
  if (!plan_path(r, mlaops::mla_preprocess_plan(p, &plan), plan)) return r;
  const double T = static_cast<double>(cfg.tokens);
  time_weights(
      ctx, r, T, {&mc.wdqkv, &mc.wuq, &mc.wuk}, {&p.wdqkv, &p.wuq, &p.wuk},
      [&](uint64_t* bytes) { return mlaops::mla_preprocess_workspace_size(p, bytes); },
      [&](void* ws, uint64_t bytes) { return mlaops::mla_preprocess(p, ws, bytes); });
  const double He = static_cast<double>(cfg.hidden), Hcq = static_cast<double>(cfg.Hcq);
  const double Hckv = static_cast<double>(cfg.Hckv), N = static_cast<double>(cfg.heads);
  const double D = static_cast<double>(cfg.D), Dr = static_cast<double>(cfg.Dr);
  add_gemm(r, mc.wdqkv, T, He * (Hckv + Dr + Hcq));
  add_gemm(r, mc.wuq, T, Hcq * N * (D + Dr));
  add_gemm(r, mc.wuk, T, N * D * Hckv);
  const double cache_row = (Hckv + Dr) * static_cast<double>(mlaops::dtype_size(mc.kv_cache.view.dtype));
  r.bytes = tensor_bytes(mc.wdqkv) + tensor_bytes(mc.wuq) + tensor_bytes(mc.wuk) + tensor_bytes(mc.input) +
            tensor_bytes(mc.q_out) + tensor_bytes(mc.q_rope_out) + T * cache_row;
  return r;
}

std::vector<int64_t> cov_tokens(Size size) { return size == Size::kTiny ? std::vector<int64_t>{1, 16} : std::vector<int64_t>{1, 1024}; }
int64_t cov_heads(Size size) { return size == Size::kTiny ? 4 : 32; }

CoverageEntry entry(const std::string& row, const std::string& feature, const std::string& id, const char* op,
                    const std::string& label, int threads, std::function<Row(RunContext&)> run) {
  CoverageEntry e;
  e.row = row;
  e.feature = feature;
  e.c.id = id;
  e.c.op = op;
  e.c.label = label;
  e.c.threads = threads;
  e.c.run = std::move(run);
  return e;
}

}  // namespace

std::vector<CoverageEntry> coverage_mla_prolog(Size size, int threads) {
  struct Item {
    Sc sc;
    PCM mode;
    const char* what;
  };
  const Item items[] = {
      {Sc::kNoQuant, PCM::kPaBsnd, "scenario"},
      {Sc::kPartialQuantKvNoQuant, PCM::kPaBsnd, "scenario"},
      {Sc::kPartialQuantKvQuant, PCM::kPaBsnd, "scenario"},
      {Sc::kFullQuantKvNoQuant, PCM::kPaBsnd, "scenario"},
      {Sc::kFullQuantKvQuant, PCM::kPaBsnd, "scenario"},
      {Sc::kPartialQuantKvQuantPerTile, PCM::kPaBsnd, "scenario"},
      {Sc::kFullQuantKvQuantPerTile, PCM::kPaBsnd, "scenario"},
      {Sc::kFullQuantKvQuant, PCM::kPaNz, "scenario + cache mode (the W8A8 deployment)"},
      {Sc::kNoQuant, PCM::kPaNz, "cache mode"},
      {Sc::kNoQuant, PCM::kPaBlkBsnd, "cache mode"},
      {Sc::kNoQuant, PCM::kPaBlkNz, "cache mode"},
      {Sc::kNoQuant, PCM::kBsnd, "cache mode"},
      {Sc::kNoQuant, PCM::kTnd, "cache mode"},
  };
  std::vector<CoverageEntry> out;
  const int64_t N = cov_heads(size);
  for (const Item& it : items)
    for (int64_t T : cov_tokens(size)) {
      const std::string row = std::string(mlaops::mla_prolog_scenario_name(it.sc)) + " / " +
                              mlaops::mla_prolog_cache_mode_name(it.mode);
      char id[128], label[160];
      std::snprintf(id, sizeof id, "cov.mla_prolog.%s.%s.N%lld.T%lld.t%d", mlaops::mla_prolog_scenario_name(it.sc),
                    mlaops::mla_prolog_cache_mode_name(it.mode), (long long)N, (long long)T, threads);
      std::snprintf(label, sizeof label, "MlaProlog %s N=%lld T=%lld", row.c_str(), (long long)N, (long long)T);
      const mlaops::testdata::MlaPrologCaseConfig cfg = prolog_cfg(size, it.sc, it.mode, N, T);
      out.push_back(entry(row, it.what, id, kCovProlog, label, threads,
                          [cfg](RunContext& ctx) { return prolog_row(ctx, cfg); }));
    }
  return out;
}

std::vector<CoverageEntry> coverage_mla_preprocess(Size size, int threads) {
  struct Item {
    DType dt;
    CM cm;
    QM qm;
    bool float_w;
    const char* what;
  };
  const Item items[] = {
      {DType::kBFloat16, CM::kKvCache, QM::kPerTensorAsymm, false, "cache mode"},
      {DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, false, "cache mode"},
      {DType::kBFloat16, CM::kInt8NzCache, QM::kPerTensorAsymm, false, "cache mode"},
      {DType::kBFloat16, CM::kNzCache, QM::kPerTensorAsymm, false, "cache mode"},
      {DType::kBFloat16, CM::kKropeCtkv, QM::kPerTokenSymm, false, "quant mode"},
      {DType::kFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, false, "input dtype"},
      {DType::kBFloat16, CM::kKvCache, QM::kPerTensorAsymm, true, "unquantised weights"},
  };
  std::vector<CoverageEntry> out;
  const int64_t N = cov_heads(size);
  for (const Item& it : items)
    for (int64_t T : cov_tokens(size)) {
      const std::string row = std::string(it.dt == DType::kFloat16 ? "FP16" : "BF16") + " / " +
                              mlaops::mla_preprocess_cache_mode_name(it.cm) + " / " +
                              (it.float_w ? "unquantised" : mlaops::mla_preprocess_quant_mode_name(it.qm));
      char id[160], label[200];
      std::snprintf(id, sizeof id, "cov.mla_preprocess.%s.%s.%s.N%lld.T%lld.t%d", it.dt == DType::kFloat16 ? "fp16" : "bf16",
                    mlaops::mla_preprocess_cache_mode_name(it.cm),
                    it.float_w ? "FLOAT" : mlaops::mla_preprocess_quant_mode_name(it.qm), (long long)N, (long long)T,
                    threads);
      std::snprintf(label, sizeof label, "MlaPreprocess %s N=%lld T=%lld", row.c_str(), (long long)N, (long long)T);
      const auto cfg = preprocess_cfg(size, it.dt, it.cm, it.qm, it.float_w, N, T);
      out.push_back(entry(row, it.what, id, kCovPreprocess, label, threads,
                          [cfg](RunContext& ctx) { return preprocess_row(ctx, cfg); }));
    }
  return out;
}

std::vector<CoverageEntry> coverage_mla_vendor(Size size, int threads) {
  std::vector<CoverageEntry> out;
  // --tiny: the case with the fewest heads of each list (a full-size build per case); the full
  // run: all of them
  auto untimed = [&](CoverageEntry e) {
    e.note = "vendor sizes: timed in the full run, not in a --tiny run";
    e.c.run = nullptr;
    e.c.id += ".note";
    out.push_back(std::move(e));
  };
  const std::vector<mlaops::testdata::MlaPrologVendorCase> pv = mlaops::testdata::mla_prolog_vendor_cases();
  size_t tiny_pick = 0;
  for (size_t i = 0; i < pv.size(); ++i) tiny_pick = pv[i].N < pv[tiny_pick].N ? i : tiny_pick;
  for (size_t i = 0; i < pv.size(); ++i) {
    const auto& v = pv[i];
    const auto cfg = mlaops::testdata::mla_prolog_vendor_cfg(v, mlaops::testdata::mla_prolog_vendor_seed(v));
    char label[160];
    std::snprintf(label, sizeof label, "MlaProlog vendor %s %s N=%lld He=%lld T=%lld", mlaops::mla_prolog_scenario_name(v.sc),
                  mlaops::mla_prolog_cache_mode_name(v.mode), (long long)v.N, (long long)v.He, (long long)(v.B * v.S));
    CoverageEntry e = entry("vendor #" + std::to_string(i), "the vendor-shape matrix of test_mla_prolog_aclnn",
                            "cov.mla_prolog_vendor." + std::to_string(i) + ".t" + std::to_string(threads), kCovProlog,
                            label, threads, [cfg](RunContext& ctx) { return prolog_row(ctx, cfg); });
    if (size == Size::kTiny && i != tiny_pick) untimed(std::move(e));
    else out.push_back(std::move(e));
  }
  const std::vector<mlaops::testdata::MlaPreprocessVendorCase>& mv = mlaops::testdata::mla_preprocess_vendor_cases();
  tiny_pick = 0;
  for (size_t i = 0; i < mv.size(); ++i) tiny_pick = mv[i].heads < mv[tiny_pick].heads ? i : tiny_pick;
  for (size_t i = 0; i < mv.size(); ++i) {
    const auto& v = mv[i];
    const auto cfg = mlaops::testdata::vendor_cfg(v, 40 + i);
    char label[200];
    std::snprintf(label, sizeof label, "MlaPreprocess vendor %s %s %s%s N=%lld T=%lld", v.dt == DType::kFloat16 ? "FP16" : "BF16",
                  mlaops::mla_preprocess_cache_mode_name(v.cm),
                  v.float_weights ? "unquantised" : mlaops::mla_preprocess_quant_mode_name(v.qm), v.wuk_nz ? " wuk NZ" : "",
                  (long long)v.heads, (long long)v.tokens);
    CoverageEntry e = entry("vendor #" + std::to_string(i), "the vendor-shape cases of test_mla_preprocess_aclnn",
                            "cov.mla_preprocess_vendor." + std::to_string(i) + ".t" + std::to_string(threads),
                            kCovPreprocess, label, threads, [cfg](RunContext& ctx) { return preprocess_row(ctx, cfg); });
    if (size == Size::kTiny && i != tiny_pick) untimed(std::move(e));
    else out.push_back(std::move(e));
  }
  return out;
}

std::vector<CoverageEntry> coverage_entries(Size size, int threads) {
  std::vector<CoverageEntry> all = coverage_fia(size, threads);
  for (auto* make : {coverage_vendor_st, coverage_mla_prolog, coverage_mla_preprocess, coverage_mla_vendor})
    for (CoverageEntry& e : make(size, threads)) all.push_back(std::move(e));
  return all;
}

std::vector<Case> coverage_floor_cases(int threads) {
  std::vector<Case> out{coverage_fia_floor(threads)};
  // MlaProlog / MlaPreprocess: one token, one head, the tiny sizes, NO_QUANT / per-tensor KVCACHE
  const auto pcfg = prolog_cfg(Size::kTiny, Sc::kNoQuant, PCM::kPaBsnd, 1, 1);
  out.push_back(entry("", "", "floor.mla_prolog", kCovProlog, "MlaProlog floor: NO_QUANT PA_BSND N=1 T=1 He=256",
                      threads, [pcfg](RunContext& ctx) {
                        RunContext small = ctx;
                        small.pool_bytes = size_t{1} << 20;
                        small.reps = std::max(ctx.reps, 20);
                        return prolog_row(small, pcfg);
                      }).c);
  const auto mcfg = preprocess_cfg(Size::kTiny, DType::kBFloat16, CM::kKvCache, QM::kPerTensorAsymm, false, 1, 1);
  out.push_back(entry("", "", "floor.mla_preprocess", kCovPreprocess,
                      "MlaPreprocess floor: BF16 KVCACHE per-tensor N=1 T=1 He=256", threads, [mcfg](RunContext& ctx) {
                        RunContext small = ctx;
                        small.pool_bytes = size_t{1} << 20;
                        small.reps = std::max(ctx.reps, 20);
                        return preprocess_row(small, mcfg);
                      }).c);
  return out;
}

}  // namespace bench
