// AVX-512 BF16 / VNNI panel GEMM (layouts and semantics: gemm.h; reference: gemm_scalar.cpp).
//
// bf16 (vdpbf16ps): for each pair of K rows of a 16-column panel one vector holds
//   lane i = (B[k][i], B[k+1][i]) (NZ: one 64-byte load = rows k, k+1, then one vpermw;
//   ND: two row loads, masked for a partial last panel, then one vpermt2w), and the A pair
//   (A[m][k], A[m][k+1]) is broadcast as one 32-bit value. Register tile: up to 8 rows x
//   3 panels (48 columns), fp32 accumulation. An odd last K row is paired with zero; nothing
//   past row K - 1 of A or B is read.
//
// f16 (panels): fp16 rows widened with vcvtph2ps, fp32 FMA (section below). The int8 kernels
// (s8, s8_t for M > 8, the row sums) are in gemm_s8_avx512.cpp, the other transposed-NZ
// kernels (GemmTArgs) in gemm_t_avx512.cpp.
//
// gemm_avx512 runs only where the CPU has AVX512_BF16 and AVX512_VNNI; the family (gemm.cpp) has
// rows mixing these kernels with the AVX2 ones for CPUs that lack either.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/cpu/gemm/gemm.h"
#include "kernels/cpu/gemm/gemm_avx512.h"
#include "kernels/cpu/common/simd_avx512.h"

namespace mlaops::kernels {
namespace {

using namespace avx512;

// =============================== bf16 ===============================

constexpr int kBf16MR = 8;         // rows per register tile
constexpr int kBf16NP = 3;         // 16-column panels per register tile
constexpr int64_t kBf16KC = 384;   // K block (even) when several M tiles share the B block
constexpr int64_t kNdPf = 8;       // ND B: rows prefetched ahead
constexpr int64_t kNdWholeRows = 256 * 1024;  // ND B segments up to this size: whole rows prefetched

// vpermw index: result word 2i = source word i (row k), 2i+1 = source word 16+i (row k+1).
inline __m512i bf16_pair_index() {
  alignas(64) static constexpr uint16_t idx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                  8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_load_si512(idx);
}

// vpermt2w index: word 2i = a[i] (row k), 2i+1 = b[i] (row k+1, source index 32+i).
inline __m512i bf16_pair_index2() {
  alignas(64) static constexpr uint16_t idx[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                  8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  return _mm512_load_si512(idx);
}

struct Bf16Tile {
  const uint16_t* a;  // A + m0 * lda + k0
  int64_t lda;
  const uint16_t* b;  // first panel of the tile, row k0
  int64_t ldb, panel_stride;
  int64_t kl;         // rows of this K block
  float* c;           // C + m0 * ldc + first column of the tile
  int64_t ldc;
  __mmask16 last_mask;  // valid columns of the last panel of the tile
  bool accumulate;      // add to C (later K blocks) instead of storing
  const uint16_t* pf = nullptr;  // ND: prefetch pf_bytes of row k + kNdPf at pf + k * ldb
  int64_t pf_bytes = 0;
};

template <int MR, int NP, bool ND>
void bf16_tile(const Bf16Tile& t) {
  const __m512i perm = bf16_pair_index();
  [[maybe_unused]] const __m512i perm2 = bf16_pair_index2();
  __m512 acc[MR][NP];
  zero_tile(acc);

  const uint16_t* bp[NP];
  __mmask32 lm[NP];
#pragma GCC unroll 3
  for (int p = 0; p < NP; ++p) {
    bp[p] = t.b + p * t.panel_stride;
    lm[p] = (p == NP - 1) ? t.last_mask : 0xFFFFu;
  }
  const uint16_t* a = t.a;
  const int64_t lda = t.lda, ldb = t.ldb, kl = t.kl;

  int64_t k = 0;
  for (; k + 2 <= kl; k += 2) {
    if constexpr (ND) {
      if (t.pf_bytes > 0 && k + kNdPf + 1 < kl) {
        prefetch_range_l2(t.pf + (k + kNdPf) * ldb, t.pf_bytes);
        prefetch_range_l2(t.pf + (k + kNdPf + 1) * ldb, t.pf_bytes);
      }
    }
    __m512i bv[NP];
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) {
      if constexpr (ND) {
        const __m512i r0 = _mm512_maskz_loadu_epi16(lm[p], bp[p] + k * ldb);
        const __m512i r1 = _mm512_maskz_loadu_epi16(lm[p], bp[p] + (k + 1) * ldb);
        bv[p] = _mm512_permutex2var_epi16(r0, perm2, r1);
      } else {
        bv[p] = _mm512_permutexvar_epi16(perm, _mm512_loadu_si512(bp[p] + k * 16));
      }
    }
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512i av = _mm512_set1_epi32(load_i32(a + m * lda + k));
#pragma GCC unroll 3
      for (int p = 0; p < NP; ++p) acc[m][p] = dpbf16(acc[m][p], bv[p], av);
    }
  }
  if (k < kl) {  // odd K: the last row pairs with zero
    __m512i bv[NP];
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) {
      const __m512i r0 = _mm512_maskz_loadu_epi16(lm[p], bp[p] + k * ldb);  // row k, zeros above
      bv[p] = _mm512_permutexvar_epi16(perm, r0);                            // (B[k][i], 0)
    }
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512i av = _mm512_set1_epi32(static_cast<int32_t>(a[m * lda + k]));
#pragma GCC unroll 3
      for (int p = 0; p < NP; ++p) acc[m][p] = dpbf16(acc[m][p], bv[p], av);
    }
  }

#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    float* c = t.c + m * t.ldc;
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) {
      __m512 v = acc[m][p];
      if (p < NP - 1) {
        if (t.accumulate) v = _mm512_add_ps(v, _mm512_loadu_ps(c + p * 16));
        _mm512_storeu_ps(c + p * 16, v);
      } else {
        const auto sm = static_cast<__mmask16>(lm[p]);
        if (t.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(sm, c + p * 16));
        _mm512_mask_storeu_ps(c + p * 16, sm, v);
      }
    }
  }
}

using Bf16TileFn = void (*)(const Bf16Tile&);

template <bool ND, size_t... I>
constexpr std::array<Bf16TileFn, sizeof...(I)> bf16_table(std::index_sequence<I...>) {
  return {&bf16_tile<static_cast<int>(I / kBf16NP) + 1, static_cast<int>(I % kBf16NP) + 1, ND>...};
}

// M <= 2 with ND B [K, N] (ldb): a GEMV that streams B row by row in address order, W columns
// per pass (W = 256 for M = 1, 128 for M = 2: 16 accumulators). Rows k and k+1 are pair-
// interleaved by vpunpcklwd / vpunpckhwd, which pair columns 8j..8j+3 (lo) and 8j+4..8j+7 (hi)
// of each 128-bit lane j; the store puts the columns back in order.
template <int MR>
void bf16_gemv_nd(const GemmArgs& g) {
  constexpr int kChunks = MR == 1 ? 8 : 4;  // 32-column chunks per pass
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* B = static_cast<const uint16_t*>(g.B);
  auto* C = static_cast<float*>(g.C);
  const int64_t K = g.K, ldb = g.ldb;
  alignas(64) static constexpr int32_t kIdx[2][16] = {{0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23},
                                                      {8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31}};
  const __m512i idx0 = _mm512_load_si512(kIdx[0]), idx1 = _mm512_load_si512(kIdx[1]);
  // Each pass prefetches its columns kNdPf rows ahead into L2: the passes read rows in
  // pieces (512 bytes of each 1 KiB row of W_UK, 128 x 512) that the hardware prefetcher
  // follows poorly: 2 threads streamed W_UK heads at 19.5 GB/s without, 26 GB/s with
  // (the NZ panel path 30-35 GB/s).
  for (int64_t n0 = g.n_begin; n0 < g.n_end; n0 += kChunks * 32) {
    const int64_t pf_bytes = std::min<int64_t>(kChunks * 32, g.n_end - n0) * 2;
    __m512 acc[MR][kChunks][2];
    __mmask32 lm[kChunks];
#pragma GCC unroll 8
    for (int c = 0; c < kChunks; ++c) {
      const int64_t valid = std::clamp<int64_t>(g.n_end - (n0 + c * 32), 0, 32);
      lm[c] = valid >= 32 ? 0xFFFFFFFFu : ((1u << valid) - 1u);
#pragma GCC unroll 2
      for (int m = 0; m < MR; ++m) acc[m][c][0] = acc[m][c][1] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K; k += 2) {
      const bool pair = k + 1 < K;
      __m512i av[MR];
#pragma GCC unroll 2
      for (int m = 0; m < MR; ++m) {
        const uint16_t* a = A + m * g.lda + k;
        av[m] = _mm512_set1_epi32(pair ? load_i32(a) : static_cast<int32_t>(a[0]));
      }
      const uint16_t* r0 = B + k * ldb + n0;
      if (k + kNdPf + 1 < K) {  // this pass's columns of rows k + kNdPf, k + kNdPf + 1
        prefetch_range_l2(B + (k + kNdPf) * ldb + n0, pf_bytes);
        prefetch_range_l2(B + (k + kNdPf + 1) * ldb + n0, pf_bytes);
      }
#pragma GCC unroll 8
      for (int c = 0; c < kChunks; ++c) {
        if (lm[c] == 0) continue;
        const __m512i x = _mm512_maskz_loadu_epi16(lm[c], r0 + c * 32);
        const __m512i y = pair ? _mm512_maskz_loadu_epi16(lm[c], r0 + ldb + c * 32) : _mm512_setzero_si512();
        const __m512i lo = _mm512_unpacklo_epi16(x, y), hi = _mm512_unpackhi_epi16(x, y);
#pragma GCC unroll 2
        for (int m = 0; m < MR; ++m) {
          acc[m][c][0] = dpbf16(acc[m][c][0], lo, av[m]);
          acc[m][c][1] = dpbf16(acc[m][c][1], hi, av[m]);
        }
      }
    }
#pragma GCC unroll 2
    for (int m = 0; m < MR; ++m) {
      float* c_row = C + m * g.ldc + n0;
#pragma GCC unroll 8
      for (int c = 0; c < kChunks; ++c) {
        if (lm[c] == 0) continue;
        const __m512 v0 = _mm512_permutex2var_ps(acc[m][c][0], idx0, acc[m][c][1]);
        const __m512 v1 = _mm512_permutex2var_ps(acc[m][c][0], idx1, acc[m][c][1]);
        _mm512_mask_storeu_ps(c_row + c * 32, static_cast<__mmask16>(lm[c]), v0);
        _mm512_mask_storeu_ps(c_row + c * 32 + 16, static_cast<__mmask16>(lm[c] >> 16), v1);
      }
    }
  }
}

void bf16_avx512(const GemmArgs& g) {
  const int64_t M = g.M, K = g.K;
  if (gemm_trivial<float>(g)) return;
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* B = static_cast<const uint16_t*>(g.B);
  auto* C = static_cast<float*>(g.C);
  // NZ (and ND with N == 16): rows k and k+1 of a panel are adjacent, one 64-byte load.
  const bool nd = g.ldb != 16;
  if (nd && M <= 2 && g.panel_stride == 16) {  // ND row-major B, decode GEMV: stream B in address order
    if (M == 1) bf16_gemv_nd<1>(g);
    else bf16_gemv_nd<2>(g);
    return;
  }
  static constexpr auto kNz = bf16_table<false>(std::make_index_sequence<kBf16MR * kBf16NP>());
  static constexpr auto kNd = bf16_table<true>(std::make_index_sequence<kBf16MR * kBf16NP>());

  const int64_t p_begin = g.n_begin / 16, p_end = (g.n_end + 15) / 16;
  const int64_t tiles = (M + kBf16MR - 1) / kBf16MR;
  const int64_t kc = tiles == 1 ? K : kBf16KC;
  // ND B with several M tiles: each K block of a panel group is copied once into NZ panels
  // (zero past N), so the tiles load a row pair with one 64-byte load instead of two row loads
  // and a vpermt2w (W_UK 128 x 512 at M = 256: 80-83 % of the bf16 peak ND, 91-95 % NZ).
  const bool pack = nd && tiles > 1;
  const auto& table = nd && !pack ? kNd : kNz;
  alignas(64) uint16_t packed[kBf16KC * 16 * kBf16NP];  // [kBf16NP][kBf16KC][16] when pack
  for (int64_t pg = p_begin; pg < p_end; pg += kBf16NP) {
    const int64_t np = std::min<int64_t>(kBf16NP, p_end - pg);
    Bf16Tile t;
    t.lda = g.lda;
    t.ldb = pack ? 16 : g.ldb;
    t.panel_stride = pack ? kBf16KC * 16 : g.panel_stride;
    t.ldc = g.ldc;
    t.last_mask = mask16(g.n_end - (pg + np - 1) * 16);
    // ND, one M tile: the first panel group prefetches whole row segments [n_begin, n_end)
    // (the later groups then read L2); each pass reads only 96 bytes of every row, which the
    // hardware prefetcher follows poorly (W_UK 128 x 512 at M = 4..8: 1.7-1.8x the NZ time).
    const bool whole = nd && tiles == 1 && pg == p_begin && (g.n_end - g.n_begin) * 2 * K <= kNdWholeRows;
    t.pf_bytes = whole ? (g.n_end - g.n_begin) * 2 : 0;
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
      t.kl = std::min(kc, K - k0);
      t.accumulate = k0 > 0;
      t.b = B + pg * g.panel_stride + k0 * g.ldb;
      t.pf = B + g.n_begin + k0 * g.ldb;
      if (pack) {
        for (int64_t q = 0; q < np; ++q) {
          const __mmask16 cm = q == np - 1 ? t.last_mask : static_cast<__mmask16>(0xFFFF);
          const uint16_t* src = t.b + q * g.panel_stride;
          uint16_t* dst = packed + q * kBf16KC * 16;
          for (int64_t k = 0; k < t.kl; ++k)
            _mm256_store_si256(reinterpret_cast<__m256i*>(dst + k * 16), _mm256_maskz_loadu_epi16(cm, src + k * g.ldb));
        }
        t.b = packed;
      }
      int64_t m0 = 0;
      for (int64_t i = 0; i < tiles; ++i) {
        const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
        t.a = A + m0 * g.lda + k0;
        t.c = C + m0 * g.ldc + pg * 16;
        table[static_cast<size_t>((mr - 1) * kBf16NP + (np - 1))](t);
        m0 += mr;
      }
    }
  }
}

// ======================= bf16, transposed NZ, M > 8 =======================
// W^T [N, K] in NZ (gemm.h GemmTArgs): per 16 outputs and 16 k one row-major 16 x 16 tile. Up
// to three tiles (48 outputs) of a K block are transposed into NZ panels [k][16 outputs] and run
// by the panel tiles above (8 rows x 48 outputs, no horizontal sums).

// Word indices of a 16 x 16 transpose in three stages (two tile rows per 64-byte load; the
// first two stages move 128-bit and 64-bit pieces, the last words).
struct Bf16TTables {
  alignas(64) uint16_t s1[2][32];  // stage 1: k 0-7 / 8-15 of rows (2i, 2i+1, 2i+8, 2i+9)
  alignas(64) uint16_t s2[2][32];  // stage 2: the first / second four k
  alignas(64) uint16_t s3[2][32];  // stage 3: k (4j, 4j+1) / (4j+2, 4j+3), rows in order
};
constexpr Bf16TTables kBf16TTables{
    {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 32, 33, 34, 35, 36, 37, 38, 39, 48, 49, 50, 51, 52, 53, 54, 55},
     {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31, 40, 41, 42, 43, 44, 45, 46, 47, 56, 57, 58, 59, 60, 61, 62, 63}},
    {{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27, 32, 33, 34, 35, 40, 41, 42, 43, 48, 49, 50, 51, 56, 57, 58, 59},
     {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31, 36, 37, 38, 39, 44, 45, 46, 47, 52, 53, 54, 55, 60, 61, 62, 63}},
    {{0, 4, 32, 36, 16, 20, 48, 52, 8, 12, 40, 44, 24, 28, 56, 60, 1, 5, 33, 37, 17, 21, 49, 53, 9, 13, 41, 45, 25, 29, 57, 61},
     {2, 6, 34, 38, 18, 22, 50, 54, 10, 14, 42, 46, 26, 30, 58, 62, 3, 7, 35, 39, 19, 23, 51, 55, 11, 15, 43, 47, 27, 31, 59, 63}}};

// One 16 x 16 W^T tile (rows: outputs) -> 16 panel rows of 16 outputs, k by k, at dst.
inline void bf16t_transpose(const uint16_t* tile, uint16_t* dst) {  // any 2-byte elements
  __m512i r[8], o[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_si512(tile + 32 * i);
  transpose3(r, kBf16TTables, [](__m512i a, __m512i idx, __m512i b) { return _mm512_permutex2var_epi16(a, idx, b); },
             o);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) _mm512_store_si512(dst + 2 * j * 16, o[j]);  // panel rows 2j, 2j + 1
}

}  // namespace

void bf16_t_panels_avx512(const GemmTArgs& g) {
  const int64_t M = g.M, K = g.K;
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* W = static_cast<const uint16_t*>(g.W);
  auto* C = static_cast<float*>(g.C);
  if (gemm_trivial<float>(g)) return;
  static constexpr auto kNz = bf16_table<false>(std::make_index_sequence<kBf16MR * kBf16NP>());
  alignas(64) uint16_t packed[kBf16KC * 16 * kBf16NP];  // [kBf16NP][kBf16KC][16]
  const int64_t tiles = (M + kBf16MR - 1) / kBf16MR;
  const int64_t wstep = g.r1 * 256;  // elements from a tile to the same tile of the next k panel
  const int64_t t_end = (g.n_end + 15) / 16;
  Bf16Tile t;
  t.lda = g.lda;
  t.ldb = 16;
  t.panel_stride = kBf16KC * 16;
  t.ldc = g.ldc;
  t.b = packed;
  for (int64_t pg = g.n_begin / 16; pg < t_end; pg += kBf16NP) {
    const int64_t np = std::min<int64_t>(kBf16NP, t_end - pg);
    t.last_mask = mask16(g.n_end - (pg + np - 1) * 16);
    for (int64_t k0 = 0; k0 < K; k0 += kBf16KC) {
      const int64_t kl = std::min(kBf16KC, K - k0);
      const int64_t nkp = (kl + 15) / 16;  // whole k panels (NZ storage pads K to 16)
      for (int64_t q = 0; q < np; ++q)
        for (int64_t kp = 0; kp < nkp; ++kp)
          bf16t_transpose(W + (k0 / 16 + kp) * wstep + (pg + q) * 256, packed + q * kBf16KC * 16 + kp * 256);
      // The next block's tiles (this group's next K block, or the next group's first),
      // prefetched into L2 a slice per M tile.
      const bool more_k = k0 + kBf16KC < K;
      const int64_t nk0 = more_k ? k0 + kBf16KC : 0, npg = more_k ? pg : pg + kBf16NP;
      const int64_t nnp = more_k ? np : std::min<int64_t>(kBf16NP, std::max<int64_t>(t_end - npg, 0));
      const int64_t pieces = nnp * ((std::min(kBf16KC, K - nk0) + 15) / 16);  // tiles of 512 bytes
      const int64_t per_tile = (pieces + tiles - 1) / tiles;
      t.kl = kl;
      t.accumulate = k0 > 0;
      int64_t m0 = 0;
      for (int64_t i = 0; i < tiles; ++i) {
        const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
        for (int64_t x = i * per_tile; x < std::min(pieces, (i + 1) * per_tile); ++x)
          prefetch_range_l2(W + (nk0 / 16 + x / nnp) * wstep + (npg + x % nnp) * 256, 512);
        t.a = A + m0 * g.lda + k0;
        t.c = C + m0 * g.ldc + pg * 16;
        kNz[static_cast<size_t>((mr - 1) * kBf16NP + (np - 1))](t);
        m0 += mr;
      }
    }
  }
}

namespace {

// =============================== f16 (panels) ===============================
// As the bf16 kernel, but fp16: A is widened to fp32 once per K block (a broadcast operand),
// each panel row of B (16 fp16) is widened with one vcvtph2ps, fp32 FMA. Register tile up to
// 8 rows x 3 panels; the last panel is loaded with a column mask (ND partial panel).

constexpr int kF16MR = 8;
constexpr int kF16NP = 3;
constexpr int64_t kF16KC = 384;

struct F16Tile {
  const float* a;     // widened A block, row m0, lda floats
  int64_t lda;
  const uint16_t* b;  // first panel of the tile, row k0
  int64_t ldb, panel_stride;
  int64_t kl;
  float* c;
  int64_t ldc;
  __mmask16 last_mask;
  bool accumulate;
};

template <int MR, int NP>
void f16_tile(const F16Tile& t) {
  __m512 acc[MR][NP];
  zero_tile(acc);
  const uint16_t* bp[NP];
  __mmask16 lm[NP];
#pragma GCC unroll 3
  for (int p = 0; p < NP; ++p) {
    bp[p] = t.b + p * t.panel_stride;
    lm[p] = (p == NP - 1) ? t.last_mask : static_cast<__mmask16>(0xFFFF);
  }
  const float* a = t.a;
  const int64_t lda = t.lda, ldb = t.ldb, kl = t.kl;
  for (int64_t k = 0; k < kl; ++k) {
    __m512 bv[NP];
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) bv[p] = cvtph(_mm256_maskz_loadu_epi16(lm[p], bp[p] + k * ldb));
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512 av = _mm512_set1_ps(a[m * lda + k]);
#pragma GCC unroll 3
      for (int p = 0; p < NP; ++p) acc[m][p] = _mm512_fmadd_ps(av, bv[p], acc[m][p]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    float* c = t.c + m * t.ldc;
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) {
      __m512 v = acc[m][p];
      if (t.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lm[p], c + p * 16));
      _mm512_mask_storeu_ps(c + p * 16, lm[p], v);
    }
  }
}

using F16TileFn = void (*)(const F16Tile&);

template <size_t... I>
constexpr std::array<F16TileFn, sizeof...(I)> f16_table(std::index_sequence<I...>) {
  return {&f16_tile<static_cast<int>(I / kF16NP) + 1, static_cast<int>(I % kF16NP) + 1>...};
}

// fp16 -> fp32 of n values.
inline void widen_f16(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, cvtph(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  if (i < n) {
    const __mmask16 m = mask16(n - i);
    _mm512_mask_storeu_ps(dst + i, m, cvtph(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}

// The M tiles of one K block (t.kl rows, widened A rows abuf of t.lda floats) of a group of np
// panels (t.b, t.last_mask set), C pointing at the group's first column.
void f16_tiles(F16Tile& t, const float* abuf, int64_t M, float* C, int64_t ldc, int64_t np) {
  static constexpr auto kTable = f16_table(std::make_index_sequence<kF16MR * kF16NP>());
  const int64_t tiles = (M + kF16MR - 1) / kF16MR;
  int64_t m0 = 0;
  for (int64_t i = 0; i < tiles; ++i) {
    const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
    t.a = abuf + m0 * t.lda;
    t.c = C + m0 * ldc;
    kTable[static_cast<size_t>((mr - 1) * kF16NP + (np - 1))](t);
    m0 += mr;
  }
}

void f16_avx512(const GemmArgs& g) {
  const int64_t M = g.M, K = g.K;
  if (gemm_trivial<float>(g)) return;
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* B = static_cast<const uint16_t*>(g.B);
  auto* C = static_cast<float*>(g.C);
  const int64_t p_begin = g.n_begin / 16, p_end = (g.n_end + 15) / 16;
  const int64_t tiles = (M + kF16MR - 1) / kF16MR;
  const int64_t kc = tiles == 1 ? K : kF16KC;
  float* const abuf = static_cast<float*>(g.scratch);  // [M][min(kc, K)] (gemm_scratch_bytes)
  F16Tile t;
  t.ldb = g.ldb;
  t.panel_stride = g.panel_stride;
  t.ldc = g.ldc;
  for (int64_t k0 = 0; k0 < K; k0 += kc) {
    const int64_t kl = std::min(kc, K - k0);
    for (int64_t m = 0; m < M; ++m) widen_f16(A + m * g.lda + k0, abuf + m * kl, kl);
    t.lda = kl;
    t.kl = kl;
    t.accumulate = k0 > 0;
    for (int64_t pg = p_begin; pg < p_end; pg += kF16NP) {
      const int64_t np = std::min<int64_t>(kF16NP, p_end - pg);
      t.last_mask = mask16(g.n_end - (pg + np - 1) * 16);
      t.b = B + pg * g.panel_stride + k0 * g.ldb;
      f16_tiles(t, abuf, M, C + pg * 16, g.ldc, np);
    }
  }
}

}  // namespace

// f16_t for M > kGemmTStreamMaxM: as bf16_t_panels_avx512 (the same 16 x 16 transpose of 2-byte
// tiles), with the fp16 panel tiles and A widened to fp32 once per K block.
void f16_t_panels_avx512(const GemmTArgs& g) {
  const int64_t M = g.M, K = g.K;
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* W = static_cast<const uint16_t*>(g.W);
  auto* C = static_cast<float*>(g.C);
  if (gemm_trivial<float>(g)) return;
  alignas(64) uint16_t packed[kF16KC * 16 * kF16NP];  // [kF16NP][kF16KC][16]
  float* const abuf = static_cast<float*>(gemm_t_block(g.scratch, M));  // [M][kl] (gemm_scratch_bytes)
  const int64_t wstep = g.r1 * 256;
  const int64_t t_end = (g.n_end + 15) / 16;
  F16Tile t;
  t.ldb = 16;
  t.panel_stride = kF16KC * 16;
  t.ldc = g.ldc;
  t.b = packed;
  for (int64_t k0 = 0; k0 < K; k0 += kF16KC) {
    const int64_t kl = std::min(kF16KC, K - k0);
    const int64_t nkp = (kl + 15) / 16;
    for (int64_t m = 0; m < M; ++m) widen_f16(A + m * g.lda + k0, abuf + m * kl, kl);
    t.lda = kl;
    t.kl = kl;
    t.accumulate = k0 > 0;
    for (int64_t pg = g.n_begin / 16; pg < t_end; pg += kF16NP) {
      const int64_t np = std::min<int64_t>(kF16NP, t_end - pg);
      t.last_mask = mask16(g.n_end - (pg + np - 1) * 16);
      for (int64_t q = 0; q < np; ++q)
        for (int64_t kp = 0; kp < nkp; ++kp)
          bf16t_transpose(W + (k0 / 16 + kp) * wstep + (pg + q) * 256, packed + q * kF16KC * 16 + kp * 256);
      f16_tiles(t, abuf, M, C + pg * 16, g.ldc, np);
    }
  }
}

constinit const GemmKernels gemm_avx512{bf16_avx512,  s8_avx512,   f16_avx512,       bf16_t_avx512,
                                        s8_t_avx512, f16_t_avx512, s8_rowsum_avx512};

}  // namespace mlaops::kernels
