// MLAOPS_FIA_LEGACY_INVALID_ROWS=1 (docs/c-api.md): the aclnn entry points read it once and set
// FiaParams::legacy_uniform_invalid_rows for every call of the process. This binary sets it before
// main (before any aclnn call), then checks an aclnnFusedInferAttentionScoreV4 call with a fully
// masked row against the float64 reference with the switch on (the row's mean of V, lse -FLT_MAX)
// and innerPrecise 2 (bit 1: the correction, 0 / +inf) against the reference without it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

const int kSetEnv = setenv("MLAOPS_FIA_LEGACY_INVALID_ROWS", "1", 1);

TEST(FiaLegacyRowsEnv, AclnnCallsTakeTheSwitchFromTheEnvironment) {
  ASSERT_EQ(kSetEnv, 0);
  FiaCase c = fia_case("env_legacy", DType::kFloat16, 2, 4, 2, 5, 60, 32, "BSND");
  sparse(c, 1, MaskForm::kRank3);
  c.full_row_masked = true;  // query row 1 fully masked
  auto data = make_case_data(c);
  for (int64_t ip : {0, 2}) {
    auto op = fia_test::build_fia_run(data->canon, data->cfg);
    ASSERT_TRUE(op);
    op->params.inner_precise = ip;
    const aclnnStatus s = fia_aclnn_call(acl_args_of(*op));
    ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    FiaRunConfig rc = data->cfg;
    rc.out_dtype = DType::kFloat64;
    auto ref = fia_test::build_fia_run(data->canon, rc);
    ASSERT_TRUE(ref);
    ref->params.inner_precise = ip;
    ref->params.legacy_uniform_invalid_rows = true;
    ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->params), kSuccess) << last_error_message();
    const FiaCompare r = compare_fia(*op, *ref, c.dtype, true);
    EXPECT_TRUE(r.ok) << "innerPrecise " << ip << ": " << r.str();
    const double l = op->lse_bns().flat(1);  // batch 0, head 0, row 1
    if (ip == 0)
      EXPECT_EQ(l, -static_cast<double>(std::numeric_limits<float>::max()));
    else
      EXPECT_TRUE(std::isinf(l) && l > 0);
  }
}

}  // namespace
}  // namespace mlaops::testing
