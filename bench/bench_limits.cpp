// Measures this machine's roofline limits (issue 7, item 1's probe): DRAM read bandwidth and the
// fp32 FMA, bf16 dot-product (vdpbf16ps) and int8 VNNI (vpdpbusd) throughput, with 1 and 2
// threads (or --threads N), best and median of --reps runs. The operator benchmarks take the
// results as their bounds (--bw / --bf16 / --int8 in GB/s and G(FL)OP/s). docs/performance.md.
//
//   bench_limits [--reps N] [--threads N] [--mib M] [--json FILE]
#include <immintrin.h>
#include <omp.h>

// GCC 12's _mm512_reduce_* pass an _mm512_undefined_*() operand it then reports as
// uninitialized (GCC bug 105593; as in kernels/cpu/simd_avx512.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mlaops/runtime.h"

namespace {

using clk = std::chrono::steady_clock;

volatile float g_sink;  // keeps every probe's result alive

// ---- DRAM read: each thread sums its contiguous share of a buffer larger than any cache ----

__attribute__((target("avx512f"))) float read_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"))) float read_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  float s = 0;
  for (float v : t) s += v;
  return s;
}

// ---- compute: 16 independent accumulator chains of one instruction, `iters` rounds ----

constexpr int kChains = 16;

__attribute__((target("avx512f,fma"))) void fma_f32(long iters) {
  __m512 a[kChains];
  for (int c = 0; c < kChains; ++c) a[c] = _mm512_set1_ps(0.001f * c);
  const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-4f);
  for (long n = 0; n < iters; ++n)
    for (int c = 0; c < kChains; ++c) a[c] = _mm512_fmadd_ps(a[c], x, y);
  for (int c = 1; c < kChains; ++c) a[0] = _mm512_add_ps(a[0], a[c]);
  g_sink = _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx512f,avx512bf16"))) void dot_bf16(long iters) {
  __m512 a[kChains];
  for (int c = 0; c < kChains; ++c) a[c] = _mm512_setzero_ps();
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0
  const __m512bh y = (__m512bh)_mm512_set1_epi16(0x3a80);  // ~0.001
  for (long n = 0; n < iters; ++n)
    for (int c = 0; c < kChains; ++c) a[c] = _mm512_dpbf16_ps(a[c], x, y);
  for (int c = 1; c < kChains; ++c) a[0] = _mm512_add_ps(a[0], a[c]);
  g_sink = _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx512f,avx512vnni"))) void dot_int8(long iters) {
  __m512i a[kChains];
  for (int c = 0; c < kChains; ++c) a[c] = _mm512_setzero_si512();
  const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(2);
  for (long n = 0; n < iters; ++n)
    for (int c = 0; c < kChains; ++c) a[c] = _mm512_dpbusd_epi32(a[c], x, y);
  for (int c = 1; c < kChains; ++c) a[0] = _mm512_add_epi32(a[0], a[c]);
  g_sink = static_cast<float>(_mm512_reduce_add_epi32(a[0]));
}

struct Result {
  std::string name, unit;
  int threads;
  double best, median;
};

template <class F>
Result measure(const char* name, const char* unit, int threads, int reps, double work, F&& body) {
  std::vector<double> rate;
  body(threads);  // warm-up (page faults, frequency)
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clk::now();
    body(threads);
    const double s = std::chrono::duration<double>(clk::now() - t0).count();
    rate.push_back(work / s / 1e9);
  }
  std::sort(rate.begin(), rate.end());
  Result out{name, unit, threads, rate.back(), rate[rate.size() / 2]};
  std::printf("%-22s %2d thread%s  best %8.1f  median %8.1f %s\n", name, threads, threads == 1 ? " " : "s",
              out.best, out.median, unit);
  std::fflush(stdout);
  return out;
}

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: bench_limits [--reps N] [--threads N] [--mib M] [--json FILE]\n"
               "  --reps N     timed runs per probe (default 7; best and median reported)\n"
               "  --threads N  the largest thread count (default 2; every count 1..N is measured)\n"
               "  --mib M      DRAM probe buffer in MiB (default 1024)\n"
               "  --json FILE  also write the results as JSON\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7, max_threads = 2;
  long mib = 1024;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "--reps") reps = std::atoi(value());
    else if (a == "--threads") max_threads = std::atoi(value());
    else if (a == "--mib") mib = std::atol(value());
    else if (a == "--json") json = value();
    else if (a == "--help" || a == "-h") usage(0);
    else usage(2);
  }
  if (reps < 1 || max_threads < 1 || mib < 64) usage(2);

  const mlaops::CpuFeatures& f = mlaops::cpu_features();
  const bool avx512 = mlaops::detected_isa() == mlaops::Isa::kAvx512;
  std::printf("bench_limits: mlaops %s, detected isa %s, %d reps\n", mlaops::version(),
              mlaops::isa_name(mlaops::detected_isa()), reps);

  const size_t bytes = static_cast<size_t>(mib) << 20;
  const size_t n = bytes / sizeof(float);
  float* buf = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!buf) {
    std::fprintf(stderr, "bench_limits: cannot allocate %ld MiB\n", mib);
    return 2;
  }
#pragma omp parallel for num_threads(max_threads) schedule(static)
  for (size_t i = 0; i < n; ++i) buf[i] = 1.0f;  // first touch spread like the reads

  const long iters = 4'000'000;  // per thread: 64 M instructions (~30-60 ms at peak)
  std::vector<Result> results;
  for (int t = 1; t <= max_threads; ++t) {
    if (f.avx2 || avx512) {
      results.push_back(measure("dram_read", "GB/s", t, reps, static_cast<double>(bytes), [&](int threads) {
        float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
          const size_t k = static_cast<size_t>(omp_get_thread_num()), m = static_cast<size_t>(omp_get_num_threads());
          const size_t lo = n * k / m / 64 * 64, hi = n * (k + 1) / m / 64 * 64;
          total += avx512 ? read_avx512(buf + lo, hi - lo) : read_avx2(buf + lo, hi - lo);
        }
        g_sink = total;
      }));
    }
    const double per = static_cast<double>(iters) * kChains * t;
    auto run = [&](void (*kernel)(long)) {
      return [kernel, iters](int threads) {
#pragma omp parallel num_threads(threads)
        kernel(iters);
      };
    };
    if (avx512 && f.fma) results.push_back(measure("fp32_fma", "GFLOP/s", t, reps, per * 32, run(fma_f32)));
    if (avx512 && f.avx512_bf16) results.push_back(measure("bf16_dot", "GFLOP/s", t, reps, per * 64, run(dot_bf16)));
    if (avx512 && f.avx512_vnni) results.push_back(measure("int8_vnni", "GOP/s", t, reps, per * 128, run(dot_int8)));
  }
  std::free(buf);

  if (!json.empty()) {
    FILE* o = std::fopen(json.c_str(), "w");
    if (!o) {
      std::fprintf(stderr, "bench_limits: cannot write %s\n", json.c_str());
      return 2;
    }
    std::fprintf(o, "{\"version\": \"%s\", \"isa\": \"%s\", \"reps\": %d, \"limits\": [\n", mlaops::version(),
                 mlaops::isa_name(mlaops::detected_isa()), reps);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::fprintf(o, "  {\"probe\": \"%s\", \"unit\": \"%s\", \"threads\": %d, \"best\": %.3f, \"median\": %.3f}%s\n",
                   r.name.c_str(), r.unit.c_str(), r.threads, r.best, r.median, i + 1 < results.size() ? "," : "");
    }
    std::fprintf(o, "]}\n");
    std::fclose(o);
  }
  return 0;
}
