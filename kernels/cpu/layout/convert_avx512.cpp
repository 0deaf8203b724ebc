// AVX-512 epilogue conversions (integer round-to-nearest-even for bf16: identical bits to the
// scalar rule, including NaN and subnormals, unlike vcvtneps2bf16's denormal handling).
#include <immintrin.h>

#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/rows/mla_rows.h"
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

// 8 bf16 values as 8 doubles (exact).
inline __m512d bf16x8_pd(const uint16_t* p) {
  const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
  return _mm512_cvtps_pd(_mm256_castsi256_ps(w));
}

// rope_deinterleave_row, 8 pairs at a time: every product of an fp32 and a bf16 value is exact
// in float64, so the sum rounds once to float64 as in the scalar row (fused or not), then to fp32.
void rope_deinterleave_avx512(const float* v, const uint16_t* c, const uint16_t* s, int64_t dr, float* out) {
  const int64_t h = dr / 2;
  alignas(64) static constexpr int32_t kEven[16] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
  const __m512i idx = _mm512_load_si512(kEven);
  int64_t i = 0;
  for (; i + 8 <= h; i += 8) {
    const __m512 x = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(v + 2 * i));  // evens | odds
    const __m512d even = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
    const __m512d odd = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    const __m512d lo = _mm512_sub_pd(_mm512_mul_pd(even, bf16x8_pd(c + i)), _mm512_mul_pd(odd, bf16x8_pd(s + i)));
    const __m512d hi = _mm512_add_pd(_mm512_mul_pd(odd, bf16x8_pd(c + h + i)), _mm512_mul_pd(even, bf16x8_pd(s + h + i)));
    _mm256_storeu_ps(out + i, _mm512_cvtpd_ps(lo));
    _mm256_storeu_ps(out + h + i, _mm512_cvtpd_ps(hi));
  }
  if (i < h) {  // the last pairs (dr not a multiple of 16): the portable row on the rest
    const int64_t r = h - i;
    float part[16];
    uint16_t cc[16], ss[16];
    for (int64_t j = 0; j < r; ++j) cc[j] = c[i + j], cc[r + j] = c[h + i + j], ss[j] = s[i + j], ss[r + j] = s[h + i + j];
    rope_deinterleave_row(v + 2 * i, cc, ss, 2 * r, part);
    for (int64_t j = 0; j < r; ++j) out[i + j] = part[j], out[h + i + j] = part[r + j];
  }
}

// 8 fp16 values as 8 doubles (exact).
inline __m512d f16x8_pd(const uint16_t* p) {
  return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// rope_half_row, 8 pairs at a time (exact products as in rope_deinterleave_avx512).
void rope_half_avx512(const float* v, const uint16_t* c, const uint16_t* s, bool fp16, int64_t dr, float* out) {
  const int64_t h = dr / 2;
  auto ld = [fp16](const uint16_t* p) { return fp16 ? f16x8_pd(p) : bf16x8_pd(p); };
  int64_t i = 0;
  for (; i + 8 <= h; i += 8) {
    const __m512d x0 = _mm512_cvtps_pd(_mm256_loadu_ps(v + i)), x1 = _mm512_cvtps_pd(_mm256_loadu_ps(v + h + i));
    const __m512d lo = _mm512_sub_pd(_mm512_mul_pd(x0, ld(c + i)), _mm512_mul_pd(x1, ld(s + i)));
    const __m512d hi = _mm512_add_pd(_mm512_mul_pd(x1, ld(c + h + i)), _mm512_mul_pd(x0, ld(s + h + i)));
    _mm256_storeu_ps(out + i, _mm512_cvtpd_ps(lo));
    _mm256_storeu_ps(out + h + i, _mm512_cvtpd_ps(hi));
  }
  if (i < h) {  // the last pairs: the portable row on the rest
    const int64_t r = h - i;
    float vv[16], part[16];
    uint16_t cc[16], ss[16];
    for (int64_t j = 0; j < r; ++j) {
      vv[j] = v[i + j], vv[r + j] = v[h + i + j];
      cc[j] = c[i + j], cc[r + j] = c[h + i + j], ss[j] = s[i + j], ss[r + j] = s[h + i + j];
    }
    rope_half_row(vv, cc, ss, fp16, 2 * r, part);
    for (int64_t j = 0; j < r; ++j) out[i + j] = part[j], out[h + i + j] = part[r + j];
  }
}

}  // namespace

constinit const ConvertKernels convert_avx512{f32_to_bf16_avx512, round_bf16_avx512, absmax_avx512,
                                              div_round_i8_avx512, mul_rint_i8_avx512, rope_deinterleave_avx512,
                                              rope_half_avx512};

}  // namespace mlaops::kernels
