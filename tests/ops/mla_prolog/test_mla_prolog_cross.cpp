// MlaProlog fast path vs the float64 reference: every scenario x BSH/TND x cache mode x weight
// form, odd token counts and shapes that are not multiples of any tile, under each forced ISA
// with 1 and 2 threads (small shapes; the vendor shapes run in test_mla_prolog_aclnn.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "ops/mla_prolog/mla_prolog_harness.h"

namespace mlaops::testing {
namespace {

using testdata::WeightForm;

const MlaPrologScenario kScenarios[] = {MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvNoQuant,
                                        MlaPrologScenario::kPartialQuantKvQuant, MlaPrologScenario::kFullQuantKvNoQuant,
                                        MlaPrologScenario::kFullQuantKvQuant};

class MlaPrologCross : public ::testing::TestWithParam<MlaPrologScenario> {};

TEST_P(MlaPrologCross, LayoutsCacheModesWeightForms) {
  for_each_isa_and_threads([&] {
    for (bool bsh : {true, false}) {
      for (auto mode : {MlaPrologCacheMode::kPaBsnd, MlaPrologCacheMode::kPaNz}) {
        MlaPrologCaseConfig cfg;
        cfg.scenario = GetParam();
        cfg.bsh = bsh;
        cfg.cache_mode = mode;
        cfg.B = 3;
        cfg.S = 3;  // T = 9: not a multiple of any tile
        cfg.He = 96;
        cfg.Hcq = 64;
        cfg.N = 3;
        cfg.D = 32;
        cfg.Dr = 32;
        cfg.Hckv = 64;
        cfg.block_num = 3;
        cfg.block_size = 16;
        cfg.weight_form = bsh ? WeightForm::kNz4d : WeightForm::kNz2d;
        cfg.smooth = !bsh;
        cfg.seed = 11 + static_cast<int>(GetParam());
        run_and_compare(cfg);
      }
    }
  });
}

TEST_P(MlaPrologCross, SingleTokenAndOddShapes) {
  for_each_isa_and_threads([&] {
    // T = 1 (decode); He, Hcq and D+Dr not multiples of 16/32 (NZ padding); N = 5
    MlaPrologCaseConfig cfg;
    cfg.scenario = GetParam();
    cfg.bsh = false;
    cfg.B = 1;
    cfg.S = 1;
    cfg.He = 100;
    cfg.Hcq = 40;
    cfg.N = 5;
    cfg.D = 24;
    cfg.Dr = 8;
    cfg.Hckv = 32;
    cfg.block_num = 2;
    cfg.block_size = 16;
    cfg.seed = 5;
    run_and_compare(cfg);
  });
}

TEST_P(MlaPrologCross, ManyTokensAcrossChunks) {
  set_num_threads(2);
  // T = 300 > the 256-token chunk: two chunks, the second partial
  MlaPrologCaseConfig cfg;
  cfg.scenario = GetParam();
  cfg.B = 3;
  cfg.S = 100;
  cfg.He = 64;
  cfg.Hcq = 32;
  cfg.N = 2;
  cfg.D = 16;
  cfg.Dr = 32;
  cfg.Hckv = 32;
  cfg.block_num = 20;
  cfg.block_size = 16;
  cfg.cache_mode = MlaPrologCacheMode::kPaNz;
  run_and_compare(cfg);
  set_num_threads(0);
}

// V3: the α scales (qcQrScale on the query path, kcScale on the kv path) and queryNormOut (with
// dequantScaleQNormOut when quantized) against the reference, both token layouts and cache modes.
TEST_P(MlaPrologCross, V3ScalesAndQueryNormOut) {
  for_each_isa_and_threads([&] {
    for (bool bsh : {true, false}) {
      for (auto [aq, akv] : {std::pair{10.0, 0.25}, std::pair{0.5, 3.0}}) {
        MlaPrologCaseConfig cfg;
        cfg.scenario = GetParam();
        cfg.bsh = bsh;
        cfg.cache_mode = bsh ? MlaPrologCacheMode::kPaBsnd : MlaPrologCacheMode::kPaNz;
        cfg.B = 2;
        cfg.S = 3;
        cfg.He = 96;
        cfg.Hcq = 48;
        cfg.N = 3;
        cfg.D = 32;
        cfg.Dr = 32;
        cfg.Hckv = 64;
        cfg.smooth = bsh;
        cfg.qc_qr_scale = aq;
        cfg.kc_scale = akv;
        cfg.query_norm = true;
        cfg.seed = 21 + static_cast<int>(GetParam());
        run_and_compare(cfg);
      }
    }
  });
}

// V3: an α within FLT_EPSILON of 1 in float32 is not applied: the result is bitwise that of α = 1
// (fast path and reference).
TEST_P(MlaPrologCross, V3ScaleNearOneIsSkipped) {
  for_each_isa_and_threads([&] {
    MlaPrologCaseConfig cfg;
    cfg.scenario = GetParam();
    cfg.query_norm = true;
    cfg.seed = 31;
    MlaPrologCase one = testdata::make_mla_prolog_case(cfg);
    ASSERT_EQ(run_fast(one), kSuccess) << last_error_message();
    cfg.qc_qr_scale = cfg.kc_scale = 1.0 - std::ldexp(1.0, -24);  // a float32 with |α - 1| = FLT_EPSILON / 2
    MlaPrologCase near = testdata::make_mla_prolog_case(cfg);
    ASSERT_EQ(run_fast(near), kSuccess) << last_error_message();
    MlaPrologCase near_ref = testdata::make_mla_prolog_case(cfg);
    ASSERT_EQ(mla_prolog_ref(near_ref.params()), kSuccess) << last_error_message();
    MlaPrologCase one_ref = testdata::make_mla_prolog_case(cfg);
    one_ref.cfg.qc_qr_scale = one_ref.cfg.kc_scale = 1.0;
    ASSERT_EQ(mla_prolog_ref(one_ref.params()), kSuccess) << last_error_message();
    for (auto [a, b] : {std::pair{&one.query_out, &near.query_out}, std::pair{&one.kv_cache, &near.kv_cache},
                        std::pair{&one.query_norm_out, &near.query_norm_out},
                        std::pair{&one_ref.query_out, &near_ref.query_out},
                        std::pair{&one_ref.kv_cache, &near_ref.kv_cache}})
      EXPECT_TRUE(testdata::same_bytes(*a, *b)) << describe(cfg);
  });
}

// V3 cache modes: dense rows (BSND, TND) and block tables (PA_BLK_BSND, PA_BLK_NZ; with tokenX
// [T, He] batches of 3, 0, 6 and 2 tokens from actualSeqLen, blocks of 4 tokens, so that batches
// span blocks and one is empty), several seeds.
TEST_P(MlaPrologCross, V3CacheModes) {
  struct Mode {
    MlaPrologCacheMode mode;
    bool bsh;
  };
  const Mode modes[] = {{MlaPrologCacheMode::kBsnd, true},       {MlaPrologCacheMode::kTnd, false},
                        {MlaPrologCacheMode::kPaBlkBsnd, true},  {MlaPrologCacheMode::kPaBlkBsnd, false},
                        {MlaPrologCacheMode::kPaBlkNz, true},    {MlaPrologCacheMode::kPaBlkNz, false}};
  for_each_isa_and_threads([&] {
    for (const Mode& m : modes)
      for (uint64_t seed : {41, 42}) {
        MlaPrologCaseConfig cfg;
        cfg.scenario = GetParam();
        cfg.bsh = m.bsh;
        cfg.cache_mode = m.mode;
        cfg.B = 2;
        cfg.S = 5;
        if (!m.bsh && mla_prolog_cache_blocks(m.mode)) cfg.seq_lens = {3, 0, 6, 2};
        cfg.He = 96;
        cfg.Hcq = 48;
        cfg.N = 3;
        cfg.D = 32;
        cfg.Dr = 32;
        cfg.Hckv = 64;
        cfg.block_num = 7;
        cfg.block_size = 4;
        cfg.smooth = seed == 42;
        cfg.query_norm = seed == 41;
        cfg.seed = seed + static_cast<int>(GetParam());
        run_and_compare(cfg);
      }
  });
}

// V3 per-tile KV quant (kvCacheQuantMode 3): both quant scenarios, the three cache modes it takes,
// both token layouts, clip alphas below and at 1, two tiles per row.
class MlaPrologPerTile : public ::testing::TestWithParam<MlaPrologScenario> {};

TEST_P(MlaPrologPerTile, CacheModesAndClipAlpha) {
  struct Mode {
    MlaPrologCacheMode mode;
    bool bsh;
  };
  const Mode modes[] = {{MlaPrologCacheMode::kPaBsnd, true},
                        {MlaPrologCacheMode::kPaBsnd, false},
                        {MlaPrologCacheMode::kBsnd, true},
                        {MlaPrologCacheMode::kTnd, false}};
  for_each_isa_and_threads([&] {
    for (const Mode& m : modes)
      for (double alpha : {0.6, 1.0}) {
        MlaPrologCaseConfig cfg;
        cfg.scenario = GetParam();
        cfg.bsh = m.bsh;
        cfg.cache_mode = m.mode;
        cfg.B = 3;
        cfg.S = 3;
        cfg.He = 96;
        cfg.Hcq = 48;
        cfg.N = 2;
        cfg.D = 32;
        cfg.Dr = 32;
        cfg.Hckv = 256;
        cfg.block_num = 2;
        cfg.block_size = 16;
        cfg.clip_alpha = alpha;
        cfg.kc_scale = alpha == 1.0 ? 1.0 : 4.0;
        cfg.query_norm = m.bsh;
        cfg.seed = 51 + static_cast<int>(GetParam()) + (alpha == 1.0 ? 7 : 0);
        run_and_compare(cfg);
      }
  });
}

// An all-zero tile (a_g = 0, here from a zero gamma over the second tile): scale 0 and every int8
// value 0 in the fast path and the reference (no division by zero, no NaN or inf written).
TEST_P(MlaPrologPerTile, AllZeroTile) {
  for_each_isa_and_threads([&] {
    MlaPrologCaseConfig cfg;
    cfg.scenario = GetParam();
    cfg.Hckv = 256;
    cfg.Dr = 16;
    cfg.cache_mode = MlaPrologCacheMode::kBsnd;
    cfg.seed = 61;
    auto zero_tile = [](MlaPrologCase& c) {
      uint16_t* g = c.rmsnorm_gamma_ckv.view.ptr<uint16_t>();
      for (int64_t j = 128; j < 256; ++j) g[j] = 0;
    };
    MlaPrologCase ref = testdata::make_mla_prolog_case(cfg);
    zero_tile(ref);
    ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess) << last_error_message();
    MlaPrologCase fast = testdata::make_mla_prolog_case(cfg);
    zero_tile(fast);
    ASSERT_EQ(run_fast(fast), kSuccess) << last_error_message();
    expect_match(fast, ref);
    const int64_t w = cfg.kv_row();
    for (int64_t t = 0; t < cfg.T(); ++t) {
      const uint8_t* row = fast.kv_cache.bytes.data() + t * w;
      float s0 = 0, s1 = 1;
      std::memcpy(&s0, row + 256 + 2 * cfg.Dr, 4);
      std::memcpy(&s1, row + 256 + 2 * cfg.Dr + 4, 4);
      EXPECT_GT(s0, 0.0f) << "token " << t;
      EXPECT_EQ(s1, 0.0f) << "token " << t;
      for (int64_t j = 128; j < 256; ++j) ASSERT_EQ(row[j], 0) << "token " << t << " channel " << j;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(QuantScenarios, MlaPrologPerTile,
                         ::testing::Values(MlaPrologScenario::kPartialQuantKvQuantPerTile,
                                           MlaPrologScenario::kFullQuantKvQuantPerTile),
                         [](const ::testing::TestParamInfo<MlaPrologScenario>& i) {
                           return std::string(mla_prolog_scenario_name(i.param));
                         });

// The C++ API also takes bf16 weights as plain ND [K, N] matrices (any K, N).
TEST(MlaPrologCrossNd, NdWeightsInTheCppApi) {
  for_each_isa_and_threads([&] {
    MlaPrologCaseConfig cfg;
    cfg.scenario = MlaPrologScenario::kNoQuant;
    cfg.weight_form = WeightForm::kNd;
    cfg.He = 48;
    cfg.Hcq = 40;
    cfg.N = 2;
    cfg.D = 20;
    cfg.Dr = 12;
    cfg.Hckv = 48;
    run_and_compare(cfg);
  });
}

// int8 weights must be FRACTAL_NZ (the int8 kernels read NZ panels only).
TEST(MlaPrologCrossNd, NdInt8WeightsAreRejected) {
  MlaPrologCaseConfig cfg;
  cfg.scenario = MlaPrologScenario::kFullQuantKvNoQuant;
  cfg.weight_form = WeightForm::kNd;
  MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  EXPECT_EQ(run_fast(c), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("int8 weights must be FRACTAL_NZ"), std::string::npos);
  EXPECT_TRUE(testdata::all_bytes(c.kv_cache, cfg.canary));
  EXPECT_TRUE(testdata::all_bytes(c.query_out, cfg.canary));
}

INSTANTIATE_TEST_SUITE_P(AllScenarios, MlaPrologCross, ::testing::ValuesIn(kScenarios),
                         [](const ::testing::TestParamInfo<MlaPrologScenario>& i) {
                           return std::string(mla_prolog_scenario_name(i.param));
                         });

}  // namespace
}  // namespace mlaops::testing
