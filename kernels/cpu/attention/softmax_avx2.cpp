// AVX2 online-softmax pieces (same polynomial exp as the AVX-512 version; 2^k built in the
// exponent bits). Tails of fewer than 8 positions go through the scalar code.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "kernels/cpu/attention/softmax.h"

namespace mlaops::kernels {
namespace {

inline __m256 valid_mask8(const uint8_t* valid) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(valid));
  const __m256i w = _mm256_cvtepu8_epi32(b);
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(w, _mm256_setzero_si256()));
}

inline __m256 exp256(__m256 x) {
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f), ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  // x second: vmaxps / vminps return it when it is NaN (a NaN score stays NaN)
  x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);  // keeps 2^k a normal float; e^-87 ~ 1.6e-38
  x = _mm256_min_ps(_mm256_set1_ps(88.7f), x);
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, ln2_hi, x);
  r = _mm256_fnmadd_ps(k, ln2_lo, r);
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

float scale_max_avx2(float* s, const uint8_t* valid, int64_t n, float scale) {
  const __m256 sc = _mm256_set1_ps(scale);
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 mx = ninf, nanv = _mm256_setzero_ps();  // nanv: valid lanes that held a NaN score
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256 v = valid_mask8(valid + c);
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + c), sc);
    _mm256_storeu_ps(s + c, _mm256_blendv_ps(_mm256_loadu_ps(s + c), x, v));
    mx = _mm256_max_ps(_mm256_blendv_ps(ninf, x, v), mx);
    nanv = _mm256_or_ps(nanv, _mm256_and_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q), v));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mx);
  float m = -std::numeric_limits<float>::infinity();
  for (float l : lanes)
    if (l > m) m = l;
  bool nan = _mm256_movemask_ps(nanv) != 0;
  for (; c < n; ++c)
    if (valid[c]) {
      s[c] *= scale;
      if (s[c] > m) m = s[c];
      nan = nan || std::isnan(s[c]);
    }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

float exp_sum_avx2(const float* s, const uint8_t* valid, int64_t n, float m, float* e) {
  const __m256 mv = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256 v = valid_mask8(valid + c);
    // masked lanes may hold -inf / garbage: replace them by m before the exp, zero the result
    const __m256 x = _mm256_blendv_ps(mv, _mm256_loadu_ps(s + c), v);
    const __m256 y = _mm256_and_ps(exp256(_mm256_sub_ps(x, mv)), v);
    _mm256_storeu_ps(e + c, y);
    acc = _mm256_add_ps(acc, y);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = 0.0f;
  for (float l : lanes) sum += l;
  for (; c < n; ++c) {
    e[c] = valid[c] ? std::exp(s[c] - m) : 0.0f;
    sum += e[c];
  }
  return sum;
}

}  // namespace

constinit const SoftmaxKernels softmax_avx2{scale_max_avx2, exp_sum_avx2};

}  // namespace mlaops::kernels
