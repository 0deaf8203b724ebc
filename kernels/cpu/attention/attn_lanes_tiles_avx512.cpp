// The compute tiles of the AVX-512 BF16 lane-major flash attention (attn_lanes_tiles_avx512.h):
// register tiles of S^T = K . QT and O^T = O^T * alpha + VB . PT (vdpbf16ps, the key's or the
// value's channel pair broadcast against MV row vectors of queries or probabilities), the online
// softmax of one tile per lane, and the O^T -> O transpose.
#include "kernels/cpu/attention/attn_lanes_tiles_avx512.h"

#include <immintrin.h>

#include <array>
#include <cstring>
#include <limits>
#include <utility>

#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/attn_lanes.h"
#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/attention/softmax_avx512.h"

namespace mlaops::kernels::lanes {
namespace {

using namespace avx512;

// ------------------------------------------------------------------ S^T = K . QT

// PF: the lines of the rows a.pf0 / a.pf1 (the segment's bytes of a.pfn rows, row by row) are
// prefetched into L2 inside the loop (SpreadPrefetch, one step per channel pair).
template <int MV, int NK, bool PF>
void s_tile(const SArgs& a) {
  __m512 acc[NK][MV];
  zero_tile(acc);
  const uint32_t* q = a.qt;
  for (int seg = 0; seg < 2; ++seg) {
    const int64_t kl = seg == 0 ? a.kl0 : a.kl1;
    if (kl == 0) continue;
    const uint16_t* r[NK];
#pragma GCC unroll 16
    for (int n = 0; n < NK; ++n) r[n] = (seg == 0 ? a.rows0 : a.rows1)[n];
    const uint16_t* const* pf = seg == 0 ? a.pf0 : a.pf1;
    SpreadPrefetch spread([pf](int64_t i) { return pf[i]; }, PF && pf != nullptr ? a.pfn : 0,
                          seg == 0 && a.pf_bytes0 > 0 ? a.pf_bytes0 : kl * 4, kl);
    for (int64_t kp = 0; kp < kl; ++kp, q += MV * 16) {
      if constexpr (PF) spread.step(kp);
      __m512i qv[MV];
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) qv[v] = _mm512_load_si512(q + v * 16);
#pragma GCC unroll 16
      for (int n = 0; n < NK; ++n) {
        const __m512i b = _mm512_set1_epi32(load_i32(r[n] + 2 * kp));
#pragma GCC unroll 4
        for (int v = 0; v < MV; ++v) acc[n][v] = dpbf16(acc[n][v], qv[v], b);
      }
    }
  }
#pragma GCC unroll 16
  for (int n = 0; n < NK; ++n)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) _mm512_store_ps(a.st + n * a.mp + v * 16, acc[n][v]);
}

// ------------------------------------------------------------------ O^T = O^T * alpha + VB . PT

template <int MV, int ND>
void pv_tile(const PvArgs& a) {
  __m512 acc[ND][MV];
  zero_tile(acc);
  const uint32_t* p = a.pt;
  const uint32_t* vb = a.vb;
  for (int64_t kp = 0; kp < a.kl; ++kp, p += MV * 16, vb += a.dvp) {
    __m512i pv[MV];
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) pv[v] = _mm512_load_si512(p + v * 16);
#pragma GCC unroll 16
    for (int n = 0; n < ND; ++n) {
      const __m512i b = _mm512_set1_epi32(static_cast<int32_t>(vb[n]));
#pragma GCC unroll 4
      for (int v = 0; v < MV; ++v) acc[n][v] = dpbf16(acc[n][v], pv[v], b);
    }
  }
  __m512 al[MV];
#pragma GCC unroll 4
  for (int v = 0; v < MV; ++v) al[v] = _mm512_load_ps(a.alpha + v * 16);
#pragma GCC unroll 16
  for (int n = 0; n < ND; ++n)
#pragma GCC unroll 4
    for (int v = 0; v < MV; ++v) {
      float* o = a.ot + n * a.mp + v * 16;
      _mm512_store_ps(o, _mm512_fmadd_ps(_mm512_load_ps(o), al[v], acc[n][v]));
    }
}

// The tile functions of one kind, per group width MV (1..4) and size 1..kSizes[MV - 1]: STiles
// (keys of S^T) and PvTiles (channels of P x V).
template <bool PF>
struct STiles {
  template <int MV, int N>
  static constexpr STileFn kFn = &s_tile<MV, N, PF>;
  static constexpr const int* kSizes = kKeys;
};
struct PvTiles {
  template <int MV, int N>
  static constexpr PvTileFn kFn = &pv_tile<MV, N>;
  static constexpr const int* kSizes = kChannels;
};

template <class T, int MV, size_t... I>
constexpr auto tile_row(std::index_sequence<I...>) {
  return std::array{T::template kFn<MV, static_cast<int>(I) + 1>...};
}

template <class T>
auto tile_fn(int64_t mv, int64_t n) {
  static constexpr auto k1 = tile_row<T, 1>(std::make_index_sequence<T::kSizes[0]>());
  static constexpr auto k2 = tile_row<T, 2>(std::make_index_sequence<T::kSizes[1]>());
  static constexpr auto k3 = tile_row<T, 3>(std::make_index_sequence<T::kSizes[2]>());
  static constexpr auto k4 = tile_row<T, 4>(std::make_index_sequence<T::kSizes[3]>());
  const auto i = static_cast<size_t>(n - 1);
  return mv == 1 ? k1[i] : mv == 2 ? k2[i] : mv == 3 ? k3[i] : k4[i];
}

// ------------------------------------------------------------------ online softmax per lane

// Variants as template parameters (softmax_fn).
template <bool kMasked, bool kBias, bool kFp16>
void softmax_tile(const SoftmaxArgs& a) {
  const __m512 sc = _mm512_set1_ps(a.scale), ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t ng = group_count(a.nv);
  for (int64_t g = 0; g < ng; ++g) {
    int64_t v0, mv;
    group_of(a.nv, g, &v0, &mv);
    for (int64_t v = v0; v < v0 + mv; ++v) {
      float* s = a.st + v * 16;
      __m512 mx = ninf;
      __mmask16 seen = a.nb > 0 ? 0xFFFF : 0;  // lanes with a valid position in this tile
      if constexpr (kMasked) seen = 0;
      for (int64_t c = 0; c < a.nb; ++c) {
        __m512 x = _mm512_load_ps(s + c * a.mp);
        if constexpr (kBias) x = _mm512_fmadd_ps(x, sc, _mm512_load_ps(a.bt + c * a.mp + v * 16));
        else x = _mm512_mul_ps(x, sc);
        if constexpr (kMasked) {
          x = _mm512_mask_blend_ps(a.lm[c * a.nv + v], ninf, x);
          seen = static_cast<__mmask16>(seen | a.lm[c * a.nv + v]);
        }
        _mm512_store_ps(s + c * a.mp, x);
        mx = _mm512_max_ps(mx, x);
      }
      const __m512 mold = _mm512_load_ps(a.mx + v * 16);
      const __m512 mnew = _mm512_max_ps(mold, mx);
      const __mmask16 none = _mm512_cmp_ps_mask(mx, ninf, _CMP_EQ_OQ);    // no valid position here
      const __mmask16 first = _mm512_cmp_ps_mask(mold, ninf, _CMP_EQ_OQ);  // nothing seen before
      __m512 al = _mm512_maskz_mov_ps(static_cast<__mmask16>(~first), exp512(_mm512_sub_ps(mold, mnew)));
      al = _mm512_mask_blend_ps(none, al, _mm512_set1_ps(1.0f));
      // PT rows of this vector: group block, row stride mv * 16 dwords
      uint32_t* pt = a.pt + v0 * 16 * a.kpv + (v - v0) * 16;
      const int64_t ps = mv * 16;
      __m512 sum = _mm512_setzero_ps();
      for (int64_t kp = 0; kp < a.kpn; ++kp) {
        const int64_t c0 = 2 * kp, c1 = c0 + 1;
        const __m512 x0 = _mm512_load_ps(s + c0 * a.mp);
        const __m512 x1 = c1 < a.nb ? _mm512_load_ps(s + c1 * a.mp) : ninf;
        const __mmask16 k0 = _mm512_cmp_ps_mask(x0, ninf, _CMP_NEQ_UQ), k1 = _mm512_cmp_ps_mask(x1, ninf, _CMP_NEQ_UQ);
        const __m512 p0 = _mm512_maskz_mov_ps(k0, exp512(_mm512_sub_ps(x0, mnew)));
        const __m512 p1 = _mm512_maskz_mov_ps(k1, exp512(_mm512_sub_ps(x1, mnew)));
        sum = _mm512_add_ps(_mm512_add_ps(sum, p0), p1);
        const __m512i h0 = bf16_bits(p0), h1 = bf16_bits(p1);
        const __m512i hp = _mm512_or_si512(h0, _mm512_slli_epi32(h1, 16));
        _mm512_store_si512(pt + kp * ps, hp);
        if constexpr (kFp16) {  // segments [hi; hi; lo]
          const __m512i l0 = bf16_bits(_mm512_sub_ps(p0, _mm512_castsi512_ps(_mm512_slli_epi32(h0, 16))));
          const __m512i l1 = bf16_bits(_mm512_sub_ps(p1, _mm512_castsi512_ps(_mm512_slli_epi32(h1, 16))));
          _mm512_store_si512(pt + (a.kpn + kp) * ps, hp);
          _mm512_store_si512(pt + (2 * a.kpn + kp) * ps, _mm512_or_si512(l0, _mm512_slli_epi32(l1, 16)));
        }
      }
      const __m512 lold = _mm512_load_ps(a.l + v * 16);
      __m512 lnew = _mm512_add_ps(_mm512_mul_ps(lold, al), sum);
      // valid positions, all -inf, nothing finite before: the all -inf state (attn_combine.h)
      const __mmask16 dead = static_cast<__mmask16>(none & first & seen);
      if (dead != 0) lnew = _mm512_mask_mov_ps(lnew, dead, _mm512_set1_ps(kAllNegInfL));
      _mm512_store_ps(a.l + v * 16, lnew);
      _mm512_store_ps(a.mx + v * 16, mnew);
      _mm512_store_ps(a.alpha + v * 16, al);
    }
  }
}

}  // namespace

// ------------------------------------------------------------------ the tables

STileFn s_fn(int64_t mv, int64_t nk, bool prefetch) {
  return prefetch ? tile_fn<STiles<true>>(mv, nk) : tile_fn<STiles<false>>(mv, nk);
}

PvTileFn pv_fn(int64_t mv, int64_t nd) { return tile_fn<PvTiles>(mv, nd); }

SoftmaxFn softmax_fn(bool masked, bool bias, bool fp16) {
  static constexpr SoftmaxFn kFns[8] = {
      softmax_tile<false, false, false>, softmax_tile<false, false, true>, softmax_tile<false, true, false>,
      softmax_tile<false, true, true>,   softmax_tile<true, false, false>, softmax_tile<true, false, true>,
      softmax_tile<true, true, false>,   softmax_tile<true, true, true>};
  return kFns[(masked ? 4 : 0) + (bias ? 2 : 0) + (fp16 ? 1 : 0)];
}

// ------------------------------------------------------------------ O^T -> O rows

void transpose_out(const float* OT, int64_t mp, int64_t M, int64_t dvp, float* O) {
  for (int64_t m0 = 0; m0 < M; m0 += 16)
    for (int64_t d0 = 0; d0 < dvp; d0 += 16) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(OT + (d0 + i) * mp + m0);
      transpose16x16(r);
      for (int64_t j = 0; j < 16 && m0 + j < M; ++j) _mm512_storeu_si512(O + (m0 + j) * dvp + d0, r[j]);
    }
}

}  // namespace mlaops::kernels::lanes
