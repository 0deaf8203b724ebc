// AVX2 epilogue conversions (same bit rules as the scalar ones); tails go through the scalar code.
#include <immintrin.h>

#include "kernels/cpu/common/simd_avx2.h"

#include <cmath>

#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/rows/mla_rows.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

using avx2::bf16_bits;

void f32_to_bf16_avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = bf16_bits(_mm256_loadu_ps(x + i));
    const __m256i b = bf16_bits(_mm256_loadu_ps(x + i + 8));
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), p);
  }
  for (; i < n; ++i) y[i] = float_to_bf16(x[i]);
}

void round_bf16_avx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_castsi256_ps(_mm256_slli_epi32(bf16_bits(_mm256_loadu_ps(x + i)), 16)));
  for (; i < n; ++i) x[i] = mlaops::round_bf16(x[i]);
}

float absmax_avx2(const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), acc);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float m = 0.0f;
  for (float l : lanes)
    if (l > m) m = l;
  for (; i < n; ++i)
    if (std::fabs(x[i]) > m) m = std::fabs(x[i]);
  return m;
}

void div_round_i8_avx2(const float* x, float d, int8_t* y, int64_t n) {
  const __m256 dv = _mm256_set1_ps(d);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), dv);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 away = _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(v, t), abs_mask), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_andnot_ps(abs_mask, v));
    __m256 r = _mm256_add_ps(t, _mm256_and_ps(away, one));
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
    r = _mm256_and_ps(r, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
    const __m256i q = _mm256_cvtps_epi32(r);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm_packs_epi16(w, w));
  }
  for (; i < n; ++i) y[i] = int8_round_sat(x[i] / d);
}

// Ties to even: clamp, NaN -> 0, then the conversion in the default rounding mode.
void mul_rint_i8_avx2(const float* x, float s, int8_t* y, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), sv);
    __m256 r = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
    r = _mm256_and_ps(r, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
    const __m256i q = _mm256_cvtps_epi32(_mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm_packs_epi16(w, w));
  }
  for (; i < n; ++i) y[i] = int8_rint_sat(x[i] * s);
}

}  // namespace

constinit const ConvertKernels convert_avx2{f32_to_bf16_avx2, round_bf16_avx2, absmax_avx2, div_round_i8_avx2,
                                            mul_rint_i8_avx2, rope_deinterleave_row,  // RoPE: the portable rows
                                            rope_half_row};

}  // namespace mlaops::kernels
