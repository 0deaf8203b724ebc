// FusedInferAttentionScoreV4 left padding (queryPaddingSize / kvPaddingSize, FIA-40..42) with
// INT8 full quantisation (FIA-30..32); docs/ops/fused_infer_attention_score.md "Left padding" and
// "Full quantisation (INT8 query)". Each case, under every ISA level of this host and 1 / 2
// threads, is checked three ways:
//   * against the float64 reference (reference/fia/fia_full_quant_ref.h) with the full-quantisation
//     tolerances (fia_full_quant_cases.h: FP16 output within 1 FP16 ulp, INT8 |Δ| <= 1 on at most
//     0.1 %, lse 1e-5 relative);
//   * bitwise against the operator on the right-padded problem: the same windows moved to the
//     start of the tensors, the explicit mask and pse shifted per batch (a rank-3 mask, a full
//     batch pse), pre / next of sparse 0 dropped (left padding ignores them). Left padding only
//     moves each batch's first query row and KV position, so every window row must give the same
//     bytes (the 1024-position chunks of the online softmax are window-relative);
//   * the rows outside a query window: FP16 0, INT8 the reference's quantised 0 (bitwise), lse
//     +inf.
// Query / key / value rows outside the windows hold extreme INT8 values (127 on the left-padded
// side, -128 on the right-padded one), so a read outside a window breaks the bitwise equality.
// The reference is checked the same way (left padded == right padded, exactly). No KV splits:
// the full-quantisation path does not split KV (one work item per (batch, KV head, rows)).
// Then what stays excluded with full quantisation (FIA-41 outputs and per-channel post-quant,
// FIA-42 windows and extents, FIA-40, FIA-32 paged / TND) through the C API: status, message,
// outputs untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_full_quant_cases.h"
#include "reference/fia/fia_ref.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {
namespace {

constexpr int64_t kIntMax = 2147483647;

FqCase padded(FqCase c, std::vector<int64_t> aq, std::vector<int64_t> akv, int64_t q_pad, int64_t kv_pad) {
  c.act_q = std::move(aq);
  c.act_kv = std::move(akv);
  c.q_pad = q_pad;
  c.kv_pad = kv_pad;
  c.pass_q = c.pass_kv = true;
  return c;
}

int64_t len_q(const FqCase& c, int64_t b) { return c.act_q.empty() ? c.Sq : c.act_q[static_cast<size_t>(b)]; }
int64_t len_kv(const FqCase& c, int64_t b) { return c.act_kv.empty() ? c.Skv : c.act_kv[static_cast<size_t>(b)]; }
bool q_padded(const FqCase& c) { return c.pass_q && !c.act_q.empty(); }  // Q_S > 1 always (full quant)
bool kv_padded(const FqCase& c) { return c.pass_kv && !c.act_kv.empty(); }
// Batch b's first valid query row / KV position (the windows end max(pad, 0) before the end).
int64_t q_first(const FqCase& c, int64_t b) {
  return q_padded(c) ? c.Sq - std::max<int64_t>(c.q_pad, 0) - len_q(c, b) : 0;
}
int64_t kv_first(const FqCase& c, int64_t b) {
  return kv_padded(c) ? c.Skv - std::max<int64_t>(c.kv_pad, 0) - len_kv(c, b) : 0;
}

// Rows of an FP64 BNSD [B, heads, S, D] tensor: row s of batch b gets row `at(b, s)` (< 0: `fill`);
// the result as INT8.
HostTensor remap_rows(const HostTensor& bnsd, const std::function<int64_t(int64_t, int64_t)>& at, double fill) {
  HostTensor r(I8, bnsd.dims);
  const int64_t B = bnsd.dims[0], H = bnsd.dims[1], S = bnsd.dims[2], D = bnsd.dims[3];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t from = at(b, s);
        for (int64_t d = 0; d < D; ++d) r.set({b, h, s, d}, from < 0 ? fill : bnsd.get({b, h, from, d}));
      }
  return r;
}

// The case's data with every query / key / value row outside the windows set to 127.
std::unique_ptr<FqData> pad_data(const FqCase& c) {
  auto d = make_data(c);
  auto poison = [&](HostTensor& t, int64_t heads, int64_t S, const std::function<bool(int64_t, int64_t)>& in) {
    const HostTensor bnsd = fia_test::layout_to_bnsd(t, d->in_l, c.B, heads, S, c.D);
    t = fia_test::bnsd_to_layout(remap_rows(bnsd, [&](int64_t b, int64_t s) { return in(b, s) ? s : -1; }, 127.0),
                                 d->in_l);
  };
  auto in_q = [&](int64_t b, int64_t s) { return s >= q_first(c, b) && s < q_first(c, b) + len_q(c, b); };
  auto in_kv = [&](int64_t b, int64_t s) { return s >= kv_first(c, b) && s < kv_first(c, b) + len_kv(c, b); };
  poison(d->q, c.N, c.Sq, in_q);
  poison(d->k, c.KVN, c.Skv, in_kv);
  poison(d->v, c.KVN, c.Skv, in_kv);
  return d;
}

bool explicit_mask(const FqCase& c) { return c.mask != Mask::kNone && c.sparse <= 1; }

// Element (b, i, j) of the case's explicit mask (rank 2, 3 or 4, batch broadcast).
double mask_at(const FqData& d, int64_t b, int64_t i, int64_t j) {
  const HostTensor& m = d.mask;
  const int64_t bb = m.dims[0] == 1 ? 0 : b;
  if (m.rank() == 2) return m.get({i, j});
  if (m.rank() == 3) return m.get({bb, i, j});
  return m.get({bb, 0, i, j});
}

// The right-padded problem of a left-padded case: the windows at the start of the tensors (rows
// after them -128), no padding tensors, the explicit mask (as a (B, rows, cols) mask) and pse
// (as a (B, N, Q_S, KV_S) bias) shifted by the windows, pre / next of sparse 0 dropped when a
// padding applies (left padding ignores them).
std::unique_ptr<FqData> right_padded(const FqData& l) {
  const FqCase& c = l.c;
  FqCase rc = c;
  rc.pass_q = rc.pass_kv = false;
  auto r = make_data(rc);  // same seed: the same scales and post-quant parameters
  auto shift = [&](const HostTensor& t, HostTensor* out, int64_t heads, int64_t S, bool q) {
    const HostTensor bnsd = fia_test::layout_to_bnsd(t, l.in_l, c.B, heads, S, c.D);
    auto at = [&](int64_t b, int64_t s) {
      const int64_t len = q ? len_q(c, b) : len_kv(c, b), first = q ? q_first(c, b) : kv_first(c, b);
      return s < len ? first + s : -1;
    };
    *out = fia_test::bnsd_to_layout(remap_rows(bnsd, at, -128.0), l.in_l);
  };
  shift(l.q, &r->q, c.N, c.Sq, true);
  shift(l.k, &r->k, c.KVN, c.Skv, false);
  shift(l.v, &r->v, c.KVN, c.Skv, false);
  if (explicit_mask(c)) {
    const int64_t rows = l.mask.dims[l.mask.rank() - 2], cols = l.mask.dims[l.mask.rank() - 1];
    r->mask = HostTensor(DType::kUInt8, {c.B, rows, cols}, 1.0);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < len_q(c, b); ++i)
        for (int64_t j = 0; j < len_kv(c, b); ++j)
          r->mask.set({b, i, j}, mask_at(l, b, q_first(c, b) + i, kv_first(c, b) + j));
  }
  if (c.pse) {
    r->pse = HostTensor(F16, {c.B, c.N, c.Sq, c.Skv});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t i = 0; i < len_q(c, b); ++i)
          for (int64_t j = 0; j < len_kv(c, b); ++j)
            r->pse.set({b, n, i, j}, l.pse.get({c.pse_bcast ? 0 : b, n, q_first(c, b) + i, kv_first(c, b) + j}));
  }
  if (c.sparse == 0 && (q_padded(c) || kv_padded(c))) r->c.pre = r->c.next = kIntMax;
  return r;
}

// Left-padded output `l` against right-padded `r` (both computed the same way): every window row
// bitwise equal (values and signs; lse too), every row outside a window equal to `outside`'s
// (FP16: 0; INT8: the quantised 0), lse +inf there. Returns the number of mismatches (reported).
int64_t compare_windows(const FqData& l, const FqData& r, const FqData& outside, const std::string& where) {
  const FqCase& c = l.c;
  const HostTensor a = fia_test::layout_to_bnsd(l.out, l.out_l, c.B, c.N, c.Sq, c.D);
  const HostTensor e = fia_test::layout_to_bnsd(r.out, r.out_l, c.B, c.N, c.Sq, c.D);
  const HostTensor o = fia_test::layout_to_bnsd(outside.out, outside.out_l, c.B, c.N, c.Sq, c.D);
  const bool int8 = l.out.dtype == I8;
  int64_t bad = 0;
  auto same = [](double x, double y) { return x == y && std::signbit(x) == std::signbit(y); };
  for (int64_t b = 0; b < c.B; ++b) {
    const int64_t q0 = q_first(c, b), n_q = len_q(c, b);
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t s = 0; s < c.Sq; ++s) {
        const bool in = s >= q0 && s < q0 + n_q;
        for (int64_t x = 0; x < c.D; ++x) {
          const double got = a.get({b, n, s, x});
          const double want = in ? e.get({b, n, s - q0, x}) : (int8 ? o.get({b, n, s, x}) : 0.0);
          if (!same(got, want) && bad++ < 5)
            ADD_FAILURE() << where << ": out b " << b << " n " << n << " s " << s << " d " << x << ": " << got
                          << " vs " << want << (in ? " (window row)" : " (outside the window)");
        }
        if (c.lse) {
          const double got = l.lse.get({b, n, s, 0});
          const double want = in ? r.lse.get({b, n, s - q0, 0}) : std::numeric_limits<double>::infinity();
          if (!same(got, want) && bad++ < 5)
            ADD_FAILURE() << where << ": lse b " << b << " n " << n << " s " << s << ": " << got << " vs " << want;
        }
      }
  }
  return bad;
}

std::unique_ptr<FqData> reference(std::unique_ptr<FqData> d) {
  d->bind(d->c.int8_out ? I8 : DType::kFloat64);
  EXPECT_EQ(fused_infer_attention_score_v4_ref(d->params), kSuccess) << last_error_message();
  return d;
}

std::vector<FqCase> cases() {
  std::vector<FqCase> v;
  FqCase c;
  c = padded(fq("gqa4_bsh_both_pads_lse", 3, 8, 2, 12, 90, 64, "BSH"), {5, 10, 1}, {40, 83, 3}, 2, 7);
  c.lse = true;
  v.push_back(c);
  c = padded(fq("mha_bsnd_pads_zero_fp32_scales", 2, 2, 2, 12, 40, 32, "BSND"), {12, 4}, {40, 17}, 0, 0);
  c.deq_dtype = F32;
  c.lse = true;
  v.push_back(c);
  // KV windows over three 1024-position chunks, starting at 50 and 1550 (not chunk-aligned)
  c = padded(fq("gqa2_bnsd_windows_over_three_chunks_lse", 2, 4, 2, 20, 2700, 32, "BNSD"), {17, 9}, {2600, 1100}, 3,
             50);
  c.lse = true;
  c.seed = 2;
  v.push_back(c);
  c = padded(fq("gqa8_bnsd_bsnd_sparse0_rank2_prenext_ignored", 2, 8, 1, 16, 70, 128, "BNSD_BSND"), {9, 14}, {30, 60},
             1, 4);
  c.mask = Mask::kRank2;
  c.pre = 3;
  c.next = 0;
  c.lse = true;
  v.push_back(c);
  c = padded(fq("mha_bsh_sparse1_rank3_pse_lse", 2, 3, 3, 10, 50, 64, "BSH"), {4, 7}, {13, 22}, 2, 3);
  c.sparse = 1;
  c.mask = Mask::kRank3;
  c.pse = true;
  c.lse = true;
  c.deq_dtype = F32;
  v.push_back(c);
  c = padded(fq("gqa2_bsnd_rank4_bcast_pse_bcast", 2, 4, 2, 12, 50, 32, "BSND"), {6, 3}, {25, 12}, 2, 3);
  c.mask = Mask::kRank4Bcast;
  c.pse = true;
  c.pse_bcast = true;
  c.seed = 3;
  v.push_back(c);
  c = padded(fq("gqa2_bsnd_sparse2", 3, 4, 2, 11, 25, 32, "BSND"), {11, 5, 8}, {20, 9, 21}, 0, 4);
  c.sparse = 2;
  c.mask = Mask::kTemplate;
  v.push_back(c);
  c = padded(fq("gqa4_bnsd_sparse3_two_chunks_lse", 1, 4, 1, 40, 1500, 64, "BNSD"), {33}, {1300}, 4, 150);
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.lse = true;
  c.seed = 5;
  v.push_back(c);
  c = padded(fq("gqa4_bsh_sparse4_band_lse", 2, 4, 1, 24, 300, 64, "BSH"), {20, 13}, {250, 90}, 2, 9);
  c.sparse = 4;
  c.mask = Mask::kTemplate;
  c.pre = 100;
  c.next = 5;
  c.lse = true;
  v.push_back(c);
  c = padded(fq("gqa4_bsh_int8_out_tensor_lse", 2, 8, 2, 10, 200, 64, "BSH"), {6, 9}, {150, 190}, 1, 5);
  c.int8_out = true;
  c.lse = true;
  v.push_back(c);
  c = padded(fq("gqa2_bnsd_int8_out_offset_causal_two_chunks", 2, 4, 2, 30, 1100, 128, "BNSD"), {25, 8}, {1050, 40},
             2, 20);
  c.int8_out = true;
  c.offset = true;
  c.sparse = 3;
  c.mask = Mask::kTemplate;
  c.seed = 4;
  v.push_back(c);
  c = padded(fq("mha_bnsd_bsnd_int8_out_offset_pse_empty_kv_batch", 3, 2, 2, 7, 60, 32, "BNSD_BSND"), {7, 3, 5},
             {0, 60, 17}, 0, 0);
  c.int8_out = true;
  c.offset = true;
  c.pse = true;
  c.lse = true;
  v.push_back(c);
  c = padded(fq("negative_pads_clamp_to_zero", 2, 2, 2, 6, 20, 32, "BSH"), {3, 6}, {11, 20}, -4, -100);
  c.lse = true;
  v.push_back(c);
  c = padded(fq("query_padding_only", 2, 2, 1, 8, 9, 32, "BSND"), {2, 6}, {9, 4}, 1, 0);
  c.pass_kv = false;
  c.lse = true;
  v.push_back(c);
  c = padded(fq("kv_padding_only_int8_out", 2, 2, 1, 8, 19, 32, "BSND"), {2, 8}, {9, 4}, 0, 6);
  c.pass_q = false;
  c.int8_out = true;
  v.push_back(c);
  // no actualSeqLengths(Kv): the tensors are unused (right padding; pre / next apply)
  c = padded(fq("no_lengths_unused_tensors", 2, 4, 2, 9, 30, 32, "BSH"), {}, {}, 3, 4);
  c.mask = Mask::kRank2;
  c.pre = 4;
  c.next = 1;
  c.lse = true;
  v.push_back(c);
  return v;
}

class FiaFullQuantPadding : public ::testing::TestWithParam<FqCase> {};

TEST_P(FiaFullQuantPadding, MatchesReferenceAndRightPaddingEveryIsaAndThreads) {
  const FqCase& c = GetParam();
  auto ref = reference(pad_data(c));
  auto ref_r = reference(right_padded(*pad_data(c)));
  EXPECT_EQ(compare_windows(*ref, *ref_r, *ref, c.name + " reference"), 0);
  FqStats worst;
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = pad_data(c);
      op->bind(c.int8_out ? I8 : F16);
      auto op_r = right_padded(*op);
      op_r->bind(c.int8_out ? I8 : F16);
      const Status s = run_fia_cpp(op->params);
      const std::string e1 = last_error_message();
      const Status s_r = run_fia_cpp(op_r->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << e1;
      ASSERT_EQ(s_r, kSuccess) << last_error_message();
      const std::string where = c.name + " isa=" + isa_name(isa) + " threads=" + std::to_string(t);
      EXPECT_EQ(compare_windows(*op, *op_r, *ref, where), 0) << where;
      const FqStats r = compare_runs(*op, *ref);
      expect_within_tolerances(r, c.int8_out, where);
      worst.take_worst(r);
    }
  }
  reset_isa();
  std::printf("[ measured ] %s: n %lld, max %.3f ulp, int8 max %.0f, int8 diff %.4f %%, lse rel %.2e\n", c.name.c_str(),
              (long long)ref->out.numel(), worst.max_ulps, worst.max_int8, worst.int8_pct, worst.lse_rel);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaFullQuantPadding, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<FqCase>& i) { return i.param.name; });

// aclnnFusedInferAttentionScoreV4 with both padding tensors (inputs 15, 16) and the full
// quantisation scales as UINT64 (trans_19bit): the bytes of the C++ call, within the tolerances
// of the reference; FP16 and INT8 output.
TEST(FiaFullQuantPaddingAclnn, V4CallEqualsTheCppCallAndMatchesReference) {
  for (bool int8_out : {false, true}) {
    FqCase c = padded(fq("aclnn_gqa4_bsh", 2, 8, 2, 33, 1200, 128, "BSH"), {30, 17}, {1100, 700}, 2, 40);
    c.lse = true;
    c.sparse = 3;
    c.mask = Mask::kTemplate;
    c.seed = 2;  // even seed: deqScale1 / deqScale2 by trans_19bit
    c.int8_out = int8_out;
    c.offset = int8_out;
    SCOPED_TRACE(int8_out ? "INT8 output" : "FP16 output");
    auto ref = reference(pad_data(c));
    auto op = pad_data(c);
    op->bind(int8_out ? I8 : F16);
    ASSERT_EQ(fia_aclnn_call(acl_args_of_params(op->params)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    auto cpp = pad_data(c);
    cpp->bind(int8_out ? I8 : F16);
    ASSERT_EQ(run_fia_cpp(cpp->params), kSuccess) << last_error_message();
    EXPECT_TRUE(op->out.storage == cpp->out.storage);
    EXPECT_TRUE(op->lse.storage == cpp->lse.storage);
    const FqStats r = compare_runs(*op, *ref);
    expect_within_tolerances(r, int8_out, "");
  }
}

// ---- what stays excluded with full quantisation and left padding ----

FqCase base_case() {
  FqCase c = padded(fq("base", 2, 4, 2, 6, 40, 32, "BSND"), {3, 6}, {11, 40}, 0, 0);
  c.lse = true;
  return c;
}

// The C API call of `c` (after `mutate`) is rejected with `code`, naming `param` and `rule`,
// and writes neither attentionOut nor softmaxLse.
void expect_rejected(const char* what, FqCase c, aclnnStatus code, const char* param, const char* rule,
                     const std::function<void(FqData&, FiaAclArgs&)>& mutate = nullptr) {
  SCOPED_TRACE(what);
  auto d = make_data(c);
  d->bind(c.int8_out ? I8 : F16);
  FiaAclArgs a = acl_args_of_params(d->params);
  if (mutate) mutate(*d, a);  // may replace d->out (a.out then views the new one)
  std::fill(d->out.storage.begin(), d->out.storage.end(), 0x5a5a5a5a5a5a5a5aull);  // canaries
  std::fill(d->lse.storage.begin(), d->lse.storage.end(), 0x7fc000007fc00000ull);
  const std::vector<uint64_t> out0 = d->out.storage, lse0 = d->lse.storage;
  EXPECT_EQ(fia_aclnn_call(a), code);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find(param), std::string::npos) << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << msg;
  EXPECT_TRUE(d->out.storage == out0) << "attentionOut changed: " << msg;
  EXPECT_TRUE(d->lse.storage == lse0) << "softmaxLse changed: " << msg;
}

TEST(FiaFullQuantPaddingRules, RejectedWithoutWriting) {
  const aclnnStatus inv = ACLNN_ERR_PARAM_INVALID;
  // FIA-41: the output layouts left padding excludes, per-channel post-quant with Q_S > 1
  // (head dim 64 for the *_BNSD outputs: the vendor allows them with head dims 64 / 128 / 192+128
  // only, FIA-56, which would fire first at 32)
  for (const char* layout : {"BSND_BNSD", "BSND_NBSD", "BNSD_NBSD"}) {
    FqCase c = base_case();
    c.layout = layout;
    c.D = 64;
    expect_rejected(layout, c, inv, "kvPaddingSizeOptional", "FIA-41 left padding excludes");
  }
  {
    FqCase c = base_case();
    c.layout = "BSH_BNSD";
    c.D = 64;
    c.pass_kv = false;  // only the query tensor: its name in the message
    expect_rejected("BSH_BNSD, query padding only", c, inv, "queryPaddingSizeOptional", "FIA-41 left padding excludes");
  }
  {
    FqCase c = base_case();
    c.int8_out = true;
    c.channel = true;
    c.lse = false;  // per-channel post-quant excludes softmaxLse (FIA-26)
    expect_rejected("per-channel post-quant", c, inv, "kvPaddingSizeOptional", "FIA-41 left padding excludes");
  }
  // FIA-42: windows starting before row / position 0 (Q_S > 1), mask / pse extents at the padded
  // coordinates
  {
    FqCase c = base_case();
    c.q_pad = 1;  // 6 - 1 - 6 < 0
    expect_rejected("query window before row 0", c, inv, "queryPaddingSizeOptional", "FIA-42");
  }
  {
    FqCase c = base_case();
    c.kv_pad = 1;  // 40 - 1 - 40 < 0
    expect_rejected("KV window before position 0", c, inv, "kvPaddingSizeOptional", "FIA-42");
  }
  {
    FqCase c = padded(fq("extent", 2, 4, 2, 6, 40, 32, "BSND"), {3, 4}, {11, 30}, 1, 5);  // windows end at 5, 35
    c.sparse = 1;
    c.mask = Mask::kRank3;
    expect_rejected("mask extent", c, inv, "attenMaskOptional", "FIA-42", [](FqData& d, FiaAclArgs& a) {
      d.mask = HostTensor(DType::kBool, {2, 4, 30});  // >= the lengths, < the padded windows
      a.in[4] = d.mask.view();
    });
    c.sparse = 0;
    c.mask = Mask::kNone;
    c.pse = true;
    expect_rejected("pse extent", c, inv, "pseShiftOptional", "FIA-42", [](FqData& d, FiaAclArgs& a) {
      d.pse = HostTensor(F16, {2, 4, 4, 30});
      a.in[3] = d.pse.view();
    });
  }
  // FIA-40: the tensor form
  expect_rejected("INT32 kvPaddingSize", base_case(), inv, "kvPaddingSizeOptional", "FIA-40 dtype",
                  [](FqData& d, FiaAclArgs& a) {
                    d.kvpad = HostTensor(DType::kInt32, {1});
                    a.in[16] = d.kvpad.view();
                  });
  // FIA-32 (full quantisation) comes first: paged KV and TND stay excluded
  {
    static int32_t bt[2] = {0, 1};
    FqCase c = padded(fq("paged", 2, 4, 2, 6, 48, 32, "BNSD"), {3, 6}, {11, 48}, 0, 0);
    expect_rejected("paged KV", c, inv, "blockTableOptional", "FIA-32", [](FqData&, FiaAclArgs& a) {
      a.in[14] = make_view(bt, DType::kInt32, {2, 1});
      a.passed[14] = true;
      a.block_size = 48;
    });
    expect_rejected("TND", base_case(), inv, "inputLayout", "FIA-32", [](FqData& d, FiaAclArgs& a) {
      d.q = HostTensor(I8, {9, 4, 32});
      d.k = HostTensor(I8, {51, 2, 32});
      d.out = HostTensor(F16, {9, 4, 32});
      a.in[0] = d.q.view();
      a.in[1] = a.in[2] = d.k.view();
      a.out = d.out.view();
      a.layout = "TND";
      a.asl_q = {3, 9};
      a.asl_kv = {11, 51};
      a.lse_passed = a.lse_flag = false;
    });
  }
}

// FIA-40 at run time: the padding values are read when running. A value whose KV window would
// start before position 0 (Q_S > 1) is rejected before anything is written; another valid value
// runs bitwise like a plan made with it; a value that clamps to the planned one runs the plan.
TEST(FiaFullQuantPaddingRules, FIA40_ValueChangedAfterPlanning) {
  FqCase c = padded(fq("plan", 2, 4, 2, 9, 130, 64, "BNSD"), {5, 9}, {100, 120}, 0, 3);
  c.lse = true;
  auto d = pad_data(c);  // the data of the run-time value 3
  d->bind(F16);
  d->kvpad.set({0}, 0.0);  // the value present when planning
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(d->params, &plan), kSuccess) << last_error_message();
  std::vector<uint64_t> ws(static_cast<size_t>(plan.workspace_size() / 8 + 1));
  std::fill(d->out.storage.begin(), d->out.storage.end(), 0x5a5a5a5a5a5a5a5aull);
  const std::vector<uint64_t> out0 = d->out.storage;
  d->kvpad.set({0}, 11.0);  // 130 - 11 - 120 < 0
  EXPECT_EQ(fused_infer_attention_score_v4_run(plan, d->params, ws.data(), plan.workspace_size()), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-40 run-time padding"), std::string::npos) << last_error_message();
  EXPECT_TRUE(d->out.storage == out0);
  d->kvpad.set({0}, 3.0);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, d->params, ws.data(), plan.workspace_size()), kSuccess)
      << last_error_message();
  auto fresh = pad_data(c);
  fresh->bind(F16);
  std::copy(out0.begin(), out0.end(), fresh->out.storage.begin());  // the same canaries (the tail is no element)
  ASSERT_EQ(run_fia_cpp(fresh->params), kSuccess) << last_error_message();
  EXPECT_TRUE(d->out.storage == fresh->out.storage);
  // a value that clamps to the planned 0 runs the plan as made: equal to a run with 0
  FqCase c0 = c;
  c0.kv_pad = 0;
  auto z = pad_data(c0), z0 = pad_data(c0);
  z->bind(F16);
  z0->bind(F16);
  z->kvpad.set({0}, -7.0);
  ASSERT_EQ(fused_infer_attention_score_v4_run(plan, z->params, ws.data(), plan.workspace_size()), kSuccess)
      << last_error_message();
  ASSERT_EQ(run_fia_cpp(z0->params), kSuccess) << last_error_message();
  EXPECT_TRUE(z->out.storage == z0->out.storage);
}

}  // namespace
}  // namespace mlaops::testing
