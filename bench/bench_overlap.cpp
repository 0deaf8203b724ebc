// bench_overlap: does streaming from DRAM overlap with arithmetic on this machine? The evidence
// behind docs/performance.md's GQA decode analysis, as a program anyone can rerun.
//
// Two threads each read their share of two 64 MiB regions (K and V) as rows of 2 KiB, 256 bytes
// of K and 256 bytes of V at a time (the access pattern of the GQA decode kernel over a paged
// BnBsH cache with 8 KV heads), and after each 512 bytes run `work` rounds of 16 independent
// zmm FMAs (work 2 is about the vdpbf16ps count the GQA math needs per key and KV head, 4 is
// close to what the kernel spends). Each combination of work and software prefetch (none, or
// prefetcht0 / prefetcht1 / prefetchnta a distance ahead of each stream) prints its best of 4
// in GB/s of K + V read. x86 only (AVX-512); elsewhere it says so.
//
//   cmake --preset bench && cmake --build --preset bench
//   flock /tmp/mlaops-bench.lock build/bench/bench/bench_overlap
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mlaops/runtime.h"

#if defined(MLAOPS_ARCH_X86_64)
#include <immintrin.h>
#include <omp.h>

namespace {

constexpr int64_t kRow = 2048;    // bytes per cache row (8 heads x 128 channels x bf16)
constexpr int64_t kRows = 4096;   // rows per batch
constexpr int64_t kBatches = 8;   // 2 threads x 4 batches each

enum class Pf { kNone, kT0, kT1, kNta };

template <Pf P>
inline void pf(const char* p) {
  if constexpr (P == Pf::kT0) _mm_prefetch(p, _MM_HINT_T0);
  if constexpr (P == Pf::kT1) _mm_prefetch(p, _MM_HINT_T1);
  if constexpr (P == Pf::kNta) _mm_prefetch(p, _MM_HINT_NTA);
}

// One batch: K and V rows [0, kRows); returns a checksum so nothing is optimised away.
template <Pf P>
__attribute__((target("avx512f,fma"))) float batch(const char* K, const char* V, int64_t dist, int work) {
  __m512 acc[16];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const __m512 one = _mm512_set1_ps(1.0001f);
  const int64_t bytes = kRows * kRow;
  for (int64_t off = 0; off < bytes; off += 256) {
    const char* k = K + off;
    const char* v = V + off;
    if (P != Pf::kNone && off + dist + 256 <= bytes)
      for (int l = 0; l < 4; ++l) {
        pf<P>(k + dist + 64 * l);
        pf<P>(v + dist + 64 * l);
      }
    __m512 x = _mm512_setzero_ps();
    for (int l = 0; l < 4; ++l) {
      x = _mm512_add_ps(x, _mm512_loadu_ps(reinterpret_cast<const float*>(k + 64 * l)));
      x = _mm512_add_ps(x, _mm512_loadu_ps(reinterpret_cast<const float*>(v + 64 * l)));
    }
    for (int w = 0; w < work; ++w)
      for (auto& a : acc) a = _mm512_fmadd_ps(a, one, x);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float lanes[16];  // (not _mm512_reduce_add_ps: GCC 12 bug 105593 warns in it)
  _mm512_store_ps(lanes, s);
  float sum = 0;
  for (float f : lanes) sum += f;
  return sum;
}

template <Pf P>
double gbps(const char* K, const char* V, int64_t dist, int work) {
  double best = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < 4; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    float total = 0;
#pragma omp parallel num_threads(2) reduction(+ : total)
    {
      const int t = omp_get_thread_num();
      for (int64_t b = t; b < kBatches; b += 2) total += batch<P>(K + b * kRows * kRow, V + b * kRows * kRow, dist, work);
    }
    sink = sink + total;
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * kBatches * kRows * kRow / best / 1e9;
}

}  // namespace

int main() {
  if (mlaops::detected_isa() != mlaops::Isa::kAvx512) {
    std::printf("bench_overlap: needs AVX-512\n");
    return 0;
  }
  const size_t bytes = static_cast<size_t>(kBatches * kRows * kRow);
  char* K = static_cast<char*>(std::aligned_alloc(64, bytes));
  char* V = static_cast<char*>(std::aligned_alloc(64, bytes));
  if (K == nullptr || V == nullptr) return 1;
  std::memset(K, 1, bytes);
  std::memset(V, 1, bytes);
  std::printf("K + V %.0f MiB, 2 threads, best of 4, GB/s\n", 2.0 * bytes / (1 << 20));
  std::printf("%-6s %8s %10s %10s %10s %10s %10s\n", "work", "none", "t1 4K", "t1 32K", "t0 4K", "nta 4K", "t1 128K");
  for (int work : {0, 1, 2, 4, 8, 16}) {
    std::printf("%-6d %8.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", work, gbps<Pf::kNone>(K, V, 0, work),
                gbps<Pf::kT1>(K, V, 4096, work), gbps<Pf::kT1>(K, V, 32768, work), gbps<Pf::kT0>(K, V, 4096, work),
                gbps<Pf::kNta>(K, V, 4096, work), gbps<Pf::kT1>(K, V, 131072, work));
  }
  std::free(K);
  std::free(V);
  return 0;
}
#else
int main() {
  std::printf("bench_overlap: unavailable on this architecture (an x86 AVX-512 probe)\n");
  return 0;
}
#endif
