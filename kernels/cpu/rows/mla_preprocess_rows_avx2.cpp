// AVX2 + F16C MlaPreprocess row kernels (same bits as the scalar rules; tails go through them).
#include <immintrin.h>

#include "kernels/cpu/common/simd_avx2.h"

#include <cmath>

#include "kernels/cpu/rows/mla_preprocess_rows.h"

namespace mlaops::kernels {
namespace {

using avx2::bf16_bits;

constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __m256 round_dt8(__m256 v, bool fp16) {
  if (fp16) return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  return _mm256_castsi256_ps(_mm256_slli_epi32(bf16_bits(v), 16));
}

// 8 int32 (already in [-128, 127]) -> 8 int8 at q
inline void store_i8(int8_t* q, __m256i v) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(q), _mm_packs_epi16(w, w));
}

// NaN -> 0, clamp to [-128, 127], rint, to int8
inline void round_clamp_store_i8(int8_t* q, __m256 h) {
  const __m256 ord = _mm256_cmp_ps(h, h, _CMP_ORD_Q);
  h = _mm256_min_ps(_mm256_max_ps(h, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
  h = _mm256_and_ps(_mm256_round_ps(h, kRne), ord);
  store_i8(q, _mm256_cvtps_epi32(h));
}

void load_dt_avx2(const uint16_t* x, bool fp16, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, fp16 ? _mm256_cvtph_ps(h) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
  for (; i < n; ++i) y[i] = fp16 ? fp16_to_float(x[i]) : bf16_to_float(x[i]);
}

void store_dt_avx2(const float* x, bool fp16, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    __m128i h;
    if (fp16) {
      h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    } else {
      const __m256i b = bf16_bits(v);
      h = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = fp16 ? float_to_fp16(x[i]) : float_to_bf16(x[i]);
}

void round_dt_avx2(float* x, bool fp16, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, round_dt8(_mm256_loadu_ps(x + i), fp16));
  for (; i < n; ++i) x[i] = detail::round_dt(x[i], fp16);
}

float sum_sq_avx2(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();  // lanes 0..7, 8..15
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    a0 = _mm256_fmadd_ps(v0, v0, a0);
    a1 = _mm256_fmadd_ps(v1, v1, a1);
  }
  alignas(32) float s[16];
  _mm256_store_ps(s, a0);
  _mm256_store_ps(s + 8, a1);
  for (int64_t l = 0; i < n; ++i, ++l) s[l] = std::fma(x[i], x[i], s[l]);
  const __m256 b = _mm256_add_ps(_mm256_load_ps(s), _mm256_load_ps(s + 8));
  __m128 c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
  c = _mm_add_ps(c, _mm_movehl_ps(c, c));
  c = _mm_add_ss(c, _mm_shuffle_ps(c, c, 1));
  return _mm_cvtss_f32(c);
}

void norm_avx2(const float* x, float r, const float* g, const float* b, int64_t n, float* y) {
  const __m256 rv = _mm256_set1_ps(r);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 u = _mm256_div_ps(_mm256_loadu_ps(x + i), rv), gv = _mm256_loadu_ps(g + i);
    _mm256_storeu_ps(y + i, b ? _mm256_fmadd_ps(u, gv, _mm256_loadu_ps(b + i)) : _mm256_mul_ps(u, gv));
  }
  for (; i < n; ++i) y[i] = b ? std::fma(x[i] / r, g[i], b[i]) : x[i] / r * g[i];
}

void quant_f16_avx2(const float* y, float a, float o, int64_t n, int8_t* q) {
  const __m256 av = _mm256_set1_ps(a), ov = _mm256_set1_ps(o);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(y + i), av, ov);
    round_clamp_store_i8(q + i, round_dt8(v, true));
  }
  for (; i < n; ++i) q[i] = detail::quant_f16(y[i], a, o);
}

void dequant_avx2(const int32_t* acc, const int32_t* bias, const float* ds, float s, bool fp16, int64_t n, float* y) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i));
    const __m256 d = _mm256_loadu_ps(ds + i);
    __m256 v;
    if (bias) {
      v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + i)))), d);
    } else {
      v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(a), d), sv);
    }
    _mm256_storeu_ps(y + i, round_dt8(v, fp16));
  }
  for (; i < n; ++i) y[i] = detail::dequant(acc[i], bias, i, ds[i], s, fp16);
}

void scale_i8_avx2(const float* x, float s, bool fp16, int64_t n, int8_t* q) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) round_clamp_store_i8(q + i, _mm256_mul_ps(round_dt8(_mm256_loadu_ps(x + i), fp16), sv));
  for (; i < n; ++i) q[i] = detail::scale_i8(x[i], s, fp16);
}

}  // namespace

constinit const MlaPreprocessRowKernels mla_preprocess_rows_avx2{
    load_dt_avx2, store_dt_avx2, round_dt_avx2, sum_sq_avx2,
    norm_avx2, quant_f16_avx2, dequant_avx2, scale_i8_avx2};

}  // namespace mlaops::kernels
