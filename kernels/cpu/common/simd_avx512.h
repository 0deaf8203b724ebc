// Shared AVX-512 helpers for the kernels/cpu/*_avx512.cpp files (include it first, after
// <immintrin.h>; only files compiled with the AVX-512 flags may include it).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsics that pass an
// _mm512_undefined_*() operand (GCC bug 105593); the operand is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace mlaops::kernels::avx512 {

// fp32 -> bf16 bits in the low 16 bits of each 32-bit lane: round to nearest even on the integer
// bits (the scalar rule's bits, subnormals kept), NaN -> quiet NaN with its sign and payload top.
inline __m512i bf16_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_mask_mov_epi32(r, nan, q);
}

// prefetcht1 (into L2) as volatile asm: GCC's IPA marks a function that only holds
// __builtin_prefetch as const and deletes its calls (observed with GCC 12: no prefetch left).
inline void prefetch_line_l2(const void* p) { asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p))); }
// Every cache line of [p, p + bytes) into L2.
inline void prefetch_range_l2(const void* p, int64_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), e = a + static_cast<uintptr_t>(bytes);
  for (uintptr_t l = a & ~uintptr_t{63}; l < e; l += 64) prefetch_line_l2(reinterpret_cast<const void*>(l));
}

// The L2 prefetch of n segments of `bytes` bytes (segment i at seg(i)) spread over a loop of `steps`
// iterations: step(i) in iteration i issues one line every second iteration (every one when they
// would not fit), so that the misses go out at the pace of the loop's arithmetic; a burst of them
// before the loop stalls it on full miss queues (docs/performance.md, twenty-second session).
template <class Seg>
class SpreadPrefetch {
 public:
  SpreadPrefetch(Seg seg, int64_t n, int64_t bytes, int64_t steps)
      : seg_(seg), n_(n), per_((bytes + 63) / 64), every_(2 * per_ * n <= steps ? 1 : 0) {
    if (n_ > 0 && per_ > 0) p_ = static_cast<const char*>(static_cast<const void*>(seg_(0))), left_ = per_;
  }
  void step(int64_t i) {
    if (left_ > 0 && (i & every_) == 0) {
      prefetch_line_l2(p_);
      p_ += 64;
      if (--left_ == 0 && ++k_ < n_) p_ = static_cast<const char*>(static_cast<const void*>(seg_(k_))), left_ = per_;
    }
  }

 private:
  Seg seg_;
  int64_t n_, per_, every_;
  const char* p_ = nullptr;  // the next line; lines left in segment k_
  int64_t left_ = 0, k_ = 0;
};

// The three butterfly stages of a tile transpose with two tile rows per register (16 x 8 dwords
// with vpermt2d in gemm_s8_avx512.cpp, 16 x 16 words with vpermt2w in gemm_avx512.cpp): perm(a,
// index table, b) is the two-source permute; t.s1[h], t.s2[q], t.s3[e] index the stages; r holds
// the 8 loaded registers, o[4h + 2q + e] the results in their order.
template <class Tables, class Perm>
inline void transpose3(const __m512i* r, const Tables& t, Perm perm, __m512i* o) {
  __m512i s[4][2], u[2][2][2];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) s[i][h] = perm(r[i], _mm512_load_si512(t.s1[h]), r[i + 4]);
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
      for (int q = 0; q < 2; ++q) u[i][h][q] = perm(s[i][h], _mm512_load_si512(t.s2[q]), s[i + 2][h]);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
    for (int q = 0; q < 2; ++q)
#pragma GCC unroll 2
      for (int e = 0; e < 2; ++e) o[4 * h + 2 * q + e] = perm(u[0][h][q], _mm512_load_si512(t.s3[e]), u[1][h][q]);
}

// 4 bytes at p (any alignment) as one int32, for a broadcast operand.
inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline __mmask16 mask16(int64_t valid) {  // the low `valid` lanes (clamped to 0..16)
  if (valid >= 16) return static_cast<__mmask16>(0xFFFF);
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1u);
}

inline __mmask32 mask32(int64_t valid) {  // the low `valid` lanes (clamped to 0..32)
  if (valid >= 32) return static_cast<__mmask32>(0xFFFFFFFFu);
  if (valid <= 0) return 0;
  return static_cast<__mmask32>((1u << valid) - 1u);
}

// Zeroes a register tile of accumulators.
template <int A, int B>
inline void zero_tile(__m512 (&acc)[A][B]) {
#pragma GCC unroll 16
  for (int i = 0; i < A; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < B; ++j) acc[i][j] = _mm512_setzero_ps();
}

inline __m512 dpbf16(__m512 acc, __m512i b, __m512i a) {
  return _mm512_dpbf16_ps(acc, (__m512bh)b, (__m512bh)a);
}

// acc += per-lane dot of 4 unsigned bytes (u8) with 4 signed bytes (s8). Inline asm because
// GCC 12 surrounds the _mm512_dpbusd_epi32 builtin with a register copy per accumulator.
inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

// acc += per-lane dot of 2 signed words with 2 signed words (AVX512_VNNI vpdpwssd), as dpbusd.
inline __m512i dpwssd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

// Unmasked forms through the maskz intrinsics with an all-ones mask (GCC emits the plain
// instruction): the plain intrinsics pass an _mm512_undefined_*() operand that GCC 12 reports as
// uninitialized (GCC bug 105593).
constexpr __mmask16 kAll16 = static_cast<__mmask16>(0xFFFF);
constexpr __mmask8 kAll8 = static_cast<__mmask8>(0xFF);
inline __m512 cvtph(__m256i v) { return _mm512_maskz_cvtph_ps(kAll16, v); }
inline __m512i unpacklo32(__m512i a, __m512i b) { return _mm512_maskz_unpacklo_epi32(kAll16, a, b); }
inline __m512i unpackhi32(__m512i a, __m512i b) { return _mm512_maskz_unpackhi_epi32(kAll16, a, b); }
inline __m512i unpacklo64(__m512i a, __m512i b) { return _mm512_maskz_unpacklo_epi64(kAll8, a, b); }
inline __m512i unpackhi64(__m512i a, __m512i b) { return _mm512_maskz_unpackhi_epi64(kAll8, a, b); }
template <int IMM>
inline __m512i shuf128(__m512i a, __m512i b) { return _mm512_maskz_shuffle_i32x4(kAll16, a, b, IMM); }
inline __m512i dup256(__m256i v) { return _mm512_maskz_broadcast_i64x4(kAll8, v); }

// 16 x 16 dword transpose: r[i] (16 dwords of row i) -> r[j] (dword j of the 16 rows).
inline void transpose16x16(__m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = unpacklo32(r[i], r[i + 1]);
    t[i + 1] = unpackhi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = unpacklo64(t[i], t[i + 2]);
    r[i + 1] = unpackhi64(t[i], t[i + 2]);
    r[i + 2] = unpacklo64(t[i + 1], t[i + 3]);
    r[i + 3] = unpackhi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 16; i += 8)
    for (int k = 0; k < 4; ++k) {
      t[i + k] = shuf128<0x88>(r[i + k], r[i + k + 4]);
      t[i + k + 4] = shuf128<0xDD>(r[i + k], r[i + k + 4]);
    }
  for (int k = 0; k < 8; ++k) {
    r[k] = shuf128<0x88>(t[k], t[k + 8]);
    r[k + 8] = shuf128<0xDD>(t[k], t[k + 8]);
  }
}

}  // namespace mlaops::kernels::avx512
