// Property tests of the float64 FusedInferAttentionScoreV4 reference
// (reference/fia/fia_ref.cpp), pseShift and learnableSink: hand-computed
// values, a brute-force softmax over the canonical tensors (TND, paged, GQA, decode, MLA rope,
// INT8 KV), ALiBi, equivalences (zero pse, pse as a mask, constant pse, -inf and huge sinks, the
// sink as an extra zero-value position) and the rejection of every pse / sink it cannot read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "mlaops/tensor_view.h"
#include "reference/fia/fia_ref.h"
#include "fia_ref_checks.h"
#include "testkit/fia_test_data.h"

namespace mlaops {
namespace {

using namespace fia_test;  // the case builders and checks (fia_test_data.h, fia_ref_checks.h)

using MaskFn = std::function<bool(int64_t b, int64_t i, int64_t j)>;
const MaskFn kNoMask = [](int64_t, int64_t, int64_t) { return false; };

// Row (b, n, i) by brute force from the canonical tensors, as a softmax over the logits
// l = scale * (q.k + qr.kr) + pse of the unmasked positions j < len_kv(b), and the sink logit:
// lse = log sum exp(l), out = sum_j exp(l_j - lse) v_j. No valid position: 0 / +inf.
struct BruteRow {
  std::vector<double> out;
  double lse = kInf;
};
BruteRow brute_row(const FiaCanonical& c, double scale, int64_t b, int64_t n, int64_t i, const MaskFn& masked) {
  const int64_t h = n / (c.N / c.KVN);
  std::vector<double> logit;
  std::vector<int64_t> pos;
  for (int64_t j = 0; j < c.len_kv(b); ++j) {
    if (masked(b, i, j)) continue;
    double dot = 0;
    for (int64_t d = 0; d < c.D; ++d) dot += c.q.get({b, n, i, d}) * c.k.get({b, h, j, d});
    for (int64_t d = 0; d < c.Dr; ++d) dot += c.qr.get({b, n, i, d}) * c.kr.get({b, h, j, d});
    logit.push_back(scale * dot + c.pse_at(b, n, i, j));
    pos.push_back(j);
  }
  BruteRow r;
  r.out.assign(static_cast<size_t>(c.Dv), 0.0);
  if (logit.empty()) return r;
  double top = -kInf;
  for (double l : logit) top = std::max(top, l);
  if (c.has_sink()) top = std::max(top, c.sink.get({n}));
  double sum = 0;
  for (double l : logit) sum += std::exp(l - top);
  if (c.has_sink()) sum += std::exp(c.sink.get({n}) - top);
  r.lse = top + std::log(sum);
  for (size_t k = 0; k < logit.size(); ++k) {
    const double p = std::exp(logit[k] - r.lse);
    for (int64_t d = 0; d < c.Dv; ++d) r.out[static_cast<size_t>(d)] += p * c.v.get({b, h, pos[k], d});
  }
  return r;
}

// The run's valid rows against brute_row (FP64 output: 1e-12 relative; lse FP32); padded rows
// 0 / +inf.
void expect_brute(const FiaCanonical& c, const FiaRun& r, double scale, const MaskFn& masked, const std::string& what) {
  const HostTensor out = r.out_bnsd(), lse = r.lse_bns();
  int bad = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t i = 0; i < c.Sq; ++i) {
        const BruteRow want = i < c.len_q(b) ? brute_row(c, scale, b, n, i, masked) : BruteRow{};
        const double got_lse = lse.get({b, n, i, 0});
        const bool lse_ok = std::isinf(want.lse) ? got_lse == want.lse
                                                 : std::fabs(got_lse - want.lse) <= 2e-7 * (1 + std::fabs(want.lse));
        if (!lse_ok && bad++ < 5) ADD_FAILURE() << what << ": lse " << b << "," << n << "," << i << ": " << got_lse << " vs " << want.lse;
        for (int64_t d = 0; d < c.Dv; ++d) {
          const double w = want.out.empty() ? 0.0 : want.out[static_cast<size_t>(d)];
          const double g = out.get({b, n, i, d});
          if (!(std::fabs(g - w) <= 1e-12 * (1 + std::fabs(w))) && bad++ < 5)
            ADD_FAILURE() << what << ": out " << b << "," << n << "," << i << "," << d << ": " << g << " vs " << w;
        }
      }
}

// A run configuration; the FP64 output keeps the unrounded values for tight comparisons.
FiaRunConfig config(const char* layout, double scale, int64_t sparse_mode = 0, const HostTensor* mask = nullptr,
                    DType out = DType::kFloat64) {
  FiaRunConfig cfg;
  cfg.layout = layout, cfg.scale = scale, cfg.out_dtype = out;
  cfg.sparse_mode = sparse_mode, cfg.mask = mask;
  return cfg;
}

// Every element NaN (the builders fill outputs with NaN: nothing was written).
bool all_nan(const HostTensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isnan(t.flat(i))) return false;
  return true;
}

// ------------------------------------------------------------------------------------------
// pseShift
// ------------------------------------------------------------------------------------------

TEST(FiaRefPse, HandComputedTwoRowsThreeKeys) {
  // q0 = [1, 0], q1 = [0, 1]; keys [1, 0], [0, 1], [1, 1]; scale 0.5; pse rows [0.5, -1, 0] and
  // [1, 0.25, -0.5] => scores [1, -1, 0.5] and [1, 0.75, 0].
  FiaCanonical c = make_canonical(DType::kBFloat16, 1, 1, 1, 2, 3, 2, 2, 0, 101);
  const double q[2][2] = {{1, 0}, {0, 1}}, k[3][2] = {{1, 0}, {0, 1}, {1, 1}}, v[3][2] = {{1, 2}, {-3, 4}, {5, 0.5}};
  const double pse[2][3] = {{0.5, -1, 0}, {1, 0.25, -0.5}}, s[2][3] = {{1, -1, 0.5}, {1, 0.75, 0}};
  for (int i = 0; i < 2; ++i)
    for (int d = 0; d < 2; ++d) c.q.set({0, 0, i, d}, q[i][d]);
  for (int j = 0; j < 3; ++j)
    for (int d = 0; d < 2; ++d) {
      c.k.set({0, 0, j, d}, k[j][d]);
      c.v.set({0, 0, j, d}, v[j][d]);
    }
  for (const DType pse_dt : {DType::kBFloat16, DType::kFloat16}) {  // read exactly, whatever the query dtype
    c.pse = HostTensor(pse_dt, {1, 1, 3, 5}, kNaN);  // one spare row and two spare columns of NaN
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) c.pse.set({0, 0, i, j}, pse[i][j]);
    FiaRunConfig cfg = config("BSH", 0.5);
    auto r = run_ok(c, cfg);
    for (int i = 0; i < 2; ++i) {
      double den = 0, o[2] = {0, 0};
      for (int j = 0; j < 3; ++j) {
        den += std::exp(s[i][j]);
        for (int d = 0; d < 2; ++d) o[d] += std::exp(s[i][j]) * v[j][d];
      }
      for (int d = 0; d < 2; ++d) EXPECT_NEAR(r->out.get({0, i, d}), o[d] / den, 1e-15) << i << "," << d;
      EXPECT_FLOAT_EQ(static_cast<float>(r->lse.get({0, 0, i, 0})), static_cast<float>(std::log(den)));
    }
  }
}

TEST(FiaRefPse, BroadcastEqualsPerBatchCopies) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 4, 2, 4, 9, 16, 16, 0, 103);
  c.set_lengths({4, 2, 3}, {9, 5, 7});
  set_random_pse(c, /*broadcast=*/true, 104);
  ASSERT_TRUE(c.pse_broadcast());
  ASSERT_EQ(c.pse.dims, (std::vector<int64_t>{1, 4, 5, 12}));
  FiaCanonical per = c;
  per.pse = HostTensor(c.dtype, {c.B, c.N, c.pse.dims[2], c.pse.dims[3]});
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t i = 0; i < c.pse.dims[2]; ++i)
        for (int64_t j = 0; j < c.pse.dims[3]; ++j) per.pse.set({b, n, i, j}, c.pse.get({0, n, i, j}));
  per.poison_pse();
  ASSERT_FALSE(per.pse_broadcast());
  for (const char* layout : {"BSH", "BNSD_NBSD", "TND"}) {
    FiaRunConfig cfg = config(layout, 0.3);
    auto a = run_ok(c, cfg);
    auto b = run_ok(per, cfg);
    EXPECT_FALSE(has_nan(a->out)) << layout;  // no NaN padding element was read
    expect_same(a->out_bnsd(), b->out_bnsd(), std::string(layout) + " out");
    expect_same(a->lse_bns(), b->lse_bns(), std::string(layout) + " lse");
    expect_brute(c, *a, 0.3, kNoMask, layout);
  }
}

TEST(FiaRefPse, PagedGqaTndWithCausalMask) {
  FiaCanonical c = make_canonical(DType::kFloat16, 3, 6, 2, 4, 40, 32, 16, 0, 105);
  c.set_lengths({4, 1, 3}, {40, 17, 2});  // batch 2: S1 > S2 leaves row 0 fully masked
  set_random_pse(c, /*broadcast=*/false, 106, -3.0, 3.0);
  const HostTensor tmpl = template_mask_2048(DType::kBool, 2);
  const MaskFn causal = [&](int64_t b, int64_t i, int64_t j) { return j > i + c.len_kv(b) - c.len_q(b); };
  FiaRunConfig cfg = config("TND", 0.2, 3, &tmpl);
  cfg.paged = true;
  cfg.cache_rank = 4;
  cfg.block_size = 16;
  auto paged = run_ok(c, cfg);
  EXPECT_FALSE(has_nan(paged->out));
  expect_brute(c, *paged, 0.2, causal, "TND paged");
  EXPECT_EQ(paged->lse_bns().get({2, 0, 0, 0}), kInf);
  // The same problem contiguous in BSH, and as MHA with repeated KV heads.
  cfg.paged = false;
  cfg.layout = "BSH";
  auto bsh = run_ok(c, cfg);
  expect_same(paged->out_bnsd(), bsh->out_bnsd(), "paged TND vs BSH");
  expect_same(paged->lse_bns(), bsh->lse_bns(), "lse");
  auto mha = run_ok(expand_kv_heads(c), cfg);
  expect_same(mha->out_bnsd(), bsh->out_bnsd(), "GQA vs MHA");
  // NZ pool, BnBsH pool.
  cfg.layout = "TND_NTD";
  cfg.paged = true;
  for (const int rank : {3, 5}) {
    cfg.cache_rank = rank;
    auto r = run_ok(c, cfg);
    expect_same(r->out_bnsd(), bsh->out_bnsd(), "cache rank " + std::to_string(rank));
  }
}

TEST(FiaRefPse, DecodeAppliesPseAndIgnoresTheSparseMode) {
  // Q_S = 1, no rope, Q_D = V_D: the decode rule ignores sparseMode 2 (which would mask all but
  // key 0) but not the pse (B or 1, N, 1, S2p).
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 4, 1, 1, 11, 16, 16, 0, 107);
  c.set_lengths({}, {11, 6});
  const HostTensor tmpl = template_mask_2048(DType::kBool, 2);
  for (const bool broadcast : {false, true}) {
    set_random_pse(c, broadcast, 108, -2.0, 2.0, /*pad_rows=*/0, /*pad_cols=*/5);
    ASSERT_EQ(c.pse.dims[2], 1);
    FiaRunConfig cfg = config("BNSD", 0.25, 2, &tmpl);
    auto r = run_ok(c, cfg);
    expect_brute(c, *r, 0.25, kNoMask, broadcast ? "broadcast" : "per batch");
    // An explicit (B, KV_S) mask still applies.
    const HostTensor m2 = make_mask3(DType::kBool, c.B, 1, c.Skv, [](int64_t b, int64_t, int64_t j) {
                            return j % 3 == static_cast<int64_t>(b);
                          }).reshaped({c.B, c.Skv});
    cfg.sparse_mode = 0;
    cfg.mask = &m2;
    auto rm = run_ok(c, cfg);
    expect_brute(c, *rm, 0.25, [](int64_t b, int64_t, int64_t j) { return j % 3 == b; }, "decode with a mask");
  }
}

TEST(FiaRefPse, MlaRopeAndInt8KvAreAccepted) {
  // MLA: value = the key latent, rope in the same dot product; pse added as usual.
  FiaCanonical mla = make_canonical(DType::kBFloat16, 2, 4, 1, 3, 10, 32, 32, 8, 109);
  mla.v = mla.k;
  mla.set_lengths({3, 2}, {10, 6});
  set_random_pse(mla, false, 110);
  for (const char* layout : {"BSND", "TND_NTD"}) {
    FiaRunConfig cfg = config(layout, 0.1);
    cfg.value_is_key = true;
    auto r = run_ok(mla, cfg);
    expect_brute(mla, *r, 0.1, kNoMask, layout);
  }
  // INT8 K/V with a per-tensor antiquant scale 0.5: the same as the BF16 problem holding the
  // dequantized values (exact in BF16), pse and sink included.
  FiaCanonical deq = make_canonical(DType::kBFloat16, 2, 2, 1, 2, 7, 16, 16, 0, 111);
  FiaCanonical i8 = deq;
  std::mt19937 gen(112);
  std::uniform_int_distribution<int> iv(-8, 8);
  i8.k = HostTensor(DType::kInt8, deq.k.dims);
  i8.v = HostTensor(DType::kInt8, deq.v.dims);
  for (int64_t e = 0; e < deq.k.numel(); ++e) {
    const int x = iv(gen), y = iv(gen);
    i8.k.set_flat(e, x);
    i8.v.set_flat(e, y);
    deq.k.set_flat(e, 0.5 * x);
    deq.v.set_flat(e, 0.5 * y);
  }
  set_random_pse(deq, true, 113);
  set_random_sink(deq, 114);
  i8.pse = deq.pse;
  i8.sink = deq.sink;
  FiaRunConfig cfg = config("BSND", 0.4);
  auto want = run_ok(deq, cfg);
  auto r = build_fia_run(i8, cfg);
  const HostTensor scale(DType::kFloat32, {1}, 0.5);
  const TensorView sv = scale.view();
  r->params.key_antiquant_scale = &sv;
  r->params.value_antiquant_scale = &sv;
  ASSERT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess) << last_error_message();
  expect_same(r->out, want->out, "INT8 KV");
  expect_same(r->lse, want->lse, "INT8 KV lse");
}

TEST(FiaRefPse, AlibiSlopes) {
  const std::vector<double> s8 = alibi_slopes(8);
  ASSERT_EQ(s8.size(), 8u);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(s8[static_cast<size_t>(k)], std::ldexp(1.0, -(k + 1)));
  // N = 6: n2 = 4, m0 = 2^-2 -> 2^-2, 2^-4, 2^-6, 2^-8; then (2^-1)^1, (2^-1)^3.
  const std::vector<double> s6 = alibi_slopes(6);
  const double want6[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  ASSERT_EQ(s6.size(), 6u);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(s6[static_cast<size_t>(k)], want6[k]);
  // N = 12: n2 = 8 -> 2^-1 .. 2^-8; then (2^-0.5)^1, ^3, ^5, ^7.
  const std::vector<double> s12 = alibi_slopes(12);
  ASSERT_EQ(s12.size(), 12u);
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(s12[static_cast<size_t>(8 + k)], std::pow(2.0, -0.5 * (2 * k + 1)), 1e-16);
  EXPECT_EQ(alibi_slopes(1), std::vector<double>{std::ldexp(1.0, -8)});
}

TEST(FiaRefPse, AlibiFullBias) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 8, 8, 3, 7, 16, 16, 0, 115);
  c.set_lengths({2, 3}, {5, 7});
  set_alibi_pse(c);
  ASSERT_EQ(c.pse.dims, (std::vector<int64_t>{2, 8, 3, 7}));
  // Batch 0: S1 = 2, S2 = 5, head 0 slope 1/2: row 0 is -|j - 3| / 2, row 1 -|j - 4| / 2.
  const double row0[] = {-1.5, -1.0, -0.5, 0.0, -0.5}, row1[] = {-2.0, -1.5, -1.0, -0.5, 0.0};
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(c.pse.get({0, 0, 0, j}), row0[j]);
    EXPECT_EQ(c.pse.get({0, 0, 1, j}), row1[j]);
    EXPECT_TRUE(std::isnan(c.pse.get({0, 0, 2, j})));  // beyond S1 of batch 0
  }
  EXPECT_TRUE(std::isnan(c.pse.get({0, 3, 0, 5})));  // beyond S2 of batch 0
  EXPECT_EQ(c.pse.get({1, 7, 0, 0}), -4.0 / 256.0);  // batch 1: S2 - S1 = 4, head 7 slope 2^-8
  // The vendor's ALiBi call: sparse 0, no mask, innerPrecise 0.
  for (const char* layout : {"BNSD", "BSH"}) {
    FiaRunConfig cfg = config(layout, 0.25);
    auto r = run_ok(c, cfg);
    EXPECT_FALSE(has_nan(r->out));
    expect_brute(c, *r, 0.25, kNoMask, layout);
  }
}

TEST(FiaRefPse, ZeroPseEqualsNoPse) {
  FiaCanonical c = make_canonical(DType::kFloat16, 2, 4, 2, 3, 9, 16, 16, 0, 117);
  c.set_lengths({3, 2}, {9, 4});
  FiaRunConfig cfg = config("TND", 0.5, 0, nullptr, c.dtype);
  auto plain = run_ok(c, cfg);
  c.pse = HostTensor(c.dtype, {c.B, c.N, c.Sq, c.Skv});
  c.poison_pse();
  auto zero = run_ok(c, cfg);
  expect_same(zero->out, plain->out, "out");
  expect_same(zero->lse, plain->lse, "lse");
}

TEST(FiaRefPse, HugeNegativePseAtMaskedPositionsEqualsTheMask) {
  struct Case {
    DType dt;
    double neg;
  };
  for (const Case k : {Case{DType::kBFloat16, -1e30}, Case{DType::kFloat16, -65504.0}, Case{DType::kBFloat16, -kInf}}) {
    FiaCanonical c = make_canonical(k.dt, 2, 2, 1, 5, 8, 16, 16, 0, 119);
    c.set_lengths({5, 3}, {8, 6});
    // Every row keeps column 0.
    const auto rule = [](int64_t b, int64_t i, int64_t j) { return j > 0 && (j * 7 + i * 3 + b) % 4 == 0; };
    const HostTensor m = make_mask3(DType::kBool, c.B, c.Sq, c.Skv, rule);
    FiaRunConfig cfg = config("BSND", 0.6, 1, &m, c.dtype);
    auto masked = run_ok(c, cfg);
    c.pse = HostTensor(k.dt, {c.B, c.N, c.Sq, c.Skv});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t i = 0; i < c.Sq; ++i)
          for (int64_t j = 0; j < c.Skv; ++j) c.pse.set({b, n, i, j}, rule(b, i, j) ? k.neg : 0.0);
    c.poison_pse();
    cfg.sparse_mode = 0;
    cfg.mask = nullptr;
    auto biased = run_ok(c, cfg);
    expect_same(biased->out, masked->out, "out");
    expect_same(biased->lse, masked->lse, "lse");
  }
}

TEST(FiaRefPse, ConstantPerRowPseShiftsOnlyTheLse) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 3, 3, 4, 10, 16, 16, 0, 121);
  c.set_lengths({4, 3}, {10, 6});
  FiaRunConfig cfg = config("BNSD", 0.7);
  auto plain = run_ok(c, cfg);
  c.pse = HostTensor(c.dtype, {c.B, c.N, c.Sq, c.Skv});
  auto shift = [](int64_t b, int64_t n, int64_t i) { return 0.25 * static_cast<double>((b * 5 + n * 3 + i) % 9) - 1.0; };
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t i = 0; i < c.Sq; ++i)
        for (int64_t j = 0; j < c.Skv; ++j) c.pse.set({b, n, i, j}, shift(b, n, i));
  c.poison_pse();
  auto r = run_ok(c, cfg);
  expect_close(r->out, plain->out, 1e-13, "out");
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t i = 0; i < c.len_q(b); ++i) {
        const double want = plain->lse.get({b, n, i, 0}) + shift(b, n, i);
        EXPECT_NEAR(r->lse.get({b, n, i, 0}), want, 4e-7 * (1 + std::fabs(want))) << b << "," << n << "," << i;
      }
}

// ------------------------------------------------------------------------------------------
// learnableSink
// ------------------------------------------------------------------------------------------

TEST(FiaRefSink, HandComputed) {
  // q = [1, 0]; keys [1, 0], [0, 1]; scale 1 => scores 1, 0; sink 0.5 (below the max) and 2 (above).
  FiaCanonical c = make_canonical(DType::kBFloat16, 1, 1, 1, 1, 2, 2, 2, 0, 123);
  const double v[2][2] = {{1, 2}, {3, -4}};
  c.q.set({0, 0, 0, 0}, 1), c.q.set({0, 0, 0, 1}, 0);
  c.k.set({0, 0, 0, 0}, 1), c.k.set({0, 0, 0, 1}, 0), c.k.set({0, 0, 1, 0}, 0), c.k.set({0, 0, 1, 1}, 1);
  for (int j = 0; j < 2; ++j)
    for (int d = 0; d < 2; ++d) c.v.set({0, 0, j, d}, v[j][d]);
  for (const double sink : {0.5, 2.0}) {
    c.sink = HostTensor(DType::kBFloat16, {1}, sink);
    FiaRunConfig cfg = config("BSH", 1.0);
    auto r = run_ok(c, cfg);
    const double e0 = std::exp(1.0), e1 = 1.0, es = std::exp(sink), den = e0 + e1 + es;
    for (int d = 0; d < 2; ++d) EXPECT_NEAR(r->out.get({0, 0, d}), (e0 * v[0][d] + e1 * v[1][d]) / den, 1e-15);
    EXPECT_FLOAT_EQ(static_cast<float>(r->lse.get({0, 0, 0, 0})), static_cast<float>(std::log(den)));
  }
}

TEST(FiaRefSink, MinusInfinityEqualsNoSink) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 4, 2, 3, 9, 16, 16, 0, 125);
  c.set_lengths({3, 1}, {9, 5});
  FiaRunConfig cfg = config("TND", 0.5, 0, nullptr, c.dtype);
  auto plain = run_ok(c, cfg);
  c.sink = HostTensor(c.dtype, {c.N}, -kInf);
  auto r = run_ok(c, cfg);
  expect_same(r->out, plain->out, "out");
  expect_same(r->lse, plain->lse, "lse");
}

TEST(FiaRefSink, HugeSinkTakesAllTheWeight) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 2, 1, 2, 6, 16, 16, 0, 127);
  c.sink = HostTensor(c.dtype, {c.N}, 1e30);
  const double sink = c.sink.get({0});  // 1e30 in BF16
  FiaRunConfig cfg = config("BSH", 0.5, 0, nullptr, c.dtype);
  auto r = run_ok(c, cfg);
  for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_EQ(r->out.flat(i), 0.0);
  for (int64_t i = 0; i < r->lse.numel(); ++i) ASSERT_EQ(r->lse.flat(i), static_cast<double>(static_cast<float>(sink)));
}

TEST(FiaRefSink, RowsWithoutValidPositionsStayZeroAndInf) {
  // Batch 0: S1 = 4 > S2 = 2 under sparse 3 leaves rows 0, 1 fully masked; batch 1 has no KV;
  // batch 2 has padded rows 2, 3.
  FiaCanonical c = make_canonical(DType::kFloat16, 3, 2, 2, 4, 6, 16, 16, 0, 129);
  c.set_lengths({4, 3, 2}, {2, 0, 6});
  set_random_sink(c, 130, 1.0, 4.0);
  const HostTensor tmpl = template_mask_2048(DType::kBool, 3);
  FiaRunConfig cfg = config("BSND", 0.5, 3, &tmpl);
  auto r = run_ok(c, cfg);
  const HostTensor out = r->out_bnsd(), lse = r->lse_bns();
  struct Row {
    int64_t b, i;
  };
  for (const Row row : {Row{0, 0}, Row{0, 1}, Row{1, 0}, Row{1, 2}, Row{2, 2}, Row{2, 3}})
    for (int64_t n = 0; n < c.N; ++n) {
      EXPECT_EQ(lse.get({row.b, n, row.i, 0}), kInf) << row.b << "," << row.i;
      for (int64_t d = 0; d < c.Dv; ++d) EXPECT_EQ(out.get({row.b, n, row.i, d}), 0.0);
    }
  expect_brute(c, *r, 0.5, [&](int64_t b, int64_t i, int64_t j) { return j > i + c.len_kv(b) - c.len_q(b); }, "sink");
}

TEST(FiaRefSink, EqualsAnExtraPositionWithZeroValue) {
  // softmax over [s_0 .. s_{S2-1}, sink[n]] with a zero value row for the sink: append one KV
  // position per batch whose score is sink[n] (q gets a one-hot dim per head, the extra key holds
  // the sinks there; scale 1) and whose value is 0.
  const int64_t B = 2, N = 4, KVN = 2, Sq = 3, Skv = 6, D = 16;
  FiaCanonical c = make_canonical(DType::kBFloat16, B, N, KVN, Sq, Skv, D, D, 0, 131);
  c.set_lengths({3, 2}, {6, 4});
  set_random_sink(c, 132, -1.0, 3.0);
  FiaCanonical x = make_canonical(DType::kBFloat16, B, N, KVN, Sq, Skv + 1, D + N, D, 0, 133);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < Sq; ++i)
        for (int64_t d = 0; d < D + N; ++d) x.q.set({b, n, i, d}, d < D ? c.q.get({b, n, i, d}) : (d - D == n ? 1.0 : 0.0));
    for (int64_t h = 0; h < KVN; ++h) {
      const int64_t s2 = c.len_kv(b);
      for (int64_t j = 0; j <= s2; ++j)
        for (int64_t d = 0; d < D + N; ++d) {
          const double kv = j < s2 ? (d < D ? c.k.get({b, h, j, d}) : 0.0) : (d < D ? 0.0 : c.sink.get({d - D}));
          x.k.set({b, h, j, d}, kv);
          if (d < D) x.v.set({b, h, j, d}, j < s2 ? c.v.get({b, h, j, d}) : 0.0);
        }
    }
  }
  x.set_lengths({3, 2}, {7, 5});
  FiaRunConfig cfg = config("BSH", 1.0);
  auto with_sink = run_ok(c, cfg);
  auto extra = run_ok(x, cfg);
  expect_close(with_sink->out, extra->out, 1e-14, "out");
  expect_close(with_sink->lse, extra->lse, 0.0, "lse");
}

TEST(FiaRefPseSink, TogetherOnPagedTnd) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 4, 1, 3, 33, 16, 16, 0, 135);
  c.set_lengths({3, 2, 1}, {33, 9, 20});
  set_random_pse(c, false, 136);
  set_random_sink(c, 137);
  FiaRunConfig cfg = config("TND", 0.3);
  cfg.paged = true;
  cfg.cache_rank = 5;
  cfg.block_size = 16;
  auto r = run_ok(c, cfg);
  expect_brute(c, *r, 0.3, kNoMask, "pse + sink");
  // Either one left out: different results, each its own brute force.
  cfg.pass_sink = false;
  auto no_sink = run_ok(c, cfg);
  FiaCanonical c_pse = c;
  c_pse.sink = HostTensor();
  expect_brute(c_pse, *no_sink, 0.3, kNoMask, "pse only");
  cfg.pass_sink = true;
  cfg.pass_pse = false;
  auto no_pse = run_ok(c, cfg);
  FiaCanonical c_sink = c;
  c_sink.pse = HostTensor();
  expect_brute(c_sink, *no_pse, 0.3, kNoMask, "sink only");
}

// ------------------------------------------------------------------------------------------
// Rejections: message names the parameter, nothing written
// ------------------------------------------------------------------------------------------

void expect_rejected(FiaRun& r, Status want, const char* name, const std::string& what) {
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r.params), want) << what;
  EXPECT_NE(std::string(last_error_message()).find(name), std::string::npos) << what << ": " << last_error_message();
  EXPECT_TRUE(all_nan(r.out)) << what;
  EXPECT_TRUE(all_nan(r.lse)) << what;
}

TEST(FiaRefPseSink, BadPseIsRejected) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 3, 4, 2, 4, 9, 16, 16, 0, 139);
  c.set_lengths({4, 2, 3}, {9, 5, 7});
  set_random_pse(c, false, 140, -1.0, 1.0, 0, 0);  // exactly (B, N, max actQ, max actKV)
  struct Bad {
    std::vector<int64_t> dims;
    DType dt;
    Status want;
    const char* what;
  };
  const Bad bads[] = {
      {{3, 4, 4 * 9}, DType::kBFloat16, kParamInvalid, "rank 3"},
      {{3, 4, 4, 9, 1}, DType::kBFloat16, kParamInvalid, "rank 5"},
      {{2, 4, 4, 9}, DType::kBFloat16, kParamInvalid, "dim 0 neither B nor 1"},
      {{3, 2, 4, 9}, DType::kBFloat16, kParamInvalid, "dim 1 not N"},
      {{3, 4, 3, 9}, DType::kBFloat16, kParamInvalid, "fewer rows than max actQ"},
      {{3, 4, 4, 8}, DType::kBFloat16, kParamInvalid, "fewer columns than max actKV"},
      {{3, 4, 4, 9}, DType::kFloat32, kParamInvalid, "FLOAT"},
      {{3, 4, 4, 9}, DType::kInt8, kParamInvalid, "INT8"},
      {{3, 4, -4, 9}, DType::kBFloat16, kParamInvalid, "negative dim"},
  };
  for (const Bad& bad : bads) {
    auto r = build_fia_run(c, FiaRunConfig{});
    r->pse_view = make_view(r->pse.data(), bad.dt, bad.dims.data(), static_cast<int>(bad.dims.size()));
    expect_rejected(*r, bad.want, "pseShift", bad.what);
  }
  // Accepted as built; null data is kParamNullptr.
  auto r = build_fia_run(c, FiaRunConfig{});
  ASSERT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess) << last_error_message();
  r = build_fia_run(c, FiaRunConfig{});
  r->pse_view.data = nullptr;
  expect_rejected(*r, kParamNullptr, "pseShift", "null data");
}

TEST(FiaRefPseSink, BadSinkIsRejected) {
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 4, 2, 2, 5, 16, 16, 0, 141);
  set_random_sink(c, 142);
  struct Bad {
    std::vector<int64_t> dims;
    DType dt;
    const char* what;
  };
  const Bad bads[] = {
      {{1, 4}, DType::kBFloat16, "rank 2"},
      {{3}, DType::kBFloat16, "N - 1 elements"},
      {{4}, DType::kFloat32, "FLOAT"},
      {{4}, DType::kInt8, "INT8"},
  };
  for (const Bad& bad : bads) {
    auto r = build_fia_run(c, FiaRunConfig{});
    r->sink_view = make_view(r->sink.data(), bad.dt, bad.dims.data(), static_cast<int>(bad.dims.size()));
    expect_rejected(*r, kParamInvalid, "learnableSink", bad.what);
  }
  auto r = build_fia_run(c, FiaRunConfig{});
  r->sink_view.data = nullptr;
  expect_rejected(*r, kParamNullptr, "learnableSink", "null data");
  // FP16 sink with a BF16 query: read exactly, accepted.
  c.sink = c.sink.as(DType::kFloat16);
  r = build_fia_run(c, FiaRunConfig{});
  EXPECT_EQ(fused_infer_attention_score_v4_ref(r->params), kSuccess) << last_error_message();
}

TEST(FiaRefPseSink, EmptyKvStillGivesZerosAndInf) {
  // Empty key / value: zeros and +inf whatever the pse and the sink.
  FiaCanonical c = make_canonical(DType::kBFloat16, 2, 2, 2, 3, 0, 16, 16, 0, 143);
  set_random_pse(c, true, 144);
  set_random_sink(c, 145, 5.0, 6.0);
  auto r = run_ok(c, FiaRunConfig{});
  for (int64_t i = 0; i < r->out.numel(); ++i) ASSERT_EQ(r->out.flat(i), 0.0);
  for (int64_t i = 0; i < r->lse.numel(); ++i) ASSERT_EQ(r->lse.flat(i), kInf);
}

}  // namespace
}  // namespace mlaops
