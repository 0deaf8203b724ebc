// AVX-512 VNNI int8 GEMMs (layouts and semantics: gemm.h; reference: gemm_scalar.cpp): the panel
// kernel s8 and, for M > 8, the transposed-NZ s8_t; the row sums of A.
//
// int8 (vpdpbusd, NZ only, panel width 32): vpdpbusd multiplies unsigned by signed bytes, so B
//   is made unsigned (B + 128 = B ^ 0x80) and A stays signed:
//     sum_k A[m][k] * B[k][n] = sum_k A[m][k] * (B[k][n] + 128) - 128 * rowsum(A[m]).
//   rowsum(A) is computed once per call (M values) unless the caller gives it (a_rowsum). 4 K rows x 32 columns (two 64-byte loads)
//   are transposed into per-column 4-byte groups with one vpermt2w + one vpshufb per 16 columns
//   (AVX512BW only, no VBMI), in natural column order. A K tail (K % 4 != 0) reads the NZ
//   padding rows of B (present in storage up to R1 * 16) and pairs them with zero A bytes, so
//   their content never matters; A is never read past K. For M > 8 the transformed B of a
//   K block of one panel is packed once into an L1-sized buffer and reused by all M tiles.
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

// =============================== int8 ===============================

constexpr int kS8MRInline = 8;   // M <= 8: B transformed in registers
constexpr int kS8MRPacked = 8;   // M > 8: B block packed once, tiles of up to 8 rows
constexpr int64_t kS8KC = 512;   // K block (multiple of 4) for the packed path

struct S8Consts {
  __m512i idx_lo, idx_hi, shuf, x80;
};

struct S8Tables {
  alignas(64) uint16_t lo[32];
  alignas(64) uint16_t hi[32];
  alignas(64) uint8_t sh[64];
  constexpr S8Tables() : lo(), hi(), sh() {
    // vpermt2w words: in 128-bit lane L, word 4h + r = row r, columns (4L + 2h, 4L + 2h + 1)
    // (rows 0, 1 are words 0..15 / 16..31 of the first load, rows 2, 3 of the second).
    for (int q = 0; q < 32; ++q) {
      const int lane = q / 8, h = (q / 4) % 2, r = q % 4;
      lo[q] = static_cast<uint16_t>(16 * r + 2 * lane + h);
      hi[q] = static_cast<uint16_t>(16 * r + 2 * lane + h + 8);
    }
    // vpshufb within each lane: byte 4c + r <- byte 8h + 2r + e, c = 2h + e (column 4L + c).
    for (int i = 0; i < 64; ++i) {
      const int tb = i % 16, c = tb / 4, r = tb % 4, h = c / 2, e = c % 2;
      sh[i] = static_cast<uint8_t>(8 * h + 2 * r + e);
    }
  }
};
constexpr S8Tables kS8Tables{};

inline S8Consts s8_consts() {
  S8Consts k;
  k.idx_lo = _mm512_load_si512(kS8Tables.lo);
  k.idx_hi = _mm512_load_si512(kS8Tables.hi);
  k.shuf = _mm512_load_si512(kS8Tables.sh);
  k.x80 = _mm512_set1_epi8(static_cast<char>(0x80));
  return k;
}

// Rows k..k+3 of a 32-column NZ panel (b points at row k, rows 32 bytes apart) -> two vectors
// of unsigned (B + 128) 4-byte groups: columns 0..15 and 16..31.
inline void s8_transform(const int8_t* b, const S8Consts& k, __m512i& v_lo, __m512i& v_hi) {
  const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(b), k.x80);
  const __m512i y = _mm512_xor_si512(_mm512_loadu_si512(b + 64), k.x80);
  v_lo = _mm512_shuffle_epi8(_mm512_permutex2var_epi16(x, k.idx_lo, y), k.shuf);
  v_hi = _mm512_shuffle_epi8(_mm512_permutex2var_epi16(x, k.idx_hi, y), k.shuf);
}

struct S8Tile {
  const int8_t* a;        // A + m0 * lda + k0
  int64_t lda;
  const int8_t* b;        // raw NZ panel at row k0 (inline) or the packed block
  int64_t kl;             // K rows of this block
  int32_t* c;             // C + m0 * ldc + panel column
  int64_t ldc;
  const int32_t* rowsum;  // rowsum(A) of rows m0.. (used when !accumulate)
  __mmask16 mask_lo, mask_hi;
  bool accumulate;
  // PACKED: pf_panels panels of 1024 bytes at pf, pf + pf_stride, ... (the next block's W)
  // prefetched into L2 during the tile (SpreadPrefetch, one step per k group)
  const int8_t* pf = nullptr;
  int64_t pf_stride = 0, pf_panels = 0;
};

template <int MR, bool PACKED>
void s8_tile(const S8Tile& t) {
  __m512i acc[MR][2];
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m) acc[m][0] = acc[m][1] = _mm512_setzero_si512();
  const int8_t* a = t.a;
  const int64_t lda = t.lda;
  const int64_t groups = t.kl / 4, tail = t.kl % 4;
  const int8_t* b = t.b;

  if constexpr (PACKED) {
    const int8_t* pf = t.pf;
    const int64_t ps = t.pf_stride;
    SpreadPrefetch spread([pf, ps](int64_t i) { return pf + i * ps; }, pf != nullptr ? t.pf_panels : 0, 1024, groups);
    for (int64_t gi = 0; gi < groups; ++gi) {
      spread.step(gi);
      const __m512i v0 = _mm512_load_si512(b + gi * 128);
      const __m512i v1 = _mm512_load_si512(b + gi * 128 + 64);
#pragma GCC unroll 12
      for (int m = 0; m < MR; ++m) {
        const __m512i av = _mm512_set1_epi32(load_i32(a + m * lda + gi * 4));
        acc[m][0] = dpbusd(acc[m][0], v0, av);
        acc[m][1] = dpbusd(acc[m][1], v1, av);
      }
    }
  } else {
    const S8Consts kc = s8_consts();
    for (int64_t gi = 0; gi < groups; ++gi) {
      __m512i v0, v1;
      s8_transform(b + gi * 128, kc, v0, v1);
#pragma GCC unroll 12
      for (int m = 0; m < MR; ++m) {
        const __m512i av = _mm512_set1_epi32(load_i32(a + m * lda + gi * 4));
        acc[m][0] = dpbusd(acc[m][0], v0, av);
        acc[m][1] = dpbusd(acc[m][1], v1, av);
      }
    }
  }
  if (tail) {
    __m512i v0, v1;
    if constexpr (PACKED) {
      v0 = _mm512_load_si512(b + groups * 128);
      v1 = _mm512_load_si512(b + groups * 128 + 64);
    } else {
      s8_transform(b + groups * 128, s8_consts(), v0, v1);
    }
#pragma GCC unroll 12
    for (int m = 0; m < MR; ++m) {
      int32_t w = 0;  // the tail bytes of A, zero above K
      std::memcpy(&w, a + m * lda + groups * 4, static_cast<size_t>(tail));
      const __m512i av = _mm512_set1_epi32(w);
      acc[m][0] = dpbusd(acc[m][0], v0, av);
      acc[m][1] = dpbusd(acc[m][1], v1, av);
    }
  }
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m) {
    int32_t* c = t.c + m * t.ldc;
    __m512i c0, c1;
    if (t.accumulate) {
      c0 = _mm512_maskz_loadu_epi32(t.mask_lo, c);
      c1 = _mm512_maskz_loadu_epi32(t.mask_hi, c + 16);
    } else {  // -128 * rowsum(A[m]), modulo 2^32 like the accumulation
      c0 = c1 = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(t.rowsum[m]) * 0xFFFFFF80u));
    }
    _mm512_mask_storeu_epi32(c, t.mask_lo, _mm512_add_epi32(acc[m][0], c0));
    _mm512_mask_storeu_epi32(c + 16, t.mask_hi, _mm512_add_epi32(acc[m][1], c1));
  }
}

// M = 1 (decode GEMV): kS8GemvNP panels at once, so the thread reads that many sequential
// streams (one per panel) instead of one: 1 thread streamed W_DQ-sized weights (7168 x 2112
// int8) at 29-32 GB/s against 27-29 with one panel at a time; software prefetch did not help.
constexpr int kS8GemvNP = 4;

void s8_gemv(const S8Tile& t, int64_t panel_stride, int np, const __mmask16* mlo, const __mmask16* mhi) {
  constexpr int NP = kS8GemvNP;
  __m512i acc[NP][2];
#pragma GCC unroll 4
  for (int p = 0; p < NP; ++p) acc[p][0] = acc[p][1] = _mm512_setzero_si512();
  const S8Consts kc = s8_consts();
  const int64_t groups = t.kl / 4, tail = t.kl % 4;
  for (int64_t gi = 0; gi <= groups; ++gi) {
    int32_t w = 0;
    if (gi < groups) w = load_i32(t.a + gi * 4);
    else if (tail) std::memcpy(&w, t.a + groups * 4, static_cast<size_t>(tail));
    else break;
    const __m512i av = _mm512_set1_epi32(w);
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      if (p >= np) break;
      __m512i v0, v1;
      s8_transform(t.b + p * panel_stride + gi * 128, kc, v0, v1);
      acc[p][0] = dpbusd(acc[p][0], v0, av);
      acc[p][1] = dpbusd(acc[p][1], v1, av);
    }
  }
  const __m512i adj = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(t.rowsum[0]) * 0xFFFFFF80u));
#pragma GCC unroll 4
  for (int p = 0; p < NP; ++p) {
    if (p >= np) break;
    _mm512_mask_storeu_epi32(t.c + p * 32, mlo[p], _mm512_add_epi32(acc[p][0], adj));
    _mm512_mask_storeu_epi32(t.c + p * 32 + 16, mhi[p], _mm512_add_epi32(acc[p][1], adj));
  }
}

using S8TileFn = void (*)(const S8Tile&);

template <bool PACKED, size_t... I>
constexpr std::array<S8TileFn, sizeof...(I)> s8_table(std::index_sequence<I...>) {
  return {&s8_tile<static_cast<int>(I) + 1, PACKED>...};
}

}  // namespace

void s8_avx512(const GemmArgs& g) {
  const int64_t M = g.M, K = g.K;
  if (gemm_trivial<int32_t>(g)) return;
  const auto* A = static_cast<const int8_t*>(g.A);
  const auto* B = static_cast<const int8_t*>(g.B);
  auto* C = static_cast<int32_t*>(g.C);

  const int32_t* rowsum = g.a_rowsum;
  if (rowsum == nullptr) {
    auto* const sums = static_cast<int32_t*>(g.scratch);  // [M] (gemm_scratch_bytes)
    s8_row_sums(A, g.lda, M, K, sums);
    rowsum = sums;
  }

  static constexpr auto kInline = s8_table<false>(std::make_index_sequence<kS8MRInline>());
  static constexpr auto kPacked = s8_table<true>(std::make_index_sequence<kS8MRPacked>());

  const int64_t p_begin = g.n_begin / 32, p_end = (g.n_end + 31) / 32;
  S8Tile t;
  t.lda = g.lda;
  t.ldc = g.ldc;
  if (M == 1) {
    t.a = A;
    t.kl = K;
    t.rowsum = rowsum;
    for (int64_t p = p_begin; p < p_end; p += kS8GemvNP) {
      const int np = static_cast<int>(std::min<int64_t>(kS8GemvNP, p_end - p));
      __mmask16 mlo[kS8GemvNP] = {}, mhi[kS8GemvNP] = {};
      for (int q = 0; q < np; ++q) {
        const int64_t valid = g.n_end - (p + q) * 32;
        mlo[q] = mask16(valid);
        mhi[q] = mask16(valid - 16);
      }
      t.b = B + p * g.panel_stride;
      t.c = C + p * 32;
      s8_gemv(t, g.panel_stride, np, mlo, mhi);
    }
    return;
  }
  if (M <= kS8MRInline) {
    t.a = A;
    t.kl = K;
    t.rowsum = rowsum;
    t.accumulate = false;
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t valid = g.n_end - p * 32;
      t.mask_lo = mask16(valid);
      t.mask_hi = mask16(valid - 16);
      t.b = B + p * g.panel_stride;
      t.c = C + p * 32;
      kInline[static_cast<size_t>(M - 1)](t);
    }
    return;
  }

  alignas(64) int8_t packed[kS8KC / 4 * 128];
  const S8Consts kc = s8_consts();
  const int64_t tiles = (M + kS8MRPacked - 1) / kS8MRPacked;
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t valid = g.n_end - p * 32;
    t.mask_lo = mask16(valid);
    t.mask_hi = mask16(valid - 16);
    const int8_t* bp = B + p * g.panel_stride;
    for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kS8KC) {
      const int64_t kl = std::min(kS8KC, K - k0);
      const int64_t ng = (kl + 3) / 4;
      // The B block packed next (this panel's next K block, or the next panel's first): its
      // bytes are prefetched into L2 a slice per M tile, spread over the tile's k groups, so the
      // packing does not wait on DRAM (weights larger than the L3 are streamed once per call or
      // chunk).
      const int8_t* next = k0 + kS8KC < K ? bp + (k0 + kS8KC) * 32 : p + 1 < p_end ? bp + g.panel_stride : nullptr;
      const int64_t next_bytes = next == nullptr ? 0 : (k0 + kS8KC < K ? (std::min(kS8KC, K - k0 - kS8KC) + 3) / 4 : (std::min(kS8KC, K) + 3) / 4) * 128;
      const int64_t pf_slice = (next_bytes / tiles + 63) / 64 * 64;
      for (int64_t gi = 0; gi < ng; ++gi) {
        __m512i v0, v1;
        s8_transform(bp + (k0 + gi * 4) * 32, kc, v0, v1);
        _mm512_store_si512(packed + gi * 128, v0);
        _mm512_store_si512(packed + gi * 128 + 64, v1);
      }
      t.b = packed;
      t.kl = kl;
      t.accumulate = k0 > 0;
      int64_t m0 = 0;
      for (int64_t i = 0; i < tiles; ++i) {
        const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
        const int64_t slice = pf_slice > 0 && i * pf_slice < next_bytes ? std::min(pf_slice, next_bytes - i * pf_slice) : 0;
        t.pf = slice > 0 ? next + i * pf_slice : nullptr;  // contiguous: 1024-byte pieces
        t.pf_stride = 1024;
        t.pf_panels = (slice + 1023) / 1024;
        t.a = A + m0 * g.lda + k0;
        t.c = C + m0 * g.ldc + p * 32;
        t.rowsum = rowsum + m0;
        kPacked[static_cast<size_t>(mr - 1)](t);
        m0 += mr;
      }
    }
  }
}

namespace {

// ======================= int8, transposed NZ, M > 8 =======================
// W^T [N, K] in NZ (gemm.h GemmTArgs): per 16 outputs and 32 k one row-major 16 x 32 tile. Two
// such tiles (32 outputs) of a K block are transposed into the packed layout of the s8 tiles
// above (per 4 k: 16 outputs x 4 bytes of unsigned W + 128, then the next 16 outputs) and run
// by them: 8 rows x 32 outputs per register tile, no horizontal sums (the transposed-tile
// kernel of gemm_t_avx512.cpp needs them, and reached 82 % of the int8 peak in MlaPreprocess).

// vpermt2d indices of a 16 x 8 dword transpose in three stages (a tile row n is 8 dwords, 4 k
// each; two rows per 64-byte load).
struct S8TTables {
  alignas(64) uint32_t s1[2][16];  // stage 1, k groups 0-3 / 4-7 of rows (2i, 2i+1, 2i+8, 2i+9)
  alignas(64) uint32_t s2[2][16];  // stage 2, the first / second two k groups
  alignas(64) uint32_t s3[2][16];  // stage 3, the even / odd k group, rows in order
};
constexpr S8TTables kS8TTables{
    {{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}, {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31}},
    {{0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29}, {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31}},
    {{0, 2, 16, 18, 8, 10, 24, 26, 4, 6, 20, 22, 12, 14, 28, 30}, {1, 3, 17, 19, 9, 11, 25, 27, 5, 7, 21, 23, 13, 15, 29, 31}}};

// One 16 x 32 W^T tile -> 8 k groups of 16 unsigned (W + 128) 4-byte groups, 128 bytes apart at dst.
inline void s8t_transpose(const int8_t* tile, int8_t* dst) {
  const __m512i x80 = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i r[8], o[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_si512(tile + 64 * i);
  transpose3(r, kS8TTables, [](__m512i a, __m512i idx, __m512i b) { return _mm512_permutex2var_epi32(a, idx, b); }, o);
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) _mm512_store_si512(dst + g * 128, _mm512_xor_si512(o[g], x80));
}

}  // namespace

void s8_t_panels_avx512(const GemmTArgs& g, const int32_t* rowsum) {
  const int64_t M = g.M, K = g.K;
  const auto* A = static_cast<const int8_t*>(g.A);
  const auto* W = static_cast<const int8_t*>(g.W);
  auto* C = static_cast<int32_t*>(g.C);
  if (gemm_trivial<int32_t>(g)) return;
  static constexpr auto kPacked = s8_table<true>(std::make_index_sequence<kS8MRPacked>());
  alignas(64) int8_t packed[kS8KC / 4 * 128];  // [kS8KC / 32][8 k groups][32 outputs x 4 bytes]
  const int64_t tiles = (M + kS8MRPacked - 1) / kS8MRPacked;
  const int64_t wstep = g.r1 * 512;  // bytes from a tile to the same tile of the next k panel
  S8Tile t;
  t.lda = g.lda;
  t.ldc = g.ldc;
  t.b = packed;
  for (int64_t n0 = g.n_begin; n0 < g.n_end; n0 += 32) {
    const int64_t valid = g.n_end - n0;
    t.mask_lo = mask16(valid);
    t.mask_hi = mask16(valid - 16);
    const int halves = valid > 16 ? 2 : 1;
    const int8_t* w0 = W + (n0 / 16) * 512;
    for (int64_t k0 = 0; k0 < K; k0 += kS8KC) {
      const int64_t kl = std::min(kS8KC, K - k0);
      const int64_t np = (kl + 31) / 32;  // whole k panels (NZ storage pads K to 32)
      for (int64_t q = 0; q < np; ++q) {
        const int8_t* src = w0 + (k0 / 32 + q) * wstep;
        for (int hf = 0; hf < halves; ++hf) s8t_transpose(src + hf * 512, packed + q * 1024 + hf * 64);
        if (halves == 1)  // outputs past n_end: zeros, never stored
          for (int j = 0; j < 8; ++j) _mm512_store_si512(packed + q * 1024 + j * 128 + 64, _mm512_setzero_si512());
      }
      // The next block's tiles (this pair's next K block, or the next pair's first), prefetched
      // into L2 a slice per M tile, spread over the tile's k groups (a burst of a slice before
      // each tile stalled it on the miss queues).
      const bool more_k = k0 + kS8KC < K;
      const int64_t nk0 = more_k ? k0 + kS8KC : 0;
      const int8_t* nw0 = more_k ? w0 : n0 + 32 < g.n_end ? w0 + 1024 : nullptr;
      const int64_t nnp = nw0 == nullptr ? 0 : (std::min(kS8KC, K - nk0) + 31) / 32;
      const int64_t per_tile = (nnp + tiles - 1) / tiles;
      t.kl = kl;
      t.accumulate = k0 > 0;
      int64_t m0 = 0;
      for (int64_t i = 0; i < tiles; ++i) {
        const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
        const int64_t q0 = i * per_tile, q1 = std::min(nnp, (i + 1) * per_tile);
        t.pf = q1 > q0 ? nw0 + (nk0 / 32 + q0) * wstep : nullptr;
        t.pf_stride = wstep;
        t.pf_panels = std::max<int64_t>(0, q1 - q0);
        t.a = A + m0 * g.lda + k0;
        t.c = C + m0 * g.ldc + n0;
        t.rowsum = rowsum + m0;
        kPacked[static_cast<size_t>(mr - 1)](t);
        m0 += mr;
      }
    }
  }
}

void s8_rowsum_avx512(const int8_t* A, int64_t lda, int64_t M, int64_t K, int32_t* out) { s8_row_sums(A, lda, M, K, out); }

}  // namespace mlaops::kernels
