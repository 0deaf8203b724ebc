// FusedInferAttentionScoreV4 (and the entry points over it) under numerically hostile input
// (docs/numerics.md "Non-finite and extreme values", docs/reliability/numerics.md):
//   * FIA-58: a scaleValue that is not finite as float32 (NaN, +-inf, |v| > FLT_MAX) is rejected
//     by every entry point and the C++ API, nothing written (NaN canaries).
//   * non-finite and denormal data: NaN / Inf / denormals in query, key and value propagate as the
//     vendor's float32 softmax does: the rows (and, for value, the columns) that read a NaN are NaN
//     in attentionOut (and softmaxLse for query / key), every other row matches the float64
//     reference; never an all-zero row for a row that had data. Every kernel configuration
//     (fia_kernel_configs(): each ISA level, and the portable attention row), 1 and 2 threads.
//   * extreme finite scales (0, tiny, negative, large, FLT_MAX): compared with the reference.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/fia/fia_entry_call.h"
#include "ops/fia/fia_error_cases.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr DType BF = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;

// ---- FIA-58 ----

const double kBadScales[] = {kNaN, kInf, -kInf, 1e300, -1e39, 3.5e38};

TEST(FiaNonFinite, FIA58_ScaleValueV4) {
  for (Base b : {Base::kGqaPagedTnd, Base::kMla, Base::kBsnd, Base::kDecodePse})
    for (double s : kBadScales)
      expect_rejected(b, {ACLNN_ERR_PARAM_INVALID, "scaleValue", "FIA-58"}, [s](FiaAclArgs& a) { a.scale = s; });
}

TEST(FiaNonFinite, FIA58_ScaleValueEveryEntryPoint) {
  FiaCase c = fia_case("decode", BF, 2, 4, 2, 1, 24, 32, "BSND");
  c.cfg.lse = false;
  auto data = make_case_data(c);
  auto run = fia_test::build_fia_run(data->canon, data->cfg);
  ASSERT_NE(run, nullptr);
  for (Entry e : all_entries()) {
    SCOPED_TRACE(entry_name(e));
    for (double s : {kNaN, kInf, 1e300}) {
      const std::vector<uint64_t> out0 = run->out.storage;
      FiaAclArgs a = acl_args_of(*run);
      a.scale = s;
      EXPECT_EQ(entry_call(e, a), ACLNN_ERR_PARAM_INVALID);
      const std::string msg = aclGetRecentErrMsg();
      EXPECT_NE(msg.find(entry_name(e)), std::string::npos) << msg;
      EXPECT_NE(msg.find("scaleValue: FIA-58"), std::string::npos) << msg;
      EXPECT_TRUE(run->out.storage == out0) << "attentionOut changed by a rejected call";
    }
  }
}

TEST(FiaNonFinite, FIA58_ScaleValueCppApi) {
  FiaCase c = fia_case("decode", BF, 2, 4, 2, 1, 24, 32, "BSND");
  auto data = make_case_data(c);
  auto run = fia_test::build_fia_run(data->canon, data->cfg);
  ASSERT_NE(run, nullptr);
  const std::vector<uint64_t> out0 = run->out.storage, lse0 = run->lse.storage;
  for (double s : kBadScales) {
    run->params.scale_value = s;
    uint64_t ws = 0;
    EXPECT_EQ(fused_infer_attention_score_v4_workspace_size(run->params, &ws), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("scaleValue: FIA-58"), std::string::npos) << last_error_message();
    EXPECT_EQ(run_fia_cpp(run->params), kParamInvalid);
  }
  EXPECT_TRUE(run->out.storage == out0 && run->lse.storage == lse0) << "outputs changed by a rejected call";
  // FLT_MAX itself (and anything that rounds to it) is finite in float32: accepted.
  for (double s : {static_cast<double>(FLT_MAX), -static_cast<double>(FLT_MAX), 1e-45, 0.0}) {
    run->params.scale_value = s;
    EXPECT_EQ(run_fia_cpp(run->params), kSuccess) << s << ": " << last_error_message();
  }
}

// ---- data ----

// The operator's and the reference's outputs agree: the same NaN positions in attentionOut and
// softmaxLse, the other elements within the harness tolerance (NaN rows zeroed in both copies).
// Returns the reference output (BNSD) and lse (BNS) for the caller's own expectations.
struct NanCheck {
  HostTensor out, lse;
};
NanCheck check_with_nans(const FiaCase& c, const std::function<void(fia_test::FiaCanonical&)>& poison,
                         const std::vector<int>& threads = {1, 2}) {
  auto data = make_case_data(c);
  poison(data->canon);
  auto ref = reference_run(*data);
  if (ref == nullptr) return {};
  NanCheck r{ref->out_bnsd(), c.cfg.lse ? ref->lse_bns() : HostTensor()};
  const Tolerance tol = fia_out_tolerance(c.dtype);
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    for (int t : threads) {
      const std::string where = c.name + " isa=" + isa_name(k.isa) + " " + k.override_rows + " threads=" +
                                std::to_string(t);
      set_num_threads(t);
      auto op = fia_test::build_fia_run(data->canon, data->cfg);
      const Status s = op ? run_fia_cpp(op->params) : kParamInvalid;
      set_num_threads(0);
      if (s != kSuccess) {
        ADD_FAILURE() << where << ": " << last_error_message();
        continue;
      }
      HostTensor a = op->out_bnsd(), b = r.out.as(DType::kFloat64);
      int64_t nan_diff = 0;
      for (int64_t i = 0; i < b.numel(); ++i) {
        const bool na = std::isnan(a.flat(i)), nb = std::isnan(b.flat(i));
        nan_diff += na != nb;
        if (na || nb) a.set_flat(i, 0), b.set_flat(i, 0);
      }
      EXPECT_EQ(nan_diff, 0) << where << ": attentionOut NaN positions differ from the reference";
      const Stats st = compare(a.view(), b.view(), tol);
      EXPECT_TRUE(within(st, tol, false)) << where << ": " << st.str();
      if (c.cfg.lse) {
        const HostTensor la = op->lse_bns();
        for (int64_t i = 0; i < r.lse.numel(); ++i) {
          const double x = la.flat(i), y = r.lse.flat(i);
          if (std::isnan(y) || std::isinf(y)) {
            EXPECT_TRUE((std::isnan(x) && std::isnan(y)) || x == y) << where << " lse " << i << ": " << x << " vs " << y;
          } else {
            EXPECT_NEAR(x, y, 1e-4 * std::fabs(y) + 1e-5) << where << " lse " << i;
          }
        }
      }
    }
  }
  set_kernel_override("");
  reset_isa();
  return r;
}

// Row (b, n, i) of a BNSD output [B, N, Sq, Dv]: how many of its elements are NaN.
int64_t nan_count(const HostTensor& out, const FiaCase& c, int64_t b, int64_t n, int64_t i) {
  int64_t k = 0;
  for (int64_t d = 0; d < c.Dv; ++d) k += std::isnan(out.flat(((b * c.N + n) * c.Sq + i) * c.Dv + d));
  return k;
}
int64_t total_nans(const HostTensor& t) {
  int64_t k = 0;
  for (int64_t i = 0; i < t.numel(); ++i) k += std::isnan(t.flat(i));
  return k;
}

std::vector<FiaCase> data_cases() {
  std::vector<FiaCase> v;
  v.push_back(fia_case("decode_gqa_bsnd_bf16", BF, 2, 8, 2, 1, 70, 64, "BSND"));
  v.push_back(fia_case("decode_gqa_bnsd_fp16", F16, 2, 4, 1, 1, 300, 64, "BNSD"));  // split KV
  FiaCase c = fia_case("prefill_bsh_bf16", BF, 2, 4, 2, 9, 40, 32, "BSH");
  v.push_back(c);
  c = fia_case("decode_paged_bsnd_fp16", F16, 2, 4, 2, 1, 100, 64, "BSND");
  c.act_kv = {100, 37};
  paged(c, 3, 16);
  v.push_back(c);
  return v;
}

// A NaN in one query element: exactly that query row is NaN (out and lse).
TEST(FiaNonFinite, NanInQueryPoisonsItsRowOnly) {
  for (const FiaCase& c : data_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t b = 1, n = 1, i = c.Sq - 1;
    NanCheck r = check_with_nans(c, [&](fia_test::FiaCanonical& k) { k.q.set({b, n, i, 3}, kNaN); });
    EXPECT_EQ(nan_count(r.out, c, b, n, i), c.Dv);
    EXPECT_EQ(total_nans(r.out), c.Dv) << "only the poisoned row";
    if (c.cfg.lse) {
      EXPECT_EQ(total_nans(r.lse), 1);
    }
  }
}

// +inf in one query element: the row's scores hold +inf (or NaN where 0 * inf), the softmax gives
// inf - inf = NaN: that row is NaN, no other.
TEST(FiaNonFinite, InfInQueryPoisonsItsRowOnly) {
  for (const FiaCase& c : data_cases()) {
    SCOPED_TRACE(c.name);
    NanCheck r = check_with_nans(c, [&](fia_test::FiaCanonical& k) { k.q.set({0, 2, 0, 0}, kInf); });
    EXPECT_EQ(nan_count(r.out, c, 0, 2, 0), c.Dv);
    EXPECT_EQ(total_nans(r.out), c.Dv);
  }
}

// A NaN in one key element of KV head h at a position every query row sees: every query row of
// h's group in that batch is NaN; the other heads and batches are not.
TEST(FiaNonFinite, NanInKeyPoisonsItsGroup) {
  for (const FiaCase& c : data_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t b = 0, h = c.KVN - 1, G = c.N / c.KVN;
    NanCheck r = check_with_nans(c, [&](fia_test::FiaCanonical& k) { k.k.set({b, h, 5, 1}, kNaN); });
    for (int64_t g = 0; g < G; ++g)
      for (int64_t i = 0; i < c.Sq; ++i) EXPECT_EQ(nan_count(r.out, c, b, h * G + g, i), c.Dv);
    EXPECT_EQ(total_nans(r.out), G * c.Sq * c.Dv);
  }
}

// A NaN in value element (j, d): column d of every row that attends j is NaN (P * NaN = NaN,
// also where P underflowed to 0); the other columns and softmaxLse stay finite.
TEST(FiaNonFinite, NanInValuePoisonsOneColumn) {
  for (const FiaCase& c : data_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t b = 1, h = 0, G = c.N / c.KVN, d = 7;
    NanCheck r = check_with_nans(c, [&](fia_test::FiaCanonical& k) { k.v.set({b, h, 2, d}, kNaN); });
    EXPECT_EQ(total_nans(r.out), G * c.Sq);
    for (int64_t g = 0; g < G; ++g) EXPECT_TRUE(std::isnan(r.out.flat(((b * c.N + g) * c.Sq + 0) * c.Dv + d)));
    if (c.cfg.lse) {
      EXPECT_EQ(total_nans(r.lse), 0);
    }
  }
}

// A NaN (or inf) beyond a batch's actual KV length, or under the causal mask, is never read.
TEST(FiaNonFinite, NanOutsideTheValidRangeIsNotRead) {
  FiaCase c = fia_case("prefill_causal_bsnd", BF, 2, 4, 2, 8, 40, 32, "BSND");
  c.act_kv = {40, 20};
  sparse(c, 3, MaskForm::kTemplate);
  NanCheck r = check_with_nans(c, [&](fia_test::FiaCanonical& k) {
    for (int64_t d = 0; d < c.D; ++d) k.k.set({1, 0, 30, d}, kNaN);  // beyond actKV of batch 1
    k.v.set({1, 1, 25, 0}, kInf);
  });
  EXPECT_EQ(total_nans(r.out), 0);
  // causal (right-down) in batch 0: query row i sees KV [0, 32 + i]; a NaN key at 39 reaches only
  // the last row of each head of group 0.
  NanCheck r2 = check_with_nans(c, [&](fia_test::FiaCanonical& k) { k.k.set({0, 0, 39, 0}, kNaN); });
  EXPECT_EQ(total_nans(r2.out), 2 * c.Dv);
  EXPECT_EQ(nan_count(r2.out, c, 0, 0, 7), c.Dv);
  EXPECT_EQ(nan_count(r2.out, c, 0, 1, 7), c.Dv);
}

// Denormal inputs (BF16 ~1e-39, FP16 ~6e-8): finite results matching the reference (the AVX-512
// BF16 dot products treat BF16 denormals as zero; their contribution is below the tolerance).
TEST(FiaNonFinite, DenormalInputs) {
  for (const FiaCase& c : data_cases()) {
    SCOPED_TRACE(c.name);
    const double tiny = c.dtype == BF ? 1e-39 : 6e-8;
    NanCheck r = check_with_nans(c, [&](fia_test::FiaCanonical& k) {
      for (int64_t d = 0; d < c.D; ++d) k.q.set({0, 0, 0, d}, d % 2 ? tiny : -tiny);  // a denormal query row
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t d = 0; d < c.D; ++d) k.k.set({1, 0, j, d}, tiny);
      for (int64_t d = 0; d < c.Dv; ++d) k.v.set({1, 0, 3, d}, -tiny);
    });
    EXPECT_EQ(total_nans(r.out), 0);
  }
}

// The other attention paths (MLA with rope and the latent cache as value, a sink, a pseShift, a
// causal prefill in TND, FP16 prefill): a NaN query element, key element and value element each
// give the reference's NaN positions (and only those) under every kernel configuration.
// MLA decode (paged, the latent cache as value; KV length mla_kv in batch 0), a causal TND
// prefill with a sink, a decode with a pseShift.
std::vector<FiaCase> other_path_cases(int64_t mla_kv) {
  std::vector<FiaCase> v;
  FiaCase c = fia_case("mla_decode_paged", BF, 2, 16, 1, 1, mla_kv, 512, "BNSD_NBSD");
  c.Dv = 512;
  c.act_kv = {mla_kv, 17};
  mla(c, 64);
  c.cfg.value_is_key = true;
  paged(c, 4, 16);
  v.push_back(c);
  c = fia_case("tnd_causal_sink", BF, 2, 4, 2, 3, 20, 64, "TND");
  c.act_q = {3, 2};
  c.act_kv = {20, 9};
  sparse(c, 3, MaskForm::kTemplate);
  c.sink = true;
  v.push_back(c);
  c = fia_case("decode_pse_bsnd", BF, 2, 4, 2, 1, 20, 32, "BSND");
  c.pse = PseForm::kRandom;
  v.push_back(c);
  return v;
}

TEST(FiaNonFinite, OtherPathsFollowTheReference) {
  std::vector<FiaCase> v = other_path_cases(40);
  v.push_back(fia_case("prefill_bnsd_fp16", F16, 1, 2, 2, 33, 70, 64, "BNSD"));
  for (const FiaCase& x : v) {
    SCOPED_TRACE(x.name);
    const int64_t b = x.B - 1, hk = x.KVN - 1;
    NanCheck q = check_with_nans(x, [&](fia_test::FiaCanonical& k) { k.q.set({b, 0, 0, 2}, kNaN); });
    EXPECT_GT(total_nans(q.out), 0);
    NanCheck kk = check_with_nans(x, [&](fia_test::FiaCanonical& k) { k.k.set({b, hk, 1, 2}, kNaN); });
    EXPECT_GT(total_nans(kk.out), 0);
    if (!x.cfg.value_is_key) {
      NanCheck vv = check_with_nans(x, [&](fia_test::FiaCanonical& k) { k.v.set({b, hk, 1, 2}, kNaN); });
      EXPECT_GT(total_nans(vv.out), 0);
    }
  }
}

// ---- rows whose valid scores are all -inf ----

// +inf in channel d of KV head h's keys at positions [0, j_end) of batch b and the query element
// d of h's group rows negative (latent: the rope channel d of key and query instead): every score
// of those rows at those positions is -inf.
void neg_inf_scores(fia_test::FiaCanonical& k, int64_t b, int64_t h, int64_t d, int64_t j_end, bool rope) {
  HostTensor& kt = rope ? k.kr : k.k;
  HostTensor& qt = rope ? k.qr : k.q;
  for (int64_t j = 0; j < j_end; ++j) kt.set({b, h, j, d}, kInf);
  const int64_t G = k.N / k.KVN;
  for (int64_t n = h * G; n < (h + 1) * G; ++n)
    for (int64_t i = 0; i < k.Sq; ++i) qt.set({b, n, i, d}, -std::fabs(qt.get({b, n, i, d})) - 0.125);
}

// A row with valid positions whose scores are all -inf: NaN (out and lse), as exp(-inf - -inf) in
// the reference's fp32-style softmax, never the empty row (0 / +inf); with a sink the sink alone
// is the denominator (out 0, lse the sink logit). -inf at part of the positions (the first half:
// whole KV splits and blocks) is weight 0: the rows stay finite. Every kernel configuration,
// 1 to 4 threads (the long KV cases split it); docs/reliability/numerics.md.
TEST(FiaNonFinite, AllMinusInfScoresGiveNaNRows) {
  std::vector<FiaCase> v = data_cases();
  FiaCase c = fia_case("decode_long_bf16", BF, 1, 4, 1, 1, 1100, 64, "BNSD");  // KV splits
  v.push_back(c);
  c = fia_case("prefill_causal_fp16", F16, 1, 4, 2, 6, 300, 64, "BNSD");
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(c);
  for (const FiaCase& x : v) {
    SCOPED_TRACE(x.name);
    const int64_t b = x.B - 1, h = x.KVN - 1, G = x.N / x.KVN, len = x.act_kv.empty() ? x.Skv : x.act_kv[static_cast<size_t>(b)];
    NanCheck r = check_with_nans(x, [&](fia_test::FiaCanonical& k) { neg_inf_scores(k, b, h, 1, len, false); },
                                 {1, 2, 3, 4});
    EXPECT_EQ(total_nans(r.out), G * x.Sq * x.Dv);
    for (int64_t g = 0; g < G; ++g) EXPECT_EQ(nan_count(r.out, x, b, h * G + g, x.Sq - 1), x.Dv);
    if (x.cfg.lse) {
      EXPECT_EQ(total_nans(r.lse), G * x.Sq);
    }
    NanCheck half = check_with_nans(x, [&](fia_test::FiaCanonical& k) { neg_inf_scores(k, b, h, 1, len / 2, false); },
                                    {1, 2, 3, 4});
    EXPECT_EQ(total_nans(half.out), 0);
  }
}

// The same on the other attention paths: MLA (the -inf from the rope part), a sink (finite: out 0,
// lse the sink logit), a pseShift, a causal TND prefill.
TEST(FiaNonFinite, AllMinusInfScoresOtherPaths) {
  const std::vector<FiaCase> v = other_path_cases(300);
  for (const FiaCase& x : v) {
    SCOPED_TRACE(x.name);
    const bool rope = x.Dr > 0;
    const int64_t b = 0, h = x.KVN - 1, G = x.N / x.KVN, len = x.act_kv.empty() ? x.Skv : x.act_kv[static_cast<size_t>(b)];
    NanCheck r = check_with_nans(x, [&](fia_test::FiaCanonical& k) { neg_inf_scores(k, b, h, 1, len, rope); },
                                 {1, 2, 4});
    const int64_t rows = x.act_q.empty() ? x.Sq : x.act_q[static_cast<size_t>(b)];
    EXPECT_EQ(total_nans(r.out), x.sink ? 0 : G * rows * x.Dv);
    if (x.cfg.lse) {
      EXPECT_EQ(total_nans(r.lse), x.sink ? 0 : G * rows);
    }
  }
}

// ---- extreme finite scales ----

TEST(FiaNonFinite, ExtremeFiniteScales) {
  for (double s : {0.0, 1e-45, 1e-30, -0.125, -1.0, 1e3, 3e4}) {
    for (FiaCase c : data_cases()) {
      c.cfg.scale = s;
      c.name += " scale=" + std::to_string(s);
      SCOPED_TRACE(c.name);
      NanCheck r = check_with_nans(c, [](fia_test::FiaCanonical&) {});
      EXPECT_EQ(total_nans(r.out), 0);
    }
  }
}

// scaleValue FLT_MAX (accepted): every score with q.k != 0 overflows float32 to +-inf; a row
// whose largest score is +inf gets inf - inf = NaN in the softmax, as the vendor's fp32 softmax.
TEST(FiaNonFinite, ScaleFltMaxOverflowsToNaNRows) {
  for (FiaCase c : data_cases()) {
    c.cfg.scale = FLT_MAX;
    SCOPED_TRACE(c.name);
    auto data = make_case_data(c);
    for (const FiaKernelConfig& k : fia_kernel_configs()) {
      if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
      auto op = fia_test::build_fia_run(data->canon, data->cfg);
      ASSERT_EQ(run_fia_cpp(op->params), kSuccess) << last_error_message();
      const HostTensor out = op->out_bnsd();
      EXPECT_EQ(total_nans(out), out.numel()) << isa_name(k.isa) << " " << k.override_rows;
    }
    set_kernel_override("");
    reset_isa();
  }
}

}  // namespace
}  // namespace mlaops::testing
