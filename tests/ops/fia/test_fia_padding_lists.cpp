// FusedInferAttentionScoreV4 left padding (queryPaddingSize / kvPaddingSize, rules FIA-40..42,
// docs/ops/fused_infer_attention_score.md "Left padding") against the float64 reference, under
// every ISA level and 1 / 2 threads. Every query / key / value row outside a batch's padded
// window holds NaN, so a read outside the window shows up. The reference itself is cross-checked
// against the right-padded problem with the windows moved to the start of the tensors.
// Tensor-list KV: tests/ops/fia/test_fia_tensor_list.cpp (with left padding: FIA-50).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "mlaops/plan.h"
#include "ops/fia/fia_entry_call.h"
#include "tests/ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct PadCase {
  FiaCase c;
  int64_t q_pad = 0, kv_pad = 0;
  bool pass_q = true, pass_kv = true;  // pass the padding tensors
};

PadCase pad_case(FiaCase c, std::vector<int64_t> aq, std::vector<int64_t> akv, int64_t qp, int64_t kvp) {
  PadCase p;
  c.act_q = std::move(aq);
  c.act_kv = std::move(akv);
  p.c = std::move(c);
  p.q_pad = qp;
  p.kv_pad = kvp;
  return p;
}

// Batch b's first valid row / position (the windows end max(pad, 0) before the end).
int64_t q_first(const PadCase& p, int64_t b) {
  if (p.c.Sq == 1 || p.c.act_q.empty() || !p.pass_q) return 0;
  return p.c.Sq - std::max<int64_t>(p.q_pad, 0) - p.c.act_q[static_cast<size_t>(b)];
}
int64_t kv_first(const PadCase& p, int64_t b) {
  if (p.c.act_kv.empty() || !p.pass_kv) return 0;
  return std::max<int64_t>(0, p.c.Skv - std::max<int64_t>(p.kv_pad, 0) - p.c.act_kv[static_cast<size_t>(b)]);
}

// The case's data: random everywhere, NaN outside the windows (the lengths are set without the
// canonical right-padding poison).
std::unique_ptr<FiaCaseData> pad_data(const PadCase& p) {
  FiaCase c = p.c;
  c.act_q.clear();
  c.act_kv.clear();
  auto d = make_case_data(c);
  d->canon.act_q = p.c.act_q;
  d->canon.act_kv = p.c.act_kv;
  FiaCanonical& k = d->canon;
  for (int64_t b = 0; b < k.B; ++b) {
    const int64_t q0 = q_first(p, b), q1 = q0 + k.len_q(b);
    const int64_t s0 = kv_first(p, b), s1 = s0 + k.len_kv(b);
    for (int64_t n = 0; n < k.N; ++n)
      for (int64_t s = 0; s < k.Sq; ++s)
        if (s < q0 || s >= q1)
          for (int64_t x = 0; x < k.D; ++x) k.q.set({b, n, s, x}, kNaN);
    for (int64_t h = 0; h < k.KVN; ++h)
      for (int64_t s = 0; s < k.Skv; ++s)
        if (s < s0 || s >= s1) {
          for (int64_t x = 0; x < k.D; ++x) k.k.set({b, h, s, x}, kNaN);
          for (int64_t x = 0; x < k.Dv; ++x) k.v.set({b, h, s, x}, kNaN);
        }
  }
  return d;
}

// A run of the case with its padding tensors attached.
struct PadRun {
  std::unique_ptr<FiaRun> run;
  HostTensor qp, kvp;
  TensorView qv, kvv;
};
std::unique_ptr<PadRun> pad_run(const PadCase& p, const FiaCaseData& d, const FiaRunConfig& cfg) {
  auto r = std::make_unique<PadRun>();
  r->run = fia_test::build_fia_run(d.canon, cfg);
  if (r->run == nullptr) return nullptr;
  r->qp = HostTensor(DType::kInt64, {1}, static_cast<double>(p.q_pad));
  r->kvp = HostTensor(DType::kInt64, {1}, static_cast<double>(p.kv_pad));
  r->qv = r->qp.view();
  r->kvv = r->kvp.view();
  if (p.pass_q) r->run->params.query_padding_size = &r->qv;
  if (p.pass_kv) r->run->params.kv_padding_size = &r->kvv;
  return r;
}

std::unique_ptr<PadRun> pad_reference(const PadCase& p, const FiaCaseData& d) {
  FiaRunConfig cfg = d.cfg;
  cfg.out_dtype = DType::kFloat64;
  auto r = pad_run(p, d, cfg);
  if (r == nullptr) {
    ADD_FAILURE() << "the reference run could not be built";
  } else if (fused_infer_attention_score_v4_ref(r->run->params) != kSuccess) {
    ADD_FAILURE() << last_error_message();
    r.reset();
  }
  return r;
}

// The reference on the right-padded problem: the windows moved to the start (mask and pse
// shifted likewise are not built here: only cases without them).
void check_reference_against_right_padding(const PadCase& p, const FiaCaseData& d, const FiaRun& ref) {
  FiaCanonical m = d.canon;
  for (int64_t b = 0; b < m.B; ++b) {
    const int64_t q0 = q_first(p, b), s0 = kv_first(p, b);
    for (int64_t n = 0; n < m.N; ++n)
      for (int64_t s = 0; s < m.Sq; ++s)
        for (int64_t x = 0; x < m.D; ++x) m.q.set({b, n, s, x}, s + q0 < m.Sq ? d.canon.q.get({b, n, s + q0, x}) : kNaN);
    for (int64_t h = 0; h < m.KVN; ++h)
      for (int64_t s = 0; s < m.Skv; ++s) {
        for (int64_t x = 0; x < m.D; ++x) m.k.set({b, h, s, x}, s + s0 < m.Skv ? d.canon.k.get({b, h, s + s0, x}) : kNaN);
        for (int64_t x = 0; x < m.Dv; ++x) m.v.set({b, h, s, x}, s + s0 < m.Skv ? d.canon.v.get({b, h, s + s0, x}) : kNaN);
      }
  }
  // decode batches whose KV window starts before 0 have no valid position
  std::vector<int64_t> akv = m.lens_kv();
  for (int64_t b = 0; b < m.B && !p.c.act_kv.empty() && p.pass_kv; ++b)
    if (p.c.Skv - std::max<int64_t>(p.kv_pad, 0) - akv[static_cast<size_t>(b)] < 0) akv[static_cast<size_t>(b)] = 0;
  m.act_kv = akv;
  FiaRunConfig cfg = d.cfg;
  cfg.out_dtype = DType::kFloat64;
  auto r = fia_test::build_fia_run(m, cfg);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess) << last_error_message();
  const HostTensor a = ref.out_bnsd(), e = r->out_bnsd();
  const HostTensor la = ref.lse_bns(), le = r->lse_bns();
  for (int64_t b = 0; b < m.B; ++b) {
    const int64_t q0 = q_first(p, b);
    for (int64_t n = 0; n < m.N; ++n)
      for (int64_t s = 0; s < m.Sq; ++s) {
        const bool in = s >= q0 && s < q0 + m.len_q(b);
        for (int64_t x = 0; x < m.Dv; ++x) {
          const double want = in ? e.get({b, n, s - q0, x}) : 0.0;
          ASSERT_NEAR(a.get({b, n, s, x}), want, 1e-12) << p.c.name << " b " << b << " n " << n << " s " << s;
        }
        if (d.cfg.lse) {
          const double want = in ? le.get({b, n, s - q0, 0}) : std::numeric_limits<double>::infinity();
          if (std::isinf(want))
            ASSERT_EQ(la.get({b, n, s, 0}), want) << p.c.name;
          else
            ASSERT_NEAR(la.get({b, n, s, 0}), want, 1e-9) << p.c.name;
        }
      }
  }
}

struct Worst {
  double rel = 0, abs = 0, lse = 0;
  int runs = 0;
};
Worst g_worst;

void check_case(const PadCase& p, bool cross_check_reference) {
  SCOPED_TRACE(p.c.name);
  auto d = pad_data(p);
  auto ref = pad_reference(p, *d);
  ASSERT_NE(ref, nullptr);
  if (cross_check_reference) check_reference_against_right_padding(p, *d, *ref->run);
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = pad_run(p, *d, d->cfg);
      ASSERT_NE(op, nullptr);
      const Status s = run_fia_cpp(op->run->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << isa_name(k.isa) << " " << last_error_message();
      const FiaCompare r = compare_fia(*op->run, *ref->run, p.c.dtype, d->cfg.lse);
      EXPECT_TRUE(r.ok) << p.c.name << " isa=" << isa_name(k.isa) << k.override_rows << " threads=" << t << ": "
                        << r.str();
      g_worst.rel = std::max(g_worst.rel, r.out.max_rel);
      g_worst.abs = std::max(g_worst.abs, r.out.max_abs);
      g_worst.lse = std::max(g_worst.lse, r.lse.max_rel);
      ++g_worst.runs;
    }
  }
  set_kernel_override("");
  reset_isa();
}

constexpr DType BF = DType::kBFloat16, FP = DType::kFloat16;

TEST(FiaLeftPadding, PrefillAndDecodeEveryLayout) {
  for (const char* layout : {"BSH", "BSND", "BNSD", "BNSD_BSND"}) {
    for (DType dt : {BF, FP}) {
      // prefill: both paddings, GQA 2, one batch with one row, a batch with 3 KV positions
      check_case(pad_case(fia_case("prefill", dt, 3, 4, 2, 9, 37, 32, layout), {5, 7, 1}, {20, 32, 3}, 2, 5), true);
      // padding 0: the windows end at the tensors' ends
      check_case(pad_case(fia_case("prefill pad 0", dt, 2, 2, 1, 12, 40, 16, layout), {12, 4}, {40, 17}, 0, 0), true);
      // decode: GQA 4, a batch whose KV window starts before 0 (output 0, lse +inf), a batch without KV
      check_case(pad_case(fia_case("decode", dt, 4, 8, 2, 1, 70, 64, layout), {}, {70, 10, 0, 33}, 0, 3), true);
    }
  }
}

TEST(FiaLeftPadding, LongDecodeKvSplitsAndLargeHeads) {
  // B 1: the decode path splits the KV range over the threads
  check_case(pad_case(fia_case("decode split", BF, 1, 16, 2, 1, 700, 128, "BNSD"), {}, {513}, 0, 100), true);
  check_case(pad_case(fia_case("decode split fp16", FP, 2, 4, 4, 1, 300, 128, "BSH"), {}, {250, 17}, 0, 7), true);
  check_case(pad_case(fia_case("prefill D128", BF, 2, 4, 1, 70, 150, 128, "BSND"), {64, 33}, {100, 149}, 3, 1), true);
}

TEST(FiaLeftPadding, NegativePaddingClampsAndUnusedPadding) {
  check_case(pad_case(fia_case("negative", BF, 2, 2, 2, 6, 20, 16, "BSH"), {3, 6}, {11, 20}, -4, -100), true);
  // Q_S = 1: queryPaddingSize ignored; no actualSeqLengths(Kv): right padding (the tensors unused)
  check_case(pad_case(fia_case("decode q pad ignored", BF, 2, 2, 1, 1, 20, 16, "BSH"), {}, {11, 20}, 1000, 2), true);
  PadCase r = pad_case(fia_case("no lengths", FP, 2, 2, 1, 5, 9, 16, "BNSD"), {}, {}, 3, 4);
  check_case(r, true);
  // only one of the two tensors
  PadCase q = pad_case(fia_case("query padding only", BF, 2, 2, 1, 8, 9, 16, "BSND"), {2, 6}, {9, 4}, 1, 0);
  q.pass_kv = false;
  check_case(q, true);
  PadCase k = pad_case(fia_case("kv padding only", BF, 2, 2, 1, 8, 19, 16, "BSND"), {2, 8}, {9, 4}, 0, 6);
  k.pass_q = false;
  check_case(k, true);
}

TEST(FiaLeftPadding, MasksAtPaddedCoordinates) {
  const std::vector<int64_t> aq = {4, 7}, akv = {13, 22};
  for (MaskForm m : {MaskForm::kRank2, MaskForm::kRank3, MaskForm::kRank3Bcast, MaskForm::kRank4, MaskForm::kRank4Bcast}) {
    for (const char* layout : {"BSH", "BNSD"}) {
      // sparse 0 with pre / next: ignored with left padding
      FiaCase c0 = fia_case("mask sparse 0", BF, 2, 4, 2, 9, 30, 32, layout);
      check_case(pad_case(sparse(c0, 0, m, 1, 0), aq, akv, 1, 4), false);
      FiaCase c1 = fia_case("mask sparse 1", FP, 2, 4, 2, 9, 30, 32, layout);
      check_case(pad_case(sparse(c1, 1, m), aq, akv, 2, 3), false);
    }
  }
  // decode (B, KV_S) and rank-4 masks
  FiaCase d2 = fia_case("decode mask (B, KV_S)", BF, 3, 8, 2, 1, 50, 64, "BSH");
  check_case(pad_case(sparse(d2, 0, MaskForm::kRank2Batch), {}, {40, 3, 50}, 0, 2), false);
  FiaCase d4 = fia_case("decode mask rank 4", FP, 3, 8, 8, 1, 50, 64, "BNSD");
  check_case(pad_case(sparse(d4, 0, MaskForm::kRank4), {}, {40, 3, 45}, 0, 2), false);
}

TEST(FiaLeftPadding, SparseModes234) {
  for (int64_t mode : {2, 3, 4}) {
    FiaCase c = fia_case("sparse 2/3/4", BF, 3, 4, 1, 11, 25, 32, "BSND");
    sparse(c, mode, MaskForm::kTemplate, 3, 1);
    check_case(pad_case(c, {11, 5, 8}, {20, 9, 21}, 0, 4), false);
    FiaCase f = fia_case("sparse 2/3/4 fp16", FP, 2, 2, 2, 16, 16, 16, "BNSD");
    sparse(f, mode, MaskForm::kTemplate, 2, 0);
    check_case(pad_case(f, {9, 16}, {12, 16}, 0, 0), false);
  }
}

TEST(FiaLeftPadding, PseAtPaddedCoordinatesWithLse) {
  for (PseForm pf : {PseForm::kRandom, PseForm::kBroadcast}) {
    FiaCase c = fia_case("pse prefill", BF, 2, 4, 2, 10, 31, 32, "BSH");
    c.pse = pf;
    check_case(pad_case(c, {6, 3}, {25, 12}, 2, 3), false);
    FiaCase d = fia_case("pse decode", FP, 3, 4, 1, 1, 40, 64, "BNSD");
    d.pse = pf;
    check_case(pad_case(d, {}, {30, 1, 38}, 0, 2), false);
  }
  // pse and a mask together
  FiaCase m = fia_case("pse + mask", BF, 2, 2, 1, 7, 19, 16, "BSND");
  m.pse = PseForm::kRandom;
  check_case(pad_case(sparse(m, 0, MaskForm::kRank3), {5, 2}, {10, 17}, 1, 1), false);
}

// The C API: aclnnIncreFlashAttentionV4 (kvPaddingSize, its input 16 of V4) and
// aclnnFusedInferAttentionScoreV4 with both paddings give the reference's result, bitwise equal.
TEST(FiaLeftPadding, CApiIfaV4AndFiaV4) {
  for (const char* layout : {"BSH", "BNSD"}) {
    PadCase p = pad_case(fia_case("c api decode", FP, 3, 8, 2, 1, 60, 64, layout), {}, {50, 3, 60}, 0, 4);
    p.c.cfg.lse = false;  // IFA has no softmaxLse
    p.pass_q = false;     // IFA has no queryPaddingSize
    auto d = pad_data(p);
    auto ref = pad_reference(p, *d);
    ASSERT_NE(ref, nullptr);
    auto a = pad_run(p, *d, d->cfg);
    auto b = pad_run(p, *d, d->cfg);
    ASSERT_TRUE(a && b);
    FiaAclArgs aa = acl_args_of(*a->run), ba = acl_args_of(*b->run);
    aa.in[16] = a->kvv;
    aa.passed[16] = true;
    ba.in[16] = b->kvv;
    ba.passed[16] = true;
    ASSERT_EQ(entry_call(Entry::kIfaV4, aa), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(fia_aclnn_call(ba), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_TRUE(a->run->out.storage == b->run->out.storage) << layout;
    const FiaCompare r = compare_fia(*a->run, *ref->run, FP, false);
    EXPECT_TRUE(r.ok) << layout << ": " << r.str();
  }
  // prefill through aclnnFusedInferAttentionScoreV4 with both tensors and lse
  PadCase p = pad_case(fia_case("c api prefill", BF, 2, 4, 2, 9, 30, 32, "BSND"), {5, 9}, {20, 27}, 0, 3);
  auto d = pad_data(p);
  auto ref = pad_reference(p, *d);
  ASSERT_NE(ref, nullptr);
  auto a = pad_run(p, *d, d->cfg);
  ASSERT_NE(a, nullptr);
  FiaAclArgs aa = acl_args_of(*a->run);
  aa.in[15] = a->qv;
  aa.passed[15] = true;
  aa.in[16] = a->kvv;
  aa.passed[16] = true;
  ASSERT_EQ(fia_aclnn_call(aa), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const FiaCompare r = compare_fia(*a->run, *ref->run, BF, true);
  EXPECT_TRUE(r.ok) << r.str();
}

TEST(FiaLeftPadding, ZzReportWorstErrors) {
  std::printf("[left padding] %d runs (every ISA level, 1 and 2 threads): worst out max_rel %.3g max_abs %.3g, lse "
              "max_rel %.3g\n",
              g_worst.runs, g_worst.rel, g_worst.abs, g_worst.lse);
}

// ------------------------------------------------------------------------------------------
// Rules FIA-40..42: rejected with 161002 (161001: null data), nothing written.
// ------------------------------------------------------------------------------------------

using Mutator = void (*)(PadRun&);

void expect_rejected(PadCase p, const char* param, const char* rule, Mutator mutate = nullptr,
                     Status want = kParamInvalid) {
  SCOPED_TRACE(std::string(p.c.name) + " " + rule);
  auto d = pad_data(p);
  auto op = pad_run(p, *d, d->cfg);
  ASSERT_NE(op, nullptr);
  if (mutate != nullptr) mutate(*op);
  EXPECT_EQ(run_fia_cpp(op->run->params), want);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find(param), std::string::npos) << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << msg;
  for (int64_t i = 0; i < op->run->out.numel(); ++i) ASSERT_TRUE(std::isnan(op->run->out.flat(i))) << "written: " << msg;
  for (int64_t i = 0; i < op->run->lse.numel(); ++i) ASSERT_TRUE(std::isnan(op->run->lse.flat(i))) << "written: " << msg;
}

PadCase base_case() { return pad_case(fia_case("base", BF, 2, 4, 2, 6, 20, 16, "BSH"), {3, 6}, {11, 20}, 0, 0); }

TEST(FiaLeftPaddingErrors, FIA40_TensorForm) {
  expect_rejected(base_case(), "kvPaddingSizeOptional", "FIA-40", [](PadRun& r) {
    r.kvp = HostTensor(DType::kInt32, {1});
    r.kvv = r.kvp.view();
  });
  expect_rejected(base_case(), "queryPaddingSizeOptional", "FIA-40", [](PadRun& r) {
    r.qp = HostTensor(DType::kInt64, {2});
    r.qv = r.qp.view();
  });
  expect_rejected(base_case(), "queryPaddingSizeOptional", "FIA-40", [](PadRun& r) { r.qv.data = nullptr; },
                  kParamNullptr);
}

// FIA-40 at run time: the values are read when running; values whose windows would start before
// row / position 0 are rejected before anything is written; a clamped equal value runs the plan.
TEST(FiaLeftPaddingErrors, FIA40_RunTimeValueOutOfBounds) {
  PadCase p = base_case();
  auto d = pad_data(p);
  auto op = pad_run(p, *d, d->cfg);
  ASSERT_NE(op, nullptr);
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(op->run->params, &plan), kSuccess) << last_error_message();
  std::vector<uint64_t> ws(static_cast<size_t>(plan.workspace_size() / 8 + 1));
  for (int which = 0; which < 2; ++which) {  // KV: 20 - 3 - 20 < 0; query: 6 - 1 - 6 < 0 (Q_S > 1)
    op->kvp.set({0}, which == 0 ? 3.0 : 0.0);
    op->qp.set({0}, which == 0 ? 0.0 : 1.0);
    EXPECT_EQ(fused_infer_attention_score_v4_run(plan, op->run->params, ws.data(), plan.workspace_size()),
              kParamInvalid);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("FIA-40 run-time padding"), std::string::npos) << msg;
    EXPECT_NE(msg.find(which == 0 ? "kvPaddingSizeOptional" : "queryPaddingSizeOptional"), std::string::npos) << msg;
    for (int64_t i = 0; i < op->run->out.numel(); ++i) ASSERT_TRUE(std::isnan(op->run->out.flat(i)));
    for (int64_t i = 0; i < op->run->lse.numel(); ++i) ASSERT_TRUE(std::isnan(op->run->lse.flat(i)));
  }
  // a clamped equal value (negative -> 0) runs
  op->qp.set({0}, 0.0);
  op->kvp.set({0}, -7.0);
  EXPECT_EQ(fused_infer_attention_score_v4_run(plan, op->run->params, ws.data(), plan.workspace_size()), kSuccess)
      << last_error_message();
}

// The padding values are device data a program fills after planning: a plan made with one value
// and run with another gives bitwise the output of a plan made with the other value (prefill: the
// windows move; decode: a batch's KV window leaves or enters the tensor, which changes its KV
// length; the run moves the planned windows, ops/fia/fia_left_padding.h, and plans nothing again),
// under every ISA level and 1 / 2 / 8 threads, in the workspace planned.
TEST(FiaLeftPadding, RunTimeValuesReplanBitwise) {
  struct Change {
    PadCase run;                 // the case with the values present at run time (its data)
    int64_t plan_q, plan_kv;     // the values present when planning
  };
  const Change changes[] = {
      {pad_case(fia_case("prefill", BF, 2, 4, 2, 6, 20, 16, "BSH"), {3, 5}, {11, 17}, 1, 2), 0, 0},
      {pad_case(fia_case("prefill back", FP, 2, 4, 2, 6, 20, 16, "BNSD"), {3, 5}, {11, 17}, 0, 0), 1, 2},
      {pad_case(fia_case("decode leaves", BF, 2, 8, 2, 1, 300, 64, "BSH"), {}, {250, 19}, 0, 60), 0, 0},
      {pad_case(fia_case("decode enters", FP, 2, 8, 2, 1, 300, 64, "BNSD"), {}, {250, 19}, 0, 0), 0, 60},
      // 8 threads: the KV splits the longest window asks for (a plan made for it) fit the planned workspace
      {pad_case(fia_case("decode enters long", BF, 2, 8, 2, 1, 1100, 64, "BNSD"), {}, {1000, 19}, 0, 0), 0, 200},
  };
  for (const Change& ch : changes) {
    SCOPED_TRACE(ch.run.c.name);
    auto d = pad_data(ch.run);
    PadCase planned = ch.run;
    planned.q_pad = ch.plan_q;
    planned.kv_pad = ch.plan_kv;
    for (const FiaKernelConfig& k : fia_kernel_configs()) {
      if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
      for (int t : {1, 2, 8}) {
        set_num_threads(t);
        auto fresh = pad_run(ch.run, *d, d->cfg);  // planned with the run-time values
        auto late = pad_run(planned, *d, d->cfg);  // planned with the earlier values
        ASSERT_TRUE(fresh != nullptr && late != nullptr);
        const Status s1 = run_fia_cpp(fresh->run->params);
        OpPlan plan;
        const Status s2 = fused_infer_attention_score_v4_plan(late->run->params, &plan);
        late->qp.set({0}, static_cast<double>(ch.run.q_pad));
        late->kvp.set({0}, static_cast<double>(ch.run.kv_pad));
        std::vector<uint64_t> ws(static_cast<size_t>(plan.workspace_size() / 8 + 1));
        const Status s3 = s2 != kSuccess ? s2
                                         : fused_infer_attention_score_v4_run(plan, late->run->params, ws.data(),
                                                                              plan.workspace_size());
        set_num_threads(0);
        ASSERT_EQ(s1, kSuccess) << last_error_message();
        ASSERT_EQ(s3, kSuccess) << isa_name(k.isa) << " " << last_error_message();
        EXPECT_TRUE(fresh->run->out.storage == late->run->out.storage) << isa_name(k.isa) << k.override_rows << " " << t;
        EXPECT_TRUE(fresh->run->lse.storage == late->run->lse.storage) << isa_name(k.isa) << k.override_rows << " " << t;
      }
    }
  }
  set_kernel_override("");
  reset_isa();
}

TEST(FiaLeftPaddingErrors, FIA41_Exclusions) {
  {
    PadCase p = base_case();
    paged(p.c, 3, 16);
    expect_rejected(p, "kvPaddingSizeOptional", "FIA-41");
  }
  {
    PadCase p = base_case();
    p.c.cfg.layout = "TND";
    expect_rejected(p, "kvPaddingSizeOptional", "FIA-41");
  }
  for (const char* l : {"BSH_BNSD", "BSND_BNSD", "BSH_NBSD"}) {
    PadCase p = base_case();
    p.c.cfg.layout = l;
    expect_rejected(p, "kvPaddingSizeOptional", "FIA-41");
  }
  {
    PadCase p = base_case();
    mla(p.c, 64);
    expect_rejected(p, "kvPaddingSizeOptional", "FIA-41");
  }
  {
    PadCase p = base_case();
    p.c.sink = true;
    expect_rejected(p, "kvPaddingSizeOptional", "FIA-41");
  }
  {
    PadCase p = base_case();
    p.c.Dv = 32;
    expect_rejected(p, "kvPaddingSizeOptional", "FIA-41");
  }
  {
    PadCase p = base_case();  // only the query tensor: its name in the message
    p.pass_kv = false;
    paged(p.c, 3, 16);
    expect_rejected(p, "queryPaddingSizeOptional", "FIA-41");
  }
}

TEST(FiaLeftPaddingErrors, FIA42_WindowsAndExtents) {
  // Q_S > 1: a query window starting before row 0 (6 - 4 - 6 < 0), a KV window before 0
  PadCase q = base_case();
  q.q_pad = 4;
  expect_rejected(q, "queryPaddingSizeOptional", "FIA-42");
  PadCase k = base_case();
  k.kv_pad = 1;
  expect_rejected(k, "kvPaddingSizeOptional", "FIA-42");
  // the mask / pse must reach the padded windows: a mask exactly as large as the lengths
  PadCase m = pad_case(fia_case("mask extent", BF, 2, 2, 1, 8, 20, 16, "BSH"), {3, 4}, {10, 12}, 2, 3);
  sparse(m.c, 1, MaskForm::kRank3);
  expect_rejected(m, "attenMaskOptional", "FIA-42", [](PadRun& r) {
    r.run->mask = HostTensor(DType::kBool, {2, 4, 12});  // >= max lengths, < the padded windows (6, 17)
    r.run->mask_view = r.run->mask.view();
    r.run->params.atten_mask = &r.run->mask_view;
  });
  PadCase s = pad_case(fia_case("pse extent", BF, 2, 2, 1, 8, 20, 16, "BSH"), {3, 4}, {10, 12}, 2, 3);
  s.c.pse = PseForm::kRandom;
  expect_rejected(s, "pseShiftOptional", "FIA-42", [](PadRun& r) {
    r.run->pse = HostTensor(DType::kBFloat16, {2, 2, 4, 12});
    r.run->pse_view = r.run->pse.view();
    r.run->params.pse_shift = &r.run->pse_view;
  });
}

}  // namespace
}  // namespace mlaops::testing
