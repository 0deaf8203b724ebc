// The machine-limits probe of the benchmark suite (suite.h): DRAM read bandwidth and the fp32 FMA,
// bf16 dot-product (vdpbf16ps) and int8 VNNI (vpdpbusd) instruction throughput, with 1..N threads,
// best and median of `reps` runs. Each compute probe runs 16 independent accumulator chains of one
// zmm instruction (more than latency x throughput on Zen 4/5 and Intel cores); the DRAM probe sums
// a buffer of >= 1 GiB split between the threads. docs/performance.md reads the results. The
// probes are x86 code (AVX2 / AVX-512); on other architectures the probe reports that it is
// unavailable and the bounds fall back to the anchors (suite.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/suite.h"
#include "mlaops/runtime.h"

#if defined(MLAOPS_ARCH_X86_64)
#include <immintrin.h>
#include <omp.h>

// GCC 12's _mm512_reduce_* pass an _mm512_undefined_*() operand it then reports as
// uninitialized (GCC bug 105593; as in kernels/cpu/common/simd_avx512.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

namespace bench {

#if defined(MLAOPS_ARCH_X86_64)
namespace {

using clk = std::chrono::steady_clock;

volatile float g_sink;  // keeps every probe's result alive

// ---- DRAM read: each thread sums its contiguous share of a buffer larger than any cache, as two
// interleaved streams (its two halves) with software prefetches (prefetcht1) 4 KiB ahead of each.
// Measured here in one window: one plain stream per thread 38 GB/s, this pattern 53 GB/s (and up to
// ~60 with 4-8 streams prefetched 64+ KiB ahead); the plain read under-reported what a kernel that
// prefetches can stream.

constexpr size_t kPfAhead = 4096 / sizeof(float);  // floats

__attribute__((target("avx512f"))) float read_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  const size_t h = n / 2 / 64 * 64;
  const float* q = p + h;
  for (size_t i = 0; i + 64 <= h; i += 64) {
    for (size_t l = 0; l < 64; l += 16) {
      if (i + kPfAhead + l < h) {
        _mm_prefetch(reinterpret_cast<const char*>(p + i + kPfAhead + l), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(q + i + kPfAhead + l), _MM_HINT_T1);
      }
    }
    a0 = _mm512_add_ps(a0, _mm512_add_ps(_mm512_load_ps(p + i), _mm512_load_ps(q + i)));
    a1 = _mm512_add_ps(a1, _mm512_add_ps(_mm512_load_ps(p + i + 16), _mm512_load_ps(q + i + 16)));
    a2 = _mm512_add_ps(a2, _mm512_add_ps(_mm512_load_ps(p + i + 32), _mm512_load_ps(q + i + 32)));
    a3 = _mm512_add_ps(a3, _mm512_add_ps(_mm512_load_ps(p + i + 48), _mm512_load_ps(q + i + 48)));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"))) float read_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  const size_t h = n / 2 / 32 * 32;
  const float* q = p + h;
  for (size_t i = 0; i + 32 <= h; i += 32) {
    for (size_t l = 0; l < 32; l += 16) {
      if (i + kPfAhead + l < h) {
        _mm_prefetch(reinterpret_cast<const char*>(p + i + kPfAhead + l), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(q + i + kPfAhead + l), _MM_HINT_T1);
      }
    }
    a0 = _mm256_add_ps(a0, _mm256_add_ps(_mm256_load_ps(p + i), _mm256_load_ps(q + i)));
    a1 = _mm256_add_ps(a1, _mm256_add_ps(_mm256_load_ps(p + i + 8), _mm256_load_ps(q + i + 8)));
    a2 = _mm256_add_ps(a2, _mm256_add_ps(_mm256_load_ps(p + i + 16), _mm256_load_ps(q + i + 16)));
    a3 = _mm256_add_ps(a3, _mm256_add_ps(_mm256_load_ps(p + i + 24), _mm256_load_ps(q + i + 24)));
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


template <class F>
Probe measure(const char* name, const char* unit, int threads, int reps, double work, F&& body) {
  std::vector<double> rate;
  body(threads);  // warm-up (page faults, frequency)
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clk::now();
    body(threads);
    const double s = std::chrono::duration<double>(clk::now() - t0).count();
    rate.push_back(work / s / 1e9);
  }
  std::sort(rate.begin(), rate.end());
  Probe out;
  out.name = name;
  out.unit = unit;
  out.threads = threads;
  out.best = rate.back();
  out.median = rate[rate.size() / 2];
  return out;
}

}  // namespace

std::vector<Probe> measure_limits(const ProbeOptions& o, const std::function<void(const Probe&)>& on_result) {
  const mlaops::CpuFeatures& f = mlaops::cpu_features();
  const bool avx512 = mlaops::detected_isa() == mlaops::Isa::kAvx512;
  const size_t bytes = o.dram_bytes / 256 * 256;
  const size_t n = bytes / sizeof(float);
  std::vector<Probe> results;
  auto add = [&](Probe p) {
    if (on_result) on_result(p);
    results.push_back(std::move(p));
  };
  float* buf = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (buf != nullptr) {
#pragma omp parallel for num_threads(o.max_threads) schedule(static)
    for (size_t i = 0; i < n; ++i) buf[i] = 1.0f;  // first touch spread like the reads
  }
  for (int t = 1; t <= o.max_threads; ++t) {
    if (buf != nullptr && (f.avx2 || avx512)) {
      add(measure("dram_read", "GB/s", t, o.reps, static_cast<double>(bytes), [&](int threads) {
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
    const long iters = o.iters;
    const double per = static_cast<double>(iters) * kChains * t;
    auto run = [iters](void (*kernel)(long)) {
      return [kernel, iters](int threads) {
#pragma omp parallel num_threads(threads)
        kernel(iters);
      };
    };
    if (o.dram_only) continue;
    if (avx512 && f.fma) add(measure("fp32_fma", "GFLOP/s", t, o.reps, per * 32, run(fma_f32)));
    if (avx512 && f.avx512_bf16) add(measure("bf16_dot", "GFLOP/s", t, o.reps, per * 64, run(dot_bf16)));
    if (avx512 && f.avx512_vnni) add(measure("int8_vnni", "GOP/s", t, o.reps, per * 128, run(dot_int8)));
  }
  std::free(buf);
  return results;
}
#else
std::vector<Probe> measure_limits(const ProbeOptions&, const std::function<void(const Probe&)>&) {
  std::printf("  unavailable on this architecture (the probes are x86 AVX2 / AVX-512 code)\n");
  return {};
}
#endif

Limits limits_for(const std::vector<Probe>& probes, int threads) {
  Limits l;
  bool bw = false, bf16 = false, int8 = false;  // measured: a repeated probe counts by its best
  auto take = [](double& into, bool& seen, double v) {
    into = seen ? std::max(into, v) : v;
    seen = true;
  };
  bool fp32 = false;
  for (const Probe& p : probes) {
    if (p.threads != threads) continue;
    if (p.name == "dram_read") take(l.bw, bw, p.best * 1e9);
    else if (p.name == "bf16_dot") take(l.bf16, bf16, p.best * 1e9);
    else if (p.name == "int8_vnni") take(l.int8, int8, p.best * 1e9);
    else if (p.name == "fp32_fma") take(l.fp32, fp32, p.best * 1e9);
    else continue;
    l.measured = true;
  }
  // bf16 work may run as exact fp32 products (a bf16 x bf16 product is exact in fp32; the oneDNN
  // GEMM route's f32 type does so): its compute bound is the faster of the two units. On Intel
  // Xeons without AMX the fp32 FMAs are twice the vdpbf16ps rate (docs/performance.md).
  if (fp32 && bf16 && l.fp32 > l.bf16) l.bf16 = l.fp32;
  return l;
}

}  // namespace bench
