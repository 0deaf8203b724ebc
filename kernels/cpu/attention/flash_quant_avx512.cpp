// AVX-512 VNNI row of the flash_quant family (flash_quant.h). The int8 dots use vpdpbusd
// (unsigned x signed bytes, 4 per 32-bit lane): the packed K / V bytes are the unsigned operand
// (biased by +128), the query / P quad the signed broadcast one, and 128 * (sum of the signed
// operand) is subtracted from each sum, which is then exact. Scores and P follow the scalar
// row's fp32 / fp16 operations lane by lane (vcvtps2ph: IEEE round to nearest even, overflow to
// infinity), the exponential is fq_exp's polynomial with the same fused operations.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/attention/flash_quant.h"
#include "kernels/cpu/common/simd_avx512.h"  // (GCC 12 intrinsics warnings)

namespace mlaops::kernels {
namespace {

inline __m512 round_h(__m512 x) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

inline int32_t load32(const int8_t* p) {
  int32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

// fq_exp, 16 lanes.
inline __m512 exp16(__m512 x) {
  const __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.25f), _CMP_LT_OQ);
  const __mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.5f), _CMP_GT_OQ);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  const __m512 r2 = _mm512_mul_ps(r, r), r4 = _mm512_mul_ps(r2, r2);
  const __m512 a = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f), _mm512_set1_ps(1.0f));
  const __m512 b = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
  const __m512 c = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 120.0f), _mm512_set1_ps(1.0f / 24.0f));
  const __m512 d = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 5040.0f), _mm512_set1_ps(1.0f / 720.0f));
  const __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(d, r2, c), r4, _mm512_fmadd_ps(b, r2, a));
  __m512 res = _mm512_scalef_ps(p, n);
  res = _mm512_mask_mov_ps(res, big, _mm512_set1_ps(__builtin_huge_valf()));
  return _mm512_mask_mov_ps(res, zero, _mm512_setzero_ps());
}

// fq_pack_v: 4 rows x 16 channels interleaved by byte (unpack 8 then 16), biased by +128.
void pack_v_avx512(const int8_t* v, int64_t stride, int64_t n, int64_t VD, uint8_t* out) {
  const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
  const int64_t full = n / 4 * 4;
  for (int64_t t = 0; t < full / 4; ++t) {
    const int8_t* r = v + t * 4 * stride;
    uint8_t* o = out + t * VD * 4;
    int64_t d = 0;
    for (; d + 16 <= VD; d += 16) {
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + d));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + stride + d));
      const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2 * stride + d));
      const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 3 * stride + d));
      const __m128i a0 = _mm_unpacklo_epi8(r0, r1), a1 = _mm_unpackhi_epi8(r0, r1);
      const __m128i b0 = _mm_unpacklo_epi8(r2, r3), b1 = _mm_unpackhi_epi8(r2, r3);
      __m128i* od = reinterpret_cast<__m128i*>(o + d * 4);
      _mm_storeu_si128(od, _mm_xor_si128(_mm_unpacklo_epi16(a0, b0), bias));
      _mm_storeu_si128(od + 1, _mm_xor_si128(_mm_unpackhi_epi16(a0, b0), bias));
      _mm_storeu_si128(od + 2, _mm_xor_si128(_mm_unpacklo_epi16(a1, b1), bias));
      _mm_storeu_si128(od + 3, _mm_xor_si128(_mm_unpackhi_epi16(a1, b1), bias));
    }
    for (; d < VD; ++d)
      for (int64_t i = 0; i < 4; ++i) o[d * 4 + i] = static_cast<uint8_t>(r[i * stride + d]) ^ 0x80;
  }
  if (full < n) fq_pack_v(v + full * stride, stride, n - full, VD, out + full * VD);
}

template <int RB>
void scores_block(const int8_t* q, int64_t q_stride, const uint8_t* kp, int64_t n16, int64_t D, float deq1,
                  float scale_h, float* s, int64_t s_stride) {
  const int64_t quads = D / 4;
  __m512i corr[RB];
  for (int r = 0; r < RB; ++r) {
    int32_t sum = 0;
    for (int64_t d = 0; d < D; ++d) sum += q[r * q_stride + d];
    corr[r] = _mm512_set1_epi32(128 * sum);
  }
  const __m512 vdeq = _mm512_set1_ps(deq1), vsc = _mm512_set1_ps(scale_h);
  const __m512 lo = _mm512_set1_ps(-65504.0f), hi = _mm512_set1_ps(65504.0f);
  auto finish = [&](__m512i a, int r, int64_t t) {
    __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(a, corr[r])), vdeq);
    x = _mm512_min_ps(hi, _mm512_max_ps(lo, x));
    _mm512_storeu_ps(s + r * s_stride + t * 16, round_h(_mm512_mul_ps(round_h(x), vsc)));
  };
  const int64_t groups = n16 / 16, gstride = quads * 64;
  int64_t t = 0;
  for (; t + 2 <= groups; t += 2) {  // two groups of 16 positions: each query broadcast used twice
    const uint8_t* kt = kp + t * gstride;
    __m512i a0[RB], a1[RB];
    for (int r = 0; r < RB; ++r) a0[r] = a1[r] = _mm512_setzero_si512();
    for (int64_t c = 0; c < quads; ++c) {
      const __m512i k0 = _mm512_loadu_si512(kt + c * 64), k1 = _mm512_loadu_si512(kt + gstride + c * 64);
      for (int r = 0; r < RB; ++r) {
        const __m512i qb = _mm512_set1_epi32(load32(q + r * q_stride + c * 4));
        a0[r] = _mm512_dpbusd_epi32(a0[r], k0, qb);
        a1[r] = _mm512_dpbusd_epi32(a1[r], k1, qb);
      }
    }
    for (int r = 0; r < RB; ++r) {
      finish(a0[r], r, t);
      finish(a1[r], r, t + 1);
    }
  }
  for (; t < groups; ++t) {
    const uint8_t* kt = kp + t * gstride;
    __m512i acc[RB];
    for (int r = 0; r < RB; ++r) acc[r] = _mm512_setzero_si512();
    for (int64_t c = 0; c < quads; ++c) {
      const __m512i kv = _mm512_loadu_si512(kt + c * 64);
      for (int r = 0; r < RB; ++r)
        acc[r] = _mm512_dpbusd_epi32(acc[r], kv, _mm512_set1_epi32(load32(q + r * q_stride + c * 4)));
    }
    for (int r = 0; r < RB; ++r) finish(acc[r], r, t);
  }
}

void scores_avx512(const int8_t* q, int64_t q_stride, int64_t M, const uint8_t* kp, int64_t n16, int64_t D,
                   float deq1, float scale_h, float* s, int64_t s_stride) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4)
    scores_block<4>(q + m * q_stride, q_stride, kp, n16, D, deq1, scale_h, s + m * s_stride, s_stride);
  for (; m < M; ++m)
    scores_block<1>(q + m * q_stride, q_stride, kp, n16, D, deq1, scale_h, s + m * s_stride, s_stride);
}

void row_quant_avx512(const float* s, int64_t n, float qs_h, float* m, int8_t* p, float* esum, int32_t* psum) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_huge_valf());
  __m512 vmax = ninf;
  int64_t j = 0;
  __mmask16 nan = 0;  // vmaxps drops a NaN of its first operand: NaN scores are tracked apart
  for (; j + 16 <= n; j += 16) {
    const __m512 v = _mm512_loadu_ps(s + j);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    vmax = _mm512_max_ps(vmax, v);
  }
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - j)) - 1u);
  if (j < n) {
    const __m512 v = _mm512_mask_loadu_ps(ninf, tail, s + j);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    vmax = _mm512_max_ps(vmax, v);
  }
  const float cmax = nan != 0 ? __builtin_nanf("") : _mm512_reduce_max_ps(vmax);  // a NaN score: a NaN row
  *esum = 0.0f;
  *psum = 0;
  if (cmax == -__builtin_huge_valf()) {
    std::memset(p, 0, static_cast<size_t>(n));
    return;
  }
  const float mn = *m > cmax ? *m : cmax;
  const __m512 vm = _mm512_set1_ps(mn), vq = _mm512_set1_ps(qs_h);
  const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
  __m512 es = _mm512_setzero_ps();
  __m512i ps = _mm512_setzero_si512();
  // e < 0.49 / qs_h gives P = 0 whatever the two FP16 roundings (each moves the value by at most
  // 2^-11 relative, or 2^-25 absolute when subnormal): such vectors skip the conversions.
  const __m512 small = _mm512_set1_ps(qs_h > 0.0f ? 0.49f / qs_h : -1.0f);
  auto step = [&](__m512 sv, __mmask16 k) {
    const __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(sv, vm)));
    es = _mm512_add_ps(es, e);
    if (_mm512_cmp_ps_mask(e, small, _CMP_LT_OQ) == 0xffff) return _mm_setzero_si128();
    const __m512 ph = round_h(_mm512_mul_ps(round_h(e), vq));
    __m512i pi = _mm512_cvtps_epi32(ph);  // MXCSR round to nearest even
    const __mmask16 num = _mm512_cmp_ps_mask(ph, ph, _CMP_ORD_Q);  // NaN gives 0 (docs/numerics.md)
    pi = _mm512_maskz_mov_epi32(k & num, _mm512_min_epi32(hi, _mm512_max_epi32(lo, pi)));
    ps = _mm512_add_epi32(ps, pi);
    return _mm512_cvtepi32_epi8(pi);
  };
  for (j = 0; j + 16 <= n; j += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + j), step(_mm512_loadu_ps(s + j), 0xffff));
  if (j < n) _mm_mask_storeu_epi8(p + j, tail, step(_mm512_mask_loadu_ps(ninf, tail, s + j), tail));
  *m = mn;
  *esum = _mm512_reduce_add_ps(es);
  *psum = _mm512_reduce_add_epi32(ps);
}

template <int RB, int DB>
void pv_block(const int8_t* p, int64_t p_stride, const int32_t* psum, const uint8_t* vp, int64_t n4, int64_t VD,
              int64_t d0, int32_t* acc, int64_t acc_stride) {
  __m512i a[RB][DB];
  for (int r = 0; r < RB; ++r)
    for (int b = 0; b < DB; ++b) a[r][b] = _mm512_setzero_si512();
  for (int64_t t = 0; t < n4 / 4; ++t) {
    const uint8_t* vt = vp + (t * VD + d0) * 4;
    __m512i bp[RB];
    for (int r = 0; r < RB; ++r) bp[r] = _mm512_set1_epi32(load32(p + r * p_stride + t * 4));
    for (int b = 0; b < DB; ++b) {
      const __m512i vv = _mm512_loadu_si512(vt + b * 64);
      for (int r = 0; r < RB; ++r) a[r][b] = _mm512_dpbusd_epi32(a[r][b], vv, bp[r]);
    }
  }
  for (int r = 0; r < RB; ++r) {
    const __m512i corr = _mm512_set1_epi32(128 * psum[r]);
    for (int b = 0; b < DB; ++b)
      _mm512_storeu_si512(acc + r * acc_stride + d0 + b * 16, _mm512_sub_epi32(a[r][b], corr));
  }
}

template <int RB>
void pv_rows(const int8_t* p, int64_t p_stride, const int32_t* psum, const uint8_t* vp, int64_t n4, int64_t VD,
             int32_t* acc, int64_t acc_stride) {
  int64_t d = 0;
  for (; d + 64 <= VD; d += 64) pv_block<RB, 4>(p, p_stride, psum, vp, n4, VD, d, acc, acc_stride);
  for (; d < VD; d += 16) pv_block<RB, 1>(p, p_stride, psum, vp, n4, VD, d, acc, acc_stride);
}

void pv_avx512(const int8_t* p, int64_t p_stride, const int32_t* psum, int64_t M, const uint8_t* vp, int64_t n4,
               int64_t VD, int32_t* acc, int64_t acc_stride) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4)
    pv_rows<4>(p + m * p_stride, p_stride, psum + m, vp, n4, VD, acc + m * acc_stride, acc_stride);
  for (; m < M; ++m) pv_rows<1>(p + m * p_stride, p_stride, psum + m, vp, n4, VD, acc + m * acc_stride, acc_stride);
}

}  // namespace

constinit const FlashQuantKernels flash_quant_avx512_vnni{fq_pack_k, pack_v_avx512, scores_avx512, row_quant_avx512, pv_avx512};

}  // namespace mlaops::kernels
