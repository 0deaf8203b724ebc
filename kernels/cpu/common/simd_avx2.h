// Shared AVX2 helpers for the kernels/cpu/*_avx2.cpp files (only files compiled with the AVX2
// flags may include it).
#pragma once

#include <immintrin.h>

namespace mlaops::kernels::avx2 {

// fp32 -> bf16 bits in the low 16 bits of each 32-bit lane: round to nearest even on the integer
// bits (the scalar rule's bits), NaN -> quiet NaN. NaN test: |u| > 0x7f800000 (a signed compare
// is fine: |u| < 2^31).
inline __m256i bf16_bits(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(r, q, nan);
}

}  // namespace mlaops::kernels::avx2
