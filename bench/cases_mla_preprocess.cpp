// MlaPreprocess cases of the benchmark suite (suite.h): the W8A8 configuration vllm-ascend runs
// through MLAPO — bf16 hidden states, int8 wdqkv [2112, 7168] and wuq [N*192, 1536] in
// FRACTAL_NZ (transposed), per-tensor asymmetric RmsNormQuant (quantMode 0), bf16 wuk,
// cacheMode 1 (krope_ctkv, block 128) — for tokens {1, 8, 32, 1024} (quick: 1 and 1024) and
// N in {32, 128}.
//
// The whole operator through the C++ API is timed against, in the same run, oneDNN's time for the
// same three GEMMs alone (x*Wdqkv^T, cq*Wuq^T in int8 and the absorbed q_nope*W_UK, N per-head
// products in bf16) with pre-packed weights. Both rotate over
// >= 1 GiB of weight copies, so every call streams its weights from DRAM. Targets as MlaPrologV2
// (targets): T = 1 >= 80 % of the memory bound, T = 1024 no slower than oneDNN's GEMMs.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/case_defs.h"
#include "bench/suite.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/runtime.h"

namespace bench {
namespace {

using mlaops::DType;

using Dims = MlaDims;  // case_defs.h

// The weights and quantization parameters of one N, and their rotated copies.
struct PreWeights {
  Buf wdqkv, wuq, wuk, gamma0, beta0, gamma1, beta1, gamma2, qs0, qs1, qo0, qo1, ds0, ds1, b0, b1;
  std::unique_ptr<WeightPool> pool;
  double w_bytes = 0, int8_ops = 0, bf16_flops = 0;  // per token
};

PreWeights* make_weights(const Dims& d, int64_t N, size_t pool_bytes) {
  auto* w = new PreWeights;
  const int64_t QKV = d.QKV();
  w->wdqkv = make_nz(DType::kInt8, QKV, d.He, 1);
  w->wuq = make_nz(DType::kInt8, N * (d.D + d.Dr), d.Hcq, 2);
  w->wuk = make(DType::kBFloat16, {N, d.D, d.Hckv}, 3, -0.05f, 0.05f);
  w->pool = std::make_unique<WeightPool>(std::vector<const Buf*>{&w->wdqkv, &w->wuq, &w->wuk}, pool_bytes);
  w->gamma0 = make(DType::kBFloat16, {d.He}, 4, 0.9f, 1.1f);
  w->beta0 = make(DType::kBFloat16, {d.He}, 5, -0.1f, 0.1f);
  w->gamma1 = make(DType::kBFloat16, {d.Hcq}, 6, 0.9f, 1.1f);
  w->beta1 = make(DType::kBFloat16, {d.Hcq}, 7, -0.1f, 0.1f);
  w->gamma2 = make(DType::kBFloat16, {d.Hckv}, 8, 0.9f, 1.1f);
  w->qs0 = make(DType::kBFloat16, {1}, 9, 0.02f, 0.03f);
  w->qs1 = make(DType::kBFloat16, {1}, 10, 0.02f, 0.03f);
  w->qo0 = make(DType::kInt8, {1}, 11, -3.f, 3.f);
  w->qo1 = make(DType::kInt8, {1}, 12, -3.f, 3.f);
  w->ds0 = make(DType::kFloat32, {QKV}, 13, 0.0005f, 0.001f);
  w->ds1 = make(DType::kFloat32, {N * (d.D + d.Dr)}, 14, 0.0005f, 0.001f);
  w->b0 = make(DType::kInt32, {QKV}, 15, -10.f, 10.f);
  w->b1 = make(DType::kInt32, {N * (d.D + d.Dr)}, 16, -10.f, 10.f);
  w->w_bytes = static_cast<double>(w->wdqkv.b.size() + w->wuq.b.size() + w->wuk.b.size());
  w->int8_ops = 2.0 * static_cast<double>(QKV * d.He + N * (d.D + d.Dr) * d.Hcq);
  w->bf16_flops = 2.0 * static_cast<double>(N * d.D * d.Hckv);
  return w;
}

Row run_case(RunContext& ctx, const Dims& d, int64_t N, int64_t T, int threads) {
  char key[64];
  std::snprintf(key, sizeof key, "preprocess.%lld.%lld", (long long)N, (long long)d.He);
  PreWeights& w = ctx.state<PreWeights>(key, [&] { return make_weights(d, N, ctx.pool_bytes); });
  Buf x = make(DType::kBFloat16, {T, d.He}, 17, -2.f, 2.f);
  Buf cosv = make(DType::kBFloat16, {T, d.Dr}, 18, -1.f, 1.f), sinv = make(DType::kBFloat16, {T, d.Dr}, 19, -1.f, 1.f);
  const int64_t bs = 128, blocks = (T + bs - 1) / bs;
  Buf kv = make(DType::kBFloat16, {blocks, bs, 1, d.Hckv}, 0, 0, 0), kr = make(DType::kBFloat16, {blocks, bs, 1, d.Dr}, 0, 0, 0);
  Buf slots = make(DType::kInt32, {T}, 0, 0, 0);
  for (int64_t t = 0; t < T; ++t) reinterpret_cast<int32_t*>(slots.b.data())[t] = static_cast<int32_t>(t);
  Buf q = make(DType::kBFloat16, {T, N, d.Hckv}, 0, 0, 0), qr = make(DType::kBFloat16, {T, N, d.Dr}, 0, 0, 0);
  mlaops::MlaPreprocessParams p;
  p.input = x.v;
  p.gamma0 = w.gamma0.v;
  p.beta0 = w.beta0.v;
  p.quant_scale0 = &w.qs0.v;
  p.quant_offset0 = &w.qo0.v;
  p.wdqkv = w.wdqkv.v;
  p.de_scale0 = &w.ds0.v;
  p.bias0 = &w.b0.v;
  p.gamma1 = w.gamma1.v;
  p.beta1 = w.beta1.v;
  p.quant_scale1 = &w.qs1.v;
  p.quant_offset1 = &w.qo1.v;
  p.wuq = w.wuq.v;
  p.de_scale1 = &w.ds1.v;
  p.bias1 = &w.b1.v;
  p.gamma2 = w.gamma2.v;
  p.cos = cosv.v;
  p.sin = sinv.v;
  p.wuk = w.wuk.v;
  p.kv_cache = kv.v;
  p.kv_cache_rope = &kr.v;
  p.slot_mapping = slots.v;
  p.cache_mode = mlaops::MlaPreprocessCacheMode::kKropeCtkv;
  p.q_out = q.v;
  p.q_rope_out = &qr.v;
  Row r;
  r.threads = threads;
  const int reps = T >= 128 ? std::max(3, ctx.reps / 2) : ctx.reps;
  const std::function<bool()> ours = time_rotated(
      r, *w.pool, reps, [&](uint64_t* bytes) { return mlaops::mla_preprocess_workspace_size(p, bytes); },
      [&](uint8_t* base) {
        p.wdqkv.data = base + w.pool->off[0];
        p.wuq.data = base + w.pool->off[1];
        p.wuk.data = base + w.pool->off[2];
      },
      [&](void* ws, uint64_t bytes) { return mlaops::mla_preprocess(p, ws, bytes); });
  r.bytes = w.w_bytes + static_cast<double>(x.b.size() + q.b.size() + qr.b.size()) +
            static_cast<double>(T * (d.Hckv + d.Dr) * 2);
  r.ops_int8 = static_cast<double>(T) * w.int8_ops;
  r.flops_bf16 = static_cast<double>(T) * w.bf16_flops;
  // every GEMM of the operator: the two int8 projections and the absorbed W_UK (N per-head bf16
  // products [T, D] x [D, Hckv], as the operator's)
  add_dnnl_peer(r, ctx, "oneDNN 3 GEMMs", T, {{d.He, d.QKV(), true}, {d.Hcq, N * (d.D + d.Dr), true}, {d.D, d.Hckv, false, N}},
                w.pool->count(), reps, ours);
  return r;
}

}  // namespace

std::vector<Case> mla_preprocess_cases(Size size, int threads) {
  std::vector<Case> out;
  const Dims d = mla_dims(size);  // the shapes: case_defs.h
  const std::vector<int64_t> Ts = preprocess_tokens(size), Ns = mla_heads(size);
  for (int64_t N : Ns)
    for (int64_t T : Ts) {
      for (int nt : weight_case_threads(T == Ts.back(), threads)) {
        char id[96], label[96];
        std::snprintf(id, sizeof id, "mla_preprocess.int8.N%lld.T%lld.t%d", (long long)N, (long long)T, nt);
        std::snprintf(label, sizeof label, "MlaPreprocess int8 N=%lld T=%lld", (long long)N, (long long)T);
        out.push_back(weight_case(id, "mla_preprocess", label, nt, T == 1 && size != Size::kTiny,
                                  T == 1024 && nt == threads,
                                  [d, N, T, nt](RunContext& ctx) { return run_case(ctx, d, N, T, nt); }));
      }
    }
  return out;
}

}  // namespace bench
