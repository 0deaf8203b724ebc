// MlaPreprocess benchmark (not a test): the W8A8 configuration vllm-ascend runs through MLAPO —
// bf16 hidden states, int8 wdqkv [2112, 7168] and wuq [N*192, 1536] in FRACTAL_NZ (transposed),
// per-tensor asymmetric RmsNormQuant (quantMode 0), bf16 wuk, cacheMode 1 (krope_ctkv, block 128)
// — for tokens {1, 8, 32, 1024} and N in {32, 128}.
//
// For each case: best and median of several runs of the whole operator (C++ API, all threads),
// the weight-stream GB/s and GOP/s, the roofline lower bound max(bytes / BW, int8 ops / int8 peak
// + bf16 flops / bf16 peak) from ../shared/perf/roofline.md (BW 50 GB/s, int8 1040 GOP/s, bf16
// 740 GFLOP/s; override with --bw --bf16 --int8), and, with oneDNN, the time of the same two int8
// GEMMs alone (x*Wdqkv^T, cq*Wuq^T) with pre-packed weights. Both rotate over >= 1 GiB of weight
// copies, so every call streams its weights from DRAM.
//
// Usage: bench_mla_preprocess [--quick] [--reps N] [--bw GBs] [--bf16 GFLOPs] [--int8 GOPs]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/runtime.h"

using namespace bench;  // NOLINT

int main(int argc, char** argv) {
  Limits lim;
  int reps = 7;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](double scale) { return i + 1 < argc ? std::atof(argv[++i]) * scale : 0.0; };
    if (a == "--quick") quick = true;
    else if (a == "--reps") reps = static_cast<int>(next(1));
    else if (a == "--bw") lim.bw = next(1e9);
    else if (a == "--bf16") lim.bf16 = next(1e9);
    else if (a == "--int8") lim.int8 = next(1e9);
    else {
      std::fprintf(stderr, "usage: bench_mla_preprocess [--quick] [--reps N] [--bw GBs] [--bf16 GFLOPs] [--int8 GOPs]\n");
      return 2;
    }
  }
  using mlaops::DType;
  const int64_t He = 7168, Hcq = 1536, Hckv = 512, Dr = 64, D = 128, QKV = Hckv + Dr + Hcq;
  std::printf("mlaops %s, isa %s, threads %d; limits: BW %.0f GB/s, bf16 %.0f GFLOP/s, int8 %.0f GOP/s\n",
              mlaops::version(), mlaops::isa_name(mlaops::active_isa()), mlaops::num_threads(), lim.bw / 1e9,
              lim.bf16 / 1e9, lim.int8 / 1e9);
  std::printf("%-4s %-5s | %10s %10s | %8s %9s | %10s %7s | %12s %7s\n", "N", "T", "best us", "median us", "GB/s",
              "GOP/s", "bound us", "%bound", "oneDNN2 us", "ratio");
  const std::vector<int64_t> Ts = quick ? std::vector<int64_t>{1, 32} : std::vector<int64_t>{1, 8, 32, 1024};
  for (int64_t N : {32, 128}) {
    Buf wdqkv = make_nz(DType::kInt8, QKV, He, 1), wuq = make_nz(DType::kInt8, N * (D + Dr), Hcq, 2);
    Buf wuk = make(DType::kBFloat16, {N, D, Hckv}, 3, -0.05f, 0.05f);
    WeightPool pool({&wdqkv, &wuq, &wuk});
    Buf gamma0 = make(DType::kBFloat16, {He}, 4, 0.9f, 1.1f), beta0 = make(DType::kBFloat16, {He}, 5, -0.1f, 0.1f);
    Buf gamma1 = make(DType::kBFloat16, {Hcq}, 6, 0.9f, 1.1f), beta1 = make(DType::kBFloat16, {Hcq}, 7, -0.1f, 0.1f);
    Buf gamma2 = make(DType::kBFloat16, {Hckv}, 8, 0.9f, 1.1f);
    Buf qs0 = make(DType::kBFloat16, {1}, 9, 0.02f, 0.03f), qs1 = make(DType::kBFloat16, {1}, 10, 0.02f, 0.03f);
    Buf qo0 = make(DType::kInt8, {1}, 11, -3.f, 3.f), qo1 = make(DType::kInt8, {1}, 12, -3.f, 3.f);
    Buf ds0 = make(DType::kFloat32, {QKV}, 13, 0.0005f, 0.001f), ds1 = make(DType::kFloat32, {N * (D + Dr)}, 14, 0.0005f, 0.001f);
    Buf b0 = make(DType::kInt32, {QKV}, 15, -10.f, 10.f), b1 = make(DType::kInt32, {N * (D + Dr)}, 16, -10.f, 10.f);
    const double w_bytes = static_cast<double>(wdqkv.b.size() + wuq.b.size() + wuk.b.size());
    const double int8_ops = 2.0 * static_cast<double>(QKV * He + N * (D + Dr) * Hcq);
    const double bf16_flops = 2.0 * static_cast<double>(N * D * Hckv);
    for (int64_t T : Ts) {
      Buf x = make(DType::kBFloat16, {T, He}, 17, -2.f, 2.f);
      Buf cosv = make(DType::kBFloat16, {T, Dr}, 18, -1.f, 1.f), sinv = make(DType::kBFloat16, {T, Dr}, 19, -1.f, 1.f);
      const int64_t bs = 128, blocks = (T + bs - 1) / bs;
      Buf kv = make(DType::kBFloat16, {blocks, bs, 1, Hckv}, 0, 0, 0), kr = make(DType::kBFloat16, {blocks, bs, 1, Dr}, 0, 0, 0);
      Buf slots = make(DType::kInt32, {T}, 0, 0, 0);
      for (int64_t t = 0; t < T; ++t) reinterpret_cast<int32_t*>(slots.b.data())[t] = static_cast<int32_t>(t);
      Buf q = make(DType::kBFloat16, {T, N, Hckv}, 0, 0, 0), qr = make(DType::kBFloat16, {T, N, Dr}, 0, 0, 0);
      mlaops::MlaPreprocessParams p;
      p.input = x.v;
      p.gamma0 = gamma0.v;
      p.beta0 = beta0.v;
      p.quant_scale0 = &qs0.v;
      p.quant_offset0 = &qo0.v;
      p.wdqkv = wdqkv.v;
      p.de_scale0 = &ds0.v;
      p.bias0 = &b0.v;
      p.gamma1 = gamma1.v;
      p.beta1 = beta1.v;
      p.quant_scale1 = &qs1.v;
      p.quant_offset1 = &qo1.v;
      p.wuq = wuq.v;
      p.de_scale1 = &ds1.v;
      p.bias1 = &b1.v;
      p.gamma2 = gamma2.v;
      p.cos = cosv.v;
      p.sin = sinv.v;
      p.wuk = wuk.v;
      p.kv_cache = kv.v;
      p.kv_cache_rope = &kr.v;
      p.slot_mapping = slots.v;
      p.cache_mode = mlaops::MlaPreprocessCacheMode::kKropeCtkv;
      p.q_out = q.v;
      p.q_rope_out = &qr.v;
      uint64_t ws_bytes = 0;
      if (mlaops::mla_preprocess_workspace_size(p, &ws_bytes) != mlaops::kSuccess) {
        std::fprintf(stderr, "check failed: %s\n", mlaops::last_error_message());
        return 1;
      }
      std::vector<uint8_t> ws(ws_bytes + 1);
      const int r = T >= 128 ? std::max(3, reps / 2) : reps;
      const Times t = time_it(
          [&] {
            uint8_t* base = pool.take();
            p.wdqkv.data = base + pool.off[0];
            p.wuq.data = base + pool.off[1];
            p.wuk.data = base + pool.off[2];
            mlaops::mla_preprocess(p, ws.data(), ws_bytes);
          },
          r);
      const double io = static_cast<double>(x.b.size() + q.b.size() + qr.b.size()) + static_cast<double>(T * (Hckv + Dr) * 2);
      const double ops = static_cast<double>(T) * (int8_ops + bf16_flops);
      const double bound = std::max((w_bytes + io) / lim.bw,
                                    static_cast<double>(T) * (int8_ops / lim.int8 + bf16_flops / lim.bf16));
      double dnnl_us = 0;
#ifdef MLAOPS_HAVE_DNNL
      DnnlProjections peer(T, {{He, QKV}, {Hcq, N * (D + Dr)}}, true, pool.count());
      dnnl_us = time_it([&] { peer.run(); }, r).best * 1e6;
#endif
      std::printf("%-4lld %-5lld | %10.1f %10.1f | %8.1f %9.1f | %10.1f %6.1f%% | %12.1f %7.2f\n", (long long)N,
                  (long long)T, t.best * 1e6, t.median * 1e6, w_bytes / t.best / 1e9, ops / t.best / 1e9, bound * 1e6,
                  100.0 * bound / t.best, dnnl_us, dnnl_us > 0 ? dnnl_us / (t.best * 1e6) : 0.0);
      std::fflush(stdout);
    }
  }
  std::printf("ratio = oneDNN's time for the two int8 GEMMs alone / mlaops' time for the whole operator\n");
  return 0;
}
