// FusedInferAttentionScoreV4 rules driven by their support tables
// (ops/fia/fia_check.h) and the rules of pseShift (FIA-22),
// learnableSink (FIA-23), the vendor's feature exclusions (FIA-24) and plan reuse (FIA-25): every
// row of each table with every value it does not allow, through the C API, each rejection naming
// the operator, the parameter and the rule id with attentionOut and softmaxLse unchanged; the
// excluded pairs are accepted by the C++ API and match the float64 reference there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "mlaops/plan.h"
#include "ops/fia/fia_error_cases.h"
#include "ops/fia/fia_check.h"

namespace mlaops::testing {
namespace {

constexpr aclnnStatus kInv = ACLNN_ERR_PARAM_INVALID;

const DType kAllDtypes[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,
                            DType::kUInt8,   DType::kInt16,    DType::kInt32,   DType::kInt64,   DType::kBool};

// The C API position of a table row's tensor and a base case that has it.
struct Where {
  int index;  // FiaAclArgs::in position; -1 attentionOut, -2 softmaxLse
  Base base;
};
Where where_of(const std::string& param) {
  if (param == "query") return {0, Base::kBsnd};
  if (param == "key") return {1, Base::kBsnd};
  if (param == "value") return {2, Base::kBsnd};
  if (param == "attentionOut") return {-1, Base::kBsnd};
  if (param == "softmaxLse") return {-2, Base::kBsnd};
  if (param == "queryRopeOptional") return {24, Base::kMla};
  if (param == "keyRopeOptional") return {25, Base::kMla};
  if (param == "attenMaskOptional") return {4, Base::kBsnd};
  if (param == "pseShiftOptional") return {3, Base::kDecodePse};
  if (param == "learnableSinkOptional") return {28, Base::kTndSink};
  return {14, Base::kMla};  // blockTableOptional
}
TensorView& slot(FiaAclArgs& a, int index) { return index == -1 ? a.out : index == -2 ? a.lse : a.in[index]; }

// Every dtype a row does not allow is rejected (FIA-02 for an INT8 query, a feature outside this
// build; the key's INT8 / INT32 (packed INT4) forms are allowed, KV antiquant).
TEST(FiaRuleTables, EveryDtypeRowRejectsWhatItDoesNotAllow) {
  for (const FiaDtypeRow& row : fia_dtype_rows()) {
    const Where w = where_of(row.param);
    const FiaParams& p = base(w.base).run->params;
    const std::vector<DType> allowed = fia_dtype_set(row.set, p);
    int tested = 0;
    for (DType dt : kAllDtypes) {
      if (std::find(allowed.begin(), allowed.end(), dt) != allowed.end()) continue;
      SCOPED_TRACE(std::string(row.param) + " " + dtype_name(dt));
      const bool other_rule = std::strcmp(row.param, "query") == 0 && dt == DType::kInt8;
      const bool int8_key = std::strcmp(row.param, "key") == 0 && dt == DType::kInt8;
      if (int8_key) continue;  // allowed (KV antiquant): rejected by FIA-21 for its missing scales
      expect_rejected(w.base, {kInv, row.param, other_rule ? "FIA-02" : row.rule},
                      [&](FiaAclArgs& a) { slot(a, w.index).dtype = dt; });
      ++tested;
    }
    EXPECT_GT(tested, 0) << row.param;
  }
}

TEST(FiaRuleTables, EveryFormatRowRejectsFractalNz) {
  for (const FiaFormatRow& row : fia_format_rows()) {
    const Where w = where_of(row.param);
    SCOPED_TRACE(row.param);
    if (row.nz_paged && w.base == Base::kMla) continue;  // a rank-4 cache: NZ is wrong only by rank
    expect_rejected(w.base, {kInv, row.param, "FIA-04"}, [&](FiaAclArgs& a) { slot(a, w.index).format = Format::kFractalNZ; });
  }
}

TEST(FiaRuleTables, LayoutStringsOutsideTheTableAreRejected) {
  for (const char* bad : {"SH", "NSD", "BSHD", "bsh", "BNSD_", "_BNSD", "BSND_BSH", "TND_BSND", "NBSD", "BSH_NBSD_"})
    expect_rejected(Base::kMla, {kInv, "inputLayout", "FIA-05 value"}, [&](FiaAclArgs& a) { a.layout = bad; });
  EXPECT_EQ(fia_layout_rows().size(), 13u);
}

// ---- FIA-22 pseShift ----

TEST(FiaPseRules, FIA22_Shapes) {
  auto reshape = [](std::vector<int64_t> dims) {
    return [dims](FiaAclArgs& a) {
      a.in[3] = make_view(a.in[3].data, a.in[3].dtype, dims.data(), static_cast<int>(dims.size()));
    };
  };
  // the base pse is [2, 4, 2, 23] (Sq + 1 rows, Skv + 3 columns)
  expect_rejected(Base::kDecodePse, {kInv, "pseShiftOptional", "FIA-22"}, reshape({2, 4, 46}));        // rank 3
  expect_rejected(Base::kDecodePse, {kInv, "pseShiftOptional", "FIA-22"}, reshape({2, 2, 4, 23}));     // N
  expect_rejected(Base::kDecodePse, {kInv, "pseShiftOptional", "FIA-22"}, reshape({4, 2, 2, 23}));     // batch 4
  expect_rejected(Base::kDecodePse, {kInv, "pseShiftOptional", "FIA-22"}, reshape({2, 4, 2, 19}));     // columns < KV
  // rows < the query rows read (C++ API; a prefill case)
  FiaCase c = fia_case("pse_rows", DType::kBFloat16, 2, 4, 2, 5, 12, 32, "BSND");
  c.pse = PseForm::kRandom;
  auto d = make_case_data(c);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  TensorView short_pse = make_view(r->pse.data(), r->pse.dtype, {2, 4, 4, 15});
  r->params.pse_shift = &short_pse;
  const std::vector<uint64_t> out0 = r->out.storage;
  EXPECT_EQ(run_fia_cpp(r->params), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-22"), std::string::npos) << last_error_message();
  EXPECT_TRUE(r->out.storage == out0);
}

TEST(FiaPseRules, FIA22_DecodeHeadDimNeeds16InAclnnOnly) {
  FiaCase c = base_case(Base::kDecodePse);
  c.D = c.Dv = 24;
  auto d = make_case_data(c);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  const std::vector<uint64_t> out0 = r->out.storage;
  EXPECT_EQ(fia_aclnn_call(acl_args_of(*r)), kInv);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("FIA-22 with Q_S = 1 the vendor needs a head dim multiple of 16"), std::string::npos) << aclGetRecentErrMsg();
  EXPECT_TRUE(r->out.storage == out0);
  EXPECT_EQ(run_fia_cpp(r->params), kSuccess) << last_error_message();
}

// ---- FIA-23 learnableSink ----

TEST(FiaSinkRules, FIA23_Shapes) {
  expect_rejected(Base::kTndSink, {kInv, "learnableSinkOptional", "FIA-23 sink shape"},
                  [](FiaAclArgs& a) { a.in[28] = make_view(a.in[28].data, a.in[28].dtype, {2}); });  // N = 4
  expect_rejected(Base::kTndSink, {kInv, "learnableSinkOptional", "FIA-23 sink shape"},
                  [](FiaAclArgs& a) { a.in[28] = make_view(a.in[28].data, a.in[28].dtype, {2, 2}); });
}

// ---- FIA-24 the vendor's exclusions: rejected by aclnn, computed by the C++ API ----

// A case with both features of an exclusion row.
FiaCase pair_case(FiaFeature a, FiaFeature b) {
  FiaCase c = fia_case("pair", DType::kBFloat16, 2, 4, 2, 3, 20, 32, "BSND");
  c.act_q = {3, 2};
  for (FiaFeature f : {a, b}) {
    switch (f) {
      case FiaFeature::kPse: c.pse = PseForm::kRandom; break;
      case FiaFeature::kSink: c.sink = true; break;
      case FiaFeature::kRope:
        c.Dr = 64;
        c.cfg.scale = 1.0 / std::sqrt(32.0 + 64.0);
        break;
      case FiaFeature::kPacked: c.cfg.layout = "TND"; break;
      case FiaFeature::kExplicitMask: sparse(c, 1, MaskForm::kRank3); break;
      case FiaFeature::kLeftUpCausal: sparse(c, 2, MaskForm::kTemplate); break;
      case FiaFeature::kInnerPreciseNonZero: break;  // set on the built call (same math)
      case FiaFeature::kKvInt8: break;  // INT8 key / value: tests/ops/fia/test_fia_antiquant.cpp
      case FiaFeature::kTreeMask: sparse(c, 9, MaskForm::kTree); break;
      case FiaFeature::kPostQuant: break;    // tests/ops/fia/test_fia_tree_mask.cpp
      case FiaFeature::kKvInt8NotNz: break;  // tests/ops/fia/test_fia_tree_mask.cpp
      case FiaFeature::kSharedPrefix: break;  // tests/ops/fia/test_fia_prefix_quant.cpp
      case FiaFeature::kLeftPadding: break;   // tests/ops/fia/test_fia_prefix_quant.cpp
    }
  }
  return c;
}

TEST(FiaExclusions, FIA24_EveryPairRejectedByAclnnAndComputedByTheCppApi) {
  int rows = 0;
  for (const FiaExclusion& x : fia_exclusions()) {
    auto skipped = [](FiaFeature f) {  // built by their own tests (pair_case)
      return f == FiaFeature::kKvInt8 || f == FiaFeature::kPostQuant || f == FiaFeature::kKvInt8NotNz ||
             f == FiaFeature::kSharedPrefix || f == FiaFeature::kLeftPadding;
    };
    if (skipped(x.a) || skipped(x.b)) continue;
    SCOPED_TRACE(std::string(fia_feature_name(x.a)) + " with " + fia_feature_name(x.b));
    FiaCase c = pair_case(x.a, x.b);
    auto d = make_case_data(c);
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    if (x.a == FiaFeature::kInnerPreciseNonZero || x.b == FiaFeature::kInnerPreciseNonZero) r->params.inner_precise = 1;
    ASSERT_TRUE(fia_has_feature(r->params, x.a) && fia_has_feature(r->params, x.b));
    const std::vector<uint64_t> out0 = r->out.storage, lse0 = r->lse.storage;
    EXPECT_EQ(fia_aclnn_call(acl_args_of(*r)), kInv);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("FIA-24"), std::string::npos) << msg;
    EXPECT_NE(msg.find(x.param), std::string::npos) << msg;
    EXPECT_TRUE(r->out.storage == out0 && r->lse.storage == lse0);
    auto ref = reference_run(*d);
    ASSERT_TRUE(ref);
    check_every_isa(*d, *ref, c.dtype, c.cfg.lse, {2}, "pair");
    ++rows;
  }
  EXPECT_GE(rows, 7);
}

// ---- FIA-17 a non-empty tensor needs data (C++ API: views carry raw pointers) ----

TEST(FiaPointerRules, FIA17_NullDataOfANonEmptyTensor) {
  FiaCase c = fia_case("null_data", DType::kBFloat16, 2, 4, 2, 1, 30, 32, "BSND");
  c.pse = PseForm::kRandom;
  c.sink = true;
  auto d = make_case_data(c);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  const std::vector<uint64_t> out0 = r->out.storage;
  for (const char* name : {"query", "key", "pseShiftOptional", "learnableSinkOptional"}) {
    SCOPED_TRACE(name);
    FiaParams p = r->params;
    TensorView nulled = std::string(name) == "pseShiftOptional" ? *p.pse_shift
                        : std::string(name) == "learnableSinkOptional" ? *p.learnable_sink
                        : std::string(name) == "key" ? p.key[0] : p.query;
    nulled.data = nullptr;
    if (std::string(name) == "query") p.query = nulled;
    if (std::string(name) == "key") p.key = {nulled};
    if (std::string(name) == "pseShiftOptional") p.pse_shift = &nulled;
    if (std::string(name) == "learnableSinkOptional") p.learnable_sink = &nulled;
    EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(msg.find("FIA-17 null data of a non-empty tensor"), std::string::npos) << msg;
    EXPECT_TRUE(r->out.storage == out0);
  }
}

// A view whose byte size overflows int64 (only the C++ API can describe one): rejected unwritten.
TEST(FiaPointerRules, FIA17_ByteSizeOverflow) {
  FiaCase c = fia_case("overflow", DType::kBFloat16, 2, 4, 2, 1, 30, 32, "BSND");
  auto d = make_case_data(c);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  const std::vector<uint64_t> out0 = r->out.storage;
  FiaParams p = r->params;
  const int64_t big = int64_t{1} << 31;
  p.query = make_view(p.query.data, p.query.dtype, {2, big, big, 32});
  EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("query: FIA-17 byte size overflows int64"), std::string::npos) << msg;
  EXPECT_TRUE(r->out.storage == out0);
}

// ---- FIA-25 a plan runs only on tensors of the planned call ----

TEST(FiaPlanReuse, FIA25_RunOnNewTensorsAndRefusals) {
  FiaCase c = fia_case("reuse", DType::kBFloat16, 2, 8, 2, 1, 100, 64, "BNSD");
  c.sink = true;
  c.pse = PseForm::kRandom;
  auto d1 = make_case_data(c);
  c.seed = 9;  // other data, same shapes
  auto d2 = make_case_data(c);
  auto r1 = fia_test::build_fia_run(d1->canon, d1->cfg);
  auto r2 = fia_test::build_fia_run(d2->canon, d2->cfg);
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(r1->params, &plan), kSuccess) << last_error_message();
  EXPECT_STREQ(plan.op(), "fused_infer_attention_score_v4");
  EXPECT_NE(plan.explain().find("kernel: "), std::string::npos);
  std::vector<uint64_t> ws(plan.workspace_size() / 8 + 1);
  // one plan, two calls: each equals its one-shot call
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, r1->params, ws.data(), plan.workspace_size()), kSuccess);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, r2->params, ws.data(), plan.workspace_size()), kSuccess);
  auto o1 = fia_test::build_fia_run(d1->canon, d1->cfg);
  auto o2 = fia_test::build_fia_run(d2->canon, d2->cfg);
  ASSERT_EQ(run_fia_cpp(o1->params), kSuccess);
  ASSERT_EQ(run_fia_cpp(o2->params), kSuccess);
  EXPECT_TRUE(r1->out.storage == o1->out.storage && r1->lse.storage == o1->lse.storage);
  EXPECT_TRUE(r2->out.storage == o2->out.storage && r2->lse.storage == o2->lse.storage);
  EXPECT_FALSE(r1->out.storage == r2->out.storage);
  // refused: other lengths, another attribute, a missing optional input, an overlap, no plan
  const std::vector<uint64_t> out0 = r2->out.storage;
  auto refused = [&](const FiaParams& p, const char* what) {
    EXPECT_EQ(fused_infer_attention_score_v4_run(plan, p, ws.data(), plan.workspace_size()), kParamInvalid) << what;
    EXPECT_TRUE(r2->out.storage == out0) << what;
  };
  FiaParams p = r2->params;
  std::vector<int64_t> lens = {100, 50};
  p.actual_seq_lengths_kv = &lens;
  refused(p, "other KV lengths");
  EXPECT_NE(std::string(last_error_message()).find("FIA-25"), std::string::npos) << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find("actualSeqLengthsKvOptional"), std::string::npos);
  p = r2->params;
  p.scale_value = 0.5;
  refused(p, "another scale");
  p = r2->params;
  p.learnable_sink = nullptr;
  refused(p, "no sink");
  p = r2->params;
  p.attention_out.data = p.query.data;
  refused(p, "output over the query");
  EXPECT_NE(std::string(last_error_message()).find("FIA-18"), std::string::npos) << last_error_message();
  EXPECT_EQ(fused_infer_attention_score_v4_run(OpPlan(), r2->params, ws.data(), plan.workspace_size()), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-25"), std::string::npos) << last_error_message();
  EXPECT_TRUE(r2->out.storage == out0);
}

}  // namespace
}  // namespace mlaops::testing
