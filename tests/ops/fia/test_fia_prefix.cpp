// FusedInferAttentionScoreV4 shared prefix (keySharedPrefix / valueSharedPrefix /
// actualSharedPrefixLen, rules FIA-45..49; docs/ops/fused_infer_attention_score.md "Shared
// prefix") against the float64 reference under every kernel configuration (fia_kernel_configs())
// with 1 and 2 threads: BSH / BSND / BNSD / BNSD_BSND, decode and prefill, GQA, Lp 0 / partial /
// full, batches with actKV 0, explicit masks and sparse 0..4 (columns shifted by Lp), pseShift,
// softmaxLse, post-quant INT8 output; the C API (aclnnFusedInferAttentionScoreV4 and the V2 / V3
// entry points, which carry the prefix inputs); then every rejection (status, message, output
// bytes unchanged).
//
// A case is built from three parts: the batch's own key / value (extent Skv), the prefix (batch
// 1, extent Sp) and a mask / pse sized for the effective sequence (Sp + Skv columns) whose unread
// pse elements are NaN (fia_test::poison_pse), so a column read outside [0, Lp + actKV) shows up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "mlaops/runtime.h"
#include "ops/fia/fia_entry_call.h"
#include "ops/fia/fia_error_cases.h"
#include "ops/fia/fia_harness.h"
#include "reference/common/ref_util.h"

namespace mlaops::testing {
namespace {

constexpr DType BF = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;

struct PrefixCase {
  FiaCase c;       // Skv, act_kv: the batches' own tokens
  int64_t Sp = 1;  // the prefix tensors' extent
  int64_t Lp = -1;  // actualSharedPrefixLen (-1: not passed, Lp = Sp)
  bool post_quant = false;  // per-tensor quantScale2 / quantOffset2, INT8 output
};
void PrintTo(const PrefixCase& c, std::ostream* os) { *os << c.c.name; }

int64_t lp_of(const PrefixCase& p) { return p.Lp < 0 ? p.Sp : p.Lp; }

PrefixCase pc(FiaCase c, int64_t sp, int64_t lp = -1) {
  PrefixCase p;
  p.c = c;
  p.Sp = sp;
  p.Lp = lp;
  return p;
}

std::vector<PrefixCase> cases() {
  std::vector<PrefixCase> v;
  FiaCase c;
  // decode (Q_S 1): GQA, Lp full / partial / 0, batches without own tokens
  c = fia_case("decode_bsh_gqa4_full", BF, 4, 8, 2, 1, 70, 64, "BSH");
  c.act_kv = {70, 0, 33, 5};
  v.push_back(pc(c, 100));
  c = fia_case("decode_bsnd_fp16_partial", F16, 3, 4, 1, 1, 50, 64, "BSND");
  c.act_kv = {50, 17, 0};
  v.push_back(pc(c, 200, 130));
  c = fia_case("decode_bnsd_lp0", BF, 2, 8, 8, 1, 90, 32, "BNSD");
  v.push_back(pc(c, 64, 0));
  c = fia_case("decode_bnsd_bsnd_mask_pse", F16, 3, 8, 2, 1, 40, 64, "BNSD_BSND");
  c.act_kv = {40, 0, 21};
  c.mask = MaskForm::kRank2Batch;
  c.pse = PseForm::kRandom;
  v.push_back(pc(c, 300, 257));
  c = fia_case("decode_bsh_long_prefix", BF, 2, 32, 8, 1, 130, 128, "BSH");
  v.push_back(pc(c, 1000, 777));
  // one item (B 1, MQA): with 2 threads 2 KV splits per source, run in parallel and merged after
  c = fia_case("decode_b1_mqa_kv_splits", F16, 1, 8, 1, 1, 300, 64, "BSND");
  v.push_back(pc(c, 500, 400));
  // prefill: masks (sparse 0..4), pse, lengths
  c = fia_case("prefill_bsh_sparse0_band", BF, 2, 4, 2, 20, 40, 32, "BSH");
  c.act_kv = {40, 11};
  sparse(c, 0, MaskForm::kRank3, 30, 3);
  v.push_back(pc(c, 50, 37));
  c = fia_case("prefill_bsnd_sparse1_fp16", F16, 2, 4, 4, 9, 30, 64, "BSND");
  sparse(c, 1, MaskForm::kRank4Bcast);
  c.full_row_masked = true;
  v.push_back(pc(c, 20));
  c = fia_case("prefill_bnsd_sparse2", BF, 2, 8, 2, 17, 25, 64, "BNSD");
  c.act_q = {17, 6};
  sparse(c, 2, MaskForm::kTemplate);
  v.push_back(pc(c, 40, 15));
  c = fia_case("prefill_bsh_sparse3_lengths", BF, 3, 4, 1, 24, 60, 32, "BSH");
  c.act_q = {24, 3, 24};
  c.act_kv = {60, 0, 10};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(pc(c, 30, 30));
  c = fia_case("prefill_bnsd_bsnd_sparse4", F16, 2, 4, 2, 33, 70, 64, "BNSD_BSND");
  sparse(c, 4, MaskForm::kTemplate, 40, 2);
  v.push_back(pc(c, 90, 64));
  c = fia_case("prefill_bsnd_pse_bcast_mask", BF, 2, 8, 2, 12, 45, 64, "BSND");
  sparse(c, 1, MaskForm::kRank3);
  c.pse = PseForm::kBroadcast;
  v.push_back(pc(c, 35, 20));
  c = fia_case("prefill_bsh_gqa_long", BF, 2, 16, 4, 64, 300, 64, "BSH");
  c.act_kv = {300, 129};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(pc(c, 700, 650));
  c = fia_case("prefill_bnsd_fp16_lp0_causal", F16, 2, 8, 8, 40, 64, 64, "BNSD");
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(pc(c, 32, 0));
  return v;
}

// Own key / value, prefix, and mask / pse of the effective sequence.
struct PrefixData {
  std::unique_ptr<FiaCaseData> big;  // Skv = Sp + Skv: the mask, pse and lengths of the effective sequence
  FiaCanonical own, pre;
  FiaRunConfig cfg;
  int64_t Lp = 0;
};

std::unique_ptr<PrefixData> make_prefix_data(const PrefixCase& p) {
  auto d = std::make_unique<PrefixData>();
  const FiaCase& c = p.c;
  d->Lp = lp_of(p);
  FiaCase bc = c;
  bc.Skv = p.Sp + c.Skv;
  bc.act_kv.assign(static_cast<size_t>(c.B), 0);
  for (int64_t b = 0; b < c.B; ++b)
    bc.act_kv[static_cast<size_t>(b)] = d->Lp + (c.act_kv.empty() ? c.Skv : c.act_kv[static_cast<size_t>(b)]);
  d->big = make_case_data(bc);
  d->own = fia_test::make_canonical(c.dtype, c.B, c.N, c.KVN, c.Sq, c.Skv, c.D, c.Dv, 0, c.seed * 3 + 1);
  if (!c.act_q.empty() || !c.act_kv.empty()) d->own.set_lengths(c.act_q, c.act_kv);
  d->own.pse = d->big->canon.pse;
  d->pre = fia_test::make_canonical(c.dtype, 1, c.N, c.KVN, 1, p.Sp, c.D, c.Dv, 0, c.seed * 5 + 2);
  d->cfg = d->big->cfg;
  return d;
}

// A run with the prefix bound (and the post-quant tensors).
struct PrefixRun {
  std::unique_ptr<FiaRun> run, pre;
  std::vector<int64_t> len;
  float pq[2] = {40.0f, 1.5f};
  TensorView sc, of;
};

std::unique_ptr<PrefixRun> build(const PrefixCase& p, const PrefixData& d, DType out_dtype, bool pass_len) {
  auto r = std::make_unique<PrefixRun>();
  FiaRunConfig cfg = d.cfg;
  cfg.out_dtype = out_dtype;
  r->run = fia_test::build_fia_run(d.own, cfg);
  FiaRunConfig pcfg;
  pcfg.layout = cfg.layout;
  pcfg.lse = false;
  r->pre = fia_test::build_fia_run(d.pre, pcfg);
  if (!r->run || !r->pre) return nullptr;
  FiaParams& prm = r->run->params;
  prm.key_shared_prefix = &r->pre->params.key[0];
  prm.value_shared_prefix = &r->pre->params.value[0];
  if (pass_len) {
    r->len = {d.Lp};
    prm.actual_shared_prefix_len = &r->len;
  }
  if (p.post_quant && out_dtype == DType::kInt8) {
    r->sc = make_view(&r->pq[0], DType::kFloat32, {1});
    r->of = make_view(&r->pq[1], DType::kFloat32, {1});
    prm.quant_scale2 = &r->sc;
    prm.quant_offset2 = &r->of;
  }
  return r;
}

class FiaPrefix : public ::testing::TestWithParam<PrefixCase> {};

TEST_P(FiaPrefix, MatchesReference) {
  const PrefixCase& p = GetParam();
  const FiaCase& c = p.c;
  auto d = make_prefix_data(p);
  const bool pass_len = p.Lp >= 0;
  auto ref = build(p, *d, DType::kFloat64, pass_len);
  ASSERT_TRUE(ref);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->run->params), kSuccess) << last_error_message();
  FiaWorst w;
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    const std::string where = fia_kernel_config_name(c.name, k);
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = build(p, *d, c.dtype, pass_len);
      ASSERT_TRUE(op);
      const Status s = run_fia_cpp(op->run->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << where << ": " << last_error_message();
      const FiaCompare r = compare_fia(*op->run, *ref->run, c.dtype, c.cfg.lse);
      EXPECT_TRUE(r.ok) << where << " threads=" << t << ": " << r.str();
      w.add(r);
    }
  }
  set_kernel_override("");
  reset_isa();
  EXPECT_GT(w.runs, 0);
  std::printf("[fia-prefix] %s %s Lp %lld: %d runs, worst out rel %.3g abs %.3g, lse rel %.3g\n", c.name.c_str(),
              dtype_name(c.dtype), static_cast<long long>(d->Lp), w.runs, w.out_rel, w.out_abs, w.lse_rel);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaPrefix, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PrefixCase>& i) { return i.param.c.name; });

// The prefix is the same as copying it into every batch's KV (an independent check of the
// reference's concatenation): the operator with a prefix against the operator on K_eff.
TEST(FiaPrefixEquivalence, SameAsCopiedPrefix) {
  FiaCase c = fia_case("equiv", BF, 3, 8, 2, 1, 40, 64, "BSND");
  c.act_kv = {40, 0, 9};
  PrefixCase p = pc(c, 50, 31);
  auto d = make_prefix_data(p);
  auto op = build(p, *d, BF, true);
  ASSERT_TRUE(op);
  ASSERT_EQ(run_fia_cpp(op->run->params), kSuccess) << last_error_message();
  // K_eff in BSND: [B, Lp + Skv, KVN, D]
  const int64_t Lp = 31, S = Lp + c.Skv;
  FiaCanonical e = fia_test::make_canonical(BF, c.B, c.N, c.KVN, 1, S, c.D, c.Dv, 0, 99);
  e.q = d->own.q;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.KVN; ++h)
      for (int64_t j = 0; j < S; ++j)
        for (int64_t x = 0; x < c.D; ++x) {
          const bool fromp = j < Lp;
          const int64_t sb = fromp ? 0 : b, sj = fromp ? j : j - Lp;
          const FiaCanonical& src = fromp ? d->pre : d->own;
          e.k.set({b, h, j, x}, src.k.get({sb, h, sj, x}));
          e.v.set({b, h, j, x}, src.v.get({sb, h, sj, x}));
        }
  e.set_lengths({}, {Lp + 40, Lp, Lp + 9});
  FiaRunConfig cfg = d->cfg;
  auto ce = fia_test::build_fia_run(e, cfg);
  ASSERT_TRUE(ce);
  ASSERT_EQ(run_fia_cpp(ce->params), kSuccess) << last_error_message();
  const HostTensor a = op->run->out_bnsd(), b = ce->out_bnsd();
  const Tolerance t = fia_out_tolerance(BF);
  const Stats s = compare(a.view(), b.view(), t);
  EXPECT_TRUE(within(s, t, false)) << s.str();
}

// Post-quant INT8 output with a prefix: the operator's INT8 values are the reference's within 1
// (the FP16 quantisation chain of both; a difference needs x_op and x_ref on two sides of a
// rounding boundary).
TEST(FiaPrefixPostQuant, WithinOneOfReference) {
  for (const char* layout : {"BSH", "BNSD"}) {
    FiaCase c = fia_case("pq", F16, 2, 8, 2, 5, 30, 64, layout);
    c.act_kv = {30, 4};
    sparse(c, 3, MaskForm::kTemplate);
    PrefixCase p = pc(c, 40, 25);
    p.post_quant = true;
    auto d = make_prefix_data(p);
    auto ref = build(p, *d, DType::kInt8, true);
    ASSERT_TRUE(ref);
    ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->run->params), kSuccess) << last_error_message();
    for (Isa isa : test_isas()) {
      if (!set_isa(isa)) continue;
      for (int t : {1, 2}) {
        set_num_threads(t);
        auto op = build(p, *d, DType::kInt8, true);
        const Status s = run_fia_cpp(op->run->params);
        set_num_threads(0);
        ASSERT_EQ(s, kSuccess) << last_error_message();
        const HostTensor a = op->run->out_bnsd(), b = ref->run->out_bnsd();
        int64_t diff = 0;
        for (int64_t i = 0; i < a.numel(); ++i) {
          const double x = std::fabs(a.flat(i) - b.flat(i));
          EXPECT_LE(x, 1.0) << layout << " isa=" << isa_name(isa) << " element " << i;
          diff += x != 0;
        }
        EXPECT_LE(diff * 100, a.numel()) << layout << ": more than 1 % of the INT8 values differ";
      }
    }
    reset_isa();
  }
}

// ---- the C API ----

PrefixCase api_case() {
  FiaCase c = fia_case("api", BF, 2, 4, 2, 3, 20, 32, "BSND");
  c.act_kv = {20, 7};
  sparse(c, 3, MaskForm::kTemplate);
  return pc(c, 24, 17);
}

FiaAclArgs with_prefix(const PrefixRun& r) {
  FiaAclArgs a = acl_args_of(*r.run);
  a.in[21] = r.run->params.key_shared_prefix[0];
  a.passed[21] = true;
  a.in[22] = r.run->params.value_shared_prefix[0];
  a.passed[22] = true;
  a.has_prefix = true;
  a.prefix = r.len;
  return a;
}

TEST(FiaPrefixApi, AclnnV4MatchesCpp) {
  const PrefixCase p = api_case();
  auto d = make_prefix_data(p);
  auto cpp = build(p, *d, BF, true);
  auto acl = build(p, *d, BF, true);
  ASSERT_EQ(run_fia_cpp(cpp->run->params), kSuccess) << last_error_message();
  ASSERT_EQ(fia_aclnn_call(with_prefix(*acl)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(acl->run->out.storage == cpp->run->out.storage);
  EXPECT_TRUE(acl->run->lse.storage == cpp->run->lse.storage);
}

TEST(FiaPrefixApi, EntryPointsV2V3MatchCpp) {
  const PrefixCase p = api_case();
  auto d = make_prefix_data(p);
  auto cpp = build(p, *d, BF, true);
  ASSERT_EQ(run_fia_cpp(cpp->run->params), kSuccess) << last_error_message();
  for (Entry ep : {Entry::kFiaV2, Entry::kFiaV3}) {
    auto acl = build(p, *d, BF, true);
    ASSERT_EQ(entry_call(ep, mapped_v4(ep, with_prefix(*acl))), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_TRUE(acl->run->out.storage == cpp->run->out.storage) << static_cast<int>(ep);
  }
}

// ---- rejections: status, message (operator, parameter, rule), output bytes unchanged ----

constexpr aclnnStatus kInv = ACLNN_ERR_PARAM_INVALID;

void expect_prefix_rejected(Expect e, const std::function<void(FiaAclArgs&, PrefixRun&)>& mutate,
                            const PrefixCase& p = api_case()) {
  auto d = make_prefix_data(p);
  auto r = build(p, *d, p.c.dtype, true);
  ASSERT_TRUE(r);
  FiaAclArgs a = with_prefix(*r);
  mutate(a, *r);
  const std::vector<uint64_t> out0 = r->run->out.storage, lse0 = r->run->lse.storage;
  const aclnnStatus s = fia_aclnn_call(a);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, e.code) << msg;
  EXPECT_NE(msg.find("aclnnFusedInferAttentionScoreV4"), std::string::npos) << msg;
  EXPECT_NE(msg.find(e.param), std::string::npos) << "message does not name " << e.param << ": " << msg;
  EXPECT_NE(msg.find(e.rule), std::string::npos) << "message does not name " << e.rule << ": " << msg;
  EXPECT_TRUE(r->run->out.storage == out0) << "attentionOut changed by a rejected call (" << e.rule << ")";
  EXPECT_TRUE(r->run->lse.storage == lse0) << "softmaxLse changed by a rejected call (" << e.rule << ")";
}

TEST(FiaPrefixRules, FIA45_Presence) {
  expect_prefix_rejected({kInv, "valueSharedPrefixOptional", "FIA-45 keySharedPrefix and valueSharedPrefix come together"}, [](FiaAclArgs& a, PrefixRun&) { a.passed[22] = false; });
  expect_prefix_rejected({kInv, "keySharedPrefixOptional", "FIA-45 keySharedPrefix and valueSharedPrefix come together"}, [](FiaAclArgs& a, PrefixRun&) { a.passed[21] = false; });
  // actualSharedPrefixLen alone is ignored (tests/ops/fia/test_fia_prefix_quant.cpp)
}

// Row-major dims (and strides) for a view; the new shape is never larger than the old.
void reshape(TensorView& t, std::vector<int64_t> dims) {
  t.rank = static_cast<int>(dims.size());
  int64_t st = 1;
  for (int i = t.rank; i-- > 0;) {
    t.dims[i] = dims[static_cast<size_t>(i)];
    t.strides[i] = st;
    st *= t.dims[i];
  }
}

TEST(FiaPrefixRules, FIA46_ShapeAndDtype) {
  // api_case: BSND, key [2, 20, 2, 32], prefix [1, 24, 2, 32]
  expect_prefix_rejected({kInv, "keySharedPrefixOptional", "FIA-46"}, [](FiaAclArgs& a, PrefixRun&) { reshape(a.in[21], {2, 12, 2, 32}); });
  expect_prefix_rejected({kInv, "valueSharedPrefixOptional", "FIA-46"}, [](FiaAclArgs& a, PrefixRun&) {
    reshape(a.in[22], {1, 24, 1, 32});  // KV_N
  });
  expect_prefix_rejected({kInv, "keySharedPrefixOptional", "FIA-46"}, [](FiaAclArgs& a, PrefixRun&) {
    reshape(a.in[21], {1, 24, 2, 16});  // D
  });
  expect_prefix_rejected({kInv, "keySharedPrefixOptional", "FIA-46"}, [](FiaAclArgs& a, PrefixRun&) {
    reshape(a.in[21], {1, 24, 64});  // rank
  });
  expect_prefix_rejected({kInv, "valueSharedPrefixOptional", "FIA-46"}, [](FiaAclArgs& a, PrefixRun&) {
    reshape(a.in[22], {1, 10, 2, 32});  // Sp differs from the key prefix's
  });
  // dtype (C++ API: an FP16 prefix with BF16 key / value)
  const PrefixCase p = api_case();
  auto d = make_prefix_data(p);
  auto r = build(p, *d, BF, true);
  TensorView k16 = *r->run->params.key_shared_prefix;
  k16.dtype = F16;
  r->run->params.key_shared_prefix = &k16;
  const std::vector<uint64_t> out0 = r->run->out.storage;
  EXPECT_EQ(run_fia_cpp(r->run->params), kParamInvalid);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("keySharedPrefixOptional: FIA-46 dtype"), std::string::npos) << msg;
  EXPECT_TRUE(r->run->out.storage == out0);
}

TEST(FiaPrefixRules, FIA47_Length) {
  expect_prefix_rejected({kInv, "actualSharedPrefixLenOptional", "FIA-47"}, [](FiaAclArgs& a, PrefixRun&) { a.prefix = {3, 3}; });
  expect_prefix_rejected({kInv, "actualSharedPrefixLenOptional", "FIA-47"}, [](FiaAclArgs& a, PrefixRun&) { a.prefix = {25}; });
  expect_prefix_rejected({kInv, "actualSharedPrefixLenOptional", "FIA-47"}, [](FiaAclArgs& a, PrefixRun&) { a.prefix = {-1}; });
}

TEST(FiaPrefixRules, FIA48_Combinations) {
  // learnableSink
  static uint16_t sink[4] = {0, 0, 0, 0};
  expect_prefix_rejected({kInv, "keySharedPrefixOptional", "FIA-48 a shared prefix is not accepted with"}, [](FiaAclArgs& a, PrefixRun&) {
    a.in[28] = make_view(sink, BF, {4});
    a.passed[28] = true;
  });
  // paged attention, TND, MLA: the prefix added to the base cases of those features
  for (Base b : {Base::kGqaPagedTnd, Base::kMla}) {
    FiaRun& r = *base(b).run;
    const std::vector<uint64_t> out0 = r.out.storage;
    FiaAclArgs a = acl_args_of(r);
    a.in[21] = r.params.key[0];
    a.in[21].dims[0] = 1;
    a.passed[21] = true;
    a.in[22] = r.params.value[0];
    a.in[22].dims[0] = 1;
    a.passed[22] = true;
    EXPECT_EQ(fia_aclnn_call(a), kInv);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("FIA-48 a shared prefix is not accepted with"), std::string::npos) << msg;
    EXPECT_NE(msg.find("keySharedPrefixOptional"), std::string::npos) << msg;
    EXPECT_TRUE(r.out.storage == out0);
  }
}

TEST(FiaPrefixRules, FIA49_EmptyKeyValue) {
  expect_prefix_rejected({kInv, "keySharedPrefixOptional", "FIA-49 a shared prefix needs a non-empty key/value"}, [](FiaAclArgs& a, PrefixRun&) {
    a.in[1].dims[1] = 0;
    a.in[2].dims[1] = 0;
    a.has_asl_kv = false;
  });
}

// The mask and pse columns cover the prefix first: extents below Lp + actKV are rejected.
TEST(FiaPrefixRules, MaskAndPseExtentIncludeThePrefix) {
  FiaCase c = fia_case("mask", BF, 2, 4, 2, 3, 20, 32, "BSND");
  sparse(c, 1, MaskForm::kRank3);
  c.pse = PseForm::kRandom;
  // columns of the effective sequence: Lp + 20 = 37; give 36
  expect_prefix_rejected({kInv, "attenMaskOptional", "FIA-14 extent"}, [](FiaAclArgs& a, PrefixRun&) {
    reshape(a.in[4], {a.in[4].dims[0], a.in[4].dims[1], 36});
  },
                         pc(c, 24, 17));
  expect_prefix_rejected({kInv, "pseShiftOptional", "FIA-22 pseShift shape"}, [](FiaAclArgs& a, PrefixRun&) {
    reshape(a.in[3], {a.in[3].dims[0], a.in[3].dims[1], a.in[3].dims[2], 36});
  },
                         pc(c, 24, 17));
}

}  // namespace
}  // namespace mlaops::testing
