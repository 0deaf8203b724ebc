// AVX-512 online-softmax pieces: masked scale + max, and the polynomial exp of softmax_avx512.h.
#include <immintrin.h>

#include <limits>

#include "kernels/cpu/attention/softmax.h"

#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/attention/softmax_avx512.h"

namespace mlaops::kernels {
namespace {

using avx512::exp512;

inline __mmask16 valid_mask(const uint8_t* valid, int64_t c, int64_t n) {
  const __mmask16 in = n - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - c)) - 1);
  const __m128i v = _mm_maskz_loadu_epi8(in, valid + c);
  return _mm_test_epi8_mask(v, v);
}

float scale_max_avx512(float* s, const uint8_t* valid, int64_t n, float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 nan = 0;  // valid lanes that held a NaN score
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 v = valid_mask(valid, c, n);
    const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(v, s + c), sc);
    _mm512_mask_storeu_ps(s + c, v, x);
    mx = _mm512_mask_max_ps(mx, v, mx, x);
    nan = static_cast<__mmask16>(nan | _mm512_mask_cmp_ps_mask(v, x, x, _CMP_UNORD_Q));
  }
  return nan != 0 ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_max_ps(mx);
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

constinit const SoftmaxKernels softmax_avx512{scale_max_avx512, exp_sum_avx512};

}  // namespace mlaops::kernels
