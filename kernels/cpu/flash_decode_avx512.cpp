// AVX-512 flash decode (see flash_decode.h) over a group of n KV heads (items) of one batch,
// rows r = head * G + g (nG = n * G). Per block of kFlashDecodeBlock (32) keys:
//   1. S[j][r] = scale * q_r . k_j: per head, a register tile of 16 / G keys x G rows (bf16:
//      vdpbf16ps on 32 channels against the packed query [QD / 32, nG, 32], one pointer with
//      immediate offsets; fp16: vcvtph2ps + fp32 FMA against the fp32 query over 16), then one
//      16-way horizontal reduction gives the tile's 16 S values
//   2. online softmax with one row per lane: block max, alpha = exp(m_old - m_new),
//      P = exp(S - m_new), fp32 sums; bf16: P rounded to bf16 as pairs (key 2p, key 2p + 1) per row
//   3. O[r] = O[r] * alpha_r + sum_j P[j][r] V_head(r)[j]: bf16: per head, row tile and channel
//      range the block's key pairs with the accumulators in registers, the two V rows interleaved
//      by vpunpck{l,h}wd against the broadcast P pair with vdpbf16ps (O holds the channels of each
//      32-chunk permuted: lo 8L + t, hi 8L + 4 + t, L = 128-bit lane, t < 4, undone once at the
//      end); fp16: key pairs in address order, vcvtph2ps + fp32 FMA with the fp32 P.
// Prefetches into L2: K rows kPrefetchKeys keys ahead during step 1; bf16 V rows of the next block
// during step 3 (fp16: with K). Measured on the paged BnBsH GQA case (32q / 8kv, D 128, L 4096,
// B 8): blocks of 32 keys with V prefetched in step 3 1.35x faster than blocks of 64 with K and V
// prefetched 16 keys ahead in step 1; no prefetch 2x slower.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/flash_decode.h"
#include "kernels/cpu/attn_combine.h"

#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/softmax_avx512.h"

namespace mlaops::kernels {
namespace {

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

// Step 1: S[j * nG + r] for the nk keys of the block (lanes past nk of the last tile unspecified).
template <int G, int HT, bool F16, bool NZ>
void scores(const Ctx& x, int64_t nk) {
  constexpr int KB = 16 / (G * HT);
  const int64_t D = x.QD, nG = x.nG, c0s = x.kc0s;
  const int64_t* koff = x.sc.k_off;
  const __m512 scale = _mm512_set1_ps(x.items[0].scale);
  for (int64_t j = 0; j < nk; j += KB) {
    for (int64_t h0 = 0; h0 < x.n; h0 += HT) {
      for (int64_t k = j; k < j + KB; ++k) prefetch_key<F16, NZ>(x, k + kPrefetchKeys, nk, h0, h0 + HT);
      const uint16_t* kr[KB * HT];
#pragma GCC unroll 16
      for (int k = 0; k < KB; ++k)
#pragma GCC unroll 16
        for (int hh = 0; hh < HT; ++hh) kr[k * HT + hh] = x.kb[h0 + hh] + koff[std::min<int64_t>(j + k, nk - 1)];
      __m512 acc[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
      if constexpr (!F16) {
        // packed query: chunk c of row r at qk + (c * nG + r) * 32, so the tile's rows sit at
        // immediate offsets i * 64 bytes from one pointer
        const uint16_t* qc = x.qk + h0 * G * 32;
        const int64_t nfull = D / 32, cstep = nG * 32;
        for (int64_t c = 0; c < nfull; ++c, qc += cstep) {
          __m512i kv[KB * HT];
#pragma GCC unroll 16
          for (int i = 0; i < KB * HT; ++i) kv[i] = load32<NZ, false>(kr[i], c, c0s);
#pragma GCC unroll 16
          for (int i = 0; i < HT * G; ++i) {
            const __m512i qv = _mm512_loadu_si512(qc + 32 * i);
#pragma GCC unroll 16
            for (int k = 0; k < KB; ++k) acc[k * HT * G + i] = v5::dpbf16(acc[k * HT * G + i], kv[k * HT + i / G], qv);
          }
        }
        if (D % 32 != 0) {  // the query's upper 16 channels are zero; the keys' are masked
          __m512i kv[KB * HT];
#pragma GCC unroll 16
          for (int i = 0; i < KB * HT; ++i) kv[i] = load32<NZ, true>(kr[i], nfull, c0s);
#pragma GCC unroll 16
          for (int i = 0; i < HT * G; ++i) {
            const __m512i qv = _mm512_loadu_si512(qc + 32 * i);
#pragma GCC unroll 16
            for (int k = 0; k < KB; ++k) acc[k * HT * G + i] = v5::dpbf16(acc[k * HT * G + i], kv[k * HT + i / G], qv);
          }
        }
      } else {
        for (int64_t c = 0; c < D / 16; ++c) {
          __m512 kv[KB * HT];
#pragma GCC unroll 16
          for (int i = 0; i < KB * HT; ++i) kv[i] = load16_f32<NZ>(kr[i], c, c0s);
#pragma GCC unroll 16
          for (int hh = 0; hh < HT; ++hh)
#pragma GCC unroll 16
            for (int g = 0; g < G; ++g) {
              const __m512 qv = _mm512_loadu_ps(x.sc.q + ((h0 + hh) * G + g) * D + 16 * c);
#pragma GCC unroll 16
              for (int k = 0; k < KB; ++k)
                acc[(k * HT + hh) * G + g] = _mm512_fmadd_ps(kv[k * HT + hh], qv, acc[(k * HT + hh) * G + g]);
            }
        }
      }
      // lane (k * HT + hh) * G + g -> S[(j + k) * nG + (h0 + hh) * G + g]: consecutive when KB == 1 or
      // HT * G == nG, else one masked store per key (lanes [k HT G, (k + 1) HT G))
      const __m512 sv = _mm512_mul_ps(reduce16(acc), scale);
      if (KB == 1 || HT * G == nG) {
        _mm512_storeu_ps(x.sc.s + j * nG + h0 * G, sv);
      } else {
#pragma GCC unroll 16
        for (int k = 0; k < KB; ++k)
          _mm512_mask_storeu_ps(x.sc.s + (j + k) * nG + h0 * G - k * HT * G,
                                static_cast<__mmask16>(((1u << (HT * G)) - 1u) << (k * HT * G)), sv);
      }
    }
  }
}

// Step 1b, items with an additive bias: S[j * nG + h * G + g] += bias of head g of item h at
// position j0 + j (operand dtype; j < nk), gathered and scattered 16 keys at a time (the bias
// rows are contiguous in j, S is key-major).
void add_bias(const Ctx& x, int64_t j0, int64_t nk, bool fp16) {
  const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(static_cast<int>(x.nG)));
  for (int64_t h = 0; h < x.n; ++h) {
    const FlashItem& it = x.items[h];
    for (int64_t g = 0; g < x.G; ++g) {
      const uint16_t* b = it.bias + g * it.bias_n_stride + it.row0 * it.bias_i_stride + j0;
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
void apply_mask(const Ctx& x, int64_t j0, int64_t nk) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t h = 0; h < x.n; ++h) {
    const FlashItem& it = x.items[h];
    if (it.mask == nullptr) continue;
    const int64_t c0 = std::max<int64_t>(0, std::min<int64_t>(nk, it.mask_j0 - j0));  // first covered key
    const uint8_t* m = it.mask + it.row0 * it.mask_i_stride + (j0 + c0 - it.mask_j0) * it.mask_j_stride;
    for (int64_t j = c0; j < nk; ++j) {
      if (m[(j - c0) * it.mask_j_stride] == 0) continue;
      float* s = x.sc.s + j * x.nG + h * x.G;
      for (int64_t g = 0; g < x.G; ++g) s[g] = ninf;
    }
  }
}

// How step 2 stores P: bf16 pairs into sc.p, fp32 into sc.s in place (fp16 operands), or int16
// pairs P * 32767 into sc.p (INT8 key / value).
enum class PStore { kBf16Pairs, kF32, kI16Pairs };

// Step 2 on the nk keys of S, 16 rows per vector: m, l, alpha; P stored as PS says.
template <PStore PS>
void softmax_rows(const Ctx& x, int64_t nk) {
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
// pairs, pair j at w + j * nG. The first npf keys' rows of the next block are prefetched.
template <class E, int GT, int CC>
inline void pv_block(const E& e, const typename E::T* vb, const int64_t* voff, int64_t nk, const uint32_t* w,
                     int64_t nG, float* o, int64_t VDp, int64_t c0, int64_t npf) {
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
    if (j < npf) e.prefetch(vb + voff[BK + j]);
    if (j + 1 < npf) e.prefetch(vb + voff[BK + j + 1]);
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
// the head's first call also prefetches its V rows of the next block. Tail: a last 32-chunk half
// full (bf16, VD % 32 == 16) takes the HALF policy `et`.
template <int G, class E, class ET>
void values_pv(const Ctx& x, int64_t nk, const E& e, const ET& et, const typename E::T* const* vbase) {
  constexpr int GT = G < 8 ? G : 8;
  constexpr int CC = GT == 1 ? 4 : 8 / GT;  // accumulators 2 * GT * CC <= 16
  const int64_t nG = x.nG, VDp = x.VDp, nch = (x.VD + 31) / 32;
  const bool half_tail = x.VD % 32 != 0;
  for (int64_t h = 0; h < x.n; ++h)
    for (int64_t g0 = 0; g0 < G; g0 += GT) {
      const E eh = e.for_head(h);
      const ET eth = et.for_head(h);
      const int64_t r = h * G + g0;
      float* o = x.sc.o + r * VDp;
      const uint32_t* w = x.sc.p + r;
      const int64_t npf = g0 == 0 && nk == BK ? x.n_next : 0;
      int64_t c0 = 0;
      for (; c0 + CC <= nch; c0 += CC) {
        const int64_t pf = c0 == 0 ? npf : 0;
        if (half_tail && c0 + CC == nch) pv_block<ET, GT, CC>(eth, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf);
        else pv_block<E, GT, CC>(eh, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf);
      }
      for (; c0 < nch; ++c0) {
        const int64_t pf = c0 == 0 ? npf : 0;
        if (half_tail && c0 + 1 == nch) pv_block<ET, GT, 1>(eth, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf);
        else pv_block<E, GT, 1>(eh, vbase[h], x.sc.v_off, nk, w, nG, o, VDp, c0, pf);
      }
    }
}

// Step 3, fp16, one key pair of one head: rows [g0, g0 + GT) x 16-channel chunks [c0, c0 + CC);
// pa / pb: the rows' fp32 P of the two keys (pb unused when rb is null).
template <int GT, int CC, bool NZ>
inline void pv_f16(const uint16_t* ra, const uint16_t* rb, const float* pa, const float* pb, float* o, int64_t VDp,
                   int64_t c0, int64_t c0s) {
  __m512 va[CC], vb[CC];
#pragma GCC unroll 8
  for (int cc = 0; cc < CC; ++cc) {
    va[cc] = load16_f32<NZ>(ra, c0 + cc, c0s);
    vb[cc] = rb == nullptr ? _mm512_setzero_ps() : load16_f32<NZ>(rb, c0 + cc, c0s);
  }
#pragma GCC unroll 8
  for (int g = 0; g < GT; ++g) {
    const __m512 wa = _mm512_set1_ps(pa[g]), wb = _mm512_set1_ps(rb == nullptr ? 0.0f : pb[g]);
    float* og = o + g * VDp + c0 * 16;
#pragma GCC unroll 8
    for (int cc = 0; cc < CC; ++cc)
      _mm512_storeu_ps(og + cc * 16, _mm512_fmadd_ps(vb[cc], wb, _mm512_fmadd_ps(va[cc], wa, _mm512_loadu_ps(og + cc * 16))));
  }
}

// Step 3 over the block. bf16: values_pv; fp16: key pairs in address order, heads inside,
// accumulators in memory.
template <int G, bool F16, bool NZ>
void values(const Ctx& x, int64_t nk) {
  if constexpr (!F16) {
    values_pv<G>(x, nk, PvBf16<NZ, false>{x.VD, x.vc0s}, PvBf16<NZ, true>{x.VD, x.vc0s}, x.vb);
  } else {
    constexpr int GT = G < 8 ? G : 8;
    const int64_t nG = x.nG, VDp = x.VDp, c0s = x.vc0s;
    const int64_t* voff = x.sc.v_off;
    for (int64_t j = 0; j < nk; j += 2) {
      const bool single = j + 1 == nk;
      for (int64_t h = 0; h < x.n; ++h) {
        const uint16_t* ra = x.vb[h] + voff[j];
        const uint16_t* rb = single ? nullptr : x.vb[h] + voff[j + 1];
        for (int64_t g0 = 0; g0 < G; g0 += GT) {
          const int64_t r = h * G + g0;
          constexpr int CC = G == 1 ? 8 : G <= 4 ? 4 : 2;
          const float* pa = x.sc.s + j * nG + r;
          const float* pb = pa + nG;
          const int64_t nch = x.VD / 16;
          float* o = x.sc.o + r * VDp;
          int64_t c0 = 0;
          for (; c0 + CC <= nch; c0 += CC) pv_f16<GT, CC, NZ>(ra, rb, pa, pb, o, VDp, c0, c0s);
          for (; c0 < nch; ++c0) pv_f16<GT, 1, NZ>(ra, rb, pa, pb, o, VDp, c0, c0s);
        }
      }
    }
  }
}

using ScoresFn = void (*)(const Ctx&, int64_t);

// One head per register tile (HT = 1) x 16 / G keys: each query chunk is loaded once per tile and
// the K rows come from L2 (prefetched); measured ~8 % faster on the GQA case than tiles of
// min(n, 16 / G) heads of one key (address order, 4x the query loads), which scores<> also runs.
template <int G, bool F16, bool NZ>
ScoresFn scores_fn(int64_t /*n*/) {
  return scores<G, 1, F16, NZ>;
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
Ctx group_ctx(const FlashItem* items, int64_t n, int64_t G) {
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

template <int G, bool F16, bool NZ>
void decode_group(const FlashItem* items, int64_t n, void* scratch) {
  const FlashItem& a = items[0];
  Ctx x = group_ctx(items, n, G);
  x.sc = flash_decode_scratch(n, G, a.QD, a.VD, F16, scratch);
  for (int64_t h = 0; h < n; ++h) {
    x.kb[h] = items[h].k.base;
    x.vb[h] = items[h].v.base;
    x.q[h] = items[h].q;
    x.qs[h] = items[h].q_n_stride;
  }
  const int64_t nG = x.nG, VDp = x.VDp, QD = x.QD;
  std::memset(x.sc.o, 0, static_cast<size_t>(nG * VDp) * 4);
  for (int64_t r = 0; r < nG; ++r) {
    x.sc.m[r] = -std::numeric_limits<float>::infinity();
    x.sc.l[r] = 0.0f;
  }
  if constexpr (!F16) {
    uint16_t* qk = reinterpret_cast<uint16_t*>(x.sc.q);
    for (int64_t c = 0; c < (QD + 31) / 32; ++c)
      for (int64_t r = 0; r < nG; ++r) {
        const uint16_t* src = x.q[r / G] + (r % G) * x.qs[r / G] + 32 * c;
        _mm512_storeu_si512(qk + (c * nG + r) * 32, _mm512_maskz_loadu_epi16(v5::mask32(QD - 32 * c), src));
      }
    x.qk = qk;
  }
  if constexpr (F16) {
    for (int64_t r = 0; r < nG; ++r)
      for (int64_t d = 0; d < QD; d += 16)
        _mm512_storeu_ps(x.sc.q + r * QD + d, v5::cvtph(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                                    x.q[r / G] + (r % G) * x.qs[r / G] + d))));
  }
  const ScoresFn score = scores_fn<G, F16, NZ>(n);
  for (int64_t j0 = a.kv_begin; j0 < a.kv_end; j0 += BK) {
    const int64_t nk = std::min(BK, a.kv_end - j0);
    block_offsets(x, a.k, a.v, j0, nk, a.kv_begin, a.kv_end);
    score(x, nk);
    if (a.bias != nullptr) add_bias(x, j0, nk, F16);
    if (a.mask != nullptr) apply_mask(x, j0, nk);
    softmax_rows<F16 ? PStore::kF32 : PStore::kBf16Pairs>(x, nk);
    values<G, F16, NZ>(x, nk);
  }
  finish_group<!F16>(x, items, nullptr);
}

template <int G>
void decode_g(const FlashItem* items, int64_t n, void* scratch) {
  const bool nz = items[0].k.c0 < items[0].QD;
  if (items[0].fp16) {
    if (nz) decode_group<G, true, true>(items, n, scratch);
    else decode_group<G, true, false>(items, n, scratch);
  } else {
    if (nz) decode_group<G, false, true>(items, n, scratch);
    else decode_group<G, false, false>(items, n, scratch);
  }
}

void decode_avx512(const FlashItem* items, int64_t n, void* scratch) {
  switch (items[0].G) {
    case 1: decode_g<1>(items, n, scratch); break;
    case 2: decode_g<2>(items, n, scratch); break;
    case 4: decode_g<4>(items, n, scratch); break;
    case 8: decode_g<8>(items, n, scratch); break;
    default: decode_g<16>(items, n, scratch); break;
  }
}

// ------------------------------------------------ INT8 key / value in place (FlashDecodeI8)

// The key row of block-relative key t (this block or, full blocks, the next) into L2.
template <bool I4, bool NZ>
inline void prefetch_i8(const Ctx& x, const int8_t* base, const int64_t* off, int64_t t, int64_t nk) {
  if (t >= nk && (nk < BK || t - BK >= x.n_next)) return;
  prefetch_q<I4, NZ>(base + off[t], x.QD, x.kc0s);
}


// Step 1, INT8 keys: per head, tiles of 16 / G keys x G rows of exact int32 dot products of the
// int16 query with the sign-extended rows (vpdpwssd), reduced to 16 scores
// S = lane_a * dot + lane_c (lane_a folds scale and the query's quantisation step).
template <int G, bool I4, bool NZ>
void scores_i8(const Ctx& x, int64_t nk) {
  constexpr int KB = 16 / G;
  const int64_t nG = x.nG, nch = x.QD / 32, cstep = nG * 32;
  const int64_t* koff = x.sc.k_off;
  for (int64_t j = 0; j < nk; j += KB) {
    for (int64_t h = 0; h < x.n; ++h) {
      for (int64_t k = j; k < j + KB; ++k) prefetch_i8<I4, NZ>(x, x.kb8[h], koff, k + kPrefetchKeys, nk);
      const int8_t* kr[KB];
#pragma GCC unroll 16
      for (int k = 0; k < KB; ++k) kr[k] = x.kb8[h] + koff[std::min<int64_t>(j + k, nk - 1)];
      __m512i acc[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_si512();
      const int16_t* qc = x.q16 + h * G * 32;
      for (int64_t c = 0; c < nch; ++c, qc += cstep) {
        __m512i kv[KB];
#pragma GCC unroll 16
        for (int k = 0; k < KB; ++k) kv[k] = load32_q<I4, NZ>(kr[k], c, x.kc0s);
#pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
          const __m512i qv = _mm512_loadu_si512(qc + 32 * g);
#pragma GCC unroll 16
          for (int k = 0; k < KB; ++k) acc[k * G + g] = v5::dpwssd(acc[k * G + g], kv[k], qv);
        }
      }
      __m512 f[16];  // the int32 sums as bits: reduced exactly in int32 (|dot| <= QD * 2^22 < 2^31)
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) f[i] = _mm512_castsi512_ps(acc[i]);
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_castps_si512(reduce16<AddEpi32>(f)));
      const __m512 sv = _mm512_fmadd_ps(dot, _mm512_loadu_ps(x.lane_a + h * 16), _mm512_loadu_ps(x.lane_c + h * 16));
      if (KB == 1 || G == nG) {  // lane k * G + g -> S[(j + k) * nG + h * G + g]
        _mm512_storeu_ps(x.sc.s + j * nG + h * G, sv);
      } else {
#pragma GCC unroll 16
        for (int k = 0; k < KB; ++k)
          _mm512_mask_storeu_ps(x.sc.s + (j + k) * nG + h * G - k * G,
                                static_cast<__mmask16>(((1u << G) - 1u) << (k * G)), sv);
      }
    }
  }
}

// 16 query channels as fp32 (bf16 or fp16 bits).
inline __m512 load_q16(const uint16_t* p, bool fp16) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (fp16) return v5::cvtph(v);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

// Per-token key parameters: S = s_t * (S + o_t * qsum_r), qsum_r = scale * sum_d q_d (the key's
// channel parameters are then identity, so S holds scale * q . K_int), for the nk keys of the block
// from j0 (a head's G rows one masked vector); toff: scratch for the parameter offsets.
void fold_key_tokens(const Ctx& x, const FlashDecodeI8& kv, int64_t j0, int64_t nk, const float* qsum, int64_t* toff) {
  kv.tk.rows(j0, nk, toff);
  const __mmask16 m = v5::mask16(x.G);  // a head's G rows (G <= 16)
  for (int64_t h = 0; h < x.n; ++h) {
    const float* ks = kv.k_tok_scale[h];
    const float* ko = kv.k_tok_offset[h];
    const __m512 q = _mm512_maskz_loadu_ps(m, qsum + h * x.G);
    for (int64_t j = 0; j < nk; ++j) {
      const __m512 sc = _mm512_set1_ps(ks[toff[j]]), off = _mm512_set1_ps(ko ? ko[toff[j]] : 0.0f);
      float* S = x.sc.s + j * x.nG + h * x.G;
      _mm512_mask_storeu_ps(S, m, _mm512_mul_ps(sc, _mm512_fmadd_ps(off, q, _mm512_maskz_loadu_ps(m, S))));
    }
  }
}

// Per-token value parameters, after the block's softmax (P stored as int16 pairs P * 32767, O and
// l rescaled): O_d += sum_t P_t s_t (V_td + o_t). The offset part, sum_t P_t s_t o_t, goes into
// cacc (rescaled by the block's alpha first); P is requantised to P * s_t / smax (smax = the
// head's largest |s_t| in the block, so |P'| <= 32767, round to nearest even) and vmul[h] =
// smax / 32767 is the unit the INT8 P x V step adds its int32 sums with. A head's G rows of a key
// pair (one uint32 word per row: key 2p low, 2p + 1 high) are one masked vector.
void fold_value_tokens(const Ctx& x, const FlashDecodeI8& kv, int64_t j0, int64_t nk, float* cacc, float* vmul,
                       int64_t* toff) {
  kv.tv.rows(j0, nk, toff);
  for (int64_t r = 0; r < x.nG; ++r) cacc[r] *= x.sc.alpha[r];
  const __mmask16 m = v5::mask16(x.G);
  for (int64_t h = 0; h < x.n; ++h) {
    const float* vs = kv.v_tok_scale[h];
    const float* vo = kv.v_tok_offset[h];
    float smax = 0.0f;
    bool finite = true;
    for (int64_t j = 0; j < nk; ++j) {
      smax = std::max(smax, std::fabs(vs[toff[j]]));
      finite = finite && std::isfinite(vs[toff[j]]);
    }
    // a non-finite scale makes the head's rows NaN (as the dequantised arithmetic would)
    const float inv = finite && smax > 0.0f ? 1.0f / smax : 0.0f;
    vmul[h] = finite ? smax / 32767.0f : std::numeric_limits<float>::quiet_NaN();
    float* ca = cacc + h * x.G;
    __m512 c = _mm512_maskz_loadu_ps(m, ca);
    for (int64_t j = 0; j < nk; j += 2) {
      float f[2] = {0.0f, 0.0f}, so[2] = {0.0f, 0.0f};  // a missing odd key: P' 0
      for (int64_t u = 0; u < 2 && j + u < nk; ++u) {
        const float sc = vs[toff[j + u]];
        f[u] = sc * inv;
        so[u] = vo ? sc * vo[toff[j + u]] * (1.0f / 32767.0f) : 0.0f;
      }
      uint32_t* w = x.sc.p + j / 2 * x.nG + h * x.G;
      const __m512i wv = _mm512_maskz_loadu_epi32(m, w);
      const __m512 lo = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(wv, 16), 16));
      const __m512 hi = _mm512_cvtepi32_ps(_mm512_srai_epi32(wv, 16));
      c = _mm512_fmadd_ps(hi, _mm512_set1_ps(so[1]), _mm512_fmadd_ps(lo, _mm512_set1_ps(so[0]), c));
      const __m512i nlo = _mm512_cvtps_epi32(_mm512_mul_ps(lo, _mm512_set1_ps(f[0])));
      const __m512i nhi = _mm512_cvtps_epi32(_mm512_mul_ps(hi, _mm512_set1_ps(f[1])));
      const __m512i packed = _mm512_or_si512(_mm512_and_si512(nlo, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(nhi, 16));
      _mm512_mask_storeu_epi32(w, m, packed);
    }
    _mm512_mask_storeu_ps(ca, m, c);
  }
}

template <int G, bool I4, bool NZ>
void decode_group_i8(const FlashItem* items, int64_t n, const FlashDecodeI8& kv, void* scratch) {
  const FlashItem& a = items[0];
  constexpr int KB = 16 / G;
  Ctx x = group_ctx(items, n, G);  // VDp == VD: a multiple of 32
  x.kc0s = kv.k.c0_stride;  // NZ: bytes between 32-channel chunks
  x.vc0s = kv.v.c0_stride;
  x.sc = flash_decode_scratch(n, G, a.QD, a.VD, true, scratch);
  float* lanes = reinterpret_cast<float*>(static_cast<char*>(scratch) + flash_decode_scratch_bytes(n, G, a.QD, a.VD, true));
  x.lane_a = lanes;
  x.lane_c = lanes + n * 16;
  // per-token parameters: qsum [nG], cacc [nG], vmul [16], parameter offsets [BK]
  const bool tok_k = kv.k_tok_scale[0] != nullptr, tok_v = kv.v_tok_scale[0] != nullptr;
  float* qsum = lanes + n * 32;
  float* cacc = qsum + n * G;
  float* vmul = cacc + n * G;
  int64_t* toff = reinterpret_cast<int64_t*>(vmul + 16);
  for (int64_t h = 0; h < n; ++h) {
    x.kb8[h] = kv.kb[h];
    x.vb8[h] = kv.vb[h];
  }
  const int64_t nG = x.nG, QD = x.QD;
  std::memset(x.sc.o, 0, static_cast<size_t>(nG * x.VDp) * 4);
  // The query: q' = q * k_scale, int16 with step alpha = max|q'| / 32767, c = q' . k_offset.
  int16_t* q16 = reinterpret_cast<int16_t*>(x.sc.q);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < nG; ++r) {
    const int64_t h = r / G, g = r % G;
    const uint16_t* qrow = items[h].q + g * items[h].q_n_stride;
    const float* ks = kv.k_scale[h];
    const float* ko = kv.k_offset[h];
    __m512 mx = _mm512_setzero_ps(), cs = _mm512_setzero_ps(), qs = _mm512_setzero_ps();
    for (int64_t d = 0; d < QD; d += 16) {
      const __m512 qp = _mm512_mul_ps(load_q16(qrow + d, a.fp16), _mm512_loadu_ps(ks + d));
      mx = _mm512_max_ps(mx, _mm512_abs_ps(qp));
      cs = _mm512_fmadd_ps(qp, _mm512_loadu_ps(ko + d), cs);
      qs = _mm512_add_ps(qs, qp);
    }
    const float amax = _mm512_reduce_max_ps(mx), c = _mm512_reduce_add_ps(cs);
    qsum[r] = _mm512_reduce_add_ps(qs) * a.scale;
    cacc[r] = 0.0f;
    // a non-finite q' (inf / NaN in the query or scales) makes the row's scores NaN, as the
    // dequantising path's arithmetic would; nothing reads past the row either way
    const bool finite = amax <= std::numeric_limits<float>::max();
    const float step = finite ? amax / 32767.0f : std::numeric_limits<float>::quiet_NaN();
    const __m512 inv = _mm512_set1_ps(finite && amax > 0.0f ? 32767.0f / amax : 0.0f);
    for (int64_t d = 0; d < QD; d += 16) {
      const __m512 qp = _mm512_mul_ps(load_q16(qrow + d, a.fp16), _mm512_loadu_ps(ks + d));
      const __m256i w = _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(qp, inv)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q16 + ((d / 32) * nG + r) * 32 + d % 32), w);
    }
    for (int k = 0; k < KB; ++k) {
      lanes[h * 16 + k * G + g] = step * a.scale;
      lanes[n * 16 + h * 16 + k * G + g] = c * a.scale;
    }
    x.sc.m[r] = -inf;
    x.sc.l[r] = 0.0f;
  }
  x.q16 = q16;
  for (int64_t j0 = a.kv_begin; j0 < a.kv_end; j0 += BK) {
    const int64_t nk = std::min(BK, a.kv_end - j0);
    block_offsets(x, kv.k, kv.v, j0, nk, a.kv_begin, a.kv_end);
    scores_i8<G, I4, NZ>(x, nk);
    if (tok_k) fold_key_tokens(x, kv, j0, nk, qsum, toff);
    if (a.bias != nullptr) add_bias(x, j0, nk, a.fp16);
    if (a.mask != nullptr) apply_mask(x, j0, nk);
    softmax_rows<PStore::kI16Pairs>(x, nk);
    if (tok_v) fold_value_tokens(x, kv, j0, nk, cacc, vmul, toff);
    PvI8<I4, NZ> e{x.VD, x.vc0s};
    e.mults = tok_v ? vmul : nullptr;
    values_pv<G>(x, nk, e, e, x.vb8);
  }
  if (tok_v)
    for (int64_t r = 0; r < nG; ++r) {
      const __m512 c = _mm512_set1_ps(cacc[r]);
      float* orow = x.sc.o + r * x.VDp;
      for (int64_t d = 0; d < x.VDp; d += 16) _mm512_storeu_ps(orow + d, _mm512_add_ps(_mm512_loadu_ps(orow + d), c));
    }
  finish_group<true>(x, items, &kv);
}

template <bool I4, bool NZ>
void decode_q_avx512(const FlashItem* items, int64_t n, const FlashDecodeI8& kv, void* scratch) {
  switch (items[0].G) {
    case 1: decode_group_i8<1, I4, NZ>(items, n, kv, scratch); break;
    case 2: decode_group_i8<2, I4, NZ>(items, n, kv, scratch); break;
    case 4: decode_group_i8<4, I4, NZ>(items, n, kv, scratch); break;
    case 8: decode_group_i8<8, I4, NZ>(items, n, kv, scratch); break;
    default: decode_group_i8<16, I4, NZ>(items, n, kv, scratch); break;
  }
}

void decode_i8_avx512(const FlashItem* items, int64_t n, const FlashDecodeI8& kv, void* scratch) {
  if (kv.int4)
    decode_q_avx512<true, false>(items, n, kv, scratch);
  else if (kv.k.c0 < items[0].QD)  // an INT8 NZ cache: 32-channel chunks
    decode_q_avx512<false, true>(items, n, kv, scratch);
  else
    decode_q_avx512<false, false>(items, n, kv, scratch);
}

}  // namespace

FlashDecodeFn flash_decode_kernel_avx512() { return decode_avx512; }
FlashDecodeI8Fn flash_decode_i8_kernel_avx512() { return decode_i8_avx512; }

}  // namespace mlaops::kernels
