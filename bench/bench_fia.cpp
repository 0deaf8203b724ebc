// FusedInferAttentionScoreV4 benchmark (not a test), C++ API, all threads:
//   * DeepSeek MLA decode: N in {32, 128} heads, KV_N 1, D 512 + rope 64, value = key latent,
//     paged BnNBsD cache (blockSize 128), L in {1k, 4k, 32k}, batch in {1, 8}, BNSD_NBSD
//   * GQA decode: 32 query / 8 kv heads, D 128, L 4096, batch 8, BNSD, paged BnBsH
//   * MLA prefill: 128 query tokens x 4096 KV, N 128, D 128 + rope 64, V_D 128, TND, sparse 3
// For each: best and median time, GFLOP/s, GB/s of KV read, and % of the roofline lower bound
// max(bytes / BW, flops / peak) with BW 50 GB/s and bf16 740 GFLOP/s (../shared/perf/roofline.md;
// override with --bw GBs --bf16 GFLOPs).
//
// Usage: bench_fia [--quick] [--reps N] [--bw GBs] [--bf16 GFLOPs]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"

namespace {

using clk = std::chrono::steady_clock;
using mlaops::DType;
using mlaops::TensorView;

struct Buf {
  std::vector<uint64_t> b;
  TensorView v;
};

Buf make(DType dt, std::vector<int64_t> dims, uint32_t seed, bool fill = true) {
  Buf x;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  x.b.assign(static_cast<size_t>((n * mlaops::dtype_size(dt) + 7) / 8 + 1), 0);
  x.v = mlaops::make_view(x.b.data(), dt, dims.data(), static_cast<int>(dims.size()));
  if (fill && dt == DType::kBFloat16) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto* p = reinterpret_cast<uint16_t*>(x.b.data());
    for (int64_t i = 0; i < n; ++i) p[i] = mlaops::float_to_bf16(u(g));
  }
  return x;
}

struct Result {
  double best_us = 0, median_us = 0;
};

Result time_call(const mlaops::FiaParams& p, int reps) {
  uint64_t ws = 0;
  if (mlaops::fused_infer_attention_score_v4_workspace_size(p, &ws) != mlaops::kSuccess) {
    std::printf("error: %s\n", mlaops::last_error_message());
    std::exit(1);
  }
  std::vector<uint64_t> w(ws / 8 + 1);
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = clk::now();
    if (mlaops::fused_infer_attention_score_v4(p, w.data(), ws) != mlaops::kSuccess) {
      std::printf("error: %s\n", mlaops::last_error_message());
      std::exit(1);
    }
    const double us = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
    if (r > 0) t.push_back(us);  // the first run warms up
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

void report(const char* name, const Result& r, double flops, double bytes, double bw, double peak) {
  const double bound_us = std::max(bytes / bw, flops / peak) * 1e6;
  std::printf("%-44s best %10.1f us  median %10.1f us  %7.1f GFLOP/s  %6.1f GB/s  %5.1f %% of roofline (%s-bound %.1f us)\n",
              name, r.best_us, r.median_us, flops / r.best_us * 1e-3, bytes / r.best_us * 1e-3,
              100.0 * bound_us / r.best_us, bytes / bw > flops / peak ? "mem" : "cmp", bound_us);
}

void mla_decode(int64_t N, int64_t L, int64_t B, int reps, double bw, double peak) {
  const int64_t bs = 128, D = 512, Dr = 64, blocks_per = (L + bs - 1) / bs, nb = B * blocks_per;
  Buf q = make(DType::kBFloat16, {B, N, 1, D}, 1), qr = make(DType::kBFloat16, {B, N, 1, Dr}, 2);
  Buf k = make(DType::kBFloat16, {nb, 1, bs, D}, 3), kr = make(DType::kBFloat16, {nb, 1, bs, Dr}, 4);
  Buf bt = make(DType::kInt32, {B, blocks_per}, 0, false);
  auto* ids = reinterpret_cast<int32_t*>(bt.b.data());
  for (int64_t i = 0; i < nb; ++i) ids[i] = static_cast<int32_t>((i * 7919) % nb);  // scattered blocks
  Buf out = make(DType::kBFloat16, {N, B, 1, D}, 0, false), lse = make(DType::kFloat32, {B, N, 1, 1}, 0, false);
  std::vector<int64_t> akv(static_cast<size_t>(B), L);
  mlaops::FiaParams p;
  p.query = q.v;
  p.key = {k.v};
  p.value = {k.v};
  p.query_rope = &qr.v;
  p.key_rope = &kr.v;
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths_kv = &akv;
  p.num_heads = N;
  p.num_key_value_heads = 1;
  p.scale_value = 1.0 / std::sqrt(192.0);
  p.input_layout = "BNSD_NBSD";
  p.attention_out = out.v;
  p.softmax_lse = &lse.v;
  p.softmax_lse_flag = true;
  const Result r = time_call(p, reps);
  const double flops = 2.0 * B * N * L * (D + Dr + D);
  const double bytes = 2.0 * B * L * (D + Dr);
  char name[96];
  std::snprintf(name, sizeof name, "mla_decode N=%lld L=%lld B=%lld", (long long)N, (long long)L, (long long)B);
  report(name, r, flops, bytes, bw, peak);
}

void gqa_decode(int reps, double bw, double peak) {
  const int64_t B = 8, N = 32, KVN = 8, D = 128, L = 4096, bs = 128, per = L / bs, nb = B * per;
  Buf q = make(DType::kBFloat16, {B, N, 1, D}, 1);
  Buf k = make(DType::kBFloat16, {nb, bs, KVN * D}, 3), v = make(DType::kBFloat16, {nb, bs, KVN * D}, 4);
  Buf bt = make(DType::kInt32, {B, per}, 0, false);
  auto* ids = reinterpret_cast<int32_t*>(bt.b.data());
  for (int64_t i = 0; i < nb; ++i) ids[i] = static_cast<int32_t>(i);
  Buf out = make(DType::kBFloat16, {B, N, 1, D}, 0, false);
  std::vector<int64_t> akv(static_cast<size_t>(B), L);
  mlaops::FiaParams p;
  p.query = q.v;
  p.key = {k.v};
  p.value = {v.v};
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths_kv = &akv;
  p.num_heads = N;
  p.num_key_value_heads = KVN;
  p.scale_value = 1.0 / std::sqrt(128.0);
  p.input_layout = "BNSD";
  p.attention_out = out.v;
  const Result r = time_call(p, reps);
  report("gqa_decode 32q/8kv D128 L=4096 B=8", r, 2.0 * B * N * L * 2 * D, 2.0 * B * L * KVN * D * 2, bw, peak);
}

void mla_prefill(int reps, double bw, double peak) {
  const int64_t T = 128, L = 4096, N = 128, D = 128, Dr = 64, bs = 128, per = L / bs;
  Buf q = make(DType::kBFloat16, {T, N, D}, 1), qr = make(DType::kBFloat16, {T, N, Dr}, 2);
  Buf k = make(DType::kBFloat16, {per, bs, N * D}, 3), v = make(DType::kBFloat16, {per, bs, N * D}, 4);
  Buf kr = make(DType::kBFloat16, {per, bs, N * Dr}, 5);
  Buf bt = make(DType::kInt32, {1, per}, 0, false);
  auto* ids = reinterpret_cast<int32_t*>(bt.b.data());
  for (int64_t i = 0; i < per; ++i) ids[i] = static_cast<int32_t>(i);
  Buf mask = make(DType::kBool, {2048, 2048}, 0, false);
  Buf out = make(DType::kBFloat16, {T, N, D}, 0, false);
  std::vector<int64_t> aq = {T}, akv = {L};
  mlaops::FiaParams p;
  p.query = q.v;
  p.key = {k.v};
  p.value = {v.v};
  p.query_rope = &qr.v;
  p.key_rope = &kr.v;
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths = &aq;
  p.actual_seq_lengths_kv = &akv;
  p.atten_mask = &mask.v;
  p.sparse_mode = 3;
  p.num_heads = N;
  p.num_key_value_heads = N;
  p.scale_value = 1.0 / std::sqrt(192.0);
  p.input_layout = "TND";
  p.attention_out = out.v;
  const Result r = time_call(p, reps);
  // causal right-down: query row i sees L - T + i + 1 positions
  const double seen = static_cast<double>(T) * (L - T) + T * (T + 1) / 2.0;
  report("mla_prefill T=128 L=4096 N=128 D=128+64", r, 2.0 * N * seen * (D + Dr + D), 2.0 * L * N * (2 * D + Dr), bw,
         peak);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int reps = 5;
  double bw = 50e9, peak = 740e9;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--bw" && i + 1 < argc) bw = std::atof(argv[++i]) * 1e9;
    else if (a == "--bf16" && i + 1 < argc) peak = std::atof(argv[++i]) * 1e9;
  }
  std::printf("FusedInferAttentionScoreV4, isa %s, %d threads\n", mlaops::isa_name(mlaops::active_isa()),
              mlaops::num_threads());
  for (int64_t N : {32, 128})
    for (int64_t L : {1024, 4096, 32768})
      for (int64_t B : {1, 8}) {
        if (quick && (L > 4096 || B > 1)) continue;
        mla_decode(N, L, B, reps, bw, peak);
      }
  gqa_decode(reps, bw, peak);
  mla_prefill(quick ? 1 : reps, bw, peak);
  return 0;
}
