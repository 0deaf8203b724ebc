// The attention variant: the one place that answers, for query row i and key column j of a work
// item, "masked? and what is added?" — the score scale, the additive bias (pseShift / ALiBi), the
// sink logit and every mask form. Every attention kernel and path (panel, lanes, decode, INT8
// decode, INT8 full quant, MLA quant, the antiquant chunks) reads a FlashItem's variant through
// these functions, so a new mask form is written here once (docs/architecture.md "Variants").
//
// The mask forms all reduce to two parts (attn_item.h FlashItem):
//   - the rule's band: row i sees columns [i + lo_delta, i + hi_delta] (sparse modes 0..4: causal,
//     band, prefix / next tokens; left padding and shared prefix move the deltas);
//   - the explicit mask (BOOL / INT8 / UINT8 bytes, null: none), covering the columns from j0 on:
//     (i, j) is masked when j >= j0 and byte(i, j) != 0. Its broadcast forms ([S1, S2], [B, S1, S2],
//     [B, 1, S1, S2], [2048, 2048] of the compressed modes) are its strides; the tree mask of sparse
//     mode 9 is an explicit mask whose j0 is S2 - S1 (its block covers the last S1 columns).
// Column (i, j) is valid iff it is inside the band and not masked. Per-tile decisions (does any row
// of this tile see a column? is every column valid?) use the band as a span of the tile, so hot
// loops test single columns only where the explicit mask is on.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/attention/attn_item.h"

namespace mlaops::kernels {

// The explicit mask: (i, j) masked iff base != null, j >= j0 and *at(i, j) != 0.
struct AttnMask {
  const uint8_t* base = nullptr;
  int64_t i_stride = 0, j_stride = 0;
  int64_t j0 = 0;  // the first column the mask covers (may be negative)

  bool on() const { return base != nullptr; }
  // The byte of (i, j), j >= j0 (the first byte of a row's run of columns; step j_stride).
  const uint8_t* at(int64_t i, int64_t j) const { return base + i * i_stride + (j - j0) * j_stride; }
  // Whether (i, j) is masked; the mask must be on.
  bool masked(int64_t i, int64_t j) const { return j >= j0 && *at(i, j) != 0; }
};

inline AttnMask attn_mask(const FlashItem& it) { return {it.mask, it.mask_i_stride, it.mask_j_stride, it.mask_j0}; }

// Columns [begin, end) of the tile [j0, j0 + n), relative to j0, that row i's band covers (empty
// when begin >= end; both clamped to [0, n]).
struct AttnSpan {
  int64_t begin = 0, end = 0;
  bool empty() const { return begin >= end; }
};
inline AttnSpan attn_band(int64_t i, int64_t lo_delta, int64_t hi_delta, int64_t j0, int64_t n) {
  return {std::clamp<int64_t>(i + lo_delta - j0, 0, n), std::clamp<int64_t>(i + hi_delta - j0 + 1, 0, n)};
}
inline AttnSpan attn_band(const FlashItem& it, int64_t i, int64_t j0, int64_t n) {
  return attn_band(i, it.lo_delta, it.hi_delta, j0, n);
}
// Whether the band of every row i in [i_first, i_last] misses the tile [j0, j0 + n) (the tile is
// skipped whole).
inline bool attn_band_misses(const FlashItem& it, int64_t i_first, int64_t i_last, int64_t j0, int64_t n) {
  return i_last + it.hi_delta < j0 || i_first + it.lo_delta > j0 + n - 1;
}
// The end (relative to j0, clamped to [0, n]) of the band of the rows up to i_max: no row i <= i_max
// sees a column of the tile from there on.
inline int64_t attn_band_end(const FlashItem& it, int64_t i_max, int64_t j0, int64_t n) {
  return std::clamp<int64_t>(i_max + it.hi_delta - j0 + 1, 0, n);
}
// Whether (i, j) is valid: inside the band and not masked.
inline bool attn_valid(const FlashItem& it, int64_t i, int64_t j) {
  return j >= i + it.lo_delta && j <= i + it.hi_delta && !(it.mask != nullptr && attn_mask(it).masked(i, j));
}

// Whether items a and b see the same columns in every row (the same rows, band and explicit mask):
// items that share their KV rows may then share the tile decisions.
inline bool attn_same_masks(const FlashItem& a, const FlashItem& b) {
  return b.row0 == a.row0 && b.mask == a.mask && b.mask_i_stride == a.mask_i_stride &&
         b.mask_j_stride == a.mask_j_stride && b.mask_j0 == a.mask_j0 && b.lo_delta == a.lo_delta &&
         b.hi_delta == a.hi_delta;
}

// Mask policies of the templated paths (the instance is picked once per item): the band alone,
// or the explicit mask on top.
struct AttnBandOnly {
  static constexpr bool kExplicit = false;
  static bool masked(const FlashItem&, int64_t, int64_t) { return false; }
};
struct AttnExplicitMask {
  static constexpr bool kExplicit = true;
  static bool masked(const FlashItem& it, int64_t i, int64_t j) { return attn_mask(it).masked(i, j); }
};

// Valid bytes (1 valid, 0 not) of rows row0 .. row0 + R - 1 for the columns [j0, j0 + nb) into
// MT [R, tile]; false when no row sees a column (the tile is skipped).
template <class Mask>
bool attn_tile_valid(const FlashItem& it, int64_t j0, int64_t nb, int64_t tile, uint8_t* MT) {
  bool any = false;
  for (int64_t r = 0; r < it.R; ++r) {
    uint8_t* mt = MT + r * tile;
    const int64_t i = it.row0 + r;
    const AttnSpan s = attn_band(it, i, j0, nb);
    std::fill(mt, mt + nb, uint8_t{0});
    if (s.empty()) continue;
    std::fill(mt + s.begin, mt + s.end, uint8_t{1});
    for (int64_t c = s.begin; c < s.end; ++c)
      if (Mask::masked(it, i, j0 + c)) mt[c] = 0;
    for (int64_t c = s.begin; c < s.end && !any; ++c) any = mt[c] != 0;
  }
  return any;
}

// The additive bias (pseShift / ALiBi, operand dtype bits) of head g and row i, from column 0:
// the value of column j is at [j]. The item must have a bias.
inline const uint16_t* attn_bias_row(const FlashItem& it, int64_t g, int64_t i) {
  return it.bias + g * it.bias_n_stride + i * it.bias_i_stride;
}
// The score of a column with a bias: the scaled score plus the bias (the scale is applied here,
// not before).
inline float attn_biased(const FlashItem& it, float s, float bias) { return s * it.scale + bias; }

// The sink logit of head g (learnableSink); the item must have one.
inline float attn_sink(const FlashItem& it, int64_t g) { return it.sink[g]; }

// Renumbers the item's columns so that column t0 becomes 0 (a KV chunk run as its own item):
// the band, the mask's first covered column and the bias move with them.
inline void attn_shift_columns(FlashItem* it, int64_t t0) {
  it->lo_delta -= t0;  // |deltas| <= 2^62: no overflow
  it->hi_delta -= t0;
  it->mask_j0 -= t0;
  if (it->bias != nullptr) it->bias += t0;
}

}  // namespace mlaops::kernels
