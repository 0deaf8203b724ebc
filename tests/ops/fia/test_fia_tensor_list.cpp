// FusedInferAttentionScoreV4 tensor-list KV (key / value as lists of B tensors of batch 1 with
// their own S_b; rules FIA-50, FIA-51, docs/ops/fused_infer_attention_score.md "Tensor-list KV").
// Every case runs three ways: the list call, the equivalent padded contiguous call (each element
// copied into a (B, max S_b) tensor with actualSeqLengthsKv = the per-batch lengths) and the
// float64 reference of the list (reference/fia/fia_tensor_list_ref.cpp), which must equal the
// reference of the padded call exactly. The list call must match the padded call bit for bit
// and the reference within the harness tolerances, under every kernel configuration
// (fia_kernel_configs()) and 1 / 2 threads. Element positions beyond a batch's length hold NaN,
// so a read past it shows up. Then the C API (V4, V1-V3, IFA) and the rejections (status,
// message, no output byte changed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_entry_call.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

constexpr DType BF = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;

struct ListCase {
  FiaCase c;                 // c.Skv = max S_b; c.act_kv = the per-batch lengths L_b (<= S_b)
  std::vector<int64_t> s;    // S_b of element b
  bool pass_act = false;     // the list call passes actualSeqLengthsKv = L_b (else L_b = S_b)
  bool post_quant = false;   // INT8 output with quantScale2 (1) = 40 (and quantOffset2 = 3)
  int aq_mode = -1;          // INT8 key / value: -1 none, 0 per-channel, 1 per-token (B, max S_b)
};

void PrintTo(const ListCase& c, std::ostream* os) { *os << c.c.name; }

ListCase list_case(FiaCase c, std::vector<int64_t> s, std::vector<int64_t> act = {}) {
  ListCase l;
  c.Skv = *std::max_element(s.begin(), s.end());
  l.pass_act = !act.empty();
  c.act_kv = act.empty() ? s : act;
  l.c = std::move(c);
  l.s = std::move(s);
  return l;
}

// Element b of a canonical [B, KVN, S, D] tensor: positions [0, S_b) in layout l with batch 1.
HostTensor element(const HostTensor& bnsd, int64_t b, int64_t sb, FiaLayout l) {
  HostTensor e(bnsd.dtype, {1, bnsd.dims[1], sb, bnsd.dims[3]});
  for (int64_t h = 0; h < bnsd.dims[1]; ++h)
    for (int64_t t = 0; t < sb; ++t)
      for (int64_t d = 0; d < bnsd.dims[3]; ++d) e.set({0, h, t, d}, bnsd.get({b, h, t, d}));
  return fia_test::bnsd_to_layout(e, l);
}

// One materialised case: the padded contiguous run and the list run (own outputs), the elements,
// the optional post-quant / antiquant parameters shared by both.
struct ListRun {
  std::unique_ptr<FiaRun> padded, list;
  std::vector<HostTensor> ke, ve;
  std::vector<int64_t> asl;
  HostTensor pq_scale, pq_offset, k_scale, v_scale;
  TensorView pq_scale_v, pq_offset_v, k_scale_v, v_scale_v;
};

std::unique_ptr<FiaCaseData> list_data(const ListCase& lc) {
  auto d = make_case_data(lc.c);
  if (lc.aq_mode >= 0) {  // integer values for the INT8 key / value (the NaN poison becomes 0)
    for (HostTensor* t : {&d->canon.k, &d->canon.v})
      for (int64_t i = 0; i < t->numel(); ++i) {
        const double x = t->flat(i);
        t->set_flat(i, x == x ? std::round(x * 100.0) : 0.0);
      }
  }
  return d;
}

// Attaches the shared parameters of `lc` to run r (its key / value replaced by INT8 copies).
void attach(const ListCase& lc, ListRun& lr, FiaRun& r, const FiaCanonical& canon) {
  FiaParams& p = r.params;
  if (lc.post_quant) {
    p.quant_scale2 = &lr.pq_scale_v;
    p.quant_offset2 = &lr.pq_offset_v;
  }
  if (lc.aq_mode >= 0) {
    r.key = r.key.as(DType::kInt8);
    r.value = r.value.as(DType::kInt8);
    p.key = {r.key.view()};
    p.value = {r.value.view()};
    p.key_antiquant_scale = &lr.k_scale_v;
    p.value_antiquant_scale = &lr.v_scale_v;
    p.key_antiquant_mode = p.value_antiquant_mode = lc.aq_mode;
  }
  (void)canon;
}

std::unique_ptr<ListRun> make_runs(const ListCase& lc, const FiaCaseData& d, DType out_dtype = DType::kUndefined) {
  auto lr = std::make_unique<ListRun>();
  FiaRunConfig cfg = d.cfg;
  if (out_dtype != DType::kUndefined) cfg.out_dtype = out_dtype;
  const FiaCanonical& k = d.canon;
  lr->pq_scale = HostTensor(DType::kFloat32, {1}, 40.0);
  lr->pq_offset = HostTensor(DType::kFloat32, {1}, 3.0);
  lr->pq_scale_v = lr->pq_scale.view();
  lr->pq_offset_v = lr->pq_offset.view();
  if (lc.aq_mode == 0) {
    lr->k_scale = fia_test::random_tensor(k.dtype, {k.KVN, k.D}, 91, 0.002, 0.012);
    lr->v_scale = fia_test::random_tensor(k.dtype, {k.KVN, k.Dv}, 92, 0.002, 0.012);
  } else if (lc.aq_mode == 1) {
    lr->k_scale = fia_test::random_tensor(DType::kFloat32, {k.B, k.Skv}, 93, 0.002, 0.012);
    lr->v_scale = fia_test::random_tensor(DType::kFloat32, {k.B, k.Skv}, 94, 0.002, 0.012);
  }
  lr->k_scale_v = lr->k_scale.view();
  lr->v_scale_v = lr->v_scale.view();
  lr->padded = fia_test::build_fia_run(k, cfg);
  lr->list = fia_test::build_fia_run(k, cfg);
  if (!lr->padded || !lr->list) return nullptr;
  attach(lc, *lr, *lr->padded, k);
  attach(lc, *lr, *lr->list, k);
  FiaLayout in = FiaLayout::kBSH, out = FiaLayout::kBSH;
  fia_test::layout_of_string(cfg.layout, &in, &out);
  const DType kvdt = lc.aq_mode >= 0 ? DType::kInt8 : k.dtype;
  FiaParams& p = lr->list->params;
  p.key.clear();
  p.value.clear();
  for (int64_t b = 0; b < k.B; ++b) {
    lr->ke.push_back(element(k.k, b, lc.s[static_cast<size_t>(b)], in).as(kvdt));
    lr->ve.push_back(element(cfg.value_is_key ? k.k : k.v, b, lc.s[static_cast<size_t>(b)], in).as(kvdt));
  }
  for (int64_t b = 0; b < k.B; ++b) {
    p.key.push_back(lr->ke[static_cast<size_t>(b)].view());
    p.value.push_back(lr->ve[static_cast<size_t>(b)].view());
  }
  lr->asl = k.lens_kv();
  p.actual_seq_lengths_kv = lc.pass_act ? &lr->asl : nullptr;
  return lr;
}

bool same_bytes(const HostTensor& a, const HostTensor& b) { return a.storage == b.storage; }

// The operator on run r (C++ API) under the current ISA / threads.
Status run_op(FiaRun& r) {
  r.out.fill(fia_test::kNaN);
  if (r.params.softmax_lse_flag) r.lse.fill(fia_test::kNaN);
  return run_fia_cpp(r.params);
}

class FiaTensorList : public ::testing::TestWithParam<ListCase> {};

TEST_P(FiaTensorList, MatchesPaddedCallAndReference) {
  const ListCase& lc = GetParam();
  const auto d = list_data(lc);
  // The references: the list's and the padded call's, equal exactly.
  auto rl = make_runs(lc, *d, DType::kFloat64);
  ASSERT_TRUE(rl);
  if (lc.post_quant) rl = make_runs(lc, *d);  // INT8 output: the reference writes INT8 too
  ASSERT_TRUE(rl);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(rl->list->params), kSuccess) << last_error_message();
  ASSERT_EQ(fused_infer_attention_score_v4_ref(rl->padded->params), kSuccess) << last_error_message();
  EXPECT_TRUE(same_bytes(rl->list->out, rl->padded->out)) << "list reference != padded reference";
  EXPECT_TRUE(same_bytes(rl->list->lse, rl->padded->lse)) << "list reference lse != padded reference";
  auto ops = make_runs(lc, *d);
  ASSERT_TRUE(ops);
  FiaWorst w;
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    const std::string where = fia_kernel_config_name(lc.c.name, k);
    for (int t : {1, 2}) {
      set_num_threads(t);
      const Status sl = run_op(*ops->list);
      const std::string err = sl == kSuccess ? "" : last_error_message();
      const Status sp = run_op(*ops->padded);
      set_num_threads(0);
      ASSERT_EQ(sl, kSuccess) << where << ": " << err;
      ASSERT_EQ(sp, kSuccess) << where << ": " << last_error_message();
      EXPECT_TRUE(same_bytes(ops->list->out, ops->padded->out)) << where << " threads=" << t << ": output differs";
      EXPECT_TRUE(same_bytes(ops->list->lse, ops->padded->lse)) << where << " threads=" << t << ": lse differs";
      if (lc.post_quant) {  // |op - ref| <= 1 (test_fia_post_quant has the exact interval rule)
        for (int64_t i = 0; i < ops->list->out.numel(); ++i)
          EXPECT_LE(std::fabs(ops->list->out.flat(i) - rl->list->out.flat(i)), 1.0) << where << " element " << i;
        ++w.runs;
        continue;
      }
      const FiaCompare r = compare_fia(*ops->list, *rl->list, lc.c.dtype, d->cfg.lse);
      EXPECT_TRUE(r.ok) << where << " threads=" << t << ": " << r.str();
      w.add(r);
    }
  }
  set_kernel_override("");
  reset_isa();
  std::printf("[tensor list] %s: %d runs, out max |d| %.3g (rel %.3g), lse rel %.3g\n", lc.c.name.c_str(), w.runs,
              w.out_abs, w.out_rel, w.lse_rel);
}

std::vector<ListCase> cases() {
  std::vector<ListCase> v;
  auto add = [&](ListCase l) { v.push_back(std::move(l)); };
  // Decode: BSH / BSND / BNSD, GQA, S_b with 1 and 0, KV splits over long elements.
  add(list_case(fia_case("decode_bsh_gqa", BF, 4, 8, 2, 1, 0, 64, "BSH"), {37, 1, 200, 64}));
  add(list_case(fia_case("decode_bsnd_fp16", F16, 3, 4, 4, 1, 0, 32, "BSND"), {5, 0, 130}));
  add(list_case(fia_case("decode_bnsd_mqa", BF, 3, 8, 1, 1, 0, 128, "BNSD"), {1, 300, 17}));
  add(list_case(fia_case("decode_bnsd_long_splits", F16, 2, 4, 2, 1, 0, 64, "BNSD"), {1500, 700}, {1400, 3}));
  add(list_case(fia_case("decode_bsh_all_len1", BF, 3, 4, 2, 1, 0, 32, "BSH"), {1, 1, 1}));
  add(list_case(fia_case("decode_bnsd_all_len1", BF, 3, 4, 2, 1, 0, 32, "BNSD"), {1, 1, 1}));
  add(list_case(fia_case("decode_bnsd_all_empty", BF, 2, 4, 2, 1, 0, 32, "BNSD"), {0, 0}));
  add(list_case(fia_case("decode_bsnd_act_below_s", BF, 3, 4, 2, 1, 0, 64, "BSND"), {40, 90, 8}, {33, 90, 0}));
  // Prefill, GQA, masks, pse, lse, output layouts.
  add(list_case(fia_case("prefill_bsnd", BF, 3, 4, 2, 20, 0, 64, "BSND"), {50, 7, 129}));
  add(list_case(fia_case("prefill_bnsd_fp16", F16, 2, 6, 3, 33, 0, 32, "BNSD"), {33, 140}));
  add(list_case(fia_case("prefill_bsh_bnsd_out", BF, 2, 4, 4, 17, 0, 64, "BSH_BNSD"), {80, 20}));
  add(list_case(fia_case("prefill_bnsd_bsnd_out", F16, 3, 4, 2, 9, 0, 64, "BNSD_BSND"), {9, 12, 300}));
  add(list_case(fia_case("prefill_bsnd_nbsd_out", BF, 2, 4, 2, 5, 0, 64, "BSND_NBSD"), {6, 40}));
  {
    FiaCase c = fia_case("prefill_bsnd_causal", BF, 3, 8, 2, 24, 0, 64, "BSND");
    sparse(c, 3, MaskForm::kTemplate);
    add(list_case(c, {24, 100, 60}, {24, 70, 60}));
  }
  {
    FiaCase c = fia_case("prefill_bnsd_band", F16, 2, 4, 2, 16, 0, 32, "BNSD");
    sparse(c, 4, MaskForm::kTemplate, 8, 2);
    add(list_case(c, {40, 16}));
  }
  {
    FiaCase c = fia_case("prefill_bsh_leftup", BF, 2, 4, 1, 12, 0, 32, "BSH");
    sparse(c, 2, MaskForm::kTemplate);
    add(list_case(c, {12, 30}));
  }
  {
    FiaCase c = fia_case("prefill_bsnd_mask_rank3", BF, 3, 4, 2, 10, 0, 64, "BSND");
    sparse(c, 1, MaskForm::kRank3);
    add(list_case(c, {30, 12, 4}));
  }
  {
    FiaCase c = fia_case("prefill_bnsd_mask_rank4_band", F16, 2, 4, 2, 8, 0, 32, "BNSD");
    sparse(c, 0, MaskForm::kRank4Bcast, 20, 3);
    add(list_case(c, {30, 9}));
  }
  {
    FiaCase c = fia_case("decode_bsh_mask_rank2", BF, 3, 8, 2, 1, 0, 64, "BSH");
    sparse(c, 0, MaskForm::kRank2Batch);
    add(list_case(c, {60, 3, 33}));
  }
  {
    FiaCase c = fia_case("prefill_bsnd_pse", BF, 2, 4, 2, 12, 0, 64, "BSND");
    c.pse = PseForm::kRandom;
    add(list_case(c, {20, 45}));
  }
  {
    FiaCase c = fia_case("decode_bnsd_pse_bcast", F16, 3, 4, 2, 1, 0, 32, "BNSD");
    c.pse = PseForm::kBroadcast;
    add(list_case(c, {70, 2, 31}));
  }
  {
    FiaCase c = fia_case("prefill_bsnd_alibi", BF, 2, 4, 4, 10, 0, 32, "BSND");
    c.pse = PseForm::kAlibi;
    add(list_case(c, {10, 40}));
  }
  {
    FiaCase c = fia_case("prefill_bnsd_nolse", BF, 2, 4, 2, 20, 0, 64, "BNSD");
    c.cfg.lse = false;
    add(list_case(c, {25, 60}));
  }
  {  // post-quant INT8 output (per tensor, with an offset)
    FiaCase c = fia_case("decode_bsnd_post_quant", BF, 3, 4, 2, 1, 0, 64, "BSND");
    c.cfg.out_dtype = DType::kInt8;
    ListCase l = list_case(c, {30, 5, 64});
    l.post_quant = true;
    add(l);
    FiaCase c2 = fia_case("prefill_bnsd_post_quant", F16, 2, 4, 2, 6, 0, 32, "BNSD");
    c2.cfg.out_dtype = DType::kInt8;
    ListCase l2 = list_case(c2, {16, 40});
    l2.post_quant = true;
    add(l2);
  }
  {  // KV antiquant (INT8 elements), decode: per-channel and per-token (B, max S_b) scales
    FiaCase c = fia_case("decode_bsnd_int8_channel", BF, 3, 8, 2, 1, 0, 64, "BSND");
    ListCase l = list_case(c, {90, 1, 40});
    l.aq_mode = 0;
    add(l);
    FiaCase c2 = fia_case("decode_bnsd_int8_token", F16, 2, 4, 2, 1, 0, 32, "BNSD");
    ListCase l2 = list_case(c2, {50, 300}, {44, 300});
    l2.aq_mode = 1;
    add(l2);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaTensorList, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ListCase>& i) { return i.param.c.name; });

// ---- the C API: V4 and the older entry points with a list of B tensors ----

FiaAclArgs list_args(const ListRun& lr) {
  FiaAclArgs a = acl_args_of(*lr.list);
  a.key_views = lr.list->params.key;
  a.value_views = lr.list->params.value;
  a.in[1] = a.key_views[0];
  a.in[2] = a.value_views[0];
  a.has_asl_kv = lr.list->params.actual_seq_lengths_kv != nullptr;
  if (a.has_asl_kv) a.asl_kv = lr.asl;
  return a;
}

TEST(FiaTensorListApi, EveryEntryPointEqualsThePaddedCall) {
  // decode (IFA takes it) with actualSeqLengthsKv below S_b, BSH GQA
  FiaCase c = fia_case("api_decode", BF, 3, 8, 2, 1, 0, 64, "BSH");
  c.cfg.lse = false;  // IFA has no softmaxLse
  const ListCase lc = list_case(c, {40, 1, 100}, {31, 1, 100});
  const auto d = list_data(lc);
  auto lr = make_runs(lc, *d);
  ASSERT_TRUE(lr);
  ASSERT_EQ(run_op(*lr->padded), kSuccess) << last_error_message();
  for (Entry e : {Entry::kFiaV4, Entry::kFiaV1, Entry::kFiaV2, Entry::kFiaV3, Entry::kIfaV1, Entry::kIfaV2,
                  Entry::kIfaV3, Entry::kIfaV4}) {
    SCOPED_TRACE(entry_name(e));
    lr->list->out.fill(fia_test::kNaN);
    FiaAclArgs a = list_args(*lr);
    if (e == Entry::kIfaV1 || e == Entry::kIfaV2) a.inner = 1;  // their forced innerPrecise
    EXPECT_EQ(entry_call(e, a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_TRUE(same_bytes(lr->list->out, lr->padded->out));
  }
  // prefill through V4 with lse and a causal mask
  FiaCase p = fia_case("api_prefill", F16, 2, 4, 2, 12, 0, 32, "BNSD");
  sparse(p, 3, MaskForm::kTemplate);
  const ListCase lp = list_case(p, {12, 50});
  const auto dp = list_data(lp);
  auto rp = make_runs(lp, *dp);
  ASSERT_TRUE(rp);
  ASSERT_EQ(run_op(*rp->padded), kSuccess) << last_error_message();
  rp->list->out.fill(fia_test::kNaN);
  rp->list->lse.fill(fia_test::kNaN);
  EXPECT_EQ(fia_aclnn_call(list_args(*rp)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(same_bytes(rp->list->out, rp->padded->out));
  EXPECT_TRUE(same_bytes(rp->list->lse, rp->padded->lse));
}

// The C++ two phases: a plan of a list call runs on other lists of the same shapes (new
// element pointers, re-checked) and refuses elements of another S_b (FIA-25).
TEST(FiaTensorListApi, PlanRunsOnNewListsOfThePlannedShapes) {
  FiaCase c = fia_case("plan_reuse", BF, 3, 4, 2, 1, 0, 64, "BNSD");
  const ListCase lc = list_case(c, {20, 70, 5});
  const auto d = list_data(lc);
  auto a = make_runs(lc, *d), b = make_runs(lc, *d);
  ASSERT_TRUE(a && b);
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(a->list->params, &plan), kSuccess) << last_error_message();
  std::vector<uint64_t> ws(static_cast<size_t>(plan.workspace_size() / 8 + 1));
  ASSERT_EQ(run_op(*a->padded), kSuccess);
  b->list->out.fill(fia_test::kNaN);
  b->list->lse.fill(fia_test::kNaN);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, b->list->params, ws.data(), plan.workspace_size()), kSuccess)
      << last_error_message();
  EXPECT_TRUE(same_bytes(b->list->out, a->padded->out));
  EXPECT_TRUE(same_bytes(b->list->lse, a->padded->lse));
  HostTensor other(BF, {1, 2, 21, 64}, 0.0);  // key[0] with S 21 instead of 20
  FiaParams p = b->list->params;
  p.key[0] = other.view();
  EXPECT_EQ(fused_infer_attention_score_v4_run(plan, p, ws.data(), plan.workspace_size()), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-25 the tensors must match the planned call"), std::string::npos) << last_error_message();
}

// ---- rejections: status, message (operator, parameter, rule), no output byte changed ----

struct Fixture {
  std::unique_ptr<FiaCaseData> d;
  std::unique_ptr<ListRun> lr;
  HostTensor extra, extra2;
};

Fixture& base_list() {  // prefill BSND, B 3, GQA
  static Fixture f;
  if (!f.lr) {
    FiaCase c = fia_case("base", BF, 3, 4, 2, 4, 0, 32, "BSND");
    const ListCase lc = list_case(c, {10, 3, 20});
    f.d = list_data(lc);
    f.lr = make_runs(lc, *f.d);
  }
  return f;
}

void expect_list_rejected(aclnnStatus code, const char* param, const char* rule,
                          const std::function<void(FiaAclArgs&)>& mutate) {
  Fixture& f = base_list();
  FiaRun& r = *f.lr->list;
  r.out.fill(fia_test::kNaN);
  r.lse.fill(fia_test::kNaN);
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  FiaAclArgs a = list_args(*f.lr);
  mutate(a);
  const aclnnStatus s = fia_aclnn_call(a);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, code) << msg;
  EXPECT_NE(msg.find("aclnnFusedInferAttentionScoreV4"), std::string::npos) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << "message does not name " << param << ": " << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << "message does not name " << rule << ": " << msg;
  EXPECT_TRUE(r.out.storage == out0) << "attentionOut changed by a rejected call (" << rule << ")";
  EXPECT_TRUE(r.lse.storage == lse0) << "softmaxLse changed by a rejected call (" << rule << ")";
}

TEST(FiaTensorListRules, BaseCaseRuns) {
  FiaAclArgs a = list_args(*base_list().lr);
  EXPECT_EQ(fia_aclnn_call(a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST(FiaTensorListRules, FIA50_ExcludedFeatures) {
  static int32_t bt[3] = {0, 1, 2};
  static int64_t pad[1] = {0};
  static uint16_t sink[4] = {0, 0, 0, 0};
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "blockTableOptional", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {
    a.in[14] = make_view(bt, DType::kInt32, {3, 1});
    a.passed[14] = true;
    a.block_size = 16;
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "kvPaddingSizeOptional", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {
    a.in[16] = make_view(pad, DType::kInt64, {1});
    a.passed[16] = true;
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "queryPaddingSizeOptional", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {
    a.in[15] = make_view(pad, DType::kInt64, {1});
    a.passed[15] = true;
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "keySharedPrefixOptional", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {
    a.has_prefix = true;
    a.prefix = {0};
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "queryRopeOptional", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {
    a.in[24] = a.in[0];
    a.passed[24] = true;
    a.in[25] = a.in[0];
    a.passed[25] = true;
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "learnableSinkOptional", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {
    a.in[28] = make_view(sink, DType::kBFloat16, {4});
    a.passed[28] = true;
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "sparseMode", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) { a.sparse = 9; });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "key", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {  // INT4 (INT32 words)
    for (auto* l : {&a.key_views, &a.value_views})
      for (TensorView& t : *l) t.dtype = DType::kInt32;
    a.in[1].dtype = a.in[2].dtype = DType::kInt32;
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "key", "FIA-50 tensor-list key/value exclude", [](FiaAclArgs& a) {  // INT8 antiquant, Q_S > 1
    for (auto* l : {&a.key_views, &a.value_views})
      for (TensorView& t : *l) t.dtype = DType::kInt8;
    a.in[1].dtype = a.in[2].dtype = DType::kInt8;
  });
}

TEST(FiaTensorListRules, FIA50_PackedLayoutCppApi) {
  // TND query (T = 5, N 4, D 32) with a list of two BSND-like elements: FIA-50 before any element rule
  Fixture& f = base_list();
  HostTensor q(BF, {5, 4, 32}, 0.5), out(BF, {5, 4, 32}, fia_test::kNaN);
  const std::vector<uint64_t> out0 = out.storage;
  FiaParams p = f.lr->list->params;
  p.query = q.view();
  p.attention_out = out.view();
  p.softmax_lse_flag = false;
  p.softmax_lse = nullptr;
  p.atten_mask = nullptr;
  p.sparse_mode = 0;
  p.input_layout = "TND";
  p.key.resize(2);
  p.value.resize(2);
  std::vector<int64_t> aq = {2, 5}, akv = {1, 3};
  p.actual_seq_lengths = &aq;
  p.actual_seq_lengths_kv = &akv;
  EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("FIA-50 tensor-list key/value exclude"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inputLayout"), std::string::npos) << msg;
  EXPECT_TRUE(out.storage == out0);
}

TEST(FiaTensorListRules, FIA50_Int8FullQuantCppApi) {
  // INT8 query / key / value with the three full-quantisation scales (FIA-30 satisfied)
  Fixture& f = base_list();
  FiaRun& r = *f.lr->list;
  HostTensor out(F16, r.out.dims, fia_test::kNaN), sc(DType::kFloat32, {1}, 0.5);
  const std::vector<uint64_t> out0 = out.storage;
  TensorView scv = sc.view();
  FiaParams p = r.params;
  p.query.dtype = DType::kInt8;
  for (auto* l : {&p.key, &p.value})
    for (TensorView& t : *l) t.dtype = DType::kInt8;
  p.attention_out = out.view();
  p.softmax_lse_flag = false;
  p.softmax_lse = nullptr;
  p.deq_scale1 = p.quant_scale1 = p.deq_scale2 = &scv;
  EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("query: FIA-50"), std::string::npos) << msg;
  EXPECT_TRUE(out.storage == out0);
}

TEST(FiaTensorListRules, FIA51_ListShapes) {
  Fixture& f = base_list();
  f.extra = HostTensor(BF, {2, 10, 2, 32}, 0.0);   // batch 2
  f.extra2 = HostTensor(BF, {1, 10, 3, 32}, 0.0);  // 3 heads
  static HostTensor d16(BF, {1, 3, 2, 16}, 0.0);   // head dim 16
  static HostTensor s4(BF, {1, 4, 2, 32}, 0.0);    // S 4 (key[1] has 3)
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "key[0]", "FIA-51",
                       [&](FiaAclArgs& a) { a.key_views[0] = f.extra.view(); });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "value[0]", "FIA-51",
                       [&](FiaAclArgs& a) { a.value_views[0] = f.extra2.view(); });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "key[1]", "FIA-51",
                       [&](FiaAclArgs& a) { a.key_views[1] = d16.view(); });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "value[1]", "FIA-51",
                       [&](FiaAclArgs& a) { a.value_views[1] = s4.view(); });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "key", "FIA-51", [](FiaAclArgs& a) {  // 2 tensors for B = 3
    a.key_views.pop_back();
    a.value_views.pop_back();
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "value", "FIA-51", [](FiaAclArgs& a) { a.value_views.pop_back(); });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "value[2]", "FIA-51",
                       [](FiaAclArgs& a) { a.value_views[2].dtype = DType::kFloat16; });
  // actualSeqLengthsKv above an element's S_b (FIA-11, per batch)
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "actualSeqLengthsKvOptional", "FIA-11 tensor-list value [", [](FiaAclArgs& a) {
    a.has_asl_kv = true;
    a.asl_kv = {10, 4, 20};
  });
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "actualSeqLengthsKvOptional", "FIA-11 tensor-list length", [](FiaAclArgs& a) {
    a.has_asl_kv = true;
    a.asl_kv = {10, 3};  // 2 lengths for 3 batches
  });
  // value elements of head dim 0 with a non-empty output: lists take no empty-tensor shortcut (FIA-08)
  expect_list_rejected(ACLNN_ERR_PARAM_INVALID, "value", "value: FIA-08 head dim; allowed >= 1, got 0", [](FiaAclArgs& a) {
    for (TensorView& v : a.value_views) {
      v.dims[3] = 0;
      int64_t expect = 1;  // the dense strides of a zero extent (TensorView::is_contiguous)
      for (int i = v.rank - 1; i >= 0; --i) v.strides[i] = expect, expect *= v.dims[i];
      v.storage_dims[3] = 0;
    }
    a.in[2] = a.value_views[0];
  });
}

TEST(FiaTensorListRules, FIA51_AtMost256Batches) {
  // B 257 decode, one shared element buffer (validation only)
  const int64_t B = 257;
  HostTensor q(BF, {B, 1, 1, 16}, 0.5), e(BF, {1, 2, 1, 16}, 0.5), out(BF, {B, 1, 1, 16}, fia_test::kNaN);
  const std::vector<uint64_t> out0 = out.storage;
  FiaParams p;
  p.query = q.view();
  p.key.assign(static_cast<size_t>(B), e.view());
  p.value.assign(static_cast<size_t>(B), e.view());
  p.attention_out = out.view();
  p.input_layout = "BSND";
  EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("FIA-51 batch with tensor-list key/value"), std::string::npos) << msg;
  EXPECT_TRUE(out.storage == out0);
  p.key.resize(256);  // 256: the limit itself passes the rule
  p.value.resize(256);
  HostTensor q256(BF, {256, 1, 1, 16}, 0.5), out256(BF, {256, 1, 1, 16}, fia_test::kNaN);
  p.query = q256.view();
  p.attention_out = out256.view();
  EXPECT_EQ(run_fia_cpp(p), kSuccess) << last_error_message();
}

TEST(FiaTensorListRules, FIA01_NullElements) {
  // C++ API: an element that is not given
  Fixture& f = base_list();
  FiaParams p = f.lr->list->params;
  p.value[1] = TensorView();
  EXPECT_EQ(run_fia_cpp(p), kParamNullptr);
  EXPECT_NE(std::string(last_error_message()).find("value[1]: FIA-01 tensor list element is null"), std::string::npos) << last_error_message();
  // C API: aclCreateTensorList refuses a null element, so the call gets a null list (161001)
  const aclTensor* ts[2] = {nullptr, nullptr};
  EXPECT_EQ(aclCreateTensorList(ts, 2), nullptr);
  expect_list_rejected(ACLNN_ERR_PARAM_NULLPTR, "key", "FIA-01", [](FiaAclArgs& a) { a.key_list_null = true; });
  // FIA-17: a non-empty element without data (C++ API; the C API refuses it when binding)
  FiaRun& r = *f.lr->list;
  r.out.fill(fia_test::kNaN);
  const std::vector<uint64_t> out0 = r.out.storage;
  p = r.params;
  p.key[2].data = nullptr;
  EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("key[2]: FIA-17 null data of a tensor list element"), std::string::npos) << last_error_message();
  // FIA-18: the output overlapping an element
  p = r.params;
  p.value[1].data = p.attention_out.data;
  EXPECT_EQ(run_fia_cpp(p), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-18"), std::string::npos) << last_error_message();
  EXPECT_TRUE(r.out.storage == out0);
}

}  // namespace
}  // namespace mlaops::testing
