// aclnnMlaPreprocess at the vendor's shapes (hidden 7168, Hckv 512, Dr 64, Hcq 1536, D 128,
// blockSize 128) through the C API, against the float64 reference, under each forced ISA: both
// input dtypes, every cache mode, both quant modes, both wuk formats, every NZ weight view, the
// BF16-weight path at hidden 6144; plus the C-API behaviours (the doc example's reserved attribute
// values, streams, empty input). The reference is slow at full size, so token counts are small;
// the wide sweep runs at small shapes in test_mla_preprocess_cross.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_preprocess/mla_preprocess_harness.h"
#include "ops/common/operators.h"

namespace mlaops::testing {
namespace {

using testdata::MlaPreprocessWeightForm;
using CM = MlaPreprocessCacheMode;
using QM = MlaPreprocessQuantMode;

using VendorCase = testdata::MlaPreprocessVendorCase;
using testdata::vendor_cfg;

const std::vector<VendorCase>& kCases = testdata::mla_preprocess_vendor_cases();

class MlaPreprocessAclnn : public ::testing::TestWithParam<int> {};

TEST_P(MlaPreprocessAclnn, MatchesReferenceUnderEachIsa) {
  const VendorCase& v = kCases[GetParam()];
  const MlaPreprocessCaseConfig cfg = vendor_cfg(v, 40 + static_cast<uint64_t>(GetParam()));
  MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_ref(ref.params()), kSuccess) << last_error_message();
  MlaPreprocessCase fast = testdata::make_mla_preprocess_case(cfg);  // built once (large weights)
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    fast.reset_outputs();
    ASSERT_EQ(mla_preprocess_call(fast), ACLNN_SUCCESS) << aclGetRecentErrMsg() << " | " << describe(cfg);
    expect_match(fast, ref);
  }
  reset_isa();
}

std::string case_name(const ::testing::TestParamInfo<int>& i) {
  const VendorCase& v = kCases[i.param];
  const char* forms[] = {"nz4d", "nzatb", "nz2d", "nd"};
  return std::to_string(i.param) + (v.dt == DType::kFloat16 ? "_fp16" : "_bf16") + "_T" + std::to_string(v.tokens) +
         "_N" + std::to_string(v.heads) + "_" + mla_preprocess_cache_mode_name(v.cm) + "_qm" +
         std::to_string(static_cast<int>(v.qm)) + (v.wuk_nz ? "_wukNZ_" : "_wukND_") +
         forms[static_cast<int>(v.form)] + (v.float_weights ? "_dtypeWeights" : "_int8Weights");
}

INSTANTIATE_TEST_SUITE_P(VendorShapes, MlaPreprocessAclnn, ::testing::Range(0, static_cast<int>(std::size(kCases))),
                         case_name);

// The doc example passes wdqDim 128, qRopeDim 0, kRopeDim 0: reserved, ignored (the same result as
// the documented 1536 / 64 / 64), on a stream.
TEST(MlaPreprocessAclnnApi, ReservedDimsIgnoredAndStream) {
  const MlaPreprocessCaseConfig cfg = vendor_cfg(kCases[0], 9);
  MlaPreprocessCase a = testdata::make_mla_preprocess_case(cfg), b = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_call(a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(mla_preprocess_call(b,
                                [](MlaPreprocessArgs& x) {
                                  x.wdq_dim = 128;
                                  x.q_rope_dim = 0;
                                  x.k_rope_dim = 0;
                                },
                                stream),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(a.q_out.bytes, b.q_out.bytes);
  EXPECT_EQ(a.q_rope_out.bytes, b.q_rope_out.bytes);
  EXPECT_EQ(a.kv_cache.bytes, b.kv_cache.bytes);
  EXPECT_EQ(a.kv_cache_rope.bytes, b.kv_cache_rope.bytes);
}

// tokenNum 0: success, workspace 0, nothing written.
TEST(MlaPreprocessAclnnApi, EmptyInput) {
  VendorCase v = kCases[0];
  v.tokens = 0;
  const MlaPreprocessCaseConfig cfg = vendor_cfg(v, 3);
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  uint64_t ws = 1;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mla_preprocess_phase1(c, {}, &ws, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(ws, 0u);
  ASSERT_EQ(aclnnMlaPreprocess(nullptr, 0, ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(testdata::all_bytes(c.kv_cache, cfg.canary));
  EXPECT_TRUE(testdata::all_bytes(c.kv_cache_rope, cfg.canary));
}

TEST(MlaPreprocessAclnnApi, RegisteredAsAvailable) {
  bool found = false;
  for (const OperatorInfo* o = operator_table(); o->name != nullptr; ++o)
    if (std::string(o->name) == "MlaPreprocess") found = o->available;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace mlaops::testing
