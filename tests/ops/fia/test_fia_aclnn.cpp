// FusedInferAttentionScoreV4 through the C API on the vllm-ascend priority configurations
// (docs/ops/fused_infer_attention_score.md): DeepSeek MLA decode BNSD_NBSD / BSND_NBSD over paged
// caches (BnNBsD and NZ), MTP TND_NTD with sparse 3, GQA TND prefill over a BnBsH cache with sparse
// 3, sliding window with sparse 4 — each as a two-phase call on a stream, compared with the float64
// reference (tolerances: fia_harness.h). Also: workspace / executor behaviour.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>

#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "ops/common/operators.h"

namespace mlaops::testing {
namespace {

struct Priority {
  const char* name;
  FiaCase c;
};

FiaCase mla_decode(const char* layout, int rank, int64_t N) {
  FiaCase c;
  c.dtype = DType::kBFloat16;
  c.B = 3, c.N = N, c.KVN = 1, c.Sq = 1, c.Skv = 300, c.D = 512, c.Dv = 512, c.Dr = 64;
  c.act_kv = {300, 129, 1};
  c.cfg.layout = layout;
  c.cfg.paged = true;
  c.cfg.cache_rank = rank;
  c.cfg.block_size = 128;
  c.cfg.value_is_key = true;
  c.cfg.scale = 1.0 / std::sqrt(192.0);  // DeepSeek softmax scale 1/sqrt(128 + 64)
  c.seed = 11;
  return c;
}

std::vector<Priority> priorities() {
  std::vector<Priority> v;
  v.push_back({"MlaDecodeBnsdNbsdBnNBsD", mla_decode("BNSD_NBSD", 4, 32)});
  v.push_back({"MlaDecodeBsndNbsdNz", mla_decode("BSND_NBSD", 5, 16)});
  {
    FiaCase c = mla_decode("TND_NTD", 4, 16);
    c.name = "mtp";
    c.Sq = 4;
    c.act_q = {1, 4, 2};
    c.act_kv = {300, 180, 2};
    c.cfg.sparse_mode = 3;
    c.mask = MaskForm::kTemplate;
    c.mask_dtype = DType::kInt8;
    v.push_back({"MtpTndNtdSparse3", c});
  }
  {
    FiaCase c;
    c.dtype = DType::kBFloat16;
    c.B = 2, c.N = 8, c.KVN = 2, c.Sq = 40, c.Skv = 200, c.D = 128, c.Dv = 128;
    c.act_q = {40, 17};
    c.act_kv = {40, 200};
    c.cfg.layout = "TND";
    c.cfg.paged = true;
    c.cfg.cache_rank = 3;
    c.cfg.block_size = 128;
    c.cfg.scale = 1.0 / std::sqrt(128.0);
    c.cfg.sparse_mode = 3;
    c.mask = MaskForm::kTemplate;
    c.seed = 5;
    v.push_back({"GqaTndPrefillBnBsHSparse3", c});
    c.cfg.sparse_mode = 4;
    c.cfg.pre_tokens = 16;
    c.cfg.next_tokens = 0;
    c.dtype = DType::kFloat16;
    v.push_back({"SlidingWindowSparse4Fp16", c});
  }
  return v;
}

void PrintTo(const Priority& p, std::ostream* os) { *os << p.name; }

class FiaAclnnPriority : public ::testing::TestWithParam<Priority> {};

TEST_P(FiaAclnnPriority, MatchesReferenceOnStream) {
  const FiaCase& c = GetParam().c;
  auto data = make_case_data(c);
  auto ref = reference_run(*data);
  ASSERT_TRUE(ref);
  auto op = fia_test::build_fia_run(data->canon, data->cfg);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  const aclnnStatus s = fia_aclnn_call(acl_args_of(*op), stream);
  aclrtDestroyStream(stream);
  ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const FiaCompare r = compare_fia(*op, *ref, c.dtype, c.cfg.lse);
  EXPECT_TRUE(r.ok) << r.str();
  std::printf("[fia-stats] %s %s out max_abs %.3g lse max_rel %.3g\n", GetParam().name, dtype_name(c.dtype),
              r.out.max_abs, r.lse.max_rel);
}

INSTANTIATE_TEST_SUITE_P(Vllm, FiaAclnnPriority, ::testing::ValuesIn(priorities()),
                         [](const ::testing::TestParamInfo<Priority>& i) { return std::string(i.param.name); });

TEST(FiaAclnnApi, RegisteredAndExecutorConsumed) {
  bool found = false;
  for (const OperatorInfo* o = operator_table(); o->name != nullptr; ++o)
    if (std::string(o->name) == "FusedInferAttentionScoreV4") found = o->available;
  EXPECT_TRUE(found);
  FiaCase c = mla_decode("BNSD_NBSD", 4, 16);
  auto data = make_case_data(c);
  auto op = fia_test::build_fia_run(data->canon, data->cfg);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(fia_phase1(acl_args_of(*op), &ws, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_GT(ws, 0u);
  std::vector<uint64_t> buf(ws / 8 + 1);
  EXPECT_EQ(aclnnFusedInferAttentionScoreV4(buf.data(), ws, ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  // A consumed executor is rejected.
  EXPECT_NE(aclnnFusedInferAttentionScoreV4(buf.data(), ws, ex, nullptr), ACLNN_SUCCESS);
}

TEST(FiaAclnnApi, EmptyQueryIsANoOp) {
  FiaCase c;
  c.B = 0, c.N = 2, c.KVN = 2, c.Sq = 3, c.Skv = 4, c.D = 16, c.Dv = 16;
  auto data = make_case_data(c);
  auto op = fia_test::build_fia_run(data->canon, data->cfg);
  uint64_t ws = 1;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(fia_phase1(acl_args_of(*op), &ws, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(ws, 0u);
  EXPECT_EQ(aclnnFusedInferAttentionScoreV4(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
}

}  // namespace
}  // namespace mlaops::testing
