// AVX-512 online-softmax pieces: masked scale + max, and a polynomial exp (Cody-Waite range
// reduction x = k ln2 + r, |r| <= ln2/2, e^r by its degree-6 Taylor polynomial, 2^k by vscalefps).
#include <immintrin.h>

#include <limits>

#include "kernels/cpu/softmax.h"

#include "kernels/cpu/simd_avx512.h"

namespace mlaops::kernels {
namespace {

inline __mmask16 valid_mask(const uint8_t* valid, int64_t c, int64_t n) {
  const __mmask16 in = n - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - c)) - 1);
  const __m128i v = _mm_maskz_loadu_epi8(in, valid + c);
  return _mm_test_epi8_mask(v, v);
}

inline __m512 exp512(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693359375f), ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));  // below: the result underflows to 0 anyway
  x = _mm512_min_ps(x, _mm512_set1_ps(88.7f));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, ln2_hi, x);
  r = _mm512_fnmadd_ps(k, ln2_lo, r);
  // e^r = 1 + r + r^2/2! + ... + r^6/6! (Horner)
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, k);
}

float scale_max_avx512(float* s, const uint8_t* valid, int64_t n, float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 v = valid_mask(valid, c, n);
    const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(v, s + c), sc);
    _mm512_mask_storeu_ps(s + c, v, x);
    mx = _mm512_mask_max_ps(mx, v, mx, x);
  }
  return _mm512_reduce_max_ps(mx);
}

float exp_sum_avx512(const float* s, const uint8_t* valid, int64_t n, float m, float* e) {
  const __m512 mv = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 in = n - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - c)) - 1);
    const __mmask16 v = valid_mask(valid, c, n);
    const __m512 x = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(v, s + c), mv));
    const __m512 y = _mm512_maskz_mov_ps(v, x);
    _mm512_mask_storeu_ps(e + c, in, y);
    acc = _mm512_add_ps(acc, y);
  }
  return _mm512_reduce_add_ps(acc);
}

}  // namespace

const SoftmaxKernels& softmax_kernels_avx512() {
  static const SoftmaxKernels k{scale_max_avx512, exp_sum_avx512, "avx512"};
  return k;
}

}  // namespace mlaops::kernels
