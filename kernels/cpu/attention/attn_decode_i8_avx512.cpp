// AVX-512 flash decode with INT8 / INT4 key / value in place (FlashDecodeI8, attn_decode.h): the
// steps of attn_decode_avx512.cpp on a query in two slices (int16, then int8) against the INT8
// (or INT4) rows, with the per-token parameters folded in (shared parts: attn_decode_avx512.h).
#include "kernels/cpu/attention/attn_decode_avx512.h"

namespace mlaops::kernels {
namespace {

using namespace flash_decode_avx512;  // the shared parts (attn_decode_avx512.h)

// The key row of block-relative key t (this block or, full blocks, the next) into L2.
template <bool I4, bool NZ>
inline void prefetch_i8(const Ctx& x, const int8_t* base, const int64_t* off, int64_t t, int64_t nk) {
  if (t >= nk && (nk < BK || t - BK >= x.n_next)) return;
  prefetch_q<I4, NZ>(base + off[t], x.QD, x.kc0s);
}

// The query's second slice (decode_group_i8) is int8, against the key rows as unsigned bytes
// biased by kLoBias (INT8: K + 128 = K ^ 0x80; INT4: nibble ^ 8 = K + 8) on vpdpbusd, 64 channels
// per instruction: sum_d u_d lo_d = sum_d K_d lo_d + bias * sum_d lo_d.
template <bool I4>
inline constexpr int kLoBias = I4 ? 8 : 128;

// The lane of channel d in its 64-channel chunk of the second slice (load64_u): INT8 lane d % 64;
// INT4 the chunk's even channels in lanes [0, 32), the odd ones in [32, 64) (the low and the high
// nibbles of its 32 bytes).
template <bool I4>
inline int64_t lo_lane(int64_t d) {
  return I4 ? (d % 64) / 2 + 32 * (d % 2) : d % 64;
}

// Channels [64c, 64c + 64) of a key row as biased unsigned bytes in lo_lane order; `half`: only
// the first 32 channels exist (the last chunk when QD % 64 == 32; the other lanes are met by a 0
// query byte). NZ: 32-channel chunks at c0s bytes from each other.
template <bool I4, bool NZ>
inline __m512i load64_u(const int8_t* row, int64_t c, int64_t c0s, bool half) {
  if constexpr (I4) {
    const int8_t* p = row + 32 * c;
    const __m256i b = half ? _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))
                           : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m = _mm256_set1_epi8(0x0F), bias = _mm256_set1_epi8(8);
    const __m256i lo = _mm256_xor_si256(_mm256_and_si256(b, m), bias);
    const __m256i hi = _mm256_xor_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m), bias);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  } else {
    const int8_t* p0 = NZ ? row + 2 * c * c0s : row + 64 * c;
    const int8_t* p1 = NZ ? row + (2 * c + 1) * c0s : p0 + 32;
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0));
    const __m512i k = half ? _mm512_zextsi256_si512(a)
                           : _mm512_inserti64x4(_mm512_castsi256_si512(a),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1)), 1);
    return _mm512_xor_si512(k, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
}


// Step 1, INT8 keys: per head, tiles of 16 / G keys x G rows of exact int32 dot products of the
// query's two slices (decode_group_i8) with the rows: the int16 slice hi with the sign-extended
// rows (vpdpwssd), then the int8 slice lo with the biased rows (vpdpbusd, load64_u; the tile's
// rows are in L1 by then), each reduced to 16 sums, S = lane_a * (dot_hi + 2^-7 dot_lo') + lane_c
// (lane_a folds scale and the query's quantisation step; dot_lo' is the biased sum, lane_c takes
// the bias term off).
template <int G, bool I4, bool NZ>
void scores_i8(const Ctx& x, int64_t nk) {
  constexpr int KB = 16 / G;
  const int64_t nG = x.nG, nch = x.QD / 32, cstep = nG * 32;
  const int64_t* koff = x.sc.k_off;
  const int8_t* q8 = reinterpret_cast<const int8_t*>(x.q16 + nG * x.QD);  // the lo slice [QD / 64, nG, 64]
  const int64_t nlo = (x.QD + 63) / 64;
  const bool lo_half = x.QD % 64 != 0;
  const __m512 lo_unit = _mm512_set1_ps(0x1p-7f);
  for (int64_t j = 0; j < nk; j += KB) {
    for (int64_t h = 0; h < x.n; ++h) {
      for (int64_t k = j; k < j + KB; ++k) prefetch_i8<I4, NZ>(x, x.kb8[h], koff, k + kPrefetchKeys, nk);
      const int8_t* kr[KB];
#pragma GCC unroll 16
      for (int k = 0; k < KB; ++k) kr[k] = x.kb8[h] + koff[std::min<int64_t>(j + k, nk - 1)];
      // lane k * G + g: the sum over chunks [0, nc) of dot(key k's chunk c, load(row, c), with the
      // query chunk of row g at q + c * qstep + g * qlen), reduced exactly in int32 (hi: |dot| <=
      // QD * 2^22 < 2^31; lo: |dot| <= QD * 255 * 66 < 2^24, so exact in fp32 too)
      auto dots = [&](auto load, auto dot, const auto* q, int64_t nc, int64_t qstep, int64_t qlen) {
        __m512i acc[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_si512();
        for (int64_t c = 0; c < nc; ++c, q += qstep) {
          __m512i kv[KB];
#pragma GCC unroll 16
          for (int k = 0; k < KB; ++k) kv[k] = load(kr[k], c);
#pragma GCC unroll 16
          for (int g = 0; g < G; ++g) {
            const __m512i qv = _mm512_loadu_si512(q + qlen * g);
#pragma GCC unroll 16
            for (int k = 0; k < KB; ++k) acc[k * G + g] = dot(acc[k * G + g], kv[k], qv);
          }
        }
        __m512 f[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) f[i] = _mm512_castsi512_ps(acc[i]);
        return _mm512_cvtepi32_ps(_mm512_castps_si512(reduce16<AddEpi32>(f)));
      };
      const __m512 dot_hi = dots([&](const int8_t* row, int64_t c) { return load32_q<I4, NZ>(row, c, x.kc0s); },
                                 [](__m512i a, __m512i k, __m512i q) { return v5::dpwssd(a, k, q); },
                                 x.q16 + h * G * 32, nch, cstep, 32);
      const __m512 dot_lo = dots(
          [&](const int8_t* row, int64_t c) { return load64_u<I4, NZ>(row, c, x.kc0s, lo_half && c == nlo - 1); },
          [](__m512i a, __m512i k, __m512i q) { return v5::dpbusd(a, k, q); }, q8 + h * G * 64, nlo, nG * 64, 64);
      const __m512 la = _mm512_loadu_ps(x.lane_a + h * 16), lc = _mm512_loadu_ps(x.lane_c + h * 16);
      const __m512 sv = _mm512_fmadd_ps(dot_hi, la, _mm512_fmadd_ps(dot_lo, _mm512_mul_ps(la, lo_unit), lc));
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

// G: the padded group (flash_decode_padded_group); rows g >= a.G of each head get a zero query (both
// slices, the lane factors and the per-token sums 0) and are never written.
template <int G, bool I4, bool NZ>
void decode_group_i8(const FlashItem* items, int64_t n, const FlashDecodeI8& kv, void* scratch) {
  const FlashItem& a = items[0];
  const int64_t Greal = a.G;
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
  // The query: q' = q * k_scale in two slices, q' = alpha * (hi + 2^-7 lo) with the step
  // alpha = max|q'| / 32767, hi = round(q' / alpha) (int16), lo = round((q' - alpha hi) / alpha *
  // 2^7) (int8, |lo| <= 66): q' to 2^-8 alpha, i.e. 2^-23 of max|q'| (hi alone, 2^-16 of it, moved
  // softmaxLse by up to 1.3e-5 relative at scaleValue 1; the vendor's kernels likewise split the
  // query into int8 slices); c = q' . k_offset, less the bias term of the lo slice
  // (scores_i8). The slices fill the query area of the scratch (nG * QD * 4 bytes): hi
  // [QD / 32, nG, 32] int16, then lo [QD / 64, nG, 64] int8 in lo_lane order.
  int16_t* q16 = reinterpret_cast<int16_t*>(x.sc.q);
  int8_t* q8 = reinterpret_cast<int8_t*>(q16 + nG * QD);
  const int64_t nlo = (QD + 63) / 64;
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < nG; ++r) {
    const int64_t h = r / G, g = r % G;
    x.sc.m[r] = -inf;
    x.sc.l[r] = 0.0f;
    if (g >= Greal) {  // a padded row
      qsum[r] = cacc[r] = 0.0f;
      for (int64_t c = 0; c < (QD + 31) / 32; ++c) std::memset(q16 + (c * nG + r) * 32, 0, 64);
      for (int64_t k = 0; k < nlo; ++k) std::memset(q8 + (k * nG + r) * 64, 0, 64);
      for (int k = 0; k < KB; ++k) lanes[h * 16 + k * G + g] = lanes[n * 16 + h * 16 + k * G + g] = 0.0f;
      continue;
    }
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
    const __m512 vstep = _mm512_set1_ps(step), inv_lo = _mm512_mul_ps(inv, _mm512_set1_ps(128.0f));
    for (int64_t k = 0; k < nlo; ++k) std::memset(q8 + (k * nG + r) * 64, 0, 64);  // a half chunk's other lanes: 0
    int64_t lo_sum = 0;
    for (int64_t d = 0; d < QD; d += 16) {
      const __m512 qp = _mm512_mul_ps(load_q16(qrow + d, a.fp16), _mm512_loadu_ps(ks + d));
      const __m512i hi = _mm512_cvtps_epi32(_mm512_mul_ps(qp, inv));
      const __m512 rest = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(hi), vstep, qp);  // q' - alpha hi, one rounding
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q16 + ((d / 32) * nG + r) * 32 + d % 32),
                          _mm512_cvtepi32_epi16(hi));
      alignas(64) int32_t lo[16];  // |rest| <= 0.51 alpha: |lo| <= 66 (a non-finite row: anything, NaN scores)
      _mm512_store_si512(lo, _mm512_cvtps_epi32(_mm512_mul_ps(rest, inv_lo)));
      for (int64_t i = 0; i < 16; ++i) {
        const int8_t l = static_cast<int8_t>(lo[i]);
        q8[((d + i) / 64 * nG + r) * 64 + lo_lane<I4>(d + i)] = l;
        lo_sum += l;
      }
    }
    for (int k = 0; k < KB; ++k) {
      lanes[h * 16 + k * G + g] = step * a.scale;
      lanes[n * 16 + h * 16 + k * G + g] =
          c * a.scale - step * a.scale * 0x1p-7f * static_cast<float>(kLoBias<I4> * lo_sum);
    }
  }
  x.q16 = q16;
  for (int64_t j0 = a.kv_begin; j0 < a.kv_end; j0 += BK) {
    const int64_t nk = std::min(BK, a.kv_end - j0);
    block_offsets(x, kv.k, kv.v, j0, nk, a.kv_begin, a.kv_end);
    scores_i8<G, I4, NZ>(x, nk);
    if (tok_k) fold_key_tokens(x, kv, j0, nk, qsum, toff);
    if (a.bias != nullptr) add_bias(x, j0, nk, a.fp16);
    if (a.mask != nullptr) apply_mask(x, j0, nk);
    softmax_rows<PStore::kI16Pairs>(x, j0, nk);
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
  switch (flash_decode_padded_group(items[0].G)) {
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

FlashDecodeI8Fn flash_decode_i8_kernel_avx512() { return decode_i8_avx512; }

}  // namespace mlaops::kernels
