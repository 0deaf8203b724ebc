// MlaPrologV2 cases of the benchmark suite (suite.h): DeepSeek-V3 shapes (He 7168, Hcq 1536,
// Hckv 512, D 128, Dr 64), bf16 weights (NO_QUANT, PA_BSND cache) and int8 weights
// (FULL_QUANT_KV_QUANT, the W8A8 + int8 KV cache deployment, PA_NZ cache; W_UK stays bf16),
// N in {32, 128}, T tokens in {1, 8, 32, 128, 1024} (quick: 1 and 1024).
//
// The whole operator through the C++ API is timed against, in the same run, oneDNN's time for the
// same four GEMMs alone (x*W_DQ, c_Q*W_UQ_QR, x*W_DKV_KR and the absorbed q_nope*W_UK, N
// per-head products in bf16) with weights pre-packed by reorder (format any). Both rotate over copies of their weights totalling >= 1 GiB, so every call
// streams its weights from DRAM as in a real model (61 layers never fit in a cache).
// Bytes = weights + x + q out + cache rows; work = 2 T params (int8: W_UK's share in bf16).
// Targets: T = 1 weight stream >= 80 % of the DRAM rate (% of the memory bound);
// T = 1024 no slower than oneDNN's four GEMMs.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/case_defs.h"
#include "bench/suite.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/runtime.h"

namespace bench {
namespace {

using mlaops::DType;

using Dims = MlaDims;  // case_defs.h

// The weights of one (dtype, N) group and their rotated copies.
struct PrologWeights {
  Buf wdq, wuq, wdkv, wuk;
  std::unique_ptr<WeightPool> pool;
  double w_bytes = 0, params = 0, uk_params = 0;
};

PrologWeights* make_weights(const Dims& d, bool int8, int64_t N, size_t pool_bytes) {
  auto* w = new PrologWeights;
  const DType wdt = int8 ? DType::kInt8 : DType::kBFloat16;
  w->wdq = make_nz(wdt, d.He, d.Hcq, 1);
  w->wuq = make_nz(wdt, d.Hcq, N * (d.D + d.Dr), 2);
  w->wdkv = make_nz(wdt, d.He, d.Hckv + d.Dr, 3);
  w->wuk = make(DType::kBFloat16, {N, d.D, d.Hckv}, 4, -0.05f, 0.05f);
  w->pool = std::make_unique<WeightPool>(std::vector<const Buf*>{&w->wdq, &w->wuq, &w->wdkv, &w->wuk}, pool_bytes);
  w->w_bytes = static_cast<double>(w->wdq.b.size() + w->wuq.b.size() + w->wdkv.b.size() + w->wuk.b.size());
  w->params = static_cast<double>(d.He * d.Hcq + d.Hcq * N * (d.D + d.Dr) + d.He * (d.Hckv + d.Dr) + N * d.D * d.Hckv);
  w->uk_params = static_cast<double>(N * d.D * d.Hckv);
  return w;
}

Row run_case(RunContext& ctx, const Dims& d, bool int8, int64_t N, int64_t T, int threads) {
  char key[64];
  std::snprintf(key, sizeof key, "prolog.%d.%lld.%lld", int8 ? 1 : 0, (long long)N, (long long)d.He);
  PrologWeights& w = ctx.state<PrologWeights>(key, [&] { return make_weights(d, int8, N, ctx.pool_bytes); });
  const DType wdt = int8 ? DType::kInt8 : DType::kBFloat16;
  Buf gcq = make(DType::kBFloat16, {d.Hcq}, 5, 0.9f, 1.1f), gckv = make(DType::kBFloat16, {d.Hckv}, 6, 0.9f, 1.1f);
  Buf dsw_dq = make(DType::kFloat32, {1, d.Hcq}, 7, 0.001f, 0.002f);
  Buf dsw_uq = make(DType::kFloat32, {1, N * (d.D + d.Dr)}, 8, 0.001f, 0.002f);
  Buf dsw_dkv = make(DType::kFloat32, {1, d.Hckv + d.Dr}, 9, 0.001f, 0.002f);
  Buf qs_ckv = make(DType::kFloat32, {1, d.Hckv}, 10, 10.f, 20.f);
  Buf x = make(wdt, {T, d.He}, 11, int8 ? -100.f : -1.f, int8 ? 100.f : 1.f);
  Buf sin_t = make(DType::kBFloat16, {T, d.Dr}, 12, -1.f, 1.f), cos_t = make(DType::kBFloat16, {T, d.Dr}, 13, -1.f, 1.f);
  Buf idx = make(DType::kInt64, {T}, 0, 0, 0);
  const int64_t bs = 128, blocks = (T + bs - 1) / bs;
  Buf kv = make(int8 ? DType::kInt8 : DType::kBFloat16, {blocks, bs, 1, d.Hckv}, 0, 0, 0);
  Buf kr = make(DType::kBFloat16, {blocks, bs, 1, d.Dr}, 0, 0, 0);
  Buf q = make(int8 ? DType::kInt8 : DType::kBFloat16, {T, N, d.Hckv}, 0, 0, 0);
  Buf qr = make(DType::kBFloat16, {T, N, d.Dr}, 0, 0, 0);
  Buf dsx = make(DType::kFloat32, {T, 1}, 14, 0.001f, 0.002f);
  Buf dqs = make(DType::kFloat32, {T, N, 1}, 0, 0, 0);
  mlaops::MlaPrologParams p;
  p.token_x = x.v;
  p.weight_dq = w.wdq.v;
  p.weight_uq_qr = w.wuq.v;
  p.weight_uk = w.wuk.v;
  p.weight_dkv_kr = w.wdkv.v;
  p.rmsnorm_gamma_cq = gcq.v;
  p.rmsnorm_gamma_ckv = gckv.v;
  p.rope_sin = sin_t.v;
  p.rope_cos = cos_t.v;
  p.cache_index = idx.v;
  p.kv_cache = kv.v;
  p.kr_cache = kr.v;
  p.cache_mode = int8 ? mlaops::MlaPrologCacheMode::kPaNz : mlaops::MlaPrologCacheMode::kPaBsnd;
  p.query_out = q.v;
  p.query_rope_out = qr.v;
  if (int8) {
    p.dequant_scale_x = &dsx.v;
    p.dequant_scale_w_dq = &dsw_dq.v;
    p.dequant_scale_w_uq_qr = &dsw_uq.v;
    p.dequant_scale_w_dkv_kr = &dsw_dkv.v;
    p.quant_scale_ckv = &qs_ckv.v;
    p.dequant_scale_q_nope_out = &dqs.v;
  }
  Row r;
  r.threads = threads;
  const int reps = T >= 128 ? std::max(3, ctx.reps / 2) : ctx.reps;
  const std::function<bool()> ours = time_rotated(
      r, *w.pool, reps, [&](uint64_t* bytes) { return mlaops::mla_prolog_workspace_size(p, bytes); },
      [&](uint8_t* base) {
        p.weight_dq.data = base + w.pool->off[0];
        p.weight_uq_qr.data = base + w.pool->off[1];
        p.weight_dkv_kr.data = base + w.pool->off[2];
        p.weight_uk.data = base + w.pool->off[3];
      },
      [&](void* ws, uint64_t bytes) { return mlaops::mla_prolog(p, ws, bytes); });
  r.bytes = w.w_bytes + static_cast<double>(x.b.size() + q.b.size() + qr.b.size()) +
            static_cast<double>(T) * static_cast<double>(d.Hckv * (int8 ? 1 : 2) + d.Dr * 2);
  if (int8) {
    r.ops_int8 = 2.0 * static_cast<double>(T) * (w.params - w.uk_params);
    r.flops_bf16 = 2.0 * static_cast<double>(T) * w.uk_params;
  } else {
    r.flops_bf16 = 2.0 * static_cast<double>(T) * w.params;
  }
  // every GEMM of the operator: the three projections (int8 in the W8A8 scenario) and the
  // absorbed W_UK, N per-head products [T, D] x [D, Hckv] in bf16 (as the operator's)
  add_dnnl_peer(r, ctx, "oneDNN 4 GEMMs", T,
                {{d.He, d.Hcq, int8}, {d.Hcq, N * (d.D + d.Dr), int8}, {d.He, d.Hckv + d.Dr, int8}, {d.D, d.Hckv, false, N}},
                w.pool->count(), reps, ours);
  return r;
}

}  // namespace

std::vector<Case> mla_prolog_cases(Size size, int threads) {
  std::vector<Case> out;
  const Dims d = mla_dims(size);  // the shapes: case_defs.h
  const std::vector<int64_t> Ts = prolog_tokens(size), Ns = mla_heads(size);
  for (bool int8 : {false, true})
    for (int64_t N : Ns)
      for (int64_t T : Ts) {
        for (int nt : weight_case_threads(T == Ts.back(), threads)) {
          char id[96], label[96];
          std::snprintf(id, sizeof id, "mla_prolog.%s.N%lld.T%lld.t%d", int8 ? "int8" : "bf16", (long long)N,
                        (long long)T, nt);
          std::snprintf(label, sizeof label, "MlaPrologV2 %s N=%lld T=%lld", int8 ? "int8" : "bf16", (long long)N,
                        (long long)T);
          out.push_back(weight_case(id, "mla_prolog", label, nt, T == 1 && size != Size::kTiny,
                                    T == 1024 && nt == threads,
                                    [d, int8, N, T, nt](RunContext& ctx) { return run_case(ctx, d, int8, N, T, nt); }));
        }
      }
  return out;
}

}  // namespace bench
