// MlaProlog's plan / run API (include/mlaops/mla_prolog.h): one plan run on several calls'
// tensors gives the one-shot results under every ISA level; the run keeps the plan's ISA level;
// a run with another shape, dtype or attribute, with overlapping or misaligned outputs, or with
// an invalid or foreign plan is refused with nothing written; explain() names the kernels.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mlaops/mla_preprocess.h"
#include "ops/mla_prolog/mla_prolog_harness.h"
#include "testkit/mla_preprocess_test_data.h"

namespace mlaops::testing {
namespace {

// T = 9 tokens (TND), odd dims; `seed` changes every input (weights, tokens, cache indices).
MlaPrologCaseConfig cfg_of(MlaPrologScenario sc, uint64_t seed) {
  MlaPrologCaseConfig c;
  c.scenario = sc;
  c.bsh = false;
  c.B = 9;
  c.S = 1;
  c.He = 96;
  c.Hcq = 40;
  c.N = 3;
  c.D = 24;
  c.Dr = 16;
  c.Hckv = 32;
  c.block_num = 3;
  c.block_size = 16;
  c.seed = seed;
  return c;
}

bool same_outputs(const MlaPrologCase& a, const MlaPrologCase& b) {
  return a.query_out.bytes == b.query_out.bytes && a.query_rope_out.bytes == b.query_rope_out.bytes &&
         a.kv_cache.bytes == b.kv_cache.bytes && a.kr_cache.bytes == b.kr_cache.bytes &&
         a.dequant_scale_q_nope_out.bytes == b.dequant_scale_q_nope_out.bytes;
}

bool untouched(const MlaPrologCase& c) {
  for (const HostTensor* h : {&c.query_out, &c.query_rope_out, &c.kv_cache, &c.kr_cache})
    if (!testdata::all_bytes(*h, c.cfg.canary)) return false;
  return true;
}

class MlaPrologPlanRun : public ::testing::TestWithParam<MlaPrologScenario> {};

TEST_P(MlaPrologPlanRun, OnePlanSeveralCallsMatchOneShotCalls) {
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    const MlaPrologCase first = testdata::make_mla_prolog_case(cfg_of(GetParam(), 1));
    OpPlan plan;
    ASSERT_EQ(mla_prolog_plan(first.params(), &plan), kSuccess) << last_error_message();
    std::vector<uint8_t> ws(plan.workspace_size());
    for (uint64_t seed : {1, 2, 3}) {
      MlaPrologCase planned = testdata::make_mla_prolog_case(cfg_of(GetParam(), seed));
      MlaPrologCase one_shot = testdata::make_mla_prolog_case(cfg_of(GetParam(), seed));
      ASSERT_EQ(mla_prolog_run(plan, planned.params(), ws.data(), ws.size()), kSuccess) << last_error_message();
      ASSERT_EQ(run_fast(one_shot), kSuccess) << last_error_message();
      EXPECT_TRUE(same_outputs(planned, one_shot)) << "seed " << seed << " isa " << isa_name(isa);
    }
  }
  reset_isa();
}

INSTANTIATE_TEST_SUITE_P(AllScenarios, MlaPrologPlanRun,
                         ::testing::Values(MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvNoQuant,
                                           MlaPrologScenario::kPartialQuantKvQuant,
                                           MlaPrologScenario::kFullQuantKvNoQuant,
                                           MlaPrologScenario::kFullQuantKvQuant),
                         [](const ::testing::TestParamInfo<MlaPrologScenario>& i) {
                           return std::string(mla_prolog_scenario_name(i.param));
                         });

// The ISA level is chosen in phase 1: a plan made under the scalar level runs the scalar kernels
// whatever the level is when it runs (the scalar and SIMD kernels round differently).
TEST(MlaPrologPlan, RunKeepsThePlansIsaLevel) {
  const MlaPrologCaseConfig cfg = cfg_of(MlaPrologScenario::kNoQuant, 4);
  MlaPrologCase planned = testdata::make_mla_prolog_case(cfg), scalar = testdata::make_mla_prolog_case(cfg);
  set_isa(Isa::kScalar);
  OpPlan plan;
  ASSERT_EQ(mla_prolog_plan(planned.params(), &plan), kSuccess);
  ASSERT_EQ(run_fast(scalar), kSuccess);
  reset_isa();
  std::vector<uint8_t> ws(plan.workspace_size());
  ASSERT_EQ(mla_prolog_run(plan, planned.params(), ws.data(), ws.size()), kSuccess);
  EXPECT_TRUE(same_outputs(planned, scalar));
  EXPECT_NE(plan.explain().find("kernels (isa scalar)"), std::string::npos) << plan.explain();
}

// Expects the run refused with `code` and a message holding every text in `needles`, nothing
// written.
void expect_refused(const OpPlan& plan, const MlaPrologCase& c, const MlaPrologParams& p, Status code,
                    std::initializer_list<const char*> needles) {
  std::vector<uint8_t> ws(plan.workspace_size() + 64);
  EXPECT_EQ(mla_prolog_run(plan, p, ws.data(), ws.size()), code);
  const std::string msg = last_error_message();
  for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "no '" << n << "' in: " << msg;
  EXPECT_TRUE(untouched(c)) << "a refused run wrote an output or cache byte";
}

TEST(MlaPrologPlan, RefusesAnotherShapeDtypeOrAttribute) {
  const MlaPrologCase base = testdata::make_mla_prolog_case(cfg_of(MlaPrologScenario::kNoQuant, 1));
  OpPlan plan;
  ASSERT_EQ(mla_prolog_plan(base.params(), &plan), kSuccess);
  // another token count: tokenX is the first tensor whose dims differ
  MlaPrologCaseConfig fewer = cfg_of(MlaPrologScenario::kNoQuant, 1);
  fewer.B = 8;
  const MlaPrologCase c1 = testdata::make_mla_prolog_case(fewer);
  expect_refused(plan, c1, c1.params(), kParamInvalid, {"mla_prolog: plan: MP-18", "tokenX differs"});
  // another dtype: the partial-quant weightUqQr is INT8
  const MlaPrologCase c2 = testdata::make_mla_prolog_case(cfg_of(MlaPrologScenario::kPartialQuantKvNoQuant, 1));
  expect_refused(plan, c2, c2.params(), kParamInvalid, {"MP-18", "weightUqQr differs"});
  // another attribute
  const MlaPrologCase c3 = testdata::make_mla_prolog_case(cfg_of(MlaPrologScenario::kNoQuant, 2));
  MlaPrologParams p3 = c3.params();
  p3.rmsnorm_epsilon_ckv = 1e-6;
  expect_refused(plan, c3, p3, kParamInvalid, {"MP-18", "rmsnormEpsilonCkv differs"});
  // another cache mode
  MlaPrologParams p4 = c3.params();
  p4.cache_mode = MlaPrologCacheMode::kPaNz;
  expect_refused(plan, c3, p4, kParamInvalid, {"MP-18", "cacheModeOptional differs"});
}

// The pointer rules are re-run with the run's tensors (they may differ from the plan's).
TEST(MlaPrologPlan, RefusesOverlappingOrMisalignedTensors) {
  const MlaPrologCase base = testdata::make_mla_prolog_case(cfg_of(MlaPrologScenario::kNoQuant, 1));
  OpPlan plan;
  ASSERT_EQ(mla_prolog_plan(base.params(), &plan), kSuccess);
  const MlaPrologCase c = testdata::make_mla_prolog_case(cfg_of(MlaPrologScenario::kNoQuant, 2));
  MlaPrologParams p = c.params();
  p.query_rope_out.data = static_cast<char*>(p.kv_cache.data) + 64;  // an output inside the cache
  expect_refused(plan, c, p, kParamInvalid, {"queryRopeOut: MP-12", "must not overlap kvCacheRef"});
  p = c.params();
  p.query_out.data = p.query_rope_out.data;  // two outputs on the same bytes
  expect_refused(plan, c, p, kParamInvalid, {"queryOut: MP-12", "must not overlap queryRopeOut"});
  p = c.params();
  p.rope_cos.data = static_cast<char*>(p.rope_cos.data) + 1;  // bf16 at an odd address
  expect_refused(plan, c, p, kParamInvalid, {"ropeCos: MP-05", "aligned"});
  p = c.params();
  p.token_x.data = nullptr;
  expect_refused(plan, c, p, kParamInvalid, {"tokenX: MP-05 data pointer", "got null"});
}

TEST(MlaPrologPlan, RefusesInvalidOrForeignPlansAndShortWorkspace) {
  const MlaPrologCase c = testdata::make_mla_prolog_case(cfg_of(MlaPrologScenario::kNoQuant, 1));
  expect_refused(OpPlan(), c, c.params(), kParamNullptr, {"mla_prolog: plan: not a valid plan"});
  const testdata::MlaPreprocessCase other = testdata::make_mla_preprocess_case(testdata::MlaPreprocessCaseConfig{});
  OpPlan foreign;
  ASSERT_EQ(mla_preprocess_plan(other.params(), &foreign), kSuccess) << last_error_message();
  expect_refused(foreign, c, c.params(), kParamInvalid, {"mla_prolog: plan: made for mla_preprocess"});
  OpPlan plan;
  ASSERT_EQ(mla_prolog_plan(c.params(), &plan), kSuccess);
  std::vector<uint8_t> ws(plan.workspace_size());
  EXPECT_EQ(mla_prolog_run(plan, c.params(), ws.data(), ws.size() - 1), kParamInvalid);
  EXPECT_EQ(mla_prolog_run(plan, c.params(), nullptr, ws.size()), kParamNullptr);
  EXPECT_TRUE(untouched(c));
  MlaPrologParams bad = c.params();
  bad.rmsnorm_epsilon_cq = -1;
  EXPECT_EQ(mla_prolog_plan(bad, &plan), kParamInvalid);
  EXPECT_FALSE(plan.valid()) << "a failed planning leaves the plan invalid";
}

TEST(MlaPrologPlan, ExplainNamesTheKernelsOfEachIsaLevel) {
  for (auto sc : {MlaPrologScenario::kNoQuant, MlaPrologScenario::kFullQuantKvQuant}) {
    const MlaPrologCase c = testdata::make_mla_prolog_case(cfg_of(sc, 1));
    for (Isa isa : runnable_isas()) {
      set_isa(isa);
      OpPlan plan;
      ASSERT_EQ(mla_prolog_plan(c.params(), &plan), kSuccess);
      const std::string e = plan.explain();
      EXPECT_STREQ(plan.op(), "mla_prolog");
      uint64_t ws = 0;
      ASSERT_EQ(mla_prolog_workspace_size(c.params(), &ws), kSuccess);
      EXPECT_EQ(plan.workspace_size(), ws);
      const std::string level = isa_name(isa);
      for (const std::string& needle :
           {"kernels (isa " + level + ")",
            std::string("x projection [W_DQ | W_DKV_KR]: ") + (sc == MlaPrologScenario::kNoQuant ? "gemm_bf16_" : "gemm_s8_"),
            "convert_" + level, std::string(isa == detected_isa() ? "kernels (isa " : " rows skipped: gemm_"), std::string(mla_prolog_scenario_name(sc)), std::string("workspace ")})
        EXPECT_NE(e.find(needle), std::string::npos) << "no '" << needle << "' in:\n" << e;
    }
  }
  reset_isa();
}

TEST(MlaPrologPlan, EmptyTokensPlanNothing) {
  MlaPrologCaseConfig cfg = cfg_of(MlaPrologScenario::kFullQuantKvQuant, 1);
  cfg.B = 0;
  const MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  OpPlan plan;
  ASSERT_EQ(mla_prolog_plan(c.params(), &plan), kSuccess) << last_error_message();
  EXPECT_EQ(plan.workspace_size(), 0u);
  EXPECT_NE(plan.explain().find("work: none"), std::string::npos) << plan.explain();
  EXPECT_EQ(mla_prolog_run(plan, c.params(), nullptr, 0), kSuccess);
  EXPECT_TRUE(untouched(c));
}

}  // namespace
}  // namespace mlaops::testing
