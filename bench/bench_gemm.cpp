// Single-threaded panel GEMM kernels (kernels/cpu/gemm/gemm.h) at the DeepSeek-V3 MLA shapes.
//
//   bf16 NZ: K x N = 7168 x 1536 (W_DQ), 1536 x 3072 (a slice of W_UQ_QR); bf16 ND: 128 x 512
//   (W_UK per head); int8 NZ: 7168 x 1536, 1536 x 3072; M in {1, 8, 64, 512}.
//   Transposed NZ (GemmTArgs, the MlaPreprocess weights W [N, K]): N x K = 2112 x 7168 (wdqkv)
//   and 6144 x 1536 (wuq), int8 (s8_t), bf16 (bf16_t) and fp16 (f16_t).
// "hot": the same B every iteration (it stays in L2/L3); "cold" (M = 1, 8): each iteration
// reads another copy of B from a 1 GiB pool, so B streams from DRAM as in decode.
// Counters: GFLOP/s (2*M*N*K / t; "GOP/s" for int8) and GB/s of B streamed (K*N*elem / t).
// The machine is shared and noisy: run with --benchmark_repetitions=N and read the "max"
// aggregate of the rate counters (best of N). Rates are per CPU time of the calling thread (the
// kernels are single-threaded); "peak/*" gives the vector throughput available at the moment.
// Every SIMD row of the gemm family this CPU can run is measured, named by the row.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"

namespace {

using mlaops::kernels::GemmArgs;
using mlaops::kernels::GemmKernels;
using mlaops::kernels::GemmKind;
using mlaops::kernels::gemm_scratch_bytes;
using mlaops::kernels::GemmTArgs;

// Bytes whose every 16-bit word is a normal bf16 in [-1, 1] (also fine as int8 data).
std::vector<uint16_t> random_words(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = mlaops::float_to_bf16(u(rng) + (u(rng) > 0 ? 0.25f : -0.25f));
  return v;
}

// A page-aligned buffer filled from a repeated 1 MiB random block.
struct Buffer {
  uint8_t* p = nullptr;
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes(n) {
    p = static_cast<uint8_t*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096));
    static const std::vector<uint16_t> block = random_words(1 << 19, 12345);
    for (size_t off = 0; off < n; off += block.size() * 2)
      std::memcpy(p + off, block.data(), std::min(block.size() * 2, n - off));
  }
  ~Buffer() { std::free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

constexpr size_t kColdPool = size_t{1} << 30;

Buffer& cold_pool() {
  static Buffer b(kColdPool);
  return b;
}

enum class Kind { kBf16Nz, kBf16Nd, kS8Nz, kS8T, kBf16T, kF16T };

bool is_t(Kind k) { return k == Kind::kS8T || k == Kind::kBf16T || k == Kind::kF16T; }

// C = A x W^T with W [N, K] in NZ storage [ceil(K/c0), ceil(N/16), 16, c0].
void run_t(benchmark::State& state, const GemmKernels* ks, Kind kind, int64_t M, int64_t K, int64_t N, bool cold) {
  const bool s8 = kind == Kind::kS8T;
  const int64_t es = s8 ? 1 : 2, c0 = 32 / es;
  const int64_t kpad = (K + c0 - 1) / c0 * c0, npad = (N + 15) / 16 * 16;
  const size_t b_bytes = static_cast<size_t>(kpad * npad * es);
  const size_t b_stride = (b_bytes + 4095) / 4096 * 4096;
  Buffer a(static_cast<size_t>(M * K * es));
  Buffer hot(cold ? 0 : b_bytes);
  const size_t copies = cold ? kColdPool / b_stride : 1;
  uint8_t* b_base = cold ? cold_pool().p : hot.p;
  std::vector<float> c(static_cast<size_t>(M * N));
  GemmTArgs g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.A = a.p;
  g.lda = K;
  g.r1 = npad / 16;
  g.C = c.data();
  g.ldc = N;
  g.n_begin = 0;
  g.n_end = N;
  const auto fn = s8 ? ks->s8_t : kind == Kind::kBf16T ? ks->bf16_t : ks->f16_t;
  const GemmKind gk = s8 ? GemmKind::kS8T : kind == Kind::kBf16T ? GemmKind::kBf16T : GemmKind::kF16T;
  Buffer scratch(static_cast<size_t>(std::max<int64_t>(64, gemm_scratch_bytes(gk, M, K, N))));
  g.scratch = scratch.p;
  size_t i = 0;
  for (auto _ : state) {
    g.W = b_base + (i % copies) * b_stride;
    ++i;
    fn(g);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double flop = 2.0 * double(M) * double(N) * double(K);
  state.counters[s8 ? "GOP/s" : "GFLOP/s"] =
      benchmark::Counter(flop / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["B_GB/s"] = benchmark::Counter(double(b_bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(flop));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(b_bytes));
}

void run(benchmark::State& state, const GemmKernels* ks, Kind kind, int64_t M, int64_t K, int64_t N, bool cold) {
  const bool s8 = kind == Kind::kS8Nz;
  const int64_t es = s8 ? 1 : 2;
  const int64_t W = s8 ? 32 : 16;
  const int64_t kpad = (K + 15) / 16 * 16, npad = (N + W - 1) / W * W;
  const bool nz = kind != Kind::kBf16Nd;
  const size_t b_bytes = static_cast<size_t>(nz ? kpad * npad * es : K * N * es);
  const size_t b_stride = (b_bytes + 4095) / 4096 * 4096;

  Buffer a(static_cast<size_t>(M * K * es));
  Buffer hot(cold ? 0 : b_bytes);
  const size_t copies = cold ? kColdPool / b_stride : 1;
  uint8_t* b_base = cold ? cold_pool().p : hot.p;
  std::vector<float> c(static_cast<size_t>(M * N));  // float and int32 have the same size

  GemmArgs g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.A = a.p;
  g.lda = K;
  g.panel_width = W;
  g.ldb = nz ? W : N;
  g.panel_stride = nz ? kpad * W : 16;
  g.C = c.data();
  g.ldc = N;
  g.n_begin = 0;
  g.n_end = N;
  const auto fn = s8 ? ks->s8 : ks->bf16;
  Buffer scratch(static_cast<size_t>(std::max<int64_t>(64, gemm_scratch_bytes(s8 ? GemmKind::kS8 : GemmKind::kBf16, M, K, N))));
  g.scratch = scratch.p;

  size_t i = 0;
  for (auto _ : state) {
    g.B = b_base + (i % copies) * b_stride;
    ++i;
    fn(g);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double flop = 2.0 * double(M) * double(N) * double(K);
  state.counters[s8 ? "GOP/s" : "GFLOP/s"] =
      benchmark::Counter(flop / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["B_GB/s"] = benchmark::Counter(double(b_bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(flop));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(b_bytes));
}

#if defined(MLAOPS_ARCH_X86_64)
// Calibration: the vdpbf16ps / vpdpbusd throughput available right now (16 independent
// accumulators, no memory traffic), to read the GEMM numbers as a fraction of it on a shared
// machine. 64 FLOP per vdpbf16ps, 128 OP per vpdpbusd. x86 only (zmm assembly).
__attribute__((target("avx512f,avx512bf16,avx512vnni"))) void peak(benchmark::State& state, bool s8) {
  const int64_t iters = 1 << 20;
  for (auto _ : state) {
    int64_t n = iters;
    if (s8) {
#define MLAOPS_P(r) "vpdpbusd %%zmm1, %%zmm0, %%zmm" #r "\n"
      asm volatile("vpxord %%zmm0, %%zmm0, %%zmm0\n vpxord %%zmm1, %%zmm1, %%zmm1\n"
                   "1:\n" MLAOPS_P(2) MLAOPS_P(3) MLAOPS_P(4) MLAOPS_P(5) MLAOPS_P(6) MLAOPS_P(7) MLAOPS_P(8)
                       MLAOPS_P(9) MLAOPS_P(10) MLAOPS_P(11) MLAOPS_P(12) MLAOPS_P(13) MLAOPS_P(14) MLAOPS_P(15)
                           MLAOPS_P(16) MLAOPS_P(17) "dec %0\n jnz 1b\n"
                   : "+r"(n)
                   :
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
                     "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "cc");
#undef MLAOPS_P
    } else {
#define MLAOPS_P(r) "vdpbf16ps %%zmm1, %%zmm0, %%zmm" #r "\n"
      asm volatile("vpxord %%zmm0, %%zmm0, %%zmm0\n vpxord %%zmm1, %%zmm1, %%zmm1\n"
                   "1:\n" MLAOPS_P(2) MLAOPS_P(3) MLAOPS_P(4) MLAOPS_P(5) MLAOPS_P(6) MLAOPS_P(7) MLAOPS_P(8)
                       MLAOPS_P(9) MLAOPS_P(10) MLAOPS_P(11) MLAOPS_P(12) MLAOPS_P(13) MLAOPS_P(14) MLAOPS_P(15)
                           MLAOPS_P(16) MLAOPS_P(17) "dec %0\n jnz 1b\n"
                   : "+r"(n)
                   :
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
                     "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "cc");
#undef MLAOPS_P
    }
  }
  state.counters[s8 ? "GOP/s" : "GFLOP/s"] = benchmark::Counter(
      double(iters) * 16 * (s8 ? 128 : 64) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
#endif

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void register_all() {
  struct RowSet {
    const char* name;
    const GemmKernels* k;
  };
  std::vector<RowSet> rows;  // the SIMD kernel sets whose GEMM rows (kernels/cpu/gemm/gemm.h) this CPU can all run
#if defined(MLAOPS_ARCH_X86_64)
  const auto& cpu = mlaops::cpu_features();
  if (mlaops::gate_avx512_bf16_vnni(cpu)) rows.push_back({"gemm_avx512", &mlaops::kernels::gemm_avx512});
  if (mlaops::gate_avx2(cpu)) rows.push_back({"gemm_avx2", &mlaops::kernels::gemm_avx2});
#endif

  struct Shape {
    Kind kind;
    const char* name;
    int64_t K, N;
  };
  const Shape shapes[] = {{Kind::kBf16Nz, "bf16_nz", 7168, 1536}, {Kind::kBf16Nz, "bf16_nz", 1536, 3072},
                          {Kind::kBf16Nd, "bf16_nd", 128, 512},   {Kind::kS8Nz, "s8_nz", 7168, 1536},
                          {Kind::kS8Nz, "s8_nz", 1536, 3072},     {Kind::kS8T, "s8_t", 7168, 2112},
                          {Kind::kBf16T, "bf16_t", 7168, 2112},   {Kind::kF16T, "f16_t", 7168, 2112},
                          {Kind::kS8T, "s8_t", 1536, 6144},       {Kind::kBf16T, "bf16_t", 1536, 6144},
                          {Kind::kF16T, "f16_t", 1536, 6144}};
#if defined(MLAOPS_ARCH_X86_64)
  const auto& f = mlaops::cpu_features();
  for (bool s8 : {false, true}) {
    if (!(s8 ? f.avx512_vnni : f.avx512_bf16) || mlaops::detected_isa() != mlaops::Isa::kAvx512) continue;
    benchmark::RegisterBenchmark(s8 ? "peak/vpdpbusd" : "peak/vdpbf16ps", peak, s8)
        ->MinTime(0.1)
        ->ComputeStatistics("max", max_of)
        ->ComputeStatistics("min", min_of);
  }
#endif
  for (const auto& row : rows)
    for (const auto& s : shapes)
      for (int64_t M : {1, 8, 64, 512})
        for (bool cold : {false, true}) {
          if (cold && (M > 8 || s.kind == Kind::kBf16Nd)) continue;
          const std::string name = std::string(s.name) + "/" + row.name + "/M=" + std::to_string(M) +
                                   "/K=" + std::to_string(s.K) + "/N=" + std::to_string(s.N) + (cold ? "/cold" : "/hot");
          benchmark::RegisterBenchmark(name.c_str(), is_t(s.kind) ? run_t : run, row.k, s.kind, M, s.K, s.N, cold)
              ->Unit(benchmark::kMicrosecond)
              ->MinTime(0.2)
              ->ComputeStatistics("max", max_of)
              ->ComputeStatistics("min", min_of);
        }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
