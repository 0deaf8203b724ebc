// Shared AVX-512 helpers for the kernels/cpu/*_avx512.cpp files (include it first, after
// <immintrin.h>; only files compiled with the AVX-512 flags may include it).
#pragma once

#include <immintrin.h>

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

}  // namespace mlaops::kernels::avx512
