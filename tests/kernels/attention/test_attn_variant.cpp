// The attention variant (kernels/cpu/attention/attn_variant.h): its tile forms agree with the per-column
// answer attn_valid for every mask form (band only, band with a full explicit mask, strided
// (transposed) mask, a mask covering only the last columns as the tree mask does, negative first
// columns), the band's span and skip tests agree with a column-by-column count, the column shift
// of a KV chunk keeps every answer and bias value, and the per-row bias and sink reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/attention/attn_variant.h"

namespace mlaops::kernels {
namespace {

struct Form {
  const char* name;
  int64_t lo, hi;      // band deltas
  bool mask;           // an explicit mask
  bool transposed;     // its columns strided (j_stride = rows)
  int64_t j0;          // its first covered column
};

constexpr int64_t kRows = 12, kCols = 150;
constexpr int64_t kBig = int64_t{1} << 62;

// An item of rows [row0, row0 + R) over kCols columns with form f; bytes: the mask's storage.
FlashItem make_item(const Form& f, int64_t row0, int64_t R, std::vector<uint8_t>* bytes, std::mt19937& rng) {
  FlashItem it;
  it.G = 2;
  it.R = R;
  it.row0 = row0;
  it.lo_delta = f.lo;
  it.hi_delta = f.hi;
  if (f.mask) {
    const int64_t covered = kCols - std::max<int64_t>(f.j0, 0) + std::max<int64_t>(-f.j0, 0);
    bytes->assign(static_cast<size_t>(kRows * (covered + 1)), 0);
    std::bernoulli_distribution on(0.3);
    for (auto& b : *bytes) b = on(rng) ? static_cast<uint8_t>(1 + rng() % 255) : uint8_t{0};
    it.mask = bytes->data();
    it.mask_i_stride = f.transposed ? 1 : covered + 1;
    it.mask_j_stride = f.transposed ? kRows : 1;
    it.mask_j0 = f.j0;
  }
  return it;
}

const Form kForms[] = {
    {"every column", -kBig, kBig, false, false, 0},
    {"causal", -kBig, 0, false, false, 0},
    {"right-down causal", -kBig, 40, false, false, 0},
    {"band", -17, 9, false, false, 0},
    {"band past the end", 200, 300, false, false, 0},
    {"explicit", -kBig, kBig, true, false, 0},
    {"explicit with causal", -kBig, 70, true, false, 0},
    {"explicit transposed", -30, 30, true, true, 0},
    {"tree (last columns)", -kBig, kBig, true, false, 138},
    {"shifted mask (negative first column)", -kBig, kBig, true, false, -5},
};

TEST(AttnVariant, TileFormsAgreeWithTheColumnAnswer) {
  std::mt19937 rng(7);
  for (const Form& f : kForms) {
    for (int64_t row0 : {int64_t{0}, int64_t{5}}) {
      std::vector<uint8_t> bytes;
      const int64_t R = kRows - row0;
      const FlashItem it = make_item(f, row0, R, &bytes, rng);
      for (int64_t tile : {int64_t{16}, int64_t{64}}) {
        std::vector<uint8_t> mt(static_cast<size_t>(R * tile));
        for (int64_t j0 = 0; j0 < kCols; j0 += tile) {
          const int64_t nb = std::min(tile, kCols - j0);
          const bool any = f.mask ? attn_tile_valid<AttnExplicitMask>(it, j0, nb, tile, mt.data())
                                  : attn_tile_valid<AttnBandOnly>(it, j0, nb, tile, mt.data());
          bool want_any = false;
          for (int64_t r = 0; r < R; ++r) {
            const int64_t i = row0 + r;
            const AttnSpan s = attn_band(it, i, j0, nb);
            for (int64_t c = 0; c < nb; ++c) {
              const bool valid = attn_valid(it, i, j0 + c);
              want_any = want_any || valid;
              ASSERT_EQ(mt[static_cast<size_t>(r * tile + c)] != 0, valid)
                  << f.name << " row " << i << " column " << j0 + c;
              const bool in_band = j0 + c >= i + f.lo && j0 + c <= i + f.hi;
              ASSERT_EQ(c >= s.begin && c < s.end, in_band) << f.name << " row " << i << " column " << j0 + c;
            }
          }
          ASSERT_EQ(any, want_any) << f.name << " tile " << j0;
          // the skip test: true only when no row's band meets the tile
          bool band_meets = false;
          for (int64_t r = 0; r < R; ++r) band_meets = band_meets || !attn_band(it, row0 + r, j0, nb).empty();
          ASSERT_EQ(attn_band_misses(it, row0, row0 + R - 1, j0, nb), !band_meets) << f.name << " tile " << j0;
          // the band's end for the rows up to the last: no row sees a column from there on
          const int64_t end = attn_band_end(it, row0 + R - 1, j0, nb);
          for (int64_t r = 0; r < R; ++r)
            for (int64_t c = end; c < nb; ++c) ASSERT_FALSE(attn_valid(it, row0 + r, j0 + c)) << f.name;
        }
      }
    }
  }
}

TEST(AttnVariant, ColumnShiftKeepsEveryAnswer) {
  std::mt19937 rng(11);
  std::vector<uint16_t> bias(static_cast<size_t>(2 * kRows * kCols));
  for (auto& b : bias) b = static_cast<uint16_t>(rng());
  for (const Form& f : kForms) {
    std::vector<uint8_t> bytes;
    FlashItem it = make_item(f, 0, kRows, &bytes, rng);
    it.bias = bias.data();
    it.bias_n_stride = kRows * kCols;
    it.bias_i_stride = kCols;
    for (int64_t t0 : {int64_t{0}, int64_t{33}, int64_t{128}}) {
      FlashItem sh = it;
      attn_shift_columns(&sh, t0);
      for (int64_t i = 0; i < kRows; ++i)
        for (int64_t j = t0; j < kCols; ++j) {
          ASSERT_EQ(attn_valid(sh, i, j - t0), attn_valid(it, i, j)) << f.name << " shift " << t0;
          for (int64_t g = 0; g < 2; ++g)
            ASSERT_EQ(attn_bias_row(sh, g, i)[j - t0], attn_bias_row(it, g, i)[j]) << f.name;
        }
    }
  }
}

TEST(AttnVariant, BiasScaleAndSink) {
  FlashItem it;
  const uint16_t bias[6] = {1, 2, 3, 4, 5, 6};
  const float sink[2] = {-1.5f, 2.25f};
  it.bias = bias;
  it.bias_n_stride = 3;
  it.bias_i_stride = 1;
  it.scale = 0.5f;
  it.sink = sink;
  EXPECT_EQ(attn_bias_row(it, 1, 1)[1], 6);
  EXPECT_EQ(attn_biased(it, 3.0f, 0.25f), 1.75f);
  EXPECT_EQ(attn_sink(it, 1), 2.25f);
  FlashItem other = it;
  EXPECT_TRUE(attn_same_masks(it, other));
  other.mask_j0 = 1;
  EXPECT_FALSE(attn_same_masks(it, other));
}

}  // namespace
}  // namespace mlaops::kernels
