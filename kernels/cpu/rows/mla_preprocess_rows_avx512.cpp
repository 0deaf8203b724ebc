// AVX-512 MlaPreprocess row kernels (same bits as the scalar rules; tails masked).
#include <immintrin.h>

#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/rows/mla_preprocess_rows.h"

namespace mlaops::kernels {
namespace {

using avx512::bf16_bits;

constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __mmask16 tail_mask(int64_t r) { return static_cast<__mmask16>((1u << r) - 1u); }

inline __m256i dt_bits(__m512 v, bool fp16) {
  if (fp16) return _mm512_cvtps_ph(v, kRne);
  return _mm512_cvtepi32_epi16(bf16_bits(v));
}

inline __m512 round_dt16(__m512 v, bool fp16) {
  if (fp16) return _mm512_cvtph_ps(_mm512_cvtps_ph(v, kRne));
  return _mm512_castsi512_ps(_mm512_slli_epi32(bf16_bits(v), 16));
}

// NaN -> 0, clamp to [-128, 127], rint, to int8
inline __m128i round_clamp_i8(__m512 h) {
  const __mmask16 ord = _mm512_cmp_ps_mask(h, h, _CMP_ORD_Q);
  h = _mm512_min_ps(_mm512_max_ps(h, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
  h = _mm512_maskz_roundscale_ps(ord, h, kRne);
  return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(h));
}

inline __m512 load_dt16(const uint16_t* x, bool fp16, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, x);
  return fp16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

void load_dt_avx512(const uint16_t* x, bool fp16, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, load_dt16(x + i, fp16, 0xffff));
  if (i < n) _mm512_mask_storeu_ps(y + i, tail_mask(n - i), load_dt16(x + i, fp16, tail_mask(n - i)));
}

void store_dt_avx512(const float* x, bool fp16, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), dt_bits(_mm512_loadu_ps(x + i), fp16));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, m, dt_bits(_mm512_maskz_loadu_ps(m, x + i), fp16));
  }
}

void round_dt_avx512(float* x, bool fp16, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, round_dt16(_mm512_loadu_ps(x + i), fp16));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, m, round_dt16(_mm512_maskz_loadu_ps(m, x + i), fp16));
  }
}

float sum_sq_avx512(const float* x, int64_t n) {
  __m512 a = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    a = _mm512_fmadd_ps(v, v, a);
  }
  if (i < n) {  // masked-off lanes keep their sums
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    a = _mm512_mask3_fmadd_ps(v, v, a, m);
  }
  const __m256 b = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  __m128 c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
  c = _mm_add_ps(c, _mm_movehl_ps(c, c));
  c = _mm_add_ss(c, _mm_shuffle_ps(c, c, 1));
  return _mm_cvtss_f32(c);
}

void norm_avx512(const float* x, float r, const float* g, const float* b, int64_t n, float* y) {
  const __m512 rv = _mm512_set1_ps(r);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    const __m512 u = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), rv), gv = _mm512_maskz_loadu_ps(m, g + i);
    _mm512_mask_storeu_ps(y + i, m, b ? _mm512_fmadd_ps(u, gv, _mm512_maskz_loadu_ps(m, b + i)) : _mm512_mul_ps(u, gv));
  }
}

void quant_f16_avx512(const float* y, float a, float o, int64_t n, int8_t* q) {
  const __m512 av = _mm512_set1_ps(a), ov = _mm512_set1_ps(o);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    const __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, y + i), av, ov);
    _mm_mask_storeu_epi8(q + i, m, round_clamp_i8(round_dt16(v, true)));
  }
}

void dequant_avx512(const int32_t* acc, const int32_t* bias, const float* ds, float s, bool fp16, int64_t n,
                    float* y) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    const __m512i a = _mm512_maskz_loadu_epi32(m, acc + i);
    const __m512 d = _mm512_maskz_loadu_ps(m, ds + i);
    __m512 v;
    if (bias) v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a, _mm512_maskz_loadu_epi32(m, bias + i))), d);
    else v = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(a), d), sv);
    _mm512_mask_storeu_ps(y + i, m, round_dt16(v, fp16));
  }
}

void scale_i8_avx512(const float* x, float s, bool fp16, int64_t n, int8_t* q) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    _mm_mask_storeu_epi8(q + i, m, round_clamp_i8(_mm512_mul_ps(round_dt16(_mm512_maskz_loadu_ps(m, x + i), fp16), sv)));
  }
}

}  // namespace

constinit const MlaPreprocessRowKernels mla_preprocess_rows_avx512{
    load_dt_avx512, store_dt_avx512, round_dt_avx512, sum_sq_avx512,
    norm_avx512, quant_f16_avx512, dequant_avx512, scale_i8_avx512};

}  // namespace mlaops::kernels
