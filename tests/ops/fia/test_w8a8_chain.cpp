// The W8A8 DeepSeek decode chain: MlaPrologV2 full quant with KV quant (INT8 weights and token
// rows, PA_NZ cache: INT8 latent cache, BF16 rope cache) writes the history of 3 requests
// (a "prefill" call over all their tokens), then a decode step (one token per request) writes
// the new slots and produces the INT8 query, the pre-divided queryRope and dequantScaleQNope;
// FusedInferAttentionScoreV4 MLA full quant consumes them (keyAntiquantScale =
// valueAntiquantScale = 1 / quantScaleCkv[0], docs/ops/mla_prolog.md and
// docs/ops/fused_infer_attention_score.md "MLA full quant"), under every ISA level and 1 / 2
// threads.
//   1. FIA against its float64 reference on the same quantised inputs: the operator bound.
//   2. FIA against the unquantised layer in float64 (this file): the same float weights
//      (W_int8 * dequantScaleW, x_int8 * dequantScaleX), no rounding or quantisation anywhere
//      (RmsNorm, the LoRA products, RoPE, the absorbed W_UK, attention with value = the
//      normalised latent). The difference is the chain's quantisation error (Cq dynamic quant,
//      BF16 query nope / rope, INT8 query per token x head, INT8 latent cache, BF16 output).
//      Measured (AMD EPYC Zen 5, every level and thread count): relative L2 error 3.12 %, smallest
//      cosine similarity of an output row 0.9951, max |d| 0.38 rms(out) (the float64 FIA
//      reference on the same quantised inputs: 3.12 %, 0.9951, 0.38, so FIA adds nothing visible:
//      its own difference to that reference is <= 0.025 rms). Per input, against the float64
//      layer: query (INT8 x dequantScaleQNope) |d| <= 0.46 of |q| <= 50, latent cache <= 1/32
//      (half an INT8 step at quantScaleCkv 16), BF16 rope caches half a BF16 ulp.
//      Asserted: rel L2 <= 5 %, min cos >= 0.99, max |d| <= 0.6 rms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_harness.h"
#include "reference/fia/fia_ref.h"
#include "testkit/fia_test_data.h"
#include "testkit/mla_prolog_test_data.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {
namespace {

using PTensor = mlaops::HostTensor;       // MlaProlog test data tensors
using FTensor = fia_test::HostTensor;     // FIA test tensors
using testdata::MlaPrologCase;
using testdata::MlaPrologCaseConfig;

constexpr int64_t kN = 16, kD = 128, kDr = 64, kHckv = 512, kHe = 256, kHcq = 128, kBs = 128;
constexpr double kQuantScaleCkv = 16.0;  // per tensor: max |RmsNorm(c_KV) * gamma| here ~7.3 -> ~117
// Bounds against the unquantised layer (measured: see the header; about 1.5x the measured values).
constexpr double kChainRelL2 = 0.05, kChainMaxRms = 0.6, kChainMinCos = 0.99;

Status run_prolog(const MlaPrologParams& p) {
  uint64_t ws = 0;
  Status s = mla_prolog_workspace_size(p, &ws);
  if (s != kSuccess) return s;
  std::vector<uint64_t> buf(static_cast<size_t>(ws / 8 + 1));
  return mla_prolog(p, buf.data(), ws);
}

// The float64 layer of one token row of a case: latent kvn [Hckv], key rope kr [Dr]; with
// `query`: q [N][Hckv] and qr [N][Dr].
struct Row {
  std::vector<double> kvn, kr, q, qr;
};

std::vector<double> rope(const std::vector<double>& v, const PTensor& cos, const PTensor& sin, int64_t t) {
  const int64_t h = kDr / 2;
  std::vector<double> u(kDr), o(kDr);
  for (int64_t i = 0; i < h; ++i) {
    u[static_cast<size_t>(i)] = v[static_cast<size_t>(2 * i)];
    u[static_cast<size_t>(h + i)] = v[static_cast<size_t>(2 * i + 1)];
  }
  auto c = [&](int64_t i) { return cos.get(t * kDr + i); };
  auto s = [&](int64_t i) { return sin.get(t * kDr + i); };
  for (int64_t i = 0; i < h; ++i) {
    o[static_cast<size_t>(i)] = u[static_cast<size_t>(i)] * c(i) - u[static_cast<size_t>(h + i)] * s(i);
    o[static_cast<size_t>(h + i)] = u[static_cast<size_t>(h + i)] * c(h + i) + u[static_cast<size_t>(i)] * s(h + i);
  }
  return o;
}

std::vector<double> rmsnorm(const std::vector<double>& v, const PTensor& gamma, double eps) {
  double ss = 0;
  for (double x : v) ss += x * x;
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(v.size()) + eps);
  std::vector<double> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = v[i] * r * gamma.get(static_cast<int64_t>(i));
  return o;
}

// The three INT8 LoRA weights in ND (the case holds them FRACTAL_NZ; regenerated from the same seeds).
struct NdWeights {
  PTensor dq, uq_qr, dkv_kr;
};
NdWeights nd_weights(MlaPrologCaseConfig cfg) {
  cfg.weight_form = testdata::WeightForm::kNd;
  NdWeights w;
  w.dq = testdata::make_lora_weight(cfg, 2, kHe, kHcq, true);
  w.uq_qr = testdata::make_lora_weight(cfg, 3, kHcq, kN * (kD + kDr), true);
  w.dkv_kr = testdata::make_lora_weight(cfg, 5, kHe, kHckv + kDr, true);
  return w;
}

Row layer_row(const MlaPrologCase& c, const NdWeights& wt, int64_t t, bool query) {
  Row r;
  const double sx = c.dequant_scale_x.get(t);
  std::vector<double> x(kHe);
  for (int64_t e = 0; e < kHe; ++e) x[static_cast<size_t>(e)] = c.token_x.get(t * kHe + e) * sx;
  // KV: c_KV | k_r = x W_DKV_KR
  std::vector<double> ck(kHckv + kDr, 0.0);
  for (int64_t j = 0; j < kHckv + kDr; ++j) {
    double a = 0;
    for (int64_t e = 0; e < kHe; ++e) a += x[static_cast<size_t>(e)] * wt.dkv_kr.get(e * (kHckv + kDr) + j);
    ck[static_cast<size_t>(j)] = a * c.dequant_scale_w_dkv_kr.get(j);
  }
  r.kvn = rmsnorm(std::vector<double>(ck.begin(), ck.begin() + kHckv), c.rmsnorm_gamma_ckv, 1e-5);
  r.kr = rope(std::vector<double>(ck.begin() + kHckv, ck.end()), c.rope_cos, c.rope_sin, t);
  if (!query) return r;
  std::vector<double> cq(kHcq, 0.0);
  for (int64_t j = 0; j < kHcq; ++j) {
    double a = 0;
    for (int64_t e = 0; e < kHe; ++e) a += x[static_cast<size_t>(e)] * wt.dq.get(e * kHcq + j);
    cq[static_cast<size_t>(j)] = a * c.dequant_scale_w_dq.get(j);
  }
  const std::vector<double> cn = rmsnorm(cq, c.rmsnorm_gamma_cq, 1e-5);
  const int64_t W = kN * (kD + kDr);
  std::vector<double> qcqr(static_cast<size_t>(W), 0.0);
  for (int64_t j = 0; j < W; ++j) {
    double a = 0;
    for (int64_t i = 0; i < kHcq; ++i) a += cn[static_cast<size_t>(i)] * wt.uq_qr.get(i * W + j);
    qcqr[static_cast<size_t>(j)] = a * c.dequant_scale_w_uq_qr.get(j);
  }
  r.q.assign(kN * kHckv, 0.0);
  r.qr.assign(kN * kDr, 0.0);
  for (int64_t n = 0; n < kN; ++n) {
    const double* qn = &qcqr[static_cast<size_t>(n * (kD + kDr))];
    for (int64_t k = 0; k < kHckv; ++k) {
      double a = 0;
      for (int64_t d = 0; d < kD; ++d) a += qn[d] * c.weight_uk.get((n * kD + d) * kHckv + k);
      r.q[static_cast<size_t>(n * kHckv + k)] = a;
    }
    const std::vector<double> pr(qn + kD, qn + kD + kDr);
    const std::vector<double> ro = rope(pr, c.rope_cos, c.rope_sin, t);
    std::copy(ro.begin(), ro.end(), r.qr.begin() + n * kDr);
  }
  return r;
}

TEST(W8A8Chain, MlaPrologFullQuantThenFiaMlaFullQuant) {
  const std::vector<int64_t> L = {130, 257, 64};  // history per request
  const int64_t B = static_cast<int64_t>(L.size());
  int64_t width = 1;
  for (int64_t l : L) width = std::max(width, (l + 1 + kBs - 1) / kBs);
  const int64_t blocks = B * width + 2;  // every table entry gets its own block id (two spare)
  std::vector<int64_t> ids(static_cast<size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937 gen(5);
  std::shuffle(ids.begin(), ids.end(), gen);
  FTensor bt(DType::kInt32, {B, width});
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t w = 0; w < width; ++w) bt.set({b, w}, static_cast<double>(ids[next++]));
  auto slot = [&](int64_t b, int64_t pos) {
    return static_cast<int64_t>(bt.get({b, pos / kBs})) * kBs + pos % kBs;
  };

  MlaPrologCaseConfig cfg;
  cfg.scenario = MlaPrologScenario::kFullQuantKvQuant;
  cfg.cache_mode = MlaPrologCacheMode::kPaNz;
  cfg.He = kHe;
  cfg.Hcq = kHcq;
  cfg.N = kN;
  cfg.D = kD;
  cfg.Dr = kDr;
  cfg.Hckv = kHckv;
  cfg.block_num = blocks;
  cfg.block_size = kBs;
  cfg.weight_form = testdata::WeightForm::kNz2d;
  cfg.seed = 11;
  // prefill: every history token of every request, token_x [T, He]
  MlaPrologCaseConfig pc = cfg;
  pc.bsh = false;
  pc.B = 1;
  pc.S = std::accumulate(L.begin(), L.end(), int64_t{0});
  MlaPrologCase pre = testdata::make_mla_prolog_case(pc);
  // decode: one token per request, token_x [B, 1, He]
  MlaPrologCaseConfig dc = cfg;
  dc.bsh = true;
  dc.B = B;
  dc.S = 1;
  MlaPrologCase dec = testdata::make_mla_prolog_case(dc);
  for (MlaPrologCase* c : {&pre, &dec}) c->quant_scale_ckv.set(0, kQuantScaleCkv);
  {
    int64_t t = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < L[static_cast<size_t>(b)]; ++s) pre.cache_index.set(t++, static_cast<double>(slot(b, s)));
    for (int64_t b = 0; b < B; ++b) dec.cache_index.set(b, static_cast<double>(slot(b, L[static_cast<size_t>(b)])));
  }
  pre.kv_cache.fill_bytes(0);
  pre.kr_cache.fill_bytes(0);
  ASSERT_EQ(run_prolog(pre.params()), kSuccess) << last_error_message();
  MlaPrologParams dp = dec.params();
  dp.kv_cache = pre.kv_cache.view;
  dp.kr_cache = pre.kr_cache.view;
  ASSERT_EQ(run_prolog(dp), kSuccess) << last_error_message();

  // FIA MLA full quant on the prolog's outputs (BSND_NBSD, the vendor's decode call)
  TensorView k = make_view(pre.kv_cache.view.data, DType::kInt8, {blocks, 1, kHckv / 32, kBs, 32}, Format::kFractalNZ);
  TensorView kr = make_view(pre.kr_cache.view.data, DType::kBFloat16, {blocks, 1, kDr / 16, kBs, 16}, Format::kFractalNZ);
  TensorView dq = make_view(dec.dequant_scale_q_nope_out.view.data, DType::kFloat32, {B, 1, kN});
  const float qs0 = static_cast<float>(dec.quant_scale_ckv.get(0));
  FTensor ks(DType::kFloat32, {1}, static_cast<double>(1.0f / qs0));
  const TensorView ksv = ks.view(), btv = bt.view();
  std::vector<int64_t> akv;
  for (int64_t l : L) akv.push_back(l + 1);
  // The test data's random weights give queries ~10x larger than a trained model's (logit std ~30
  // at 1/sqrt(D + Dr), a one-hot softmax): the softmax scale is 10x smaller, logit std ~3.
  const double scale = 0.1 / std::sqrt(static_cast<double>(kD + kDr));
  auto params = [&](const TensorView& out, const TensorView* lse) {
    FiaParams p;
    p.query = dec.query_out.view;
    p.key = {k};
    p.value = {k};
    p.query_rope = &dec.query_rope_out.view;
    p.key_rope = &kr;
    p.dequant_scale_query = &dq;
    p.key_antiquant_scale = &ksv;
    p.value_antiquant_scale = &ksv;
    p.block_table = &btv;
    p.actual_seq_lengths_kv = &akv;
    p.num_heads = kN;
    p.num_key_value_heads = 1;
    p.scale_value = scale;
    p.input_layout = "BSND_NBSD";
    p.block_size = kBs;
    p.query_quant_mode = 3;
    p.attention_out = out;
    p.softmax_lse_flag = lse != nullptr;
    p.softmax_lse = lse;
    return p;
  };
  FTensor ref(DType::kFloat64, {kN, B, 1, kHckv}), ref_lse(DType::kFloat32, {B, kN, 1, 1});
  const TensorView rlv = ref_lse.view();
  ASSERT_EQ(fused_infer_attention_score_v4_ref(params(ref.view(), &rlv)), kSuccess) << last_error_message();

  // the unquantised layer in float64
  const NdWeights wt = nd_weights(cfg);
  FTensor ideal(DType::kFloat64, {kN, B, 1, kHckv});
  {
    int64_t t0 = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t lb = L[static_cast<size_t>(b)];
      std::vector<Row> rows;
      for (int64_t s = 0; s < lb; ++s) rows.push_back(layer_row(pre, wt, t0 + s, false));
      rows.push_back(layer_row(dec, wt, b, true));
      t0 += lb;
      const Row& qrow = rows.back();
      for (int64_t n = 0; n < kN; ++n) {
        std::vector<double> sc(rows.size());
        double m = -1e300;
        for (size_t j = 0; j < rows.size(); ++j) {
          double a = 0;
          for (int64_t d = 0; d < kHckv; ++d) a += qrow.q[static_cast<size_t>(n * kHckv + d)] * rows[j].kvn[static_cast<size_t>(d)];
          for (int64_t r = 0; r < kDr; ++r) a += qrow.qr[static_cast<size_t>(n * kDr + r)] * rows[j].kr[static_cast<size_t>(r)];
          sc[j] = scale * a;
          m = std::max(m, sc[j]);
        }
        double den = 0;
        std::vector<double> o(kHckv, 0.0);
        for (size_t j = 0; j < rows.size(); ++j) {
          const double e = std::exp(sc[j] - m);
          den += e;
          for (int64_t d = 0; d < kHckv; ++d) o[static_cast<size_t>(d)] += e * rows[j].kvn[static_cast<size_t>(d)];
        }
        for (int64_t d = 0; d < kHckv; ++d) ideal.set({n, b, 0, d}, o[static_cast<size_t>(d)] / den);
      }
    }
  }
  // max |a - r| / rms(r), ||a - r|| / ||r|| and the smallest cosine similarity of a row (n, b)
  struct Cmp {
    double max_rms = 0, rel_l2 = 0, min_cos = 1;
  };
  auto stats = [](const FTensor& a, const FTensor& r) {
    Cmp c;
    double ss = 0, se = 0;
    for (int64_t i = 0; i < r.numel(); ++i) {
      ss += r.flat(i) * r.flat(i);
      se += (a.flat(i) - r.flat(i)) * (a.flat(i) - r.flat(i));
    }
    const double rms = std::sqrt(ss / static_cast<double>(r.numel()));
    for (int64_t i = 0; i < r.numel(); ++i) c.max_rms = std::max(c.max_rms, std::fabs(a.flat(i) - r.flat(i)) / rms);
    c.rel_l2 = std::sqrt(se / ss);
    for (int64_t row = 0; row < r.numel() / kHckv; ++row) {
      double ab = 0, aa = 0, bb = 0;
      for (int64_t d = 0; d < kHckv; ++d) {
        const double x = a.flat(row * kHckv + d), y = r.flat(row * kHckv + d);
        ab += x * y;
        aa += x * x;
        bb += y * y;
      }
      c.min_cos = std::min(c.min_cos, ab / std::sqrt(aa * bb));
    }
    return c;
  };
  const Cmp rc = stats(ref, ideal);
  std::printf("float64 FIA reference on the quantised inputs vs unquantised: max |d|/rms %.4g, rel L2 %.4g, min cos %.6f\n",
              rc.max_rms, rc.rel_l2, rc.min_cos);
  double worst_op = 0;
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    for (int t : {1, 2}) {
      set_num_threads(t);
      FTensor out(DType::kBFloat16, {kN, B, 1, kHckv}), lse(DType::kFloat32, {B, kN, 1, 1});
      const TensorView lv = lse.view();
      const Status s = run_fia_cpp(params(out.view(), &lv));
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << last_error_message();
      double ss = 0;
      for (int64_t i = 0; i < ref.numel(); ++i) ss += ref.flat(i) * ref.flat(i);
      const double rms = std::sqrt(ss / static_cast<double>(ref.numel()));
      for (int64_t i = 0; i < ref.numel(); ++i) {
        const double d = std::fabs(out.flat(i) - ref.flat(i));
        ASSERT_LE(d, 7.8e-3 * std::fabs(ref.flat(i)) + 1e-2 * rms) << isa_name(isa) << " threads " << t << " at " << i;
        worst_op = std::max(worst_op, d / rms);
      }
      for (int64_t i = 0; i < ref_lse.numel(); ++i)
        ASSERT_LE(std::fabs(lse.flat(i) - ref_lse.flat(i)), 1e-4 * std::fabs(ref_lse.flat(i)) + 1e-5);
      const Cmp c = stats(out, ideal);
      std::printf("%s threads %d: FIA vs its reference max |d|/rms %.4g; vs unquantised max |d|/rms %.4g, rel L2 %.4g, "
                  "min cos %.6f\n",
                  isa_name(isa), t, worst_op, c.max_rms, c.rel_l2, c.min_cos);
      EXPECT_LE(c.rel_l2, kChainRelL2);
      EXPECT_LE(c.max_rms, kChainMaxRms);
      EXPECT_GE(c.min_cos, kChainMinCos);
    }
  }
  reset_isa();
}

}  // namespace
}  // namespace mlaops::testing
