// The AVX-512 exp of the online softmax, shared by softmax_avx512.cpp and the lane-major flash
// attention (attn_lanes_avx512.cpp): Cody-Waite range reduction x = k ln2 + r, |r| <= ln2/2, e^r
// by its degree-6 Taylor polynomial, 2^k by vscalefps (relative error < 3e-7). Include only from
// files compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

namespace mlaops::kernels::avx512 {

inline __m512 exp512(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693359375f), ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
  // The clamps take x as the second operand: vmaxps / vminps return it when it is NaN, so a NaN
  // score stays NaN (docs/numerics.md "Non-finite and extreme values").
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);  // below: the result underflows to 0 anyway
  x = _mm512_min_ps(_mm512_set1_ps(88.7f), x);
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

}  // namespace mlaops::kernels::avx512
