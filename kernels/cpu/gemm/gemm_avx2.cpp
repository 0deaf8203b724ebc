// AVX2 panel GEMM (layouts and semantics: gemm.h; reference: gemm_scalar.cpp).
//
// bf16: a bf16 value is the upper half of an fp32, so a 32-byte row of a 16-column panel gives
//   the even columns as (row << 16) and the odd columns as (row & 0xFFFF0000) without any
//   shuffle; A is broadcast as the 32-bit pair (A[m][k], A[m][k+1]) and split the same way.
//   fp32 FMA, register tile up to 6 rows x 16 columns (12 accumulators); the even/odd column
//   split is undone when C is stored. A partial last ND panel goes through a zero-padded copy.
// int8: B rows sign-extended to int16 (vpmovsxbw) and interleaved by pairs of K rows, A
//   pre-widened once per call to sign-extended int16 pairs; vpmaddwd gives the exact int32 sum
//   of each pair (|value| <= 2 * 128 * 128). Tile up to 6 rows x 16 columns (half a panel).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/cpu/gemm/gemm.h"

namespace mlaops::kernels {
namespace {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// =============================== bf16 ===============================

constexpr int kBf16MR = 6;
constexpr int64_t kBf16KC = 256;  // K block (even) when several M tiles share the B block

struct Bf16Tile {
  const uint16_t* a;  // A + m0 * lda + k0
  int64_t lda;
  const uint16_t* b;  // panel, row k0
  int64_t ldb;
  int64_t kl;
  float* c;           // C + m0 * ldc + panel column
  int64_t ldc;
  int64_t valid;      // valid columns of the panel (1..16)
  bool nd;            // ND storage: a partial panel must not be read past `valid`
  bool accumulate;
};

template <bool EDGE>
inline __m256i bf16_row(const uint16_t* p, const Bf16Tile& t) {
  if constexpr (EDGE) {
    if (t.nd) {
      alignas(32) uint16_t tmp[16] = {};
      std::memcpy(tmp, p, static_cast<size_t>(t.valid) * 2);
      return _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp));
    }
  }
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

template <int MR, bool EDGE>
void bf16_tile(const Bf16Tile& t) {
  const __m256i hi = _mm256_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  __m256 ae[MR], ao[MR];  // even / odd columns
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) ae[m] = ao[m] = _mm256_setzero_ps();
  const uint16_t* a = t.a;
  const int64_t lda = t.lda, ldb = t.ldb, kl = t.kl;
  int64_t k = 0;
  for (; k + 2 <= kl; k += 2) {
    {
      const __m256i r = bf16_row<EDGE>(t.b + k * ldb, t);
      const __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(r, 16));
      const __m256 o = _mm256_castsi256_ps(_mm256_and_si256(r, hi));
#pragma GCC unroll 6
      for (int m = 0; m < MR; ++m) {
        const __m256 av = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_set1_epi32(load_i32(a + m * lda + k)), 16));
        ae[m] = _mm256_fmadd_ps(av, e, ae[m]);
        ao[m] = _mm256_fmadd_ps(av, o, ao[m]);
      }
    }
    {
      const __m256i r = bf16_row<EDGE>(t.b + (k + 1) * ldb, t);
      const __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(r, 16));
      const __m256 o = _mm256_castsi256_ps(_mm256_and_si256(r, hi));
#pragma GCC unroll 6
      for (int m = 0; m < MR; ++m) {
        const __m256 av = _mm256_castsi256_ps(_mm256_and_si256(_mm256_set1_epi32(load_i32(a + m * lda + k)), hi));
        ae[m] = _mm256_fmadd_ps(av, e, ae[m]);
        ao[m] = _mm256_fmadd_ps(av, o, ao[m]);
      }
    }
  }
  if (k < kl) {  // odd K: the last row alone
    const __m256i r = bf16_row<EDGE>(t.b + k * ldb, t);
    const __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(r, 16));
    const __m256 o = _mm256_castsi256_ps(_mm256_and_si256(r, hi));
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      const __m256 av = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(uint32_t{a[m * lda + k]} << 16)));
      ae[m] = _mm256_fmadd_ps(av, e, ae[m]);
      ao[m] = _mm256_fmadd_ps(av, o, ao[m]);
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    // ae lanes: columns 0 2 4 6 | 8 10 12 14; ao: 1 3 5 7 | 9 11 13 15.
    const __m256 lo = _mm256_unpacklo_ps(ae[m], ao[m]);  // 0 1 2 3 | 8 9 10 11
    const __m256 up = _mm256_unpackhi_ps(ae[m], ao[m]);  // 4 5 6 7 | 12 13 14 15
    __m256 c0 = _mm256_permute2f128_ps(lo, up, 0x20);
    __m256 c1 = _mm256_permute2f128_ps(lo, up, 0x31);
    float* c = t.c + m * t.ldc;
    if (EDGE && t.valid < 16) {
      alignas(32) float tmp[16];
      _mm256_store_ps(tmp, c0);
      _mm256_store_ps(tmp + 8, c1);
      for (int64_t j = 0; j < t.valid; ++j) c[j] = t.accumulate ? c[j] + tmp[j] : tmp[j];
    } else {
      if (t.accumulate) {
        c0 = _mm256_add_ps(c0, _mm256_loadu_ps(c));
        c1 = _mm256_add_ps(c1, _mm256_loadu_ps(c + 8));
      }
      _mm256_storeu_ps(c, c0);
      _mm256_storeu_ps(c + 8, c1);
    }
  }
}

using Bf16TileFn = void (*)(const Bf16Tile&);

template <bool EDGE, size_t... I>
constexpr std::array<Bf16TileFn, sizeof...(I)> bf16_table(std::index_sequence<I...>) {
  return {&bf16_tile<static_cast<int>(I) + 1, EDGE>...};
}

void bf16_avx2(const GemmArgs& g) {
  const int64_t M = g.M, K = g.K;
  if (gemm_trivial<float>(g)) return;
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* B = static_cast<const uint16_t*>(g.B);
  auto* C = static_cast<float*>(g.C);
  static constexpr auto kFull = bf16_table<false>(std::make_index_sequence<kBf16MR>());
  static constexpr auto kEdge = bf16_table<true>(std::make_index_sequence<kBf16MR>());
  const int64_t p_begin = g.n_begin / 16, p_end = (g.n_end + 15) / 16;
  const int64_t tiles = (M + kBf16MR - 1) / kBf16MR;
  const int64_t kc = tiles == 1 ? K : kBf16KC;
  Bf16Tile t;
  t.lda = g.lda;
  t.ldb = g.ldb;
  t.ldc = g.ldc;
  t.nd = g.ldb != 16;
  for (int64_t p = p_begin; p < p_end; ++p) {
    t.valid = std::min<int64_t>(16, g.n_end - p * 16);
    const auto& table = t.valid < 16 ? kEdge : kFull;
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
      t.kl = std::min(kc, K - k0);
      t.accumulate = k0 > 0;
      t.b = B + p * g.panel_stride + k0 * g.ldb;
      int64_t m0 = 0;
      for (int64_t i = 0; i < tiles; ++i) {
        const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
        t.a = A + m0 * g.lda + k0;
        t.c = C + m0 * g.ldc + p * 16;
        table[static_cast<size_t>(mr - 1)](t);
        m0 += mr;
      }
    }
  }
}

// =============================== int8 ===============================

constexpr int kS8MR = 6;
constexpr int64_t kS8KC = 512;  // K block (even)

struct S8Tile {
  const int32_t* ap;  // A pairs: row m0, pair k0 / 2
  int64_t ldap;       // pairs per A row
  const int8_t* b;    // panel + half-panel offset, row k0
  int64_t ldb;
  int64_t kl;
  int32_t* c;         // C + m0 * ldc + half-panel column
  int64_t ldc;
  int64_t valid;      // valid columns of the half panel (1..16)
  bool accumulate;
};

template <int MR>
void s8_tile(const S8Tile& t) {
  __m256i acc[MR][2];
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_si256();
  const int32_t* ap = t.ap;
  const int64_t ldap = t.ldap, ldb = t.ldb, kl = t.kl;
  for (int64_t k = 0; k < kl; k += 2) {
    const __m256i r0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.b + k * ldb)));
    const __m256i r1 =
        k + 1 < kl ? _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.b + (k + 1) * ldb)))
                   : _mm256_setzero_si256();
    const __m256i lo = _mm256_unpacklo_epi16(r0, r1);  // columns 0-3 | 8-11
    const __m256i up = _mm256_unpackhi_epi16(r0, r1);  // columns 4-7 | 12-15
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      const __m256i av = _mm256_set1_epi32(ap[m * ldap + k / 2]);
      acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_madd_epi16(lo, av));
      acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_madd_epi16(up, av));
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    __m256i c0 = _mm256_permute2x128_si256(acc[m][0], acc[m][1], 0x20);
    __m256i c1 = _mm256_permute2x128_si256(acc[m][0], acc[m][1], 0x31);
    int32_t* c = t.c + m * t.ldc;
    if (t.valid < 16) {
      alignas(32) int32_t tmp[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), c0);
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), c1);
      for (int64_t j = 0; j < t.valid; ++j)
        c[j] = t.accumulate ? static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(tmp[j])) : tmp[j];
    } else {
      auto* c0p = reinterpret_cast<__m256i*>(c);
      auto* c1p = reinterpret_cast<__m256i*>(c + 8);
      if (t.accumulate) {
        c0 = _mm256_add_epi32(c0, _mm256_loadu_si256(c0p));
        c1 = _mm256_add_epi32(c1, _mm256_loadu_si256(c1p));
      }
      _mm256_storeu_si256(c0p, c0);
      _mm256_storeu_si256(c1p, c1);
    }
  }
}

using S8TileFn = void (*)(const S8Tile&);

template <size_t... I>
constexpr std::array<S8TileFn, sizeof...(I)> s8_table(std::index_sequence<I...>) {
  return {&s8_tile<static_cast<int>(I) + 1>...};
}

void s8_avx2(const GemmArgs& g) {
  const int64_t M = g.M, K = g.K;
  if (gemm_trivial<int32_t>(g)) return;
  const auto* A = static_cast<const int8_t*>(g.A);
  const auto* B = static_cast<const int8_t*>(g.B);
  auto* C = static_cast<int32_t*>(g.C);
  // A as sign-extended int16 pairs (A[m][2j], A[m][2j+1]), zero past K.
  const int64_t kp = (K + 1) / 2;
  int32_t* const apairs = static_cast<int32_t*>(g.scratch);  // [M][kp] (gemm_scratch_bytes)
  for (int64_t m = 0; m < M; ++m) {
    const int8_t* a = A + m * g.lda;
    int32_t* d = apairs + m * kp;
    for (int64_t j = 0; j < kp; ++j) {
      const auto lo = static_cast<uint16_t>(static_cast<int16_t>(a[2 * j]));
      const auto up = 2 * j + 1 < K ? static_cast<uint16_t>(static_cast<int16_t>(a[2 * j + 1])) : uint16_t{0};
      d[j] = static_cast<int32_t>(static_cast<uint32_t>(lo) | (static_cast<uint32_t>(up) << 16));
    }
  }
  static constexpr auto kTable = s8_table(std::make_index_sequence<kS8MR>());
  const int64_t p_begin = g.n_begin / 32, p_end = (g.n_end + 31) / 32;
  const int64_t tiles = (M + kS8MR - 1) / kS8MR;
  const int64_t kc = tiles == 1 ? K : kS8KC;
  S8Tile t;
  t.ldap = kp;
  t.ldb = g.ldb;
  t.ldc = g.ldc;
  for (int64_t p = p_begin; p < p_end; ++p) {
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
      t.kl = std::min(kc, K - k0);
      t.accumulate = k0 > 0;
      for (int h = 0; h < 2; ++h) {
        t.valid = std::min<int64_t>(16, g.n_end - p * 32 - h * 16);
        if (t.valid <= 0) break;
        t.b = B + p * g.panel_stride + k0 * g.ldb + h * 16;
        int64_t m0 = 0;
        for (int64_t i = 0; i < tiles; ++i) {
          const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
          t.ap = apairs + m0 * kp + k0 / 2;
          t.c = C + m0 * g.ldc + p * 32 + h * 16;
          kTable[static_cast<size_t>(mr - 1)](t);
          m0 += mr;
        }
      }
    }
  }
}

// =============================== f16 (panels) ===============================
// As bf16 above but fp16: A widened to fp32 once per K block, a panel row (16 fp16) widened
// with two vcvtph2ps, fp32 FMA; tile up to 6 rows x 16 columns. A partial last ND panel goes
// through a zero-padded copy.

constexpr int kF16MR = 6;
constexpr int64_t kF16KC = 256;

struct F16Tile {
  const float* a;     // widened A block, row m0
  int64_t lda;
  const uint16_t* b;  // panel, row k0
  int64_t ldb;
  int64_t kl;
  float* c;
  int64_t ldc;
  int64_t valid;      // valid columns of the panel (1..16)
  bool nd;
  bool accumulate;
};

template <int MR, bool EDGE>
void f16_tile(const F16Tile& t) {
  __m256 a0[MR], a1[MR];
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) a0[m] = a1[m] = _mm256_setzero_ps();
  const float* a = t.a;
  const int64_t lda = t.lda, ldb = t.ldb;
  for (int64_t k = 0; k < t.kl; ++k) {
    const uint16_t* p = t.b + k * ldb;
    alignas(16) uint16_t tmp[16] = {};
    if (EDGE && t.nd) {
      std::memcpy(tmp, p, static_cast<size_t>(t.valid) * 2);
      p = tmp;
    }
    const __m256 b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256 b1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      const __m256 av = _mm256_broadcast_ss(a + m * lda + k);
      a0[m] = _mm256_fmadd_ps(av, b0, a0[m]);
      a1[m] = _mm256_fmadd_ps(av, b1, a1[m]);
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) {
    float* c = t.c + m * t.ldc;
    if (EDGE && t.valid < 16) {
      alignas(32) float tmp[16];
      _mm256_store_ps(tmp, a0[m]);
      _mm256_store_ps(tmp + 8, a1[m]);
      for (int64_t j = 0; j < t.valid; ++j) c[j] = t.accumulate ? c[j] + tmp[j] : tmp[j];
    } else {
      __m256 c0 = a0[m], c1 = a1[m];
      if (t.accumulate) {
        c0 = _mm256_add_ps(c0, _mm256_loadu_ps(c));
        c1 = _mm256_add_ps(c1, _mm256_loadu_ps(c + 8));
      }
      _mm256_storeu_ps(c, c0);
      _mm256_storeu_ps(c + 8, c1);
    }
  }
}

using F16TileFn = void (*)(const F16Tile&);

template <bool EDGE, size_t... I>
constexpr std::array<F16TileFn, sizeof...(I)> f16_table(std::index_sequence<I...>) {
  return {&f16_tile<static_cast<int>(I) + 1, EDGE>...};
}

inline void widen_f16(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

void f16_avx2(const GemmArgs& g) {
  const int64_t M = g.M, K = g.K;
  if (gemm_trivial<float>(g)) return;
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* B = static_cast<const uint16_t*>(g.B);
  auto* C = static_cast<float*>(g.C);
  static constexpr auto kFull = f16_table<false>(std::make_index_sequence<kF16MR>());
  static constexpr auto kEdge = f16_table<true>(std::make_index_sequence<kF16MR>());
  const int64_t p_begin = g.n_begin / 16, p_end = (g.n_end + 15) / 16;
  const int64_t tiles = (M + kF16MR - 1) / kF16MR;
  const int64_t kc = tiles == 1 ? K : kF16KC;
  float* const abuf = static_cast<float*>(g.scratch);  // [M][min(kc, K)] (gemm_scratch_bytes)
  F16Tile t;
  t.ldb = g.ldb;
  t.ldc = g.ldc;
  t.nd = g.ldb != 16;
  for (int64_t k0 = 0; k0 < K; k0 += kc) {
    const int64_t kl = std::min(kc, K - k0);
    for (int64_t m = 0; m < M; ++m) widen_f16(A + m * g.lda + k0, abuf + m * kl, kl);
    t.lda = kl;
    t.kl = kl;
    t.accumulate = k0 > 0;
    for (int64_t p = p_begin; p < p_end; ++p) {
      t.valid = std::min<int64_t>(16, g.n_end - p * 16);
      const auto& table = t.valid < 16 ? kEdge : kFull;
      t.b = B + p * g.panel_stride + k0 * g.ldb;
      int64_t m0 = 0;
      for (int64_t i = 0; i < tiles; ++i) {
        const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
        t.a = abuf + m0 * kl;
        t.c = C + m0 * g.ldc + p * 16;
        table[static_cast<size_t>(mr - 1)](t);
        m0 += mr;
      }
    }
  }
}

// =========================== transposed NZ (GemmTArgs) ===========================
// W^T tiles (gemm.h): one 16 x c0 row-major tile per 16 outputs and c0 k values; dot products
// along k. A K block of A is first converted to a zero-padded buffer (whole k panels, so the
// K tail needs no masking and A is never read past K):
//   s8_t  : A sign-extended to int16; a tile row (32 int8) sign-extended to two int16 vectors,
//           vpmaddwd (exact) with A, int32 accumulation (modulo 2^32, exact for int32 results).
//   bf16_t: A widened to fp32 stored per panel as (even k, odd k); a tile row (16 bf16) gives
//           the even k as (row << 16) and the odd k as (row & 0xFFFF0000); fp32 FMA.
//   f16_t : A widened to fp32; a tile row widened with two vcvtph2ps; fp32 FMA.
// One accumulator of 8 lanes per (row of M, output); register tile up to 3 rows of M x 4
// outputs (1 x 8 for a single row), horizontal sums (vhadd) at the end of a K block.

enum class TKind { kS8, kBf16, kF16 };
constexpr int kTMR = 3;

struct T2Tile {
  const void* a;      // converted A block, row m0 (lda elements, whole k panels)
  int64_t lda;
  const void* w;      // W tile at the block's first k panel
  int64_t wstep;      // elements between k panels of a tile
  int64_t panels;     // k panels of the block
  void* c;            // C + m0 * ldc + 16 * tile
  int64_t ldc;
  int64_t nvalid;     // valid outputs of the tile
  bool accumulate;
};

template <TKind KIND>
struct TTraits;
template <>
struct TTraits<TKind::kS8> {
  using T = int8_t;
  using E = int16_t;
  using Acc = int32_t;
  using V = __m256i;
  static constexpr int64_t c0 = 32;
};
template <>
struct TTraits<TKind::kBf16> {
  using T = uint16_t;
  using E = float;
  using Acc = float;
  using V = __m256;
  static constexpr int64_t c0 = 16;
};
template <>
struct TTraits<TKind::kF16> {
  using T = uint16_t;
  using E = float;
  using Acc = float;
  using V = __m256;
  static constexpr int64_t c0 = 16;
};

// acc += one tile row (at wp) . one k panel of A (at ap).
template <TKind KIND>
struct TRow {
  typename TTraits<KIND>::V lo, hi;
  explicit TRow(const typename TTraits<KIND>::T* wp) {
    if constexpr (KIND == TKind::kS8) {
      lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp)));
      hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp + 16)));
    } else if constexpr (KIND == TKind::kBf16) {
      const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp));
      lo = _mm256_castsi256_ps(_mm256_slli_epi32(r, 16));
      hi = _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(static_cast<int32_t>(0xFFFF0000u))));
    } else {
      lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp)));
      hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp + 8)));
    }
  }
  typename TTraits<KIND>::V fma(const typename TTraits<KIND>::E* ap, typename TTraits<KIND>::V acc) const {
    if constexpr (KIND == TKind::kS8) {
      const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ap));
      const __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ap + 16));
      return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(lo, a0), _mm256_madd_epi16(hi, a1)));
    } else {
      return _mm256_fmadd_ps(hi, _mm256_loadu_ps(ap + 8), _mm256_fmadd_ps(lo, _mm256_loadu_ps(ap), acc));
    }
  }
};

// Four 8-lane accumulators -> their four sums.
inline __m128i hsum4(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}
inline void store4(int32_t* c, __m128i v, int64_t valid, bool accumulate) {
  alignas(16) int32_t tmp[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
  for (int64_t j = 0; j < std::min<int64_t>(valid, 4); ++j)
    c[j] = accumulate ? static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(tmp[j])) : tmp[j];
}
inline void store4(float* c, __m128 v, int64_t valid, bool accumulate) {
  alignas(16) float tmp[4];
  _mm_store_ps(tmp, v);
  for (int64_t j = 0; j < std::min<int64_t>(valid, 4); ++j) c[j] = accumulate ? c[j] + tmp[j] : tmp[j];
}

template <TKind KIND, int MR, int NR>
void t2_pass(const T2Tile& t, int row0) {
  using Tr = TTraits<KIND>;
  using V = typename Tr::V;
  const auto* w = static_cast<const typename Tr::T*>(t.w) + row0 * Tr::c0;
  const auto* a = static_cast<const typename Tr::E*>(t.a);
  const int64_t lda = t.lda, wstep = t.wstep;
  V acc[MR][NR];
#pragma GCC unroll 3
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      if constexpr (KIND == TKind::kS8) acc[m][j] = _mm256_setzero_si256();
      else acc[m][j] = _mm256_setzero_ps();
    }
  for (int64_t kp = 0; kp < t.panels; ++kp) {
    const auto* wp = w + kp * wstep;
    const auto* ap = a + kp * Tr::c0;
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const TRow<KIND> row(wp + j * Tr::c0);
#pragma GCC unroll 3
      for (int m = 0; m < MR; ++m) acc[m][j] = row.fma(ap + m * lda, acc[m][j]);
    }
  }
#pragma GCC unroll 3
  for (int m = 0; m < MR; ++m) {
    auto* c = static_cast<typename Tr::Acc*>(t.c) + m * t.ldc + row0;
#pragma GCC unroll 2
    for (int j = 0; j < NR; j += 4) {
      const int64_t valid = t.nvalid - row0 - j;
      if (valid <= 0) break;
      store4(c + j, hsum4(acc[m][j], acc[m][j + 1], acc[m][j + 2], acc[m][j + 3]), valid, t.accumulate);
    }
  }
}

template <TKind KIND, int MR>
void t2_tile(const T2Tile& t) {
  constexpr int NR = MR == 1 ? 8 : 4;
  for (int r = 0; r < 16 && r < t.nvalid; r += NR) t2_pass<KIND, MR, NR>(t, r);
}

// Converts A[m][k0, k0 + kl) into dst (padded to whole k panels with zeros).
template <TKind KIND>
void t2_convert(const typename TTraits<KIND>::T* a, int64_t kl, typename TTraits<KIND>::E* dst, int64_t klpad) {
  if constexpr (KIND == TKind::kS8) {
    for (int64_t k = 0; k < klpad; ++k) dst[k] = k < kl ? static_cast<int16_t>(a[k]) : int16_t{0};
  } else if constexpr (KIND == TKind::kBf16) {
    for (int64_t k = 0; k < klpad; ++k) {  // per 16-k panel: even k in [0, 8), odd k in [8, 16)
      const int64_t i = k % 16;
      float v = 0.0f;
      if (k < kl) {
        const uint32_t bits = uint32_t{a[k]} << 16;
        std::memcpy(&v, &bits, 4);
      }
      dst[k - i + (i % 2) * 8 + i / 2] = v;
    }
  } else {
    widen_f16(a, dst, kl);
    std::fill(dst + kl, dst + klpad, 0.0f);
  }
}

template <TKind KIND>
void gemm_t_avx2(const GemmTArgs& g) {
  using Tr = TTraits<KIND>;
  using Acc = typename Tr::Acc;
  const int64_t M = g.M, K = g.K, c0 = Tr::c0;
  if (gemm_trivial<Acc>(g)) return;
  const auto* A = static_cast<const typename Tr::T*>(g.A);
  const auto* W = static_cast<const typename Tr::T*>(g.W);
  auto* C = static_cast<Acc*>(g.C);
  static constexpr std::array<void (*)(const T2Tile&), kTMR> kTable{&t2_tile<KIND, 1>, &t2_tile<KIND, 2>,
                                                                    &t2_tile<KIND, 3>};
  const int64_t tiles = (M + kTMR - 1) / kTMR;
  const int64_t kc = tiles == 1 ? K : (KIND == TKind::kS8 ? 1024 : 512);  // a multiple of c0
  auto* const abuf = static_cast<typename Tr::E*>(gemm_t_block(g.scratch, M));  // [M][kc padded to c0] (gemm_scratch_bytes)
  T2Tile t;
  t.wstep = g.r1 * 16 * c0;
  t.ldc = g.ldc;
  for (int64_t k0 = 0; k0 < K; k0 += kc) {
    const int64_t kl = std::min(kc, K - k0);
    const int64_t klpad = (kl + c0 - 1) / c0 * c0;
    for (int64_t m = 0; m < M; ++m) t2_convert<KIND>(A + m * g.lda + k0, kl, abuf + m * klpad, klpad);
    t.lda = klpad;
    t.panels = klpad / c0;
    t.accumulate = k0 > 0;
    for (int64_t nt = g.n_begin / 16; nt * 16 < g.n_end; ++nt) {
      t.nvalid = std::min<int64_t>(16, g.n_end - nt * 16);
      t.w = W + ((k0 / c0) * g.r1 + nt) * 16 * c0;
      int64_t m0 = 0;
      for (int64_t i = 0; i < tiles; ++i) {
        const int64_t mr = M / tiles + (i < M % tiles ? 1 : 0);
        t.a = abuf + m0 * klpad;
        t.c = C + m0 * g.ldc + nt * 16;
        kTable[static_cast<size_t>(mr - 1)](t);
        m0 += mr;
      }
    }
  }
}

void s8_rowsum_avx2(const int8_t* A, int64_t lda, int64_t M, int64_t K, int32_t* out) { s8_row_sums(A, lda, M, K, out); }

}  // namespace

constinit const GemmKernels gemm_avx2{bf16_avx2,
                                      s8_avx2,
                                      f16_avx2,
                                      gemm_t_avx2<TKind::kBf16>,
                                      gemm_t_avx2<TKind::kS8>,
                                      gemm_t_avx2<TKind::kF16>,
                                      s8_rowsum_avx2};

}  // namespace mlaops::kernels
