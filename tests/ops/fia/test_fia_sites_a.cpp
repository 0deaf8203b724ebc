// Check-site negative tests of aclnnFusedInferAttentionScoreV4 (docs/testing.md, "Coverage
// tables"), rules FIA-01..FIA-25: each call reaches one check site, and the test names the site's
// exact tag; the status, the message (operator, parameter, tag) and that attentionOut and
// softmaxLse keep every byte are checked by expect_rejected (fia_error_cases.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/fia/fia_error_cases.h"

namespace mlaops::testing {
namespace {

constexpr aclnnStatus kInv = ACLNN_ERR_PARAM_INVALID;

// A view of t's data with other dims (a shape-only mutation: the call is rejected before any read).
void reshape(TensorView& t, const std::vector<int64_t>& dims) {
  t = make_view(t.data, t.dtype, dims.data(), static_cast<int>(dims.size()), t.format);
}

TEST(FiaSitesA, FIA08_Shapes) {
  expect_rejected(Base::kBsnd, {kInv, "value", "FIA-08 sequence extent must equal key's"},
                  [](FiaAclArgs& a) { reshape(a.in[2], {2, 9, 2, 16}); });  // key KV_S 10
  expect_rejected(Base::kGqaPagedTnd, {kInv, "key", "FIA-08 BnBsH hidden dim must be a multiple of numKeyValueHeads"},
                  [](FiaAclArgs& a) { reshape(a.in[1], {a.in[1].dims[0], 16, 127}); });  // 127 % 2 heads
  expect_rejected(Base::kMla, {kInv, "key", "FIA-08 KV_N of the cache shape"}, [](FiaAclArgs& a) {
    reshape(a.in[1], {a.in[1].dims[0], 2, 16, 512});  // BnNBsD with 2 heads, numKeyValueHeads 1
  });
}

// The dense strides of a view with a zero extent (is_contiguous: each stride the product of the
// extents after it, zero included).
void zero_extent_strides(TensorView& t) {
  int64_t expect = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.strides[i] = expect;
    expect *= t.dims[i];
  }
}

TEST(FiaSitesA, FIA15_Rope) {
  expect_rejected(Base::kMla, {kInv, "queryRopeOptional", "queryRopeOptional: FIA-15 rope head dim; allowed >= 1, got 0"}, [](FiaAclArgs& a) {
    TensorView& q = a.in[24];  // an empty queryRope: head dim 0
    reshape(q, {q.dims[0], q.dims[1], q.dims[2], 0});
    zero_extent_strides(q);
  });
  expect_rejected(Base::kMla, {kInv, "keyRopeOptional", "FIA-15 paged blockNum/blockSize must equal key's"}, [](FiaAclArgs& a) {
    TensorView& k = a.in[25];
    reshape(k, {k.dims[0] - 1, k.dims[1], k.dims[2], k.dims[3]});
  });
}

// FIA-19: the vendor's ranges (aclnn only; the C++ API computes these calls).
TEST(FiaSitesA, FIA19_VendorRanges) {
  expect_rejected(Base::kDecodePse, {kInv, "query", "FIA-19 B"}, [](FiaAclArgs& a) {
    reshape(a.in[0], {65537, 1, 4, 32});
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsOptional", "FIA-19 TND batch"}, [](FiaAclArgs& a) {
    a.asl_q.assign(4097, 5);  // cumulative; the count is checked first
  });
  expect_rejected(Base::kDecodePse, {kInv, "innerPrecise", "FIA-19 with Q_S = 1"}, [](FiaAclArgs& a) { a.inner = 2; });
  expect_rejected(Base::kDecodePse, {kInv, "key", "FIA-19 decode KV_S"}, [](FiaAclArgs& a) {
    a.passed[3] = false;  // no pseShift (its extent would be checked first)
    reshape(a.in[1], {2, 262145, 2, 32});
    reshape(a.in[2], {2, 262145, 2, 32});
  });
  expect_rejected(Base::kBsnd, {kInv, "query", "FIA-19 head dim with Q_S > 1 (layout"}, [](FiaAclArgs& a) {
    reshape(a.in[0], {2, 3, 4, 8});
    reshape(a.in[1], {2, 10, 2, 8});
    reshape(a.in[2], {2, 10, 2, 8});
    reshape(a.out, {2, 3, 4, 8});
  });
  expect_rejected(Base::kBsnd, {kInv, "value", "FIA-19 head dim with Q_S > 1 (layout"}, [](FiaAclArgs& a) {
    reshape(a.in[2], {2, 10, 2, 8});
    reshape(a.out, {2, 3, 4, 8});
  });
  expect_rejected(Base::kBsnd, {kInv, "sparseMode", "FIA-19 with Q_D != V_D"}, [](FiaAclArgs& a) {
    reshape(a.in[2], {2, 10, 2, 32});  // sparseMode 1
    reshape(a.out, {2, 3, 4, 32});
  });
  expect_rejected(Base::kDecodePse, {kInv, "query", "FIA-19 head dim D"}, [](FiaAclArgs& a) {
    reshape(a.in[0], {2, 1, 4, 528});
    reshape(a.in[1], {2, 20, 2, 528});
    reshape(a.in[2], {2, 20, 2, 528});
    reshape(a.out, {2, 1, 4, 528});
  });
  expect_rejected(Base::kDecodePse, {kInv, "value", "FIA-19 head dim V_D"}, [](FiaAclArgs& a) {
    reshape(a.in[2], {2, 20, 2, 528});
    reshape(a.out, {2, 1, 4, 528});
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "innerPrecise", "FIA-19 TND / NTD GQA / MQA"}, [](FiaAclArgs& a) { a.inner = 1; });
}

TEST(FiaSitesA, FIA19_VendorCombinations) {
  expect_rejected(Base::kBsnd, {kInv, "softmaxLse", "FIA-19 with Q_D != V_D ("}, [](FiaAclArgs& a) {
    static float lse[2 * 4 * 3];  // never written: the call is rejected
    reshape(a.in[2], {2, 10, 2, 32});
    reshape(a.out, {2, 3, 4, 32});
    a.sparse = 0;
    a.passed[4] = false;
    a.lse_flag = true;
    a.lse_passed = true;
    a.lse = make_view(lse, DType::kFloat32, {2, 4, 3, 1});
  });
  expect_rejected(Base::kMla, {kInv, "sparseMode", "FIA-19 MLA with D 512"}, [](FiaAclArgs& a) {
    static uint8_t mask[2 * 1 * 48] = {};  // [B, Q_S, >= KV_S]: sparseMode 1 with its mask
    a.sparse = 1;
    a.in[4] = make_view(mask, DType::kUInt8, {2, 1, 48});
    a.passed[4] = true;
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "innerPrecise", "FIA-19 TND / NTD MHA BF16"}, [](FiaAclArgs& a) {
    a.num_heads = 2;  // 2 query heads on 2 KV heads: MHA
    reshape(a.in[0], {5, 2, 64});
    reshape(a.out, {5, 2, 64});
    reshape(a.lse, {5, 2, 1});
    a.inner = 1;
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "innerPrecise", "FIA-19 TND / NTD MHA FP16"}, [](FiaAclArgs& a) {
    a.num_heads = 2;
    for (TensorView* t : {&a.in[0], &a.in[1], &a.in[2], &a.out}) t->dtype = DType::kFloat16;
    reshape(a.in[0], {5, 2, 64});
    reshape(a.out, {5, 2, 64});
    reshape(a.lse, {5, 2, 1});
    a.inner = 2;
  });
}

TEST(FiaSitesA, FIA02_Int8KvWithRope) {
  expect_rejected(Base::kMla, {kInv, "key", "FIA-02 INT8 key/value with queryRope/keyRope (MLA quantisation) is not supported yet"},
                  [](FiaAclArgs& a) { a.in[1].dtype = a.in[2].dtype = DType::kInt8; });
}

// FIA-01: a destroyed aclIntArray handle (never dereferenced: the registry of live objects is asked).
TEST(FiaSitesA, FIA01_DeadIntArray) {
  std::vector<int64_t> v = {3, 5};
  aclIntArray* dead = aclCreateIntArray(v.data(), v.size());
  ASSERT_NE(dead, nullptr);
  ASSERT_EQ(aclDestroyIntArray(dead), ACL_SUCCESS);
  expect_rejected(Base::kGqaPagedTnd,
                  {kInv, "actualSeqLengthsOptional", "FIA-01 not a live aclIntArray (destroyed, or never created by aclCreateIntArray)"},
                  [dead](FiaAclArgs& a) { a.asl_q_handle = dead; });
}

// FIA-01 (C++ API): a query / attentionOut of no dtype is "null".
TEST(FiaSitesA, FIA01_RequiredTensorNullInCpp) {
  FiaRun& r = *base(Base::kMla).run;
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  for (int which = 0; which < 2; ++which) {
    FiaParams p = r.params;
    (which == 0 ? p.query : p.attention_out) = TensorView{};
    uint64_t need = 0;
    EXPECT_EQ(fused_infer_attention_score_v4_workspace_size(p, &need), kParamNullptr);
    EXPECT_NE(std::string(last_error_message()).find("FIA-01 required tensor is null"), std::string::npos) << last_error_message();
    std::vector<uint64_t> buf(1 << 13);
    EXPECT_EQ(fused_infer_attention_score_v4(p, buf.data(), buf.size() * 8), kParamNullptr);
  }
  EXPECT_TRUE(r.out.storage == out0);
  EXPECT_TRUE(r.lse.storage == lse0);
}

// FIA-25: running a plan that is not one of this operator (here an empty plan).
TEST(FiaSitesA, FIA25_NotAPlanOfThisOperator) {
  FiaRun& r = *base(Base::kMla).run;
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  uint64_t need = 0;
  ASSERT_EQ(fused_infer_attention_score_v4_workspace_size(r.params, &need), kSuccess) << last_error_message();
  std::vector<uint64_t> buf(need / 8 + 1);
  const OpPlan empty;
  EXPECT_EQ(fused_infer_attention_score_v4_run(empty, r.params, buf.data(), need), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-25 not a plan of this operator"), std::string::npos) << last_error_message();
  EXPECT_TRUE(r.out.storage == out0);
  EXPECT_TRUE(r.lse.storage == lse0);
}

// FIA-23's dtype row (the rule's table row in ops/fia/fia_tables.cpp).
TEST(FiaSitesA, FIA23_SinkDtype) {
  expect_rejected(Base::kTndSink, {kInv, "learnableSinkOptional", "FIA-23"}, [](FiaAclArgs& a) { a.in[28].dtype = DType::kFloat32; });
}

// FIA-15 on a contiguous (not paged) MLA cache: keyRope's batch / sequence follow the key's.
TEST(FiaSitesA, FIA15_ContiguousKeyRope) {
  FiaCase c = base_case(Base::kMla);
  c.cfg.paged = false;
  auto d = make_case_data(c);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  FiaAclArgs ok = acl_args_of(*r);
  ASSERT_EQ(fia_aclnn_call(ok), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const std::vector<uint64_t> out0 = r->out.storage, lse0 = r->lse.storage;
  FiaAclArgs a = acl_args_of(*r);
  TensorView& k = a.in[25];  // BNSD [B, 1, KV_S, 64]
  reshape(k, {k.dims[0], k.dims[1], k.dims[2] - 1, k.dims[3]});
  EXPECT_EQ(fia_aclnn_call(a), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("keyRopeOptional: FIA-15 batch/sequence must equal the key's"), std::string::npos) << msg;
  EXPECT_TRUE(r->out.storage == out0);
  EXPECT_TRUE(r->lse.storage == lse0);
}

// FIA-17 (C++ API, no vendor ranges): N * V_D of the output shape overflows int64 (views only:
// the call is rejected before any read).
TEST(FiaSitesA, FIA17_OutputHiddenOverflow) {
  FiaRun& r = *base(Base::kDecodePse).run;
  const std::vector<uint64_t> out0 = r.out.storage;
  FiaParams p = r.params;
  const int64_t n = int64_t{1} << 40, vd = int64_t{1} << 24;
  p.num_heads = n;
  p.num_key_value_heads = 1;
  p.pse_shift = nullptr;
  p.softmax_lse_flag = false;
  p.softmax_lse = nullptr;
  p.query = make_view(p.query.data, p.query.dtype, {1, 1, n, 1});
  p.key = {make_view(p.key[0].data, p.key[0].dtype, {1, 1, 1, 1})};
  p.value = {make_view(p.value[0].data, p.value[0].dtype, {1, 1, 1, vd})};
  p.attention_out = make_view(p.attention_out.data, p.attention_out.dtype, {1, 1, 1, 1});
  uint64_t need = 0;
  EXPECT_EQ(fused_infer_attention_score_v4_workspace_size(p, &need), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("attentionOut: FIA-17 N * V_D overflows int64"), std::string::npos)
      << last_error_message();
  std::vector<uint64_t> buf(1 << 13);
  EXPECT_EQ(fused_infer_attention_score_v4(p, buf.data(), buf.size() * 8), kParamInvalid);
  EXPECT_TRUE(r.out.storage == out0);
}

// FIA-20 through the C++ API (the aclnn executor checks the workspace itself).
TEST(FiaSitesA, FIA20_Workspace) {
  FiaRun& r = *base(Base::kMla).run;
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  uint64_t need = 0;
  ASSERT_EQ(fused_infer_attention_score_v4_workspace_size(r.params, &need), kSuccess) << last_error_message();
  ASSERT_GT(need, 64u);
  std::vector<uint64_t> buf(need / 8 + 1);
  EXPECT_EQ(fused_infer_attention_score_v4(r.params, buf.data(), need - 64), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-20 value"), std::string::npos) << last_error_message();
  EXPECT_EQ(fused_infer_attention_score_v4(r.params, nullptr, need), kParamNullptr);
  EXPECT_NE(std::string(last_error_message()).find("FIA-20 null, but"), std::string::npos) << last_error_message();
  EXPECT_TRUE(r.out.storage == out0);
  EXPECT_TRUE(r.lse.storage == lse0);
}

}  // namespace
}  // namespace mlaops::testing
