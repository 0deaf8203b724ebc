// AVX-512 flash decode (see attn_decode.h) over a group of n KV heads (items) of one batch,
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
#include "kernels/cpu/attention/attn_decode_avx512.h"

namespace mlaops::kernels {
namespace {

using namespace flash_decode_avx512;  // the shared parts (attn_decode_avx512.h)

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

// G: the padded group (flash_decode_padded_group); the items' own G (a.G) may be smaller: rows
// g >= a.G of each head get a zero query and are never written (finish_group finishes a.G rows).
template <int G, bool F16, bool NZ>
void decode_group(const FlashItem* items, int64_t n, void* scratch) {
  const FlashItem& a = items[0];
  const int64_t Greal = a.G;
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
        const __mmask32 m = r % G < Greal ? v5::mask32(QD - 32 * c) : 0;
        _mm512_storeu_si512(qk + (c * nG + r) * 32, _mm512_maskz_loadu_epi16(m, src));
      }
    x.qk = qk;
  }
  if constexpr (F16) {
    for (int64_t r = 0; r < nG; ++r)
      for (int64_t d = 0; d < QD; d += 16)
        _mm512_storeu_ps(x.sc.q + r * QD + d,
                         r % G < Greal ? v5::cvtph(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                             x.q[r / G] + (r % G) * x.qs[r / G] + d)))
                                       : _mm512_setzero_ps());
  }
  const ScoresFn score = scores_fn<G, F16, NZ>(n);
  for (int64_t j0 = a.kv_begin; j0 < a.kv_end; j0 += BK) {
    const int64_t nk = std::min(BK, a.kv_end - j0);
    block_offsets(x, a.k, a.v, j0, nk, a.kv_begin, a.kv_end);
    score(x, nk);
    if (a.bias != nullptr) add_bias(x, j0, nk, F16);
    if (a.mask != nullptr) apply_mask(x, j0, nk);
    softmax_rows<F16 ? PStore::kF32 : PStore::kBf16Pairs>(x, j0, nk);
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
  switch (flash_decode_padded_group(items[0].G)) {
    case 1: decode_g<1>(items, n, scratch); break;
    case 2: decode_g<2>(items, n, scratch); break;
    case 4: decode_g<4>(items, n, scratch); break;
    case 8: decode_g<8>(items, n, scratch); break;
    default: decode_g<16>(items, n, scratch); break;
  }
}

}  // namespace

FlashDecodeFn flash_decode_kernel_avx512() { return decode_avx512; }

}  // namespace mlaops::kernels
