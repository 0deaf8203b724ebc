// MlaProlog fast path vs the float64 reference: every scenario x BSH/TND x cache mode x weight
// form, odd token counts and shapes that are not multiples of any tile, under each forced ISA
// with 1 and 2 threads (small shapes; the vendor shapes run in test_mla_prolog_aclnn.cpp).
#include <gtest/gtest.h>

#include <cmath>
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
