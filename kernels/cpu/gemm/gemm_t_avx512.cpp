// AVX-512 BF16 / VNNI transposed-NZ GEMMs bf16_t / s8_t / f16_t (GemmTArgs; layouts and
// semantics: gemm.h; reference: gemm_scalar.cpp). The set gemm_avx512 (gemm_avx512.cpp) holds them; the families of gemm.cpp pick them.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/gemm/gemm.h"
#include "kernels/cpu/gemm/gemm_avx512.h"
#include "kernels/cpu/common/simd_avx512.h"

namespace mlaops::kernels {
namespace {

using namespace avx512;

// =========================== transposed NZ (GemmTArgs) ===========================
// W^T tiles: for 16 outputs n and c0 k values one row-major 16 x c0 tile (32 bytes a row), so
// a 64-byte load holds rows n, n+1 of the tile. Two drivers:
//   * M <= kStreamMaxM (decode): W read in address order, 4 k panels per tile visit, dot products
//     along k (below), sums folded into the caller's scratch (gemm_t_stream);
//       s8_t  : vpdpbusd of (W ^ 0x80) (unsigned W + 128) with A's 32 bytes in both 256-bit
//               halves: 16 int32 lanes = 8 partial sums of row n and 8 of row n+1;
//               C = sum - 128 * rowsum(A);
//       bf16_t: vdpbf16ps the same way (A's 16 bf16 in both halves);
//       f16_t : a tile row (16 fp16) widened to 16 fp32 lanes, FMA with A's widened 16 k values;
//     per-row partial sums are reduced horizontally (unpack / shuffle tree). The K tail
//     zero-masks A (W's padding is zero in storage); A is never read past K.
//   * larger M: the tiles of a K block are transposed into the panel kernels' layouts and run by
//     their register tiles, no horizontal sums (s8_t_panels_avx512 in gemm_s8_avx512.cpp,
//     bf16_t_panels_avx512 / f16_t_panels_avx512 in gemm_avx512.cpp). Tiles of 3 rows x 16
//     outputs with horizontal sums ran MlaPreprocess's W_UQ at T = 1024 at 82 % of the int8
//     peak, the panels at 90 % (docs/performance.md).

struct AddI {
  __m512i operator()(__m512i a, __m512i b) const { return _mm512_add_epi32(a, b); }
};
struct AddF {
  __m512i operator()(__m512i a, __m512i b) const {
    return _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)));
  }
};

// Per 128-bit lane: (a0 + a2, b0 + b2, a1 + a3, b1 + b3).
template <class Add>
inline __m512i red_l1(__m512i a, __m512i b) {
  return Add()(unpacklo32(a, b), unpackhi32(a, b));
}
// From two red_l1 results (of a, b and c, d): per 128-bit lane the lane sums (a, b, c, d).
template <class Add>
inline __m512i red_l2(__m512i x, __m512i y) {
  return Add()(unpacklo64(x, y), unpackhi64(x, y));
}
// [x.L0 + x.L1, x.L2 + x.L3, y.L0 + y.L1, y.L2 + y.L3] (128-bit lanes).
template <class Add>
inline __m512i red_l3(__m512i x, __m512i y) {
  return Add()(shuf128<_MM_SHUFFLE(2, 0, 2, 0)>(x, y), shuf128<_MM_SHUFFLE(3, 1, 3, 1)>(x, y));
}

// The last level of reducing 8 accumulators (lanes 0-7 of v[j] partial sums of row 2j, lanes 8-15
// of row 2j+1) to the 16 row sums in natural order, from the halves y0 (v[0..3]) and y1 (v[4..7]).
template <class Add>
inline __m512i reduce_pairs_last(__m512i y0, __m512i y1) {
  // lanes: rows 0 2 4 6 | 1 3 5 7 | 8 10 12 14 | 9 11 13 15
  const __m512i z = red_l3<Add>(y0, y1);
  return _mm512_maskz_permutexvar_epi32(kAll16, _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15), z);
}
using avx512::mask32;  // simd_avx512.h

// ---- small M (decode, M <= kStreamMaxM): W in address order ----
// Such a call is bound by reading W, and W^T's NZ storage puts the 16-row tiles of one k panel
// side by side: [C1][R1][16][c0]. So the thread walks its tiles [nt0, nt1) kStreamPanels k
// panels at a time: that many sequential streams (one per panel), each prefetched into L2
// kStreamPf bytes ahead (continuing into the next group of panels); every row of A uses the
// visit's W from L1. A tile's kAcc accumulators of one visit are folded (the first levels of
// the reduction tree, which is linear) into kState vectors that are added up in a small
// per-thread scratch ([tiles][M][kState]) and reduced once after the last panel. Measured on
// the W_DQKV GEMV (7168 x 2112 int8, M = 1): one panel per visit (a single stream) ran
// 0.6-0.75x the speed of the panel-layout GEMV, the M-tiled order below 0.6x, 4 panels per
// visit with L2 prefetch 0.95-1.1x; at M = 4..8 20-25 GB/s against 14-22 for the M tiles,
// at M = 16 even, at M = 32 slower.
constexpr int64_t kStreamPf = 1024;  // bytes
constexpr int kStreamPanels = 4;     // k panels per visit of a tile: 4 sequential streams
constexpr int64_t kStreamMaxM = kGemmTStreamMaxM;

struct S8Stream {
  using T = int8_t;
  using C = int32_t;
  using Add = AddI;
  static constexpr int64_t kC0 = 32;
  static constexpr int kAcc = 8, kState = 2;
  static __m512i load_a(const int8_t* a, int64_t valid) { return dup256(_mm256_maskz_loadu_epi8(mask32(valid), a)); }
  static void step(__m512i* acc, const int8_t* w, __m512i av) {
    const __m512i x80 = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      acc[j] = dpbusd(acc[j], _mm512_xor_si512(_mm512_loadu_si512(w + 64 * j), x80), av);
  }
  // M >= 4: a tile made unsigned once per visit (dst 64-byte aligned), then step_raw per row.
  static constexpr bool kPrep = true;
  static void prep(int8_t* dst, const int8_t* w) {
    const __m512i x80 = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) _mm512_store_si512(dst + 64 * j, _mm512_xor_si512(_mm512_loadu_si512(w + 64 * j), x80));
  }
  static void step_raw(__m512i* acc, const int8_t* u, __m512i av) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc[j] = dpbusd(acc[j], _mm512_load_si512(u + 64 * j), av);
  }
  static void finish(const __m512i* st, int32_t* c, __mmask16 nmask, const int32_t* rowsum) {
    // -128 * rowsum(A[m]), modulo 2^32 like the accumulation
    const __m512i z = reduce_pairs_last<AddI>(st[0], st[1]);
    const auto adj = static_cast<int32_t>(static_cast<uint32_t>(*rowsum) * 0xFFFFFF80u);
    _mm512_mask_storeu_epi32(c, nmask, _mm512_add_epi32(z, _mm512_set1_epi32(adj)));
  }
};

struct Bf16Stream {
  using T = uint16_t;
  using C = float;
  using Add = AddF;
  static constexpr int64_t kC0 = 16;
  static constexpr int kAcc = 8, kState = 2;
  static __m512i load_a(const uint16_t* a, int64_t valid) { return dup256(_mm256_maskz_loadu_epi16(mask16(valid), a)); }
  static void step(__m512i* acc, const uint16_t* w, __m512i av) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm512_castps_si512(dpbf16(_mm512_castsi512_ps(acc[j]), _mm512_loadu_si512(w + 32 * j), av));
  }
  static constexpr bool kPrep = false;
  static void finish(const __m512i* st, float* c, __mmask16 nmask, const int32_t*) {
    _mm512_mask_storeu_ps(c, nmask, _mm512_castsi512_ps(reduce_pairs_last<AddF>(st[0], st[1])));
  }
};

struct F16Stream {
  using T = uint16_t;
  using C = float;
  using Add = AddF;
  static constexpr int64_t kC0 = 16;
  static constexpr int kAcc = 16, kState = 4;  // one accumulator per W row
  static __m512i load_a(const uint16_t* a, int64_t valid) {
    return _mm512_castps_si512(cvtph(_mm256_maskz_loadu_epi16(mask16(valid), a)));
  }
  static void step(__m512i* acc, const uint16_t* w, __m512i av) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      const __m512 wv = cvtph(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16 * j)));
      acc[j] = _mm512_castps_si512(_mm512_fmadd_ps(_mm512_castsi512_ps(av), wv, _mm512_castsi512_ps(acc[j])));
    }
  }
  static constexpr bool kPrep = false;
  static void finish(const __m512i* st, float* c, __mmask16 nmask, const int32_t*) {  // 16 rows: the last two levels
    const __m512i z = red_l3<AddF>(red_l3<AddF>(st[0], st[1]), red_l3<AddF>(st[2], st[3]));
    _mm512_mask_storeu_ps(c, nmask, _mm512_castsi512_ps(z));
  }
};

// acc[4i .. 4i+3] -> st[i]: the first two levels of the horizontal reduction.
template <class Add, int S>
inline void fold(const __m512i* acc, __m512i* st) {
#pragma GCC unroll 4
  for (int i = 0; i < S; ++i)
    st[i] = red_l2<Add>(red_l1<Add>(acc[4 * i], acc[4 * i + 1]), red_l1<Add>(acc[4 * i + 2], acc[4 * i + 3]));
}

template <class P>
void gemm_t_stream(const GemmTArgs& g, const int32_t* rowsum) {
  using T = typename P::T;
  using Add = typename P::Add;
  constexpr int KP = kStreamPanels;
  constexpr int64_t c0 = P::kC0, tile = 16 * c0, tile_bytes = tile * static_cast<int64_t>(sizeof(T));
  constexpr int S = P::kState;
  const int64_t M = g.M;
  const auto* A = static_cast<const T*>(g.A);
  const auto* W = static_cast<const T*>(g.W);
  const int64_t nt0 = g.n_begin / 16, nt1 = (g.n_end + 15) / 16, nts = nt1 - nt0;
  const int64_t panels = (g.K + c0 - 1) / c0, wstep_bytes = g.r1 * tile_bytes;
  const int64_t run_bytes = nts * tile_bytes;  // one panel's tiles of this call, contiguous
  struct Z {
    __m512i v;
  };
  static_assert(S <= 4 && sizeof(Z) == 64, "gemm_scratch_bytes bounds the folded sums at 4 vectors a row");
  Z* const sums = static_cast<Z*>(gemm_t_block(g.scratch, M));  // [nts][M][S] folded sums (gemm_scratch_bytes)
  // int8, M >= 4: the visit's tiles made unsigned once, not once per row (W_DQKV, M = 8:
  // 19-23 -> 23-24 GB/s in a probe; at M = 2 it cost more than it saved)
  const bool prepped = P::kPrep && M >= 4;
  alignas(64) T vis[KP * tile];
  for (int64_t kp = 0; kp < panels; kp += KP) {
    const int kn = static_cast<int>(std::min<int64_t>(KP, panels - kp));
    const bool first = kp == 0, last = kp + kn == panels;
    int64_t valid[KP];  // k values of each panel of this visit
#pragma GCC unroll 4
    for (int q = 0; q < KP; ++q) valid[q] = std::clamp<int64_t>(g.K - (kp + q) * c0, 0, c0);
    const char* run = reinterpret_cast<const char*>(W + nt0 * tile) + kp * wstep_bytes;
    for (int64_t i = 0; i < nts; ++i) {
      const int64_t pf = i * tile_bytes + kStreamPf;  // address order, on into the next panels
#pragma GCC unroll 4
      for (int q = 0; q < KP; ++q) {
        if (q >= kn) break;
        const char* pp = pf < run_bytes ? run + q * wstep_bytes + pf
                         : kp + q + KP < panels ? run + (q + KP) * wstep_bytes + (pf - run_bytes) : nullptr;
        if (pp) prefetch_range_l2(pp, tile_bytes);
      }
      Z* st = sums + i * M * S;
      if constexpr (P::kPrep)
        if (prepped)
          for (int q = 0; q < kn; ++q) P::prep(vis + q * tile, reinterpret_cast<const T*>(run + q * wstep_bytes + i * tile_bytes));
      for (int64_t m = 0; m < M; ++m) {  // the visit's W (KP x 512 bytes) stays in L1 across rows
        __m512i acc[P::kAcc], f[S];
#pragma GCC unroll 16
        for (int j = 0; j < P::kAcc; ++j) acc[j] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int q = 0; q < KP; ++q) {
          if (q >= kn) continue;
          const __m512i a = P::load_a(A + m * g.lda + (kp + q) * c0, valid[q]);
          const T* wt = reinterpret_cast<const T*>(run + q * wstep_bytes + i * tile_bytes);
          if constexpr (P::kPrep) {
            if (prepped) {
              P::step_raw(acc, vis + q * tile, a);
              continue;
            }
          }
          P::step(acc, wt, a);
        }
        fold<Add, S>(acc, f);
#pragma GCC unroll 4
        for (int j = 0; j < S; ++j) f[j] = first ? f[j] : Add()(f[j], st[m * S + j].v);
        if (!last) {
#pragma GCC unroll 4
          for (int j = 0; j < S; ++j) st[m * S + j].v = f[j];
        } else {
          const int64_t n = (nt0 + i) * 16;
          P::finish(f, static_cast<typename P::C*>(g.C) + m * g.ldc + n, mask16(g.n_end - n),
                    rowsum ? rowsum + m : nullptr);
        }
      }
    }
  }
}

}  // namespace

void s8_t_avx512(const GemmTArgs& g) {
  if (gemm_trivial<int32_t>(g)) return;
  const int32_t* rowsum = g.a_rowsum;
  if (rowsum == nullptr) {
    auto* const sums = static_cast<int32_t*>(g.scratch);  // [M] (gemm_scratch_bytes)
    s8_row_sums(static_cast<const int8_t*>(g.A), g.lda, g.M, g.K, sums);
    rowsum = sums;
  }
  if (g.M <= kStreamMaxM) return gemm_t_stream<S8Stream>(g, rowsum);
  s8_t_panels_avx512(g, rowsum);
}

void bf16_t_avx512(const GemmTArgs& g) {
  if (gemm_trivial<float>(g)) return;
  if (g.M <= kStreamMaxM) return gemm_t_stream<Bf16Stream>(g, nullptr);
  bf16_t_panels_avx512(g);
}

void f16_t_avx512(const GemmTArgs& g) {
  if (gemm_trivial<float>(g)) return;
  if (g.M <= kStreamMaxM) return gemm_t_stream<F16Stream>(g, nullptr);
  f16_t_panels_avx512(g);
}

}  // namespace mlaops::kernels
