// aclnnMlaPrologV2WeightNz / aclnnMlaProlog at the vendor's shapes through the C API, against
// the float64 reference: every N of the vendor set, every He, every scenario, both token
// layouts and cache modes, both FRACTAL_NZ tensor forms, T = 1 and odd T, each forced ISA;
// plus the C-API behaviours (streams, repeatable executors, V1, empty tensors).
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_harness.h"

namespace mlaops::testing {
namespace {

using testdata::WeightForm;

using testdata::MlaPrologVendorCase;
using VendorCase = MlaPrologVendorCase;

MlaPrologCaseConfig vendor_cfg(MlaPrologScenario sc, int64_t N, int64_t He, int64_t B, int64_t S, bool bsh,
                               MlaPrologCacheMode mode, WeightForm form, uint64_t seed) {
  return testdata::mla_prolog_vendor_cfg({sc, N, He, B, S, bsh, mode, form}, seed);
}

std::vector<VendorCase> vendor_cases() { return testdata::mla_prolog_vendor_cases(); }

class MlaPrologAclnn : public ::testing::TestWithParam<VendorCase> {};

TEST_P(MlaPrologAclnn, MatchesReferenceUnderEachIsa) {
  const VendorCase& v = GetParam();
  const MlaPrologCaseConfig cfg = testdata::mla_prolog_vendor_cfg(v, testdata::mla_prolog_vendor_seed(v));
  MlaPrologCase ref = testdata::make_mla_prolog_case(cfg);
  MlaPrologCase fast = ref.clone();  // the same inputs, generated once (cloned before the reference runs)
  ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess) << last_error_message();
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    fast.reset_outputs();
    set_num_threads(2);
    ASSERT_EQ(mla_prolog_call(fast), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    expect_match(fast, ref);
  }
  reset_isa();
  set_num_threads(0);
}

INSTANTIATE_TEST_SUITE_P(VendorShapes, MlaPrologAclnn, ::testing::ValuesIn(vendor_cases()),
                         [](const ::testing::TestParamInfo<VendorCase>& i) {
                           const VendorCase& v = i.param;
                           return std::string(mla_prolog_scenario_name(v.sc)) + "_N" + std::to_string(v.N) + "_He" +
                                  std::to_string(v.He) + (v.bsh ? "_BSH_S" + std::to_string(v.S)
                                                                : "_TND_T" + std::to_string(v.B)) +
                                  "_" + mla_prolog_cache_mode_name(v.mode) +
                                  (v.form == WeightForm::kNz4d ? "_nz4d" : "_nz2d");
                         });

// The fixture case for the C-API behaviours: N = 2, He = 7168, T = 3.
MlaPrologCaseConfig small_vendor(MlaPrologScenario sc) {
  return vendor_cfg(sc, 2, 7168, 3, 1, false, MlaPrologCacheMode::kPaBsnd, WeightForm::kNz4d, 3);
}

TEST(MlaPrologAclnnApi, StreamRepeatableExecutorAndV1) {
  const MlaPrologCaseConfig cfg = small_vendor(MlaPrologScenario::kPartialQuantKvNoQuant);
  MlaPrologCase ref = testdata::make_mla_prolog_case(cfg);
  ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess);
  MlaPrologCase fast = testdata::make_mla_prolog_case(cfg);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  // V2 on a stream
  ASSERT_EQ(mla_prolog_call(fast, {}, stream), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  expect_match(fast, ref);
  // V1 (no dequantScaleQNope), synchronous
  fast.reset_outputs();
  MlaPrologCall v1;
  v1.v2 = false;
  ASSERT_EQ(mla_prolog_call(fast, v1), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  expect_match(fast, ref);
  // a repeatable executor run twice on the stream
  fast.reset_outputs();
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mla_prolog_phase1(fast, {}, &ws_size, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  void* ws = nullptr;
  ASSERT_EQ(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclnnMlaPrologV2WeightNz(ws, ws_size, ex, stream), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnMlaPrologV2WeightNz(ws, ws_size, ex, stream), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  expect_match(fast, ref);
  EXPECT_EQ(aclnnMlaProlog(ws, ws_size, ex, stream), ACLNN_ERR_PARAM_INVALID);  // V2 executor, V1 entry point
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  aclrtFree(ws);
  aclrtDestroyStream(stream);
}

TEST(MlaPrologAclnnApi, RepeatableExecutorRebindsCacheIndexAddress) {
  // graph-capture style: the same executor, the cacheIndex buffer re-pointed between runs
  const MlaPrologCaseConfig cfg = small_vendor(MlaPrologScenario::kNoQuant);
  MlaPrologCase fast = testdata::make_mla_prolog_case(cfg);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mla_prolog_phase1(fast, {}, &ws_size, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  std::vector<uint8_t> ws(ws_size);
  std::vector<int64_t> skip_all(static_cast<size_t>(cfg.T()), -1);
  ASSERT_EQ(aclSetInputTensorAddr(ex, 9, nullptr, skip_all.data()), ACLNN_SUCCESS);  // cacheIndex is input 9
  ASSERT_EQ(aclnnMlaPrologV2WeightNz(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_TRUE(testdata::all_bytes(fast.kv_cache, cfg.canary));  // every row skipped
  EXPECT_FALSE(testdata::all_bytes(fast.query_out, cfg.canary));
  ASSERT_EQ(aclSetInputTensorAddr(ex, 9, nullptr, fast.cache_index.bytes.data()), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnMlaPrologV2WeightNz(ws.data(), ws_size, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_FALSE(testdata::all_bytes(fast.kv_cache, cfg.canary));
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

TEST(MlaPrologAclnnApi, EmptyTokensWriteNothing) {
  MlaPrologCaseConfig cfg = small_vendor(MlaPrologScenario::kFullQuantKvQuant);
  cfg.B = 0;  // T = 0
  MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  uint64_t ws_size = 1;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mla_prolog_phase1(c, {}, &ws_size, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(ws_size, 0u);
  ASSERT_EQ(aclnnMlaPrologV2WeightNz(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_TRUE(testdata::all_bytes(c.kv_cache, cfg.canary));
  EXPECT_TRUE(testdata::all_bytes(c.kr_cache, cfg.canary));
}

TEST(MlaPrologAclnnApi, EmptyCacheComputesOutputsOnly) {
  for (auto sc : {MlaPrologScenario::kNoQuant, MlaPrologScenario::kFullQuantKvQuant}) {
    MlaPrologCaseConfig cfg = small_vendor(sc);
    cfg.block_num = 0;  // BlockNum = 0: outputs computed, caches untouched
    MlaPrologCase ref = testdata::make_mla_prolog_case(cfg);
    ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess);
    MlaPrologCase fast = testdata::make_mla_prolog_case(cfg);
    ASSERT_EQ(mla_prolog_call(fast), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    expect_match(fast, ref);
    EXPECT_FALSE(testdata::all_bytes(fast.query_out, cfg.canary));
  }
}

TEST(MlaPrologAclnnApi, NegativeIndicesSkipAndDuplicatesLastWins) {
  MlaPrologCaseConfig cfg = small_vendor(MlaPrologScenario::kNoQuant);
  cfg.B = 4;
  MlaPrologCase ref = testdata::make_mla_prolog_case(cfg);
  MlaPrologCase fast = testdata::make_mla_prolog_case(cfg);
  for (MlaPrologCase* c : {&ref, &fast}) {
    auto* idx = c->cache_index.view.ptr<int64_t>();
    idx[0] = -1;     // skipped
    idx[1] = -7;     // any negative value skips (vendor kernel)
    idx[3] = idx[2]; // duplicate: token 3 (the later one) wins
  }
  ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess);
  ASSERT_EQ(mla_prolog_call(fast), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  expect_match(fast, ref);
  // the winner of the duplicated slot holds token 3's row, token 2's differs
  MlaPrologCase only3 = testdata::make_mla_prolog_case(cfg);
  auto* idx = only3.cache_index.view.ptr<int64_t>();
  const int64_t slot = idx[2];
  idx[0] = idx[1] = idx[2] = -1;
  idx[3] = slot;
  ASSERT_EQ(mla_prolog_call(only3), ACLNN_SUCCESS);
  const int64_t row_bytes = cfg.Hckv * 2;
  EXPECT_EQ(0, std::memcmp(fast.kv_cache.bytes.data() + slot * row_bytes, only3.kv_cache.bytes.data() + slot * row_bytes,
                           static_cast<size_t>(row_bytes)));
}

}  // namespace
}  // namespace mlaops::testing
