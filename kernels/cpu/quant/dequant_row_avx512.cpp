// AVX-512 KV antiquant rows (dequant_row.h): 16 channels per step, int8 (or a sign-extended INT4
// nibble) -> fp32, (x + off) * scale,
// then round to nearest even to bf16 (vcvtne2ps2bf16, 32 channels per instruction; subnormal
// products become zero, as in the scalar rule) or to fp16 (vcvtps2ph, IEEE round to nearest even);
// the residual v - rounded(v) likewise.
#include <immintrin.h>

#include "kernels/cpu/quant/dequant_row.h"
#include "kernels/cpu/common/simd_avx512.h"

namespace mlaops::kernels {

namespace {

// The row from its 16-channel int32 groups (`group(d)`: channels d .. d + 15 widened to int32),
// n channels, the rounding of dequant_row_scalar; channels from `done` (a multiple of 16 below
// n) are left to the scalar tail `tail`.
template <class Group, class Tail>
void dequant_groups(Group group, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                    float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo, Tail tail) {
  const __m512 rs = _mm512_set1_ps(row_scale), ro = _mm512_set1_ps(row_offset);
  auto value = [&](int64_t d) {  // 16 channels from d: (x + offset) * scale in fp32
    const __m512 xv = _mm512_cvtepi32_ps(group(d));
    if (ch_scale == nullptr) return _mm512_mul_ps(_mm512_add_ps(xv, ro), rs);
    const __m512 off = ch_offset ? _mm512_loadu_ps(ch_offset + d) : _mm512_setzero_ps();
    return _mm512_mul_ps(_mm512_add_ps(xv, off), _mm512_loadu_ps(ch_scale + d));
  };
  constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  auto bf16_back = [](__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); };
  // v - h, 0 where h is +-inf (the rounded value carries it; inf - inf would be NaN)
  auto residual = [](__m512 v, __m512 h) {
    const __mmask16 fin = _mm512_cmp_ps_mask(_mm512_abs_ps(h), _mm512_set1_ps(__builtin_huge_valf()), _CMP_NEQ_UQ);
    return _mm512_maskz_sub_ps(fin, v, h);
  };
  int64_t d = 0;
  if (fp16) {
    for (; d + 16 <= n; d += 16) {
      const __m512 v = value(d);
      const __m256i h = _mm512_cvtps_ph(v, kRne);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + d), h);
      const __m256i lo = _mm512_cvtps_ph(residual(v, _mm512_cvtph_ps(h)), kRne);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst_lo + d), lo);
    }
  } else {
    for (; d + 32 <= n; d += 32) {  // vcvtne2ps2bf16: RNE, subnormal inputs as zero (the scalar rule)
      const __m512 v0 = value(d), v1 = value(d + 16);
      const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(v1, v0);
      _mm512_storeu_si512(dst + d, h);
      const __m512 r0 = residual(v0, bf16_back(_mm512_castsi512_si256(h)));
      const __m512 r1 = residual(v1, bf16_back(_mm512_extracti64x4_epi64(h, 1)));
      _mm512_storeu_si512(dst_lo + d, (__m512i)_mm512_cvtne2ps_pbh(r1, r0));
    }
    for (; d + 16 <= n; d += 16) {
      const __m512 v = value(d);
      const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + d), h);
      const __m256i lo = (__m256i)_mm512_cvtneps_pbh(residual(v, bf16_back(h)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst_lo + d), lo);
    }
  }
  if (d < n) tail(d);
}

}  // namespace

void dequant_row_avx512(const int8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                        float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo) {
  dequant_groups(
      [&](int64_t d) { return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + d))); }, n,
      ch_scale, ch_offset, row_scale, row_offset, fp16, dst, dst_lo, [&](int64_t d) {
        dequant_row_scalar(x + d, n - d, ch_scale ? ch_scale + d : nullptr,
                           ch_scale && ch_offset ? ch_offset + d : nullptr, row_scale, row_offset, fp16, dst + d,
                           dst_lo + d);
      });
}

void dequant_row4_avx512(const uint8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                         float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo) {
  // 16 channels = 8 bytes: low and high nibbles interleaved back into channel order, then
  // sign-extended ((v ^ 8) - 8) to int8 and widened to int32.
  const __m128i low4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  auto group = [&](int64_t d) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + d / 2));
    const __m128i lo = _mm_and_si128(b, low4), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low4);
    const __m128i v = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);
    return _mm512_cvtepi8_epi32(v);
  };
  dequant_groups(group, n, ch_scale, ch_offset, row_scale, row_offset, fp16, dst, dst_lo, [&](int64_t d) {
    dequant_row4_scalar(x + d / 2, n - d, ch_scale ? ch_scale + d : nullptr,
                        ch_scale && ch_offset ? ch_offset + d : nullptr, row_scale, row_offset, fp16, dst + d,
                        dst_lo + d);
  });
}

}  // namespace mlaops::kernels
