// FusedInferAttentionScoreV4 with non-finite and denormal data on the quantised and FP16
// high-performance paths (docs/reliability/numerics.md "Non-finite data on the quantised paths",
// docs/numerics.md "Non-finite and extreme values"); test_fia_nonfinite.cpp covers the BF16 / FP16
// float paths. Each case puts NaN, +inf, -inf or denormals into one element of a tensor that a
// float type carries and compares the operator with the float64 reference under every ISA level
// of this host and 1 / 2 threads:
//   * the NaN positions (and the +-inf positions) of attentionOut and softmaxLse equal the
//     reference's, and the test states which rows those are (the affected rows only);
//   * every other element is within the path's usual tolerance of the reference (the poisoned
//     elements zeroed in both copies), so the unaffected rows are correct and finite.
// Paths: INT8 KV antiquant (per-channel 0, per-token 1, per-tensor-head 2, per-token-head 3;
// innerPrecise 0 and 1; the in-place INT8 decode kernel and the dequantised chunks; Q_S > 1),
// packed INT4 KV (modes 0 / 1), the INT8 full-quant path (pseShift, deqScale1 / quantScale1 /
// deqScale2, FP16 and INT8 output), the MLA full-quant path (queryRope, dequantScaleQuery, keyRope,
// key / value scales), the FP16 high-performance softmax (innerPrecise 1 on an FP16 prefill) and
// the post-quant INT8 output (a NaN row quantises to 0: ref::post_quant_int8 / attn_post_quant).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_antiquant_cases.h"
#include "ops/fia/fia_compare.h"
#include "ops/fia/fia_full_quant_cases.h"
#include "ops/fia/fia_harness.h"
#include "ops/fia/fia_mla_quant_data.h"
#include "reference/fia/fia_ref.h"
#include "testkit/compare.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr DType BF = DType::kBFloat16;

// ---- comparison ----

// op (any dtype) against ref (same shape): NaN positions equal, +-inf positions and values equal,
// the rest within tol (poisoned positions zeroed in both). Returns the number of NaNs of ref.
int64_t expect_same_nonfinite(const std::string& where, const HostTensor& op, const HostTensor& ref,
                              const Tolerance& tol) {
  HostTensor a = op.as(DType::kFloat64), b = ref.as(DType::kFloat64);
  int64_t nan_diff = 0, inf_diff = 0, nans = 0, finite = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double x = a.flat(i), y = b.flat(i);
    nans += std::isnan(y);
    if (std::isnan(x) || std::isnan(y)) {
      nan_diff += std::isnan(x) != std::isnan(y);
    } else if (std::isinf(x) || std::isinf(y)) {
      inf_diff += x != y;
    } else {
      ++finite;
      continue;
    }
    a.set_flat(i, 0);
    b.set_flat(i, 0);
  }
  EXPECT_EQ(nan_diff, 0) << where << ": attentionOut NaN positions differ from the reference";
  EXPECT_EQ(inf_diff, 0) << where << ": attentionOut inf positions differ from the reference";
  if (finite > 0) {
    const Stats st = compare(a.view(), b.view(), tol);
    EXPECT_TRUE(within(st, tol, false)) << where << ": " << st.str();
  }
  return nans;
}

// softmaxLse: NaN / inf where the reference has them, |x - y| <= rel |y| + abs elsewhere.
void expect_same_lse(const std::string& where, const HostTensor& op, const HostTensor& ref, double rel, double abs) {
  int64_t bad = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double x = op.flat(i), y = ref.flat(i);
    const bool ok = std::isnan(y) || std::isnan(x) ? std::isnan(x) && std::isnan(y)
                    : std::isinf(y) || std::isinf(x) ? x == y
                                                     : std::fabs(x - y) <= rel * std::fabs(y) + abs;
    if (!ok && bad++ < 4) ADD_FAILURE() << where << " lse " << i << ": " << x << " vs reference " << y;
  }
}

int64_t count_nan(const HostTensor& t) {
  int64_t k = 0;
  for (int64_t i = 0; i < t.numel(); ++i) k += std::isnan(t.flat(i));
  return k;
}
// Elements [first, first + n) of t: how many are NaN.
int64_t nan_in(const HostTensor& t, int64_t first, int64_t n) {
  int64_t k = 0;
  for (int64_t i = first; i < first + n; ++i) k += std::isnan(t.flat(i));
  return k;
}

// ---- INT8 / INT4 KV antiquant (BNSD, contiguous) ----

struct AqNf {
  std::string name;
  DType dt = BF;
  bool int4 = false;
  int64_t B = 2, N = 4, KVN = 2, S = 1, L = 37, D = 64;
  int64_t mode = 0;  // key and value antiquant mode (separate parameters, offsets)
};

struct AqNfData {
  HostTensor q, k, v, out_op, out_ref, lse_op, lse_ref, ks, ko, vs, vo;
  std::vector<int64_t> akv;
  TensorView ks_v, ko_v, vs_v, vo_v, lse_op_v, lse_ref_v;
  FiaParams op, ref;
};

// The scale / offset of one of key / value: mode 0 [1, KVN, 1, D] and 2 [KVN] in the query
// dtype, 1 [1, B, L] ([B, L] with Q_S > 1) and 3 [B, KVN, L] in FP32.
HostTensor aq_param(const AqNf& c, bool off, std::mt19937& g) {
  HostTensor t;
  switch (c.mode) {
    case 0: t = HostTensor(c.dt, {1, c.KVN, 1, c.D}); break;
    case 1: t = c.S > 1 ? HostTensor(DType::kFloat32, {c.B, c.L}) : HostTensor(DType::kFloat32, {1, c.B, c.L}); break;
    case 2: t = HostTensor(c.dt, {c.KVN}); break;
    default: t = HostTensor(DType::kFloat32, {c.B, c.KVN, c.L}); break;
  }
  const double smax = c.int4 ? 1.0 / 7.0 : 1.0 / 127.0;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set_flat(i, off ? std::round(uni(g, -3, 3)) : uni(g, 0.5, 1.5) * smax);
  return t;
}

std::unique_ptr<AqNfData> aq_build(const AqNf& c) {
  auto d = std::make_unique<AqNfData>();
  std::mt19937 g(static_cast<uint32_t>(c.mode * 31 + c.S * 7 + (c.int4 ? 5 : 0) + 11));
  d->akv.assign(static_cast<size_t>(c.B), c.L);
  aq_make_query_io(d.get(), c.dt, "BNSD", c.B, c.N, c.S, c.D, g);
  if (c.int4) {
    for (HostTensor* t : {&d->k, &d->v}) {
      *t = HostTensor(DType::kInt32, {c.B, c.KVN, c.L, c.D / 8});
      for (int64_t i = 0; i < t->numel(); ++i) {
        uint32_t w = 0;
        for (int k = 0; k < 8; ++k) w |= static_cast<uint32_t>(g() % 16) << (4 * k);
        t->set_flat(i, static_cast<double>(static_cast<int32_t>(w)));
      }
    }
  } else {
    for (HostTensor* t : {&d->k, &d->v}) {
      *t = HostTensor(DType::kInt8, {c.B, c.KVN, c.L, c.D});
      for (int64_t i = 0; i < t->numel(); ++i) t->set_flat(i, std::round(uni(g, -127, 127)));
    }
  }
  d->ks = aq_param(c, false, g);
  d->ko = aq_param(c, true, g);
  d->vs = aq_param(c, false, g);
  d->vo = aq_param(c, true, g);
  return d;
}

// Binds the (possibly poisoned) data into the operator's and the reference's parameters.
void aq_bind(const AqNf& c, AqNfData& d) {
  d.ks_v = d.ks.view(), d.ko_v = d.ko.view(), d.vs_v = d.vs.view(), d.vo_v = d.vo.view();
  d.lse_op_v = d.lse_op.view(), d.lse_ref_v = d.lse_ref.view();
  for (int w = 0; w < 2; ++w) {
    FiaParams& p = w == 0 ? d.op : d.ref;
    p = FiaParams();
    aq_bind_common(&p, d, w == 0, c.N, c.KVN, c.D, "BNSD");
    aq_bind_antiquant(&p, false, true, c.mode, c.mode, &d.ks_v, &d.ko_v, &d.vs_v, &d.vo_v);
    p.softmax_lse = w == 0 ? &d.lse_op_v : &d.lse_ref_v;
  }
}

struct AqResult {
  HostTensor out, lse;  // the golden (BNSD, [B, N, S, 1])
};

// The case with `poison` applied, against the reference (the dequantised values unrounded) under
// every ISA, innerPrecise 0 / 1, 1 / 2 threads.
AqResult aq_check(const AqNf& c, const std::function<void(AqNfData&)>& poison) {
  auto d = aq_build(c);
  poison(*d);
  aq_bind(c, *d);
  if (fused_infer_attention_score_v4_ref(d->ref) != kSuccess) {
    ADD_FAILURE() << c.name << ": reference: " << last_error_message();
    return {};
  }
  const AqResult gold{d->out_ref, d->lse_ref};
  for (int64_t ip : {0, 1}) {
    d->op.inner_precise = ip;
    for_each_isa_and_threads([&](Isa isa, int t) {
      const bool place = in_place(d->op);
      const std::string where = c.name + " isa=" + isa_name(isa) + " innerPrecise=" + std::to_string(ip) +
                                (place ? " in-place" : "") + " threads=" + std::to_string(t);
      std::memset(d->out_op.data(), 0xEE, d->out_op.storage.size() * 8);
      const Status s = run_fia_cpp(d->op);
      if (s != kSuccess) {
        ADD_FAILURE() << where << ": " << last_error_message();
        return;
      }
      expect_same_nonfinite(where, d->out_op, gold.out, out_tol(c.dt));
      expect_same_lse(where, d->lse_op, gold.lse, kLseRel, kLseAbs);
    });
  }
  return gold;
}

std::vector<AqNf> aq_cases() {
  std::vector<AqNf> v;
  for (bool int4 : {false, true})
    for (int64_t mode : {0, 1, 2, 3}) {
      if (int4 && (mode == 2 || mode == 3)) continue;  // INT4: modes 0 and 1 here (test_fia_antiquant_int4)
      for (DType dt : {BF, DType::kFloat16})
        for (int64_t S : {1, 3}) {
          if ((int4 || dt != BF || mode > 1) && S > 1) continue;  // FIA-21: Q_S > 1: BF16 query, modes 0 / 1
          AqNf c;
          c.int4 = int4;
          c.mode = mode;
          c.dt = dt;
          c.S = S;
          c.name = std::string(int4 ? "int4" : "int8") + " mode" + std::to_string(mode) + (dt == BF ? " bf16" : " fp16") +
                   " S" + std::to_string(S);
          v.push_back(c);
        }
    }
  return v;
}

int64_t row_of(const AqNf& c, int64_t b, int64_t n, int64_t i) { return ((b * c.N + n) * c.S + i) * c.D; }

// NaN / +inf / -inf in one query element: exactly that query row is NaN (out and lse).
TEST(FiaNonFiniteQuant, AntiquantQueryNonFinitePoisonsItsRow) {
  for (const AqNf& c : aq_cases()) {
    for (double x : {kNaN, kInf, -kInf}) {
      SCOPED_TRACE(c.name + " query " + std::to_string(x));
      const int64_t b = 1, n = 1, i = c.S - 1;
      AqResult r = aq_check(c, [&](AqNfData& d) { d.q.set({b, n, i, 3}, x); });
      EXPECT_EQ(nan_in(r.out, row_of(c, b, n, i), c.D), c.D);
      EXPECT_EQ(count_nan(r.out), c.D) << "only the poisoned row";
      EXPECT_EQ(count_nan(r.lse), 1);
    }
  }
}

// The key scale: NaN at one parameter element poisons every query row that reads a key element it
// scales: mode 0 (channel d of KV head h) and mode 2 (head h): the rows of h's group in every
// batch; mode 1 (batch b, position j): every row of batch b; mode 3 (b, h, j): h's group in batch b.
TEST(FiaNonFiniteQuant, AntiquantKeyScaleNaNPoisonsTheRowsItScales) {
  for (const AqNf& c : aq_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t b = 1, h = c.KVN - 1, j = 5, G = c.N / c.KVN;
    AqResult r = aq_check(c, [&](AqNfData& d) {
      switch (c.mode) {
        case 0: d.ks.set({0, h, 0, 1}, kNaN); break;
        case 1: c.S > 1 ? d.ks.set({b, j}, kNaN) : d.ks.set({0, b, j}, kNaN); break;
        case 2: d.ks.set({h}, kNaN); break;
        default: d.ks.set({b, h, j}, kNaN); break;
      }
    });
    const int64_t batches = (c.mode == 0 || c.mode == 2) ? c.B : 1, heads = c.mode == 1 ? c.N : G;
    EXPECT_EQ(count_nan(r.out), batches * heads * c.S * c.D);
    EXPECT_EQ(count_nan(r.lse), batches * heads * c.S);
    EXPECT_EQ(nan_in(r.out, row_of(c, b, c.mode == 1 ? 0 : h * G, 0), c.D), c.D);
  }
}

// The value scale: NaN at channel d (mode 0) poisons column d of h's group rows, softmaxLse stays
// finite; a per-token (1, 3) or per-head (2) value scale poisons whole rows of the output only.
TEST(FiaNonFiniteQuant, AntiquantValueScaleNaNPoisonsOutputOnly) {
  for (const AqNf& c : aq_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t b = 0, h = 0, j = 2, d = 7, G = c.N / c.KVN;
    AqResult r = aq_check(c, [&](AqNfData& x) {
      switch (c.mode) {
        case 0: x.vs.set({0, h, 0, d}, kNaN); break;
        case 1: c.S > 1 ? x.vs.set({b, j}, kNaN) : x.vs.set({0, b, j}, kNaN); break;
        case 2: x.vs.set({h}, kNaN); break;
        default: x.vs.set({b, h, j}, kNaN); break;
      }
    });
    EXPECT_EQ(count_nan(r.lse), 0);
    if (c.mode == 0) {
      EXPECT_EQ(count_nan(r.out), c.B * G * c.S);
      EXPECT_TRUE(std::isnan(r.out.flat(row_of(c, 1, 0, 0) + d)));
    } else {
      const int64_t batches = c.mode == 2 ? c.B : 1, heads = c.mode == 1 ? c.N : G;
      EXPECT_EQ(count_nan(r.out), batches * heads * c.S * c.D);
    }
  }
}

// +-inf offsets. A key offset +inf at channel d of KV head h makes every key element there +inf;
// with the query element d of h's group rows positive every score of those rows is +inf:
// inf - inf = NaN in the softmax, those rows only (out and lse). With the query element negative
// every score is -inf: a row whose valid scores are all -inf is NaN too (exp(-inf - -inf), the
// reference's fp32-style softmax; never the empty row 0 / +inf), those rows only.
// A value offset -inf at channel d of head 0: column d of group 0 is -inf, softmaxLse finite, on
// every path (the paths that split a value into exact hi + lo parts take lo = 0 where hi is
// infinite; docs/reliability/numerics.md); every other element matches.
void expect_inf_key_offset_rows(const AqNf& c) {
  const int64_t h = c.KVN - 1, G = c.N / c.KVN;
  for (double sign : {1.0, -1.0}) {
    SCOPED_TRACE(sign > 0 ? "query element positive: scores +inf" : "query element negative: scores -inf");
    AqResult r = aq_check(c, [&](AqNfData& d) {
      d.ko.set({0, h, 0, 4}, kInf);
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t n = h * G; n < (h + 1) * G; ++n)
          for (int64_t i = 0; i < c.S; ++i) d.q.set({b, n, i, 4}, sign * (std::fabs(d.q.get({b, n, i, 4})) + 0.125));
    });
    EXPECT_EQ(count_nan(r.out), c.B * G * c.S * c.D);
    EXPECT_EQ(count_nan(r.lse), c.B * G * c.S);
    EXPECT_EQ(nan_in(r.out, row_of(c, c.B - 1, h * G, c.S - 1), c.D), c.D);
  }
}

TEST(FiaNonFiniteQuant, AntiquantInfOffsetsFollowTheReference) {
  for (const AqNf& c : aq_cases()) {
    if (c.mode != 0) continue;
    SCOPED_TRACE(c.name);
    expect_inf_key_offset_rows(c);
    AqResult r2 = aq_check(c, [&](AqNfData& d) { d.vo.set({0, 0, 0, 9}, -kInf); });
    EXPECT_EQ(count_nan(r2.lse), 0);
    EXPECT_EQ(count_nan(r2.out), 0);
    EXPECT_EQ(r2.out.flat(row_of(c, 0, 0, 0) + 9), -kInf);
  }
}

// The same with one batch and one KV head over a long KV (1100 positions): 2 threads split the
// KV (the partial states merged by attn_merge_splits), the dequantising path runs several chunks
// (attn_merge_state).
TEST(FiaNonFiniteQuant, AntiquantInfKeyOffsetLongKv) {
  for (bool int4 : {false, true})
    for (DType dt : {BF, DType::kFloat16}) {
      AqNf c;
      c.int4 = int4;
      c.dt = dt;
      c.B = 1, c.N = 4, c.KVN = 1, c.L = 1100;
      c.name = std::string(int4 ? "int4" : "int8") + " mode0 long kv" + (dt == BF ? " bf16" : " fp16");
      SCOPED_TRACE(c.name);
      expect_inf_key_offset_rows(c);
    }
}

// Denormal query rows and denormal scales: finite, matching the reference.
TEST(FiaNonFiniteQuant, AntiquantDenormals) {
  for (const AqNf& c : aq_cases()) {
    SCOPED_TRACE(c.name);
    const double tiny = c.dt == BF ? 1e-39 : 6e-8, tiny32 = 1e-40;
    AqResult r = aq_check(c, [&](AqNfData& d) {
      for (int64_t x = 0; x < c.D; ++x) d.q.set({0, 0, 0, x}, x % 2 ? tiny : -tiny);
      for (HostTensor* t : {&d.ks, &d.vs})
        for (int64_t i = 0; i < t->numel(); i += 3) t->set_flat(i, t->dtype == DType::kFloat32 ? tiny32 : tiny);
    });
    EXPECT_EQ(count_nan(r.out), 0);
    EXPECT_EQ(count_nan(r.lse), 0);
  }
}

// ---- INT8 full quantisation (INT8 query / key / value) ----

// Op (FP16 or INT8 output) against the reference (FP64 or INT8 output). FP16: NaN positions equal,
// the rest within kMaxUlps FP16 ulps (+1e-6); INT8: |op - ref| <= 1 (the NaN rows are 0 in both).
struct FqResult {
  HostTensor out, lse;
};
FqResult fq_check(FqCase c, const std::function<void(FqData&)>& poison) {
  c.lse = true;
  auto ref = make_data(c);
  poison(*ref);
  ref->bind(c.int8_out ? I8 : DType::kFloat64);
  if (fused_infer_attention_score_v4_ref(ref->params) != kSuccess) {
    ADD_FAILURE() << c.name << ": reference: " << last_error_message();
    return {};
  }
  const HostTensor rout = fia_test::layout_to_bnsd(ref->out, ref->out_l, c.B, c.N, c.Sq, c.D);
  for_each_isa_and_threads([&](Isa isa, int t) {
    const std::string where = c.name + " isa=" + isa_name(isa) + " threads=" + std::to_string(t);
    auto op = make_data(c);
    poison(*op);
    op->bind(c.int8_out ? I8 : F16);
    const Status s = run_fia_cpp(op->params);
    if (s != kSuccess) {
      ADD_FAILURE() << where << ": " << last_error_message();
      return;
    }
    const HostTensor a = fia_test::layout_to_bnsd(op->out, op->out_l, c.B, c.N, c.Sq, c.D);
    int64_t nan_diff = 0, bad = 0;
    for (int64_t i = 0; i < rout.numel(); ++i) {
      const double x = a.flat(i), y = rout.flat(i);
      if (std::isnan(x) || std::isnan(y)) {
        nan_diff += std::isnan(x) != std::isnan(y);
        continue;
      }
      const double lim = c.int8_out ? 1.0 : kMaxUlps * ulp_fp16(y) + 1e-6;
      if (!(std::fabs(x - y) <= lim) && bad++ < 4) ADD_FAILURE() << where << " out " << i << ": " << x << " vs " << y;
    }
    EXPECT_EQ(nan_diff, 0) << where << ": NaN positions differ from the reference";
    expect_same_lse(where, op->lse, ref->lse, 1e-5, 1e-5);
  });
  return {rout, ref->lse.as(DType::kFloat64)};
}

FqCase fq_case(bool int8_out) {
  FqCase c = fq(int8_out ? "fq_gqa2_bsnd_int8_out" : "fq_gqa2_bsnd_fp16_out", 2, 4, 2, 9, 150, 64, "BSND");
  c.pse = true;
  c.deq_dtype = F32;  // FP32 scales carry NaN / inf as they are
  c.int8_out = int8_out;
  c.offset = int8_out;
  c.channel = false;  // FIA-26: per-channel post-quant excludes softmaxLse
  return c;
}

// pseShift NaN / +inf at (b, n, i, j): row (b, n, i) is NaN (an INT8 output: 0); -inf masks that
// one position (the row stays finite, as the reference's exp(-inf)), at every position it makes
// the row NaN; denormals: finite.
TEST(FiaNonFiniteQuant, FullQuantPseNonFinite) {
  for (bool int8_out : {false, true}) {
    const FqCase c = fq_case(int8_out);
    SCOPED_TRACE(c.name);
    const int64_t b = 1, n = 2, i = 4, row = ((b * c.N + n) * c.Sq + i) * c.D;
    for (double x : {kNaN, kInf}) {
      FqResult r = fq_check(c, [&](FqData& d) { d.pse.set({b, n, i, 17}, x); });
      EXPECT_EQ(count_nan(r.lse), 1);
      if (int8_out) {
        for (int64_t e = 0; e < c.D; ++e) EXPECT_EQ(r.out.flat(row + e), 0.0) << "a NaN quantises to 0";
      } else {
        EXPECT_EQ(nan_in(r.out, row, c.D), c.D);
        EXPECT_EQ(count_nan(r.out), c.D);
      }
    }
    FqResult r = fq_check(c, [&](FqData& d) {
      d.pse.set({b, n, i, 17}, -kInf);
      d.pse.set({0, 0, 0, 3}, 1e-7);  // FP16 denormal
    });
    EXPECT_EQ(count_nan(r.out) + count_nan(r.lse), 0);
    // -inf at every position of row (b, n, i): all its valid scores -inf, NaN as the reference's
    // exp(-inf - -inf) (an INT8 output: 0), lse NaN; at the first 100 of 150 positions: finite.
    for (int64_t upto : {c.Skv, int64_t{100}}) {
      FqResult ra = fq_check(c, [&](FqData& d) {
        for (int64_t j = 0; j < upto; ++j) d.pse.set({b, n, i, j}, -kInf);
      });
      EXPECT_EQ(count_nan(ra.lse), upto == c.Skv ? 1 : 0);
      if (!int8_out) {
        EXPECT_EQ(count_nan(ra.out), upto == c.Skv ? c.D : 0);
      }
    }
  }
}

// deqScale1 NaN: every score is NaN, every row NaN (out and lse; an INT8 output 0); deqScale2 NaN:
// the output only (lse finite). quantScale1 NaN: P = int8(fp16(e) * NaN) is 0 by the INT8
// conversion rule (NaN -> 0, docs/numerics.md), in the reference as in the kernels: the rows are
// P x V = 0, i.e. FP16 output 0 (an INT8 output the quantised 0), lse finite. This is the one
// place where a NaN parameter yields finite zeros: the INT8 P stage of the vendor's pipeline.
TEST(FiaNonFiniteQuant, FullQuantScalesNaN) {
  for (bool int8_out : {false, true}) {
    const FqCase c = fq_case(int8_out);
    SCOPED_TRACE(c.name);
    const int64_t rows = c.B * c.N * c.Sq;
    FqResult r1 = fq_check(c, [](FqData& d) { d.deq1.set_flat(0, kNaN); });
    EXPECT_EQ(count_nan(r1.lse), rows);
    FqResult r2 = fq_check(c, [](FqData& d) { d.deq2.set_flat(0, kNaN); });
    EXPECT_EQ(count_nan(r2.lse), 0);
    FqResult r3 = fq_check(c, [](FqData& d) { d.qs1.set_flat(0, kNaN); });
    EXPECT_EQ(count_nan(r3.lse), 0);
    EXPECT_EQ(count_nan(r3.out), 0);
    if (!int8_out) {
      EXPECT_EQ(count_nan(r1.out), r1.out.numel());
      EXPECT_EQ(count_nan(r2.out), r2.out.numel());
      for (int64_t i = 0; i < r3.out.numel(); ++i) ASSERT_EQ(r3.out.flat(i), 0.0) << i;
    } else {
      for (const FqResult* r : {&r1, &r2})
        for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_EQ(r->out.flat(i), 0.0) << i;
    }
  }
}

// ---- MLA full quantisation ----

struct MqResult {
  HostTensor out, lse;
};
MqResult mq_check(const MqCase& c, const std::function<void(MqData&)>& poison) {
  auto d = mq_make(c);
  poison(*d);
  HostTensor ref_out(DType::kFloat64, d->out_dims), ref_lse(DType::kFloat32, d->lse_dims);
  const TensorView rlv = ref_lse.view();
  if (fused_infer_attention_score_v4_ref(mq_params(*d, ref_out.view(), &rlv)) != kSuccess) {
    ADD_FAILURE() << c.name << ": reference: " << last_error_message();
    return {};
  }
  for_each_isa_and_threads([&](Isa isa, int t) {
    const std::string where = c.name + " isa=" + isa_name(isa) + " threads=" + std::to_string(t);
    HostTensor out(BF, d->out_dims, 0.0), lse(DType::kFloat32, d->lse_dims, 0.0);
    const TensorView lv = lse.view();
    const Status s = run_fia_cpp(mq_params(*d, out.view(), &lv));
    if (s != kSuccess) {
      ADD_FAILURE() << where << ": " << last_error_message();
      return;
    }
    // test_fia_mla_quant's bound: 7.8e-3 |ref| + 1e-2 rms(ref)
    expect_same_nonfinite(where, out, ref_out, Tolerance{7.8e-3, 1e-2, 1, 0, 0, 0, 0, 0});
    expect_same_lse(where, lse, ref_lse, 1e-4, 1e-5);
  });
  return {ref_out, ref_lse.as(DType::kFloat64)};
}

std::vector<MqCase> mq_cases() {
  MqCase a;
  a.name = "mla_quant_decode_bsnd_n8";
  a.layout = "BSND";
  a.B = 2, a.N = 8, a.QS = 1, a.act_kv = {300, 70}, a.bs = 64;
  MqCase b = a;
  b.name = "mla_quant_mtp_bsnd_qs2_n4";
  b.N = 4, b.QS = 2, b.act_kv = {200, 40}, b.bs = 32;
  b.separate_v = true;
  return {a, b};
}

// queryRope NaN / +inf at (b, s, n) or dequantScaleQuery NaN / inf there: row (b, s, n) only.
TEST(FiaNonFiniteQuant, MlaQuantQueryRowNonFinite) {
  for (const MqCase& c : mq_cases()) {
    const int64_t b = 1, s = c.QS - 1, n = 2, row = ((b * c.QS + s) * c.N + n) * 512;
    for (double x : {kNaN, kInf, -kInf}) {
      SCOPED_TRACE(c.name + " " + std::to_string(x));
      MqResult r = mq_check(c, [&](MqData& d) { d.qr.set({b, s, n, 5}, x); });
      EXPECT_EQ(nan_in(r.out, row, 512), 512);
      EXPECT_EQ(count_nan(r.out), 512);
      EXPECT_EQ(count_nan(r.lse), 1);
      MqResult r2 = mq_check(c, [&](MqData& d) { d.dq.set({b, s, n}, x); });
      EXPECT_EQ(nan_in(r2.out, row, 512), 512);
      EXPECT_EQ(count_nan(r2.out), 512);
    }
  }
}

// keyRope NaN at a position of batch 0: every head of batch 0 (all rows attend it); the key
// scale NaN: every row; the value scale NaN: every output element, lse finite.
TEST(FiaNonFiniteQuant, MlaQuantCacheAndScalesNaN) {
  for (const MqCase& c : mq_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t j = 3, rows0 = c.QS * c.N;
    MqResult r = mq_check(c, [&](MqData& d) {
      const int64_t blk = static_cast<int64_t>(d.bt.get({0, j / c.bs}));
      d.kr.set({blk, 0, 1, j % c.bs, 2}, kNaN);
    });
    EXPECT_EQ(count_nan(r.out), rows0 * 512);
    EXPECT_EQ(count_nan(r.lse), rows0);
    MqResult r2 = mq_check(c, [](MqData& d) { d.ks.set_flat(0, kNaN); });
    EXPECT_EQ(count_nan(r2.lse), r2.lse.numel());
    MqResult r3 = mq_check(c, [](MqData& d) { d.vs.set_flat(0, kNaN); });
    EXPECT_EQ(count_nan(r3.out), r3.out.numel());
    EXPECT_EQ(count_nan(r3.lse), 0);
    MqResult r4 = mq_check(c, [](MqData& d) { d.dq.set_flat(1, 1e-40); });  // a denormal scale
    EXPECT_EQ(count_nan(r4.out), 0);
  }
}

// keyRope +inf at rope channel 18 of every position of batch 0 and queryRope there negative for
// every head of batch 0: every score of batch 0 is -inf, its rows NaN (out and lse), as the
// reference's exp(-inf - -inf); at the first half of the positions only: weight 0, finite rows.
TEST(FiaNonFiniteQuant, MlaQuantAllMinusInfScores) {
  for (const MqCase& c : mq_cases()) {
    SCOPED_TRACE(c.name);
    const int64_t rows0 = c.QS * c.N, len = c.act_kv[0];
    for (int64_t upto : {len, len / 2}) {
      MqResult r = mq_check(c, [&](MqData& d) {
        for (int64_t j = 0; j < upto; ++j) {
          const int64_t blk = static_cast<int64_t>(d.bt.get({0, j / c.bs}));
          d.kr.set({blk, 0, 1, j % c.bs, 2}, kInf);
        }
        for (int64_t s = 0; s < c.QS; ++s)
          for (int64_t n = 0; n < c.N; ++n) d.qr.set({0, s, n, 18}, -std::fabs(d.qr.get({0, s, n, 18})) - 0.125);
      });
      EXPECT_EQ(count_nan(r.out), upto == len ? rows0 * 512 : 0);
      EXPECT_EQ(count_nan(r.lse), upto == len ? rows0 : 0);
    }
  }
}

// ---- FP16 high-performance softmax (innerPrecise 1, FP16 prefill: the panel path) and
//      post-quant INT8 output ----

// `c` (canonical data poisoned by `poison`, params adjusted by `adjust` for both runs) against
// the reference under every kernel configuration and 1 / 2 threads. INT8 output: |op - ref| <= 1.
struct FResult {
  HostTensor out, lse;
};
FResult float_check(const FiaCase& c, const std::function<void(fia_test::FiaCanonical&)>& poison,
                    const std::function<void(FiaParams&)>& adjust) {
  auto data = make_case_data(c);
  poison(data->canon);
  auto ref = fia_test::build_fia_run(data->canon, [&] {
    FiaRunConfig r = data->cfg;
    if (r.out_dtype != DType::kInt8) r.out_dtype = DType::kFloat64;
    return r;
  }());
  if (ref == nullptr) {
    ADD_FAILURE() << c.name << ": reference run not built";
    return {};
  }
  adjust(ref->params);
  if (fused_infer_attention_score_v4_ref(ref->params) != kSuccess) {
    ADD_FAILURE() << c.name << ": reference: " << last_error_message();
    return {};
  }
  FResult r{ref->out_bnsd(), ref->lse_bns()};
  const bool int8 = c.cfg.out_dtype == DType::kInt8;
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    for (int t : {1, 2}) {
      const std::string where = c.name + " isa=" + isa_name(k.isa) + " " + k.override_rows + " threads=" +
                                std::to_string(t);
      auto op = fia_test::build_fia_run(data->canon, data->cfg);
      if (op == nullptr) {
        ADD_FAILURE() << where << ": not built";
        continue;
      }
      adjust(op->params);
      set_num_threads(t);
      const Status s = run_fia_cpp(op->params);
      set_num_threads(0);
      if (s != kSuccess) {
        ADD_FAILURE() << where << ": " << last_error_message();
        continue;
      }
      const HostTensor a = op->out_bnsd();
      if (int8) {
        int64_t bad = 0;
        for (int64_t i = 0; i < a.numel(); ++i)
          if (!(std::fabs(a.flat(i) - r.out.flat(i)) <= 1.0) && bad++ < 4)
            ADD_FAILURE() << where << " out " << i << ": " << a.flat(i) << " vs " << r.out.flat(i);
      } else {
        expect_same_nonfinite(where, a, r.out, fia_out_tolerance(c.dtype));
      }
      if (c.cfg.lse) expect_same_lse(where, op->lse_bns(), r.lse, 1e-4, 1e-5);
    }
  }
  set_kernel_override("");
  reset_isa();
  return r;
}

// innerPrecise 1 on an FP16 prefill: the FP16 softmax (scores, P and the running output in FP16,
// 128-position blocks). NaN / +inf / -inf in a query element: that row is NaN; NaN in a key
// element: the rows of its group that attend it; NaN in a value element: that column; denormals:
// finite. The KV length (300) spans three softmax blocks.
TEST(FiaNonFiniteQuant, Fp16HighPerformanceSoftmax) {
  FiaCase c = fia_case("fp16_hp_softmax_prefill_bnsd", DType::kFloat16, 2, 4, 2, 9, 300, 64, "BNSD");
  const auto hp = [](FiaParams& p) { p.inner_precise = 1; };
  const int64_t G = c.N / c.KVN;
  for (double x : {kNaN, kInf, -kInf}) {
    SCOPED_TRACE("query " + std::to_string(x));
    FResult r = float_check(c, [&](fia_test::FiaCanonical& k) { k.q.set({1, 1, 4, 3}, x); }, hp);
    EXPECT_EQ(nan_in(r.out, ((1 * c.N + 1) * c.Sq + 4) * c.Dv, c.Dv), c.Dv);
    EXPECT_EQ(count_nan(r.out), c.Dv);
    EXPECT_EQ(count_nan(r.lse), 1);
  }
  {
    SCOPED_TRACE("key NaN in the second softmax block");
    FResult r = float_check(c, [&](fia_test::FiaCanonical& k) { k.k.set({0, 1, 200, 3}, kNaN); }, hp);
    EXPECT_EQ(count_nan(r.out), G * c.Sq * c.Dv);
    EXPECT_EQ(count_nan(r.lse), G * c.Sq);
  }
  {
    SCOPED_TRACE("value NaN");
    FResult r = float_check(c, [&](fia_test::FiaCanonical& k) { k.v.set({1, 0, 7, 5}, kNaN); }, hp);
    EXPECT_EQ(count_nan(r.out), G * c.Sq);
    EXPECT_EQ(count_nan(r.lse), 0);
  }
  {
    SCOPED_TRACE("denormals");
    FResult r = float_check(c, [&](fia_test::FiaCanonical& k) {
      for (int64_t d = 0; d < c.D; ++d) k.q.set({0, 0, 0, d}, d % 2 ? 6e-8 : -6e-8);
      for (int64_t d = 0; d < c.D; ++d) k.k.set({1, 0, 3, d}, 6e-8);
    }, hp);
    EXPECT_EQ(count_nan(r.out), 0);
  }
}

// Post-quant INT8 output (quantScale2 / quantOffset2): a NaN row quantises to 0 in every element
// (not to the offset: NaN gives 0 before the offset matters, ref::post_quant_int8 and
// attn_post_quant), its softmaxLse is NaN; the other rows match the reference; a NaN per-channel
// scale gives 0 in its column of every row.
TEST(FiaNonFiniteQuant, PostQuantInt8Output) {
  std::vector<FiaCase> v;
  FiaCase c = fia_case("pq_decode_gqa_bsnd_bf16", BF, 2, 8, 2, 1, 70, 64, "BSND");
  v.push_back(c);
  c = fia_case("pq_prefill_bnsd_fp16", DType::kFloat16, 2, 4, 2, 9, 40, 32, "BNSD");
  v.push_back(c);
  for (FiaCase x : v) {
    x.cfg.out_dtype = DType::kInt8;
    SCOPED_TRACE(x.name);
    HostTensor sc(DType::kFloat32, {1}, 60.0), of(DType::kFloat32, {1}, 5.0);
    HostTensor scc(DType::kFloat32, {x.N, x.Dv}, 60.0);
    TensorView sc_v = sc.view(), of_v = of.view(), scc_v = scc.view();
    const auto pq = [&](FiaParams& p) {
      p.quant_scale2 = &sc_v;
      p.quant_offset2 = &of_v;
    };
    const int64_t b = 1, n = 1, i = x.Sq - 1, row = ((b * x.N + n) * x.Sq + i) * x.Dv;
    for (double val : {kNaN, kInf}) {
      FResult r = float_check(x, [&](fia_test::FiaCanonical& k) { k.q.set({b, n, i, 3}, val); }, pq);
      for (int64_t d = 0; d < x.Dv; ++d) EXPECT_EQ(r.out.flat(row + d), 0.0) << d;
      EXPECT_EQ(count_nan(r.lse), 1);
    }
    scc.set_flat(3 * x.Dv + 6, kNaN);  // head 3, channel 6
    FiaCase y = x;
    y.cfg.lse = false;  // FIA-26: per-channel post-quant excludes softmaxLse
    FResult r = float_check(y, [](fia_test::FiaCanonical&) {}, [&](FiaParams& p) {
      p.quant_scale2 = &scc_v;
      p.quant_offset2 = nullptr;
    });
    for (int64_t bb = 0; bb < x.B; ++bb)
      for (int64_t s = 0; s < x.Sq; ++s) EXPECT_EQ(r.out.flat(((bb * x.N + 3) * x.Sq + s) * x.Dv + 6), 0.0);
  }
}

}  // namespace
}  // namespace mlaops::testing
