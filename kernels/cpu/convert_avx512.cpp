// AVX-512 epilogue conversions (integer round-to-nearest-even for bf16: identical bits to the
// scalar rule, including NaN and subnormals, unlike vcvtneps2bf16's denormal handling).
#include <immintrin.h>

#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/convert.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

using avx512::bf16_bits;

void f32_to_bf16_avx512(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(bf16_bits(_mm512_loadu_ps(x + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(bf16_bits(_mm512_maskz_loadu_ps(m, x + i))));
  }
}

void round_bf16_avx512(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(x + i, _mm512_castsi512_ps(_mm512_slli_epi32(bf16_bits(_mm512_loadu_ps(x + i)), 16)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(bf16_bits(_mm512_maskz_loadu_ps(m, x + i)), 16)));
  }
}

float absmax_avx512(const float* x, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  int64_t i = 0;
  // max_ps(a, b) returns b when a is NaN: the accumulator goes second, so NaN inputs are ignored
  for (; i + 16 <= n; i += 16) acc = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(x + i), abs_mask), acc);
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    acc = _mm512_max_ps(_mm512_and_ps(_mm512_maskz_loadu_ps(m, x + i), abs_mask), acc);
  }
  return _mm512_reduce_max_ps(acc);
}

inline __m128i round_i8(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(v, t);
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __mmask16 away = _mm512_cmp_ps_mask(_mm512_and_ps(frac, abs_mask), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_andnot_ps(abs_mask, v));  // copysign(1, v)
  __m512 r = _mm512_mask_add_ps(t, away, t, one);
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
  const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  r = _mm512_maskz_mov_ps(ordered, r);  // NaN -> 0
  return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(r));
}

void div_round_i8_avx512(const float* x, float d, int8_t* y, int64_t n) {
  const __m512 dv = _mm512_set1_ps(d);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), round_i8(_mm512_div_ps(_mm512_loadu_ps(x + i), dv)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm_mask_storeu_epi8(y + i, m, round_i8(_mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), dv)));
  }
}

// Ties to even: the clamp first (a value past the int8 range saturates either way), then the
// conversion in the default rounding mode, written out; NaN -> 0.
inline __m128i rint_i8(__m512 v) {
  __m512 r = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
  r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), r);
  return _mm512_cvtsepi32_epi8(_mm512_cvt_roundps_epi32(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void mul_rint_i8_avx512(const float* x, float s, int8_t* y, int64_t n) {
  const __m512 sv = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), rint_i8(_mm512_mul_ps(_mm512_loadu_ps(x + i), sv)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm_mask_storeu_epi8(y + i, m, rint_i8(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sv)));
  }
}

}  // namespace

constinit const ConvertKernels convert_avx512{f32_to_bf16_avx512, round_bf16_avx512, absmax_avx512,
                                              div_round_i8_avx512, mul_rint_i8_avx512};

}  // namespace mlaops::kernels
