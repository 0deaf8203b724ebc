// MlaPreprocess's plan / run API (include/mlaops/mla_preprocess.h): one plan run on several
// calls' tensors gives the one-shot results under every ISA level; the run keeps the plan's ISA
// level; a run with another shape, dtype or attribute, with overlapping or misaligned tensors,
// with cache outputs that are not the caches, or with an invalid or foreign plan is refused with
// nothing written; explain() names the kernels.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mlaops/mla_prolog.h"
#include "ops/mla_preprocess/mla_preprocess_harness.h"
#include "testkit/mla_prolog_test_data.h"

namespace mlaops::testing {
namespace {

using CM = MlaPreprocessCacheMode;
using QM = MlaPreprocessQuantMode;

// T = 7 tokens, small dims; `seed` changes every input (weights, tokens, slot mapping).
MlaPreprocessCaseConfig cfg_of(DType dt, CM cm, QM qm, uint64_t seed) {
  MlaPreprocessCaseConfig c;
  c.dtype = dt;
  c.tokens = 7;
  c.heads = 3;
  c.cache_mode = cm;
  c.quant_mode = qm;
  c.seed = seed;
  return c;
}

bool same_outputs(const MlaPreprocessCase& a, const MlaPreprocessCase& b) {
  return a.q_out.bytes == b.q_out.bytes && a.q_rope_out.bytes == b.q_rope_out.bytes &&
         a.kv_cache.bytes == b.kv_cache.bytes && a.kv_cache_rope.bytes == b.kv_cache_rope.bytes;
}

bool untouched(const MlaPreprocessCase& c) {
  for (const HostTensor* h : {&c.q_out, &c.q_rope_out, &c.kv_cache, &c.kv_cache_rope})
    if (!testdata::all_bytes(*h, c.cfg.canary)) return false;
  return true;
}

using Mode = std::tuple<DType, CM, QM>;
class MlaPreprocessPlanRun : public ::testing::TestWithParam<Mode> {};

TEST_P(MlaPreprocessPlanRun, OnePlanSeveralCallsMatchOneShotCalls) {
  const auto [dt, cm, qm] = GetParam();
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    const MlaPreprocessCase first = testdata::make_mla_preprocess_case(cfg_of(dt, cm, qm, 1));
    OpPlan plan;
    ASSERT_EQ(mla_preprocess_plan(first.params(), &plan), kSuccess) << last_error_message();
    std::vector<uint8_t> ws(plan.workspace_size());
    for (uint64_t seed : {1, 2, 3}) {
      MlaPreprocessCase planned = testdata::make_mla_preprocess_case(cfg_of(dt, cm, qm, seed));
      MlaPreprocessCase one_shot = testdata::make_mla_preprocess_case(cfg_of(dt, cm, qm, seed));
      ASSERT_EQ(mla_preprocess_run(plan, planned.params(), ws.data(), ws.size()), kSuccess) << last_error_message();
      ASSERT_EQ(run_fast(one_shot), kSuccess) << last_error_message();
      EXPECT_TRUE(same_outputs(planned, one_shot)) << "seed " << seed << " isa " << isa_name(isa);
    }
  }
  reset_isa();
}

std::string mode_name(const ::testing::TestParamInfo<Mode>& i) {
  return std::string(std::get<0>(i.param) == DType::kFloat16 ? "fp16_" : "bf16_") +
         mla_preprocess_cache_mode_name(std::get<1>(i.param)) + "_" + mla_preprocess_quant_mode_name(std::get<2>(i.param));
}

INSTANTIATE_TEST_SUITE_P(Modes, MlaPreprocessPlanRun,
                         ::testing::Values(Mode{DType::kFloat16, CM::kKvCache, QM::kPerTensorAsymm},
                                           Mode{DType::kBFloat16, CM::kKropeCtkv, QM::kPerTokenSymm},
                                           Mode{DType::kFloat16, CM::kInt8NzCache, QM::kPerTensorAsymm},
                                           Mode{DType::kBFloat16, CM::kNzCache, QM::kPerTokenSymm}),
                         mode_name);

// The ISA level is chosen in phase 1: a plan made under the scalar level runs the scalar kernels
// whatever the level is when it runs.
TEST(MlaPreprocessPlan, RunKeepsThePlansIsaLevel) {
  const MlaPreprocessCaseConfig cfg = cfg_of(DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 4);
  MlaPreprocessCase planned = testdata::make_mla_preprocess_case(cfg), scalar = testdata::make_mla_preprocess_case(cfg);
  set_isa(Isa::kScalar);
  OpPlan plan;
  ASSERT_EQ(mla_preprocess_plan(planned.params(), &plan), kSuccess);
  ASSERT_EQ(run_fast(scalar), kSuccess);
  reset_isa();
  std::vector<uint8_t> ws(plan.workspace_size());
  ASSERT_EQ(mla_preprocess_run(plan, planned.params(), ws.data(), ws.size()), kSuccess);
  EXPECT_TRUE(same_outputs(planned, scalar));
  EXPECT_NE(plan.explain().find("kernels (isa scalar)"), std::string::npos) << plan.explain();
}

// Expects the run refused with `code` and a message holding every text in `needles`, nothing
// written.
void expect_refused(const OpPlan& plan, const MlaPreprocessCase& c, const MlaPreprocessParams& p, Status code,
                    std::initializer_list<const char*> needles) {
  std::vector<uint8_t> ws(plan.workspace_size() + 64);
  EXPECT_EQ(mla_preprocess_run(plan, p, ws.data(), ws.size()), code);
  const std::string msg = last_error_message();
  for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "no '" << n << "' in: " << msg;
  EXPECT_TRUE(untouched(c)) << "a refused run wrote an output or cache byte";
}

TEST(MlaPreprocessPlan, RefusesAnotherShapeDtypeOrAttribute) {
  const MlaPreprocessCaseConfig cfg = cfg_of(DType::kFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 1);
  const MlaPreprocessCase base = testdata::make_mla_preprocess_case(cfg);
  OpPlan plan;
  ASSERT_EQ(mla_preprocess_plan(base.params(), &plan), kSuccess);
  MlaPreprocessCaseConfig fewer = cfg;
  fewer.tokens = 6;
  const MlaPreprocessCase c1 = testdata::make_mla_preprocess_case(fewer);
  expect_refused(plan, c1, c1.params(), kParamInvalid, {"mla_preprocess: plan: MPP-18", "input differs"});
  MlaPreprocessCaseConfig bf16 = cfg;
  bf16.dtype = DType::kBFloat16;
  const MlaPreprocessCase c2 = testdata::make_mla_preprocess_case(bf16);
  expect_refused(plan, c2, c2.params(), kParamInvalid, {"MPP-18", "input differs"});
  const MlaPreprocessCase c3 = testdata::make_mla_preprocess_case(cfg_of(DType::kFloat16, CM::kKropeCtkv,
                                                                          QM::kPerTensorAsymm, 2));
  MlaPreprocessParams p3 = c3.params();
  p3.epsilon = 1e-5;
  expect_refused(plan, c3, p3, kParamInvalid, {"MPP-18", "epsilon differs"});
}

// The pointer rules are re-run with the run's tensors (they may differ from the plan's).
TEST(MlaPreprocessPlan, RefusesOverlappingMisalignedOrForeignCacheTensors) {
  const MlaPreprocessCaseConfig cfg = cfg_of(DType::kFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, 1);
  const MlaPreprocessCase base = testdata::make_mla_preprocess_case(cfg);
  OpPlan plan;
  ASSERT_EQ(mla_preprocess_plan(base.params(), &plan), kSuccess);
  const MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg_of(DType::kFloat16, CM::kKropeCtkv,
                                                                         QM::kPerTensorAsymm, 2));
  MlaPreprocessParams p = c.params();
  TensorView rope_out = *p.q_rope_out;
  rope_out.data = static_cast<char*>(p.kv_cache.data) + 64;  // an output inside the cache
  p.q_rope_out = &rope_out;
  expect_refused(plan, c, p, kParamInvalid, {"qRopeOut: MPP-14", "must not overlap kvCache"});
  p = c.params();
  p.q_out.data = p.input.data;  // an output on an input
  expect_refused(plan, c, p, kParamInvalid, {"qOut: MPP-14", "must not overlap input"});
  p = c.params();
  p.gamma2.data = static_cast<char*>(p.gamma2.data) + 1;  // fp16 at an odd address
  expect_refused(plan, c, p, kParamInvalid, {"gamma2: MPP-05", "aligned"});
  p = c.params();
  TensorView kv_out = p.kv_cache;
  kv_out.dims[0] = 1;  // a cache output too small for the rows of block 1 and up
  p.kv_cache_out = kv_out;
  OpPlan small_out;
  ASSERT_EQ(mla_preprocess_plan(p, &small_out), kSuccess) << last_error_message();  // slots are checked per run
  expect_refused(small_out, c, p, kParamInvalid, {"kvCacheOut: MPP-19"});
}

TEST(MlaPreprocessPlan, RefusesInvalidOrForeignPlansAndShortWorkspace) {
  const MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg_of(DType::kFloat16, CM::kKvCache,
                                                                         QM::kPerTensorAsymm, 1));
  expect_refused(OpPlan(), c, c.params(), kParamNullptr, {"mla_preprocess: plan: not a valid plan"});
  const testdata::MlaPrologCase other = testdata::make_mla_prolog_case(testdata::MlaPrologCaseConfig{});
  OpPlan foreign;
  ASSERT_EQ(mla_prolog_plan(other.params(), &foreign), kSuccess) << last_error_message();
  expect_refused(foreign, c, c.params(), kParamInvalid, {"mla_preprocess: plan: made for mla_prolog"});
  OpPlan plan;
  ASSERT_EQ(mla_preprocess_plan(c.params(), &plan), kSuccess);
  std::vector<uint8_t> ws(plan.workspace_size());
  EXPECT_EQ(mla_preprocess_run(plan, c.params(), ws.data(), ws.size() - 1), kParamInvalid);
  EXPECT_EQ(mla_preprocess_run(plan, c.params(), nullptr, ws.size()), kParamNullptr);
  EXPECT_TRUE(untouched(c));
  MlaPreprocessParams bad = c.params();
  bad.epsilon = -1;
  EXPECT_EQ(mla_preprocess_plan(bad, &plan), kParamInvalid);
  EXPECT_FALSE(plan.valid()) << "a failed planning leaves the plan invalid";
}

TEST(MlaPreprocessPlan, ExplainNamesTheKernelsOfEachIsaLevel) {
  MlaPreprocessCaseConfig dtype_weights = cfg_of(DType::kBFloat16, CM::kKvCache, QM::kPerTensorAsymm, 1);
  dtype_weights.float_weights = true;
  for (const MlaPreprocessCaseConfig& cfg : {cfg_of(DType::kFloat16, CM::kInt8NzCache, QM::kPerTokenSymm, 1), dtype_weights}) {
    const MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
    for (Isa isa : runnable_isas()) {
      set_isa(isa);
      OpPlan plan;
      ASSERT_EQ(mla_preprocess_plan(c.params(), &plan), kSuccess) << last_error_message();
      const std::string e = plan.explain();
      EXPECT_STREQ(plan.op(), "mla_preprocess");
      uint64_t ws = 0;
      ASSERT_EQ(mla_preprocess_workspace_size(c.params(), &ws), kSuccess);
      EXPECT_EQ(plan.workspace_size(), ws);
      const std::string level = isa_name(isa);
      for (const std::string& needle :
           {"kernels (isa " + level + ")",
            std::string("input @ wdqkv^T: ") + (cfg.float_weights ? "gemm_bf16_t_" : "gemm_s8_t_"),
            "mla_preprocess_rows_" + level, "convert_" + level + " absmax",
            std::string(isa == detected_isa() ? "kernels (isa " : " rows skipped: gemm_"),
            std::string(mla_preprocess_cache_mode_name(cfg.cache_mode)), std::string("workspace ")})
        EXPECT_NE(e.find(needle), std::string::npos) << "no '" << needle << "' in:\n" << e;
    }
  }
  reset_isa();
}

TEST(MlaPreprocessPlan, EmptyTokensPlanNothing) {
  MlaPreprocessCaseConfig cfg = cfg_of(DType::kFloat16, CM::kInt8NzCache, QM::kPerTensorAsymm, 1);
  cfg.tokens = 0;
  const MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  OpPlan plan;
  ASSERT_EQ(mla_preprocess_plan(c.params(), &plan), kSuccess) << last_error_message();
  EXPECT_EQ(plan.workspace_size(), 0u);
  EXPECT_NE(plan.explain().find("work: none"), std::string::npos) << plan.explain();
  EXPECT_EQ(mla_preprocess_run(plan, c.params(), nullptr, 0), kSuccess);
  EXPECT_TRUE(untouched(c));
}

}  // namespace
}  // namespace mlaops::testing
