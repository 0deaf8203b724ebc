// Parts of the AVX-512 flash decode shared by its FP16 / BF16 kernel (attn_decode_avx512.cpp,
// where the algorithm is described) and its INT8 / INT4 key / value kernel
// (attn_decode_i8_avx512.cpp): the group context, block offsets, the bias / mask / softmax steps,
// the P x V element types and block loop, the final rows. Included only by those two files (they
// are compiled with the AVX-512 flags).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/attn_variant.h"
#include "kernels/cpu/attention/attn_decode.h"
#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/attention/softmax_avx512.h"

namespace mlaops::kernels::flash_decode_avx512 {

namespace v5 = avx512;
constexpr int64_t BK = kFlashDecodeBlock;
constexpr int64_t ru(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

using avx512::exp512;  // the shared softmax exp (softmax_avx512.h)

// Lane i of the result = sum of the 16 lanes of a[i]: fp32 (ADD = _mm512_add_ps) or, on the same
// shuffles, int32 (ADD adds the bits as epi32).
struct AddPs {
  __m512 operator()(__m512 a, __m512 b) const { return _mm512_add_ps(a, b); }
};
struct AddEpi32 {
  __m512 operator()(__m512 a, __m512 b) const {
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  }
};
template <class ADD = AddPs>
inline __m512 reduce16(const __m512* a) {
  const ADD add;
  __m512 x[8], y[4], z[2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) x[i] = add(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512d p = _mm512_castps_pd(x[2 * i]), q = _mm512_castps_pd(x[2 * i + 1]);
    y[i] = add(_mm512_castpd_ps(_mm512_unpacklo_pd(p, q)), _mm512_castpd_ps(_mm512_unpackhi_pd(p, q)));
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)
    z[i] = add(_mm512_shuffle_f32x4(y[2 * i], y[2 * i + 1], 0x88), _mm512_shuffle_f32x4(y[2 * i], y[2 * i + 1], 0xDD));
  return add(_mm512_shuffle_f32x4(z[0], z[1], 0x88), _mm512_shuffle_f32x4(z[0], z[1], 0xDD));
}

// Channels [32c, 32c + 32) of a bf16 row (HALF: only [32c, 32c + 16), upper half zero). NZ rows
// hold 16-channel chunks c0s elements apart.
template <bool NZ, bool HALF>
inline __m512i load32(const uint16_t* row, int64_t c, int64_t c0s) {
  if constexpr (!NZ) {
    if constexpr (HALF) return _mm512_maskz_loadu_epi16(0xFFFFu, row + 32 * c);
    return _mm512_loadu_si512(row + 32 * c);
  } else {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * c * c0s));
    if constexpr (HALF) return _mm512_zextsi256_si512(lo);
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + (2 * c + 1) * c0s));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
}
// Channels [16c, 16c + 16) of an fp16 row as fp32.
template <bool NZ>
inline __m512 load16_f32(const uint16_t* row, int64_t c, int64_t c0s) {
  const uint16_t* p = NZ ? row + c * c0s : row + 16 * c;
  return v5::cvtph(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}


struct Ctx {
  const FlashItem* items;
  int64_t n, G, nG, QD, VD, VDp;
  int64_t kc0s, vc0s;  // NZ chunk strides of K and V
  FlashDecodeScratch sc;
  const uint16_t* kb[16];  // K / V base of each head
  const uint16_t* vb[16];
  const uint16_t* q[16];   // query rows of each head: q[h] + g * qs[h], [QD]
  int64_t qs[16];
  const uint16_t* qk = nullptr;  // bf16: the packed query [QDp / 32, nG, 32] (sc.q)
  // INT8 key / value (decode_group_i8)
  const int8_t* kb8[16];
  const int8_t* vb8[16];
  const int16_t* q16 = nullptr;  // the int16 query, packed as qk [QD / 32, nG, 32]
  const float* lane_a = nullptr;  // [n][16]: per head, score lane k * G + g -> scale * alpha_q(row)
  const float* lane_c = nullptr;  // [n][16]: scale * sum_d q'_d k_offset_d
  int64_t n_next = 0;  // keys of the next block (offsets at sc.k_off / sc.v_off + BK)
};

constexpr int64_t kPrefetchKeys = 8;  // K prefetch distance (keys), into L2

using avx512::prefetch_line_l2;  // simd_avx512.h
using avx512::prefetch_range_l2;

template <bool NZ>
inline void prefetch_l2(const uint16_t* row, int64_t D, int64_t c0s) {
  if constexpr (NZ) {
    for (int64_t c = 0; c < D / 16; ++c) prefetch_line_l2(row + c * c0s);
  } else {
    prefetch_range_l2(row, D * 2);
  }
}

// Prefetches the K rows (and V rows: fp16 operands; bf16 ones prefetch V in step 3) of every head
// of block-relative key t: t < nk this block, else (a full block) key t - BK of the next block,
// whose offsets follow at index BK.
// Heads [h0, h1) only: the score tiles spread their prefetches over the heads of a key tile (a
// burst of every head's rows stalled the tile on full miss buffers).
template <bool F16, bool NZ>
inline void prefetch_key(const Ctx& x, int64_t t, int64_t nk, int64_t h0, int64_t h1) {
  const int64_t* ko = x.sc.k_off;
  const int64_t* vo = x.sc.v_off;
  if (t >= nk && (nk < BK || t - BK >= x.n_next)) return;
  for (int64_t h = h0; h < h1; ++h) {
    prefetch_l2<NZ>(x.kb[h] + ko[t], x.QD, x.kc0s);
    if (F16) prefetch_l2<NZ>(x.vb[h] + vo[t], x.VD, x.vc0s);
  }
}

// Row offsets (sc.k_off / sc.v_off) of the block [j0, j0 + nk) of the range [begin, end), taken
// from the previous call's next block after the first, and of the next block (x.n_next keys) at
// index BK.
inline void block_offsets(Ctx& x, const FlashKv& k, const FlashKv& v, int64_t j0, int64_t nk, int64_t begin,
                          int64_t end) {
  if (j0 == begin) {
    k.rows(j0, nk, x.sc.k_off);
    v.rows(j0, nk, x.sc.v_off);
  } else {
    std::memcpy(x.sc.k_off, x.sc.k_off + BK, static_cast<size_t>(nk) * 8);
    std::memcpy(x.sc.v_off, x.sc.v_off + BK, static_cast<size_t>(nk) * 8);
  }
  x.n_next = std::max<int64_t>(0, std::min(BK, end - j0 - BK));
  if (x.n_next > 0) {
    k.rows(j0 + BK, x.n_next, x.sc.k_off + BK);
    v.rows(j0 + BK, x.n_next, x.sc.v_off + BK);
  }
}

// Step 1b, items with an additive bias: S[j * nG + h * G + g] += bias of head g of item h at
// position j0 + j (operand dtype; j < nk), gathered and scattered 16 keys at a time (the bias
// rows are contiguous in j, S is key-major).
inline void add_bias(const Ctx& x, int64_t j0, int64_t nk, bool fp16) {
  const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(static_cast<int>(x.nG)));
  for (int64_t h = 0; h < x.n; ++h) {
    const FlashItem& it = x.items[h];
    for (int64_t g = 0; g < it.G; ++g) {  // it.G <= x.G: the padded rows have no bias
      const uint16_t* b = attn_bias_row(it, g, it.row0) + j0;
      float* s = x.sc.s + h * x.G + g;
      for (int64_t j = 0; j < nk; j += 16) {
        const __mmask16 m = v5::mask16(nk - j);
        const __m256i raw = _mm256_maskz_loadu_epi16(m, b + j);
        const __m512 v = fp16 ? v5::cvtph(raw) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
        const __m512 old = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, s + j * x.nG, 4);
        _mm512_mask_i32scatter_ps(s + j * x.nG, m, idx, _mm512_add_ps(old, v), 4);
      }
    }
  }
}

// Step 1c, items with an explicit mask: S[j * nG + h * G + g] = -inf where the mask byte of
// item h at position j0 + j is non-zero (one row per item: the G heads share it; the mask covers
// the positions from mask_j0 on, attn_item.h).
inline void apply_mask(const Ctx& x, int64_t j0, int64_t nk) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t h = 0; h < x.n; ++h) {
    const AttnMask mask = attn_mask(x.items[h]);
    if (!mask.on()) continue;
    const int64_t c0 = std::max<int64_t>(0, std::min<int64_t>(nk, mask.j0 - j0));  // first covered key
    const uint8_t* m = mask.at(x.items[h].row0, j0 + c0);
    for (int64_t j = c0; j < nk; ++j) {
      if (m[(j - c0) * mask.j_stride] == 0) continue;
      float* s = x.sc.s + j * x.nG + h * x.G;
      for (int64_t g = 0; g < x.G; ++g) s[g] = ninf;
    }
  }
}

// Whether item `it` has a valid (unmasked) position among [j0, j0 + nk), nk > 0.
inline bool block_has_valid(const FlashItem& it, int64_t j0, int64_t nk) {
  const AttnMask mask = attn_mask(it);
  if (!mask.on() || j0 < mask.j0) return true;
  const uint8_t* m = mask.at(it.row0, j0);
  for (int64_t j = 0; j < nk; ++j)
    if (m[j * mask.j_stride] == 0) return true;
  return false;
}

// How step 2 stores P: bf16 pairs into sc.p, fp32 into sc.s in place (fp16 operands), or int16
// pairs P * 32767 into sc.p (INT8 key / value).
enum class PStore { kBf16Pairs, kF32, kI16Pairs };

// Step 2 on the nk keys of S, 16 rows per vector: m, l, alpha; P stored as PS says.
template <PStore PS>
void softmax_rows(const Ctx& x, int64_t j0, int64_t nk) {
  const int64_t nG = x.nG;
  const float* S = x.sc.s;
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r0 = 0; r0 < nG; r0 += 16) {
    const __mmask16 in = v5::mask16(nG - r0);
    const __m512 m = _mm512_mask_loadu_ps(ninf, in, x.sc.m + r0);
    __m512 bm = ninf;
    for (int64_t j = 0; j < nk; ++j) bm = _mm512_max_ps(bm, _mm512_mask_loadu_ps(ninf, in, S + j * nG + r0));
    const __m512 mnew = _mm512_max_ps(m, bm);
    // unordered: a NaN max (a NaN score) keeps the row live, so it comes out NaN (docs/numerics.md)
    const __mmask16 had = _mm512_cmp_ps_mask(m, ninf, _CMP_NEQ_UQ);
    const __mmask16 live = static_cast<__mmask16>(_mm512_cmp_ps_mask(mnew, ninf, _CMP_NEQ_UQ) & in);
    const __m512 a = _mm512_maskz_mov_ps(had, exp512(_mm512_sub_ps(m, mnew)));
    __m512 sum = _mm512_setzero_ps();
    __m512i pend = _mm512_setzero_si512();
    for (int64_t j = 0; j < nk; ++j) {
      const __m512 p = _mm512_maskz_mov_ps(live, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(in, S + j * nG + r0), mnew)));
      sum = _mm512_add_ps(sum, p);
      if constexpr (PS == PStore::kF32) {
        _mm512_mask_storeu_ps(x.sc.s + j * nG + r0, in, p);
      } else {
        const __m512i bits = PS == PStore::kBf16Pairs ? v5::bf16_bits(p)
                                                      : _mm512_cvtps_epi32(_mm512_mul_ps(p, _mm512_set1_ps(32767.0f)));
        if (j % 2 == 0) {
          pend = bits;
          if (j + 1 == nk) _mm512_mask_storeu_epi32(x.sc.p + j / 2 * nG + r0, in, pend);
        } else {
          _mm512_mask_storeu_epi32(x.sc.p + j / 2 * nG + r0, in, _mm512_or_si512(pend, _mm512_slli_epi32(bits, 16)));
        }
      }
    }
    const __m512 l = _mm512_maskz_loadu_ps(in, x.sc.l + r0);
    _mm512_mask_storeu_ps(x.sc.l + r0, in, _mm512_fmadd_ps(l, a, sum));
    // rows still at max -inf: those that had a valid position (here or before) are all -inf
    // (the state m = -inf, l = kAllNegInfL of attn_combine.h); rare, so checked row by row
    const __mmask16 dead = static_cast<__mmask16>(in & ~had & _mm512_cmp_ps_mask(mnew, ninf, _CMP_EQ_OQ));
    if (dead != 0) {
      alignas(64) float lold[16];
      _mm512_store_ps(lold, l);
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t r = r0 + i;
        if (((dead >> i) & 1) != 0 && (lold[i] != 0.0f || block_has_valid(x.items[r / x.G], j0, nk)))
          x.sc.l[r] = kAllNegInfL;
      }
    }
    _mm512_mask_storeu_ps(x.sc.m + r0, in, mnew);
    _mm512_mask_storeu_ps(x.sc.alpha + r0, in, a);
  }
  for (int64_t r = 0; r < nG; ++r) {  // O *= alpha
    float* o = x.sc.o + r * x.VDp;
    const __m512 a = _mm512_set1_ps(x.sc.alpha[r]);
    for (int64_t d = 0; d < x.VDp; d += 16) _mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), a));
  }
}

// Channels [32c, 32c + 32) of an INT8 row, sign-extended to int16.
inline __m512i load32_i8(const int8_t* row, int64_t c) {
  return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * c)));
}

// Channels [32c, 32c + 32) of a packed INT4 row (channel k: nibble k % 2 of byte k / 2, low
// first, two's complement), sign-extended to int16: byte i widened to int32 lane i, then
// (b << 12) | (b << 24) puts the low nibble in bits 12..15 and the high nibble in bits 28..31, so
// one arithmetic shift of the 16-bit halves by 12 gives channel 2i (low half) and 2i + 1 (high).
inline __m512i load32_i4(const int8_t* row, int64_t c) {
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * c)));
  return _mm512_srai_epi16(_mm512_or_si512(_mm512_slli_epi32(b, 12), _mm512_slli_epi32(b, 24)), 12);
}

// The INT8 / INT4 / INT8-NZ (chunk c of 32 bytes at c * c0s from the row) loads of the in-place
// kernel.
template <bool I4, bool NZ>
inline __m512i load32_q(const int8_t* row, int64_t c, int64_t c0s) {
  if constexpr (NZ) return load32_i8(row + c * c0s, 0);
  return I4 ? load32_i4(row, c) : load32_i8(row, c);
}

// A row of D channels into L2.
template <bool I4, bool NZ>
inline void prefetch_q(const int8_t* row, int64_t D, int64_t c0s) {
  if constexpr (NZ) {
    for (int64_t c = 0; c < D / 32; ++c) avx512::prefetch_line_l2(row + c * c0s);
  } else {
    avx512::prefetch_range_l2(row, I4 ? D / 2 : D);
  }
}

// Step 3 elements: bf16 V rows (dpbf16 into fp32 accumulators that start from O) or INT8 V rows
// sign-extended to int16 (vpdpwssd into exact int32 accumulators, |lane| <= BK * 32767 * 128 <
// 2^31, added to O as acc / 32767 at the end of the block).
template <bool NZ, bool HALF>
struct PvBf16 {
  using T = uint16_t;
  using Acc = __m512;
  int64_t VD, c0s;
  __m512i load(const T* row, int64_t c, bool last) const {
    return HALF && last ? load32<NZ, true>(row, c, c0s) : load32<NZ, false>(row, c, c0s);
  }
  void prefetch(const T* row) const { prefetch_l2<NZ>(row, VD, c0s); }
  static Acc dot(Acc a, __m512i v, __m512i w) { return v5::dpbf16(a, v, w); }
  static Acc start(const float* o) { return _mm512_loadu_ps(o); }
  void finish(Acc a, float* o) const { _mm512_storeu_ps(o, a); }
  PvBf16 for_head(int64_t) const { return *this; }
};
template <bool I4, bool NZ>
struct PvI8 {
  using T = int8_t;
  using Acc = __m512i;
  int64_t VD, c0s;
  __m512i load(const T* row, int64_t c, bool) const { return load32_q<I4, NZ>(row, c, c0s); }
  void prefetch(const T* row) const { prefetch_q<I4, NZ>(row, VD, c0s); }
  const float* mults = nullptr;  // per head: the block's P unit (per-token value scales), else 1 / 32767
  float mult = 1.0f / 32767.0f;
  static Acc dot(Acc a, __m512i v, __m512i w) { return v5::dpwssd(a, v, w); }
  static Acc start(const float*) { return _mm512_setzero_si512(); }
  void finish(Acc a, float* o) const {
    _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_set1_ps(mult), _mm512_loadu_ps(o)));
  }
  PvI8 for_head(int64_t h) const {
    PvI8 e = *this;
    if (mults != nullptr) e.mult = mults[h];
    return e;
  }
};

// Step 3 (bf16 / INT8), the nk keys of the block for one head: rows [0, GT) of o (stride VDp) x
// 32-channel chunks [c0, c0 + CC), accumulated in registers over the key pairs (address order):
// the two V rows interleaved by vpunpck{l,h}wd against the broadcast P pair; w: the rows' P
// pairs, pair j at w + j * nG. Rows of the next block's first npf keys are prefetched: pstep 1,
// both rows of each pair; else the call is share pfirst of pstep calls on the head's rows and pair
// p prefetches row p * pstep + pfirst (one row per pair, values_pv).
template <class E, int GT, int CC>
inline void pv_block(const E& e, const typename E::T* vb, const int64_t* voff, int64_t nk, const uint32_t* w,
                     int64_t nG, float* o, int64_t VDp, int64_t c0, int64_t npf, int64_t pstep = 1,
                     int64_t pfirst = 0) {
  using Acc = typename E::Acc;
  Acc acc[GT][CC][2];
#pragma GCC unroll 8
  for (int g = 0; g < GT; ++g)
#pragma GCC unroll 8
    for (int cc = 0; cc < CC; ++cc)
      for (int hf = 0; hf < 2; ++hf) acc[g][cc][hf] = E::start(o + g * VDp + (c0 + cc) * 32 + 16 * hf);
  auto pair = [&](const typename E::T* ra, const typename E::T* rb, const uint32_t* wp) {
    __m512i lo[CC], hi[CC];
#pragma GCC unroll 8
    for (int cc = 0; cc < CC; ++cc) {
      const __m512i va = e.load(ra, c0 + cc, cc == CC - 1);
      const __m512i vb2 = rb == nullptr ? _mm512_setzero_si512() : e.load(rb, c0 + cc, cc == CC - 1);
      lo[cc] = _mm512_unpacklo_epi16(va, vb2);
      hi[cc] = _mm512_unpackhi_epi16(va, vb2);
    }
#pragma GCC unroll 8
    for (int g = 0; g < GT; ++g) {
      const __m512i wv = _mm512_set1_epi32(static_cast<int>(wp[g]));
#pragma GCC unroll 8
      for (int cc = 0; cc < CC; ++cc) {
        acc[g][cc][0] = E::dot(acc[g][cc][0], lo[cc], wv);
        acc[g][cc][1] = E::dot(acc[g][cc][1], hi[cc], wv);
      }
    }
  };
  int64_t j = 0;
  for (; j + 1 < nk; j += 2) {
    if (pstep == 1) {
      if (j < npf) e.prefetch(vb + voff[BK + j]);
      if (j + 1 < npf) e.prefetch(vb + voff[BK + j + 1]);
    } else if (const int64_t t = j / 2 * pstep + pfirst; t < npf) {
      e.prefetch(vb + voff[BK + t]);
    }
    pair(vb + voff[j], vb + voff[j + 1], w + j / 2 * nG);
  }
  if (j < nk) pair(vb + voff[j], nullptr, w + j / 2 * nG);
#pragma GCC unroll 8
  for (int g = 0; g < GT; ++g)
#pragma GCC unroll 8
    for (int cc = 0; cc < CC; ++cc)
      for (int hf = 0; hf < 2; ++hf) e.finish(acc[g][cc][hf], o + g * VDp + (c0 + cc) * 32 + 16 * hf);
}

// Step 3 (bf16 / INT8) over the block: per head, row tile of GT and channel range of CC chunks;
// the head's V rows of the next block are prefetched one row per key pair, spread over all of the
// head's calls (ncalls > 1: call ci takes rows ci, ci + ncalls, ...; ncalls == 1: two per pair),
// so that the prefetches go out at the pace of the arithmetic rather than in a burst on its first
// call (docs/performance.md, GQA decode). Tail: a last 32-chunk half full (bf16, VD % 32 == 16)
// takes the HALF policy `et`.
template <int G, class E, class ET>
void values_pv(const Ctx& x, int64_t nk, const E& e, const ET& et, const typename E::T* const* vbase) {
  constexpr int GT = G < 8 ? G : 8;
  constexpr int CC = GT == 1 ? 4 : 8 / GT;  // accumulators 2 * GT * CC <= 16
  const int64_t nG = x.nG, VDp = x.VDp, nch = (x.VD + 31) / 32;
  const bool half_tail = x.VD % 32 != 0;
  const int64_t ncalls = (G / GT) * (nch / CC + nch % CC);  // pv_block calls per head
  const bool spread = ncalls > 1;
  for (int64_t h = 0; h < x.n; ++h) {
    int64_t ci = 0;
    for (int64_t g0 = 0; g0 < G; g0 += GT) {
      const E eh = e.for_head(h);
      const ET eth = et.for_head(h);
      const int64_t r = h * G + g0;
      float* o = x.sc.o + r * VDp;
      const uint32_t* w = x.sc.p + r;
      const int64_t npf = (spread || g0 == 0) && nk == BK ? x.n_next : 0;
      int64_t c0 = 0;
      for (; c0 + CC <= nch; c0 += CC, ++ci) {
        const int64_t pf = spread || c0 == 0 ? npf : 0;
        const int64_t ps = spread ? ncalls : 1, p0 = spread ? ci : 0;
        if (half_tail && c0 + CC == nch) pv_block<ET, GT, CC>(eth, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf, ps, p0);
        else pv_block<E, GT, CC>(eh, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf, ps, p0);
      }
      for (; c0 < nch; ++c0, ++ci) {
        const int64_t pf = spread || c0 == 0 ? npf : 0;
        const int64_t ps = spread ? ncalls : 1, p0 = spread ? ci : 0;
        if (half_tail && c0 + 1 == nch) pv_block<ET, GT, 1>(eth, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf, ps, p0);
        else pv_block<E, GT, 1>(eh, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf, ps, p0);
      }
    }
  }
}

// The group's final rows: the permuted channel order of the pair-interleaved P x V undone
// (PERMUTED), the INT8 value parameters applied (kv non-null: O_d = v_scale_d * (O_d +
// v_offset_d * l)), rows of head h compacted to [G, VD] and written by attn_finish.
template <bool PERMUTED>
void finish_group(const Ctx& x, const FlashItem* items, const FlashDecodeI8* kv) {
  const int64_t nG = x.nG, G = x.G, VD = x.VD, VDp = x.VDp;
  float* o = x.sc.o;
  if constexpr (PERMUTED) {
    float t[32];
    for (int64_t r = 0; r < nG; ++r)
      for (int64_t c = 0; c < VDp; c += 32) {
        float* ch = o + r * VDp + c;
        for (int hf = 0; hf < 2; ++hf)
          for (int L = 0; L < 4; ++L)
            for (int u = 0; u < 4; ++u) t[8 * L + 4 * hf + u] = ch[16 * hf + 4 * L + u];
        std::memcpy(ch, t, sizeof(t));
      }
  }
  if (kv != nullptr) {
    for (int64_t r = 0; r < nG; ++r) {
      const float* vs = kv->v_scale[r / G];
      const float* vo = kv->v_offset[r / G];
      const __m512 l = _mm512_set1_ps(x.sc.l[r]);
      float* orow = o + r * VDp;
      for (int64_t d = 0; d < VD; d += 16)
        _mm512_storeu_ps(orow + d, _mm512_mul_ps(_mm512_loadu_ps(vs + d),
                                                 _mm512_fmadd_ps(_mm512_loadu_ps(vo + d), l, _mm512_loadu_ps(orow + d))));
    }
  }
  for (int64_t h = 0; h < x.n; ++h) {
    float* oh = o + h * G * VDp;
    for (int64_t g = 1; g < G; ++g) std::memmove(oh + g * VD, oh + g * VDp, static_cast<size_t>(VD) * 4);
    attn_finish(items[h], oh, VD, x.sc.m + h * G, x.sc.l + h * G);
  }
}

// The context of a group of n items of G rows each (shapes from the first item).
inline Ctx group_ctx(const FlashItem* items, int64_t n, int64_t G) {
  const FlashItem& a = items[0];
  Ctx x;
  x.items = items;
  x.n = n;
  x.G = G;
  x.nG = n * G;
  x.QD = a.QD;
  x.VD = a.VD;
  x.VDp = ru(a.VD, 32);
  x.kc0s = a.k.c0_stride;
  x.vc0s = a.v.c0_stride;
  return x;
}

}  // namespace mlaops::kernels::flash_decode_avx512
