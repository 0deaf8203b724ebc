// MlaPrologV2 benchmark (not a test): DeepSeek-V3 shapes (He 7168, Hcq 1536, Hckv 512, D 128,
// Dr 64), T in {1, 8, 32, 128, 1024}, N in {32, 128}, bf16 weights (NO_QUANT) and int8 weights
// (FULL_QUANT_KV_QUANT, the W8A8 + int8 KV cache deployment; W_UK stays bf16).
//
// For each case: best and median of several runs of the whole operator (C++ API, all threads),
// the achieved weight-stream GB/s and GFLOP/s, the roofline lower bound
// max(bytes / BW, flops / peak) from ../shared/perf/roofline.md (BW 50 GB/s, bf16 740 GFLOP/s,
// int8 1040 GOP/s on 2 cores; override with --bw --bf16 --int8), and, in the same run, the time
// of the same three GEMMs (x*W_DQ, c_Q*W_UQ_QR, x*W_DKV_KR) through oneDNN with weights
// pre-packed by reorder (format any), when built with oneDNN (Debian libdnnl-dev).
// Both rotate over copies of their weights totalling >= 1 GiB, so every call streams its weights
// from DRAM as in a real model (61 layers never fit in the cache).
//
// Usage: bench_mla_prolog [--quick] [--reps N] [--bw GBs] [--bf16 GFLOPs] [--int8 GOPs]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/fractal_nz.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"

using namespace bench;  // NOLINT

int main(int argc, char** argv) {
  Limits lim;
  int reps = 7;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](double scale) { return i + 1 < argc ? std::atof(argv[++i]) * scale : 0.0; };
    if (a == "--quick") quick = true;
    else if (a == "--reps") reps = static_cast<int>(next(1));
    else if (a == "--bw") lim.bw = next(1e9);
    else if (a == "--bf16") lim.bf16 = next(1e9);
    else if (a == "--int8") lim.int8 = next(1e9);
    else {
      std::fprintf(stderr, "usage: bench_mla_prolog [--quick] [--reps N] [--bw GBs] [--bf16 GFLOPs] [--int8 GOPs]\n");
      return 2;
    }
  }
  const int64_t He = 7168, Hcq = 1536, Hckv = 512, D = 128, Dr = 64;
  std::printf("mlaops %s, isa %s, threads %d; limits: BW %.0f GB/s, bf16 %.0f GFLOP/s, int8 %.0f GOP/s\n",
              mlaops::version(), mlaops::isa_name(mlaops::active_isa()), mlaops::num_threads(), lim.bw / 1e9,
              lim.bf16 / 1e9, lim.int8 / 1e9);
  std::printf("%-5s %-4s %-5s | %10s %10s | %8s %9s | %10s %7s | %12s %7s\n", "wts", "N", "T", "best us", "median us",
              "GB/s", "GFLOP/s", "bound us", "%bound", "oneDNN3 us", "ratio");
  const std::vector<int64_t> Ts = quick ? std::vector<int64_t>{1, 32} : std::vector<int64_t>{1, 8, 32, 128, 1024};
  for (bool int8 : {false, true}) {
    for (int64_t N : {32, 128}) {
      using mlaops::DType;
      const DType wdt = int8 ? DType::kInt8 : DType::kBFloat16;
      Buf wdq = make_nz(wdt, He, Hcq, 1), wuq = make_nz(wdt, Hcq, N * (D + Dr), 2), wdkv = make_nz(wdt, He, Hckv + Dr, 3);
      Buf wuk = make(DType::kBFloat16, {N, D, Hckv}, 4, -0.05f, 0.05f);
      WeightPool pool({&wdq, &wuq, &wdkv, &wuk});  // >= 1 GiB of copies, rotated call by call
      const int copies = pool.count();
      Buf gcq = make(DType::kBFloat16, {Hcq}, 5, 0.9f, 1.1f), gckv = make(DType::kBFloat16, {Hckv}, 6, 0.9f, 1.1f);
      Buf dsw_dq = make(DType::kFloat32, {1, Hcq}, 7, 0.001f, 0.002f);
      Buf dsw_uq = make(DType::kFloat32, {1, N * (D + Dr)}, 8, 0.001f, 0.002f);
      Buf dsw_dkv = make(DType::kFloat32, {1, Hckv + Dr}, 9, 0.001f, 0.002f);
      Buf qs_ckv = make(DType::kFloat32, {1, Hckv}, 10, 10.f, 20.f);
      const double w_bytes = static_cast<double>(wdq.b.size() + wuq.b.size() + wdkv.b.size() + wuk.b.size());
      const double params = static_cast<double>(He * Hcq + Hcq * N * (D + Dr) + He * (Hckv + Dr) + N * D * Hckv);
      const double uk_params = static_cast<double>(N * D * Hckv);
      for (int64_t T : Ts) {
        Buf x = make(wdt, {T, He}, 11, int8 ? -100.f : -1.f, int8 ? 100.f : 1.f);
        Buf sin_t = make(DType::kBFloat16, {T, Dr}, 12, -1.f, 1.f), cos_t = make(DType::kBFloat16, {T, Dr}, 13, -1.f, 1.f);
        Buf idx = make(DType::kInt64, {T}, 0, 0, 0);
        const int64_t bs = 128, blocks = (T + bs - 1) / bs;
        Buf kv = make(int8 ? DType::kInt8 : DType::kBFloat16, {blocks, bs, 1, Hckv}, 0, 0, 0);
        Buf kr = make(DType::kBFloat16, {blocks, bs, 1, Dr}, 0, 0, 0);
        Buf q = make(int8 ? DType::kInt8 : DType::kBFloat16, {T, N, Hckv}, 0, 0, 0);
        Buf qr = make(DType::kBFloat16, {T, N, Dr}, 0, 0, 0);
        Buf dsx = make(DType::kFloat32, {T, 1}, 14, 0.001f, 0.002f);
        Buf dqs = make(DType::kFloat32, {T, N, 1}, 0, 0, 0);
        mlaops::MlaPrologParams p;
        p.token_x = x.v;
        p.weight_dq = wdq.v;
        p.weight_uq_qr = wuq.v;
        p.weight_uk = wuk.v;
        p.weight_dkv_kr = wdkv.v;
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
        uint64_t ws_bytes = 0;
        if (mlaops::mla_prolog_workspace_size(p, &ws_bytes) != mlaops::kSuccess) {
          std::fprintf(stderr, "check failed: %s\n", mlaops::last_error_message());
          return 1;
        }
        std::vector<uint8_t> ws(ws_bytes + 1);
        const int r = T >= 128 ? std::max(3, reps / 2) : reps;
        const Times t = time_it(
            [&] {
              uint8_t* base = pool.take();
              p.weight_dq.data = base + pool.off[0];
              p.weight_uq_qr.data = base + pool.off[1];
              p.weight_dkv_kr.data = base + pool.off[2];
              p.weight_uk.data = base + pool.off[3];
              mlaops::mla_prolog(p, ws.data(), ws_bytes);
            },
            r);
        // roofline: weights + x + q out + cache rows; flops 2*T*params (W_UK in bf16)
        const double io_bytes = static_cast<double>(x.b.size() + q.b.size() + qr.b.size()) +
                                static_cast<double>(T) * (Hckv * (int8 ? 1 : 2) + Dr * 2);
        const double bytes = w_bytes + io_bytes;
        const double flops = 2.0 * static_cast<double>(T) * params;
        const double t_cmp = int8 ? 2.0 * T * (params - uk_params) / lim.int8 + 2.0 * T * uk_params / lim.bf16
                                  : flops / lim.bf16;
        const double bound = std::max(bytes / lim.bw, t_cmp);
        double dnnl_us = 0;
#ifdef MLAOPS_HAVE_DNNL
        DnnlProjections peer(T, {{He, Hcq}, {Hcq, N * (D + Dr)}, {He, Hckv + Dr}}, int8, copies);
        dnnl_us = time_it([&] { peer.run(); }, r).best * 1e6;
#endif
        std::printf("%-5s %-4lld %-5lld | %10.1f %10.1f | %8.1f %9.1f | %10.1f %6.1f%% | %12.1f %7.2f\n",
                    int8 ? "int8" : "bf16", (long long)N, (long long)T, t.best * 1e6, t.median * 1e6,
                    w_bytes / t.best / 1e9, flops / t.best / 1e9, bound * 1e6, 100.0 * bound / t.best, dnnl_us,
                    dnnl_us > 0 ? dnnl_us / (t.best * 1e6) : 0.0);
        std::fflush(stdout);
      }
    }
  }
  std::printf("ratio = oneDNN's time for the three GEMMs alone / mlaops' time for the whole operator (> 1: mlaops faster)\n");
  return 0;
}
