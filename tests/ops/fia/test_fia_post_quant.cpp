// FusedInferAttentionScoreV4 post-quant INT8 output (quantScale2 / quantOffset2, rule FIA-26)
// against the float64 reference under every kernel configuration (fia_kernel_configs()) with 1
// and 2 threads: FP16 / BF16 queries, per-tensor and per-channel (every per-layout shape, FLOAT
// and BF16 parameters), with and without an offset, BSH / BSND / BNSD, decode and prefill, GQA,
// paged KV, INT8 KV antiquant decode, explicit masks with fully masked rows and padded query
// rows; then the FIA-26 rejections (status, message, output untouched).
//
// Mismatch rule: the fast path quantises its FP32 attention output x_op, the reference its
// float64 one x_ref; both then follow the same FP16 chain q() (ref::post_quant_int8 ==
// attn_post_quant), so the INT8 values differ only where x_op and x_ref straddle a rounding
// boundary of q. Every element must therefore equal q(x) for some x within the harness's
// attention-output tolerance of x_ref (fia_out_tolerance: rtol |x_ref| + atol_rms rms(ref)):
// op in [q(x_ref - t), q(x_ref + t)] (q is monotone in x), and |op - ref| <= 1. The share of
// differing elements is printed, not bounded: it grows with scale * |x| (with BF16 queries the
// fast path rounds P to BF16 before P*V as the NPU does, ~1 BF16 ulp of x). Measured over every
// case, kernel configuration (scalar, avx2, avx512, avx512 + attn_scalar_panel) and thread count
// (1, 2) of this file: never |diff| > 1; worst share 0.010 % with FP16 queries, 3.39 % with BF16
// queries (prefill_bnsd_bsnd_channel_4d_offset, per channel scales 60..400; the same case in
// BNSD gives the same share).
// softmaxLse (per-tensor cases) keeps the harness bound 1e-4 * |ref| + 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "mlaops/runtime.h"
#include "ops/fia/fia_error_cases.h"
#include "ops/fia/fia_harness.h"
#include "reference/common/ref_util.h"

namespace mlaops::testing {
namespace {

constexpr DType BF = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;

// Per-channel shape forms: 0 the layout's 4-d / 3-d form, 1 the short form ([N*V_D] or [N, V_D]).
struct PqCase {
  FiaCase c;
  bool channel = false, offset = false;
  int shape_form = 0;
  DType pdt = DType::kFloat32;  // quantScale2 / quantOffset2 dtype
  bool int8_kv = false;         // INT8 key / value, per-tensor antiquant (mode 0)
};

PqCase pq(FiaCase c, bool channel, bool offset, DType pdt = DType::kFloat32, int form = 0) {
  PqCase p;
  c.cfg.out_dtype = DType::kInt8;
  if (channel) c.cfg.lse = false;  // FIA-26: per channel without softmaxLse
  p.c = c;
  p.channel = channel;
  p.offset = offset;
  p.pdt = pdt;
  p.shape_form = form;
  return p;
}

std::vector<PqCase> cases() {
  std::vector<PqCase> v;
  FiaCase c;
  // decode (Q_S 1)
  c = fia_case("decode_gqa4_bsnd_tensor_offset_fp16", F16, 3, 8, 2, 1, 70, 64, "BSND");
  c.act_kv = {70, 33, 1};
  v.push_back(pq(c, false, true));
  c = fia_case("decode_gqa4_bnsd_channel_bf16", BF, 2, 8, 2, 1, 90, 64, "BNSD");
  v.push_back(pq(c, true, false, BF));
  c = fia_case("decode_bsh_channel_offset_short_shape", BF, 2, 4, 4, 1, 50, 32, "BSH");
  v.push_back(pq(c, true, true, DType::kFloat32, 1));
  c = fia_case("decode_paged_bsh_channel_offset_fp16", F16, 2, 8, 1, 1, 300, 64, "BSH");
  c.act_kv = {300, 77};
  paged(c, 3, 128);
  v.push_back(pq(c, true, true));
  c = fia_case("decode_paged_bnsd_tensor_bf16_params", BF, 2, 4, 2, 1, 100, 32, "BNSD");
  c.act_kv = {100, 17};
  paged(c, 4, 16);
  v.push_back(pq(c, false, true, BF));
  c = fia_case("decode_long_kv_split_tensor", BF, 1, 4, 1, 1, 600, 64, "BSND");
  v.push_back(pq(c, false, false));
  // INT8 KV antiquant decode
  {
    c = fia_case("decode_int8_kv_bnsd_channel_offset", BF, 2, 8, 2, 1, 80, 64, "BNSD");
    PqCase p = pq(c, true, true);
    p.int8_kv = true;
    v.push_back(p);
    c = fia_case("decode_int8_kv_bsh_tensor_fp16", F16, 2, 4, 2, 1, 45, 64, "BSH");
    c.act_kv = {45, 20};
    p = pq(c, false, false);
    p.int8_kv = true;
    v.push_back(p);
  }
  // prefill
  c = fia_case("prefill_bsh_causal_tensor_offset_fp16", F16, 2, 4, 2, 20, 40, 64, "BSH");
  c.act_q = {20, 13};
  c.act_kv = {40, 30};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(pq(c, false, true));
  c = fia_case("prefill_bnsd_gqa_channel_offset", BF, 2, 8, 2, 24, 48, 64, "BNSD");
  v.push_back(pq(c, true, true, BF, 0));
  c = fia_case("prefill_bsnd_channel_short_shape_fp16", F16, 1, 4, 4, 17, 33, 32, "BSND");
  v.push_back(pq(c, true, false, DType::kFloat32, 1));
  c = fia_case("prefill_panel_bnsd_channel_short", BF, 2, 2, 2, 5, 21, 32, "BNSD");
  v.push_back(pq(c, true, false, DType::kFloat32, 1));
  c = fia_case("prefill_paged_bsnd_tensor", BF, 2, 4, 1, 18, 150, 64, "BSND");
  c.act_kv = {150, 60};
  paged(c, 3, 64);
  v.push_back(pq(c, false, false));
  // masked: fully masked rows (explicit mask, row 1 of every batch) and padded query rows
  c = fia_case("prefill_mask_full_rows_padded_channel", BF, 2, 4, 2, 6, 30, 32, "BSND");
  c.act_q = {6, 3};
  c.full_row_masked = true;
  sparse(c, 1, MaskForm::kRank3);
  v.push_back(pq(c, true, false));
  c = fia_case("prefill_mask_full_rows_padded_tensor_fp16", F16, 2, 4, 4, 20, 40, 64, "BSH");
  c.act_q = {20, 9};
  c.full_row_masked = true;
  sparse(c, 0, MaskForm::kRank3);
  v.push_back(pq(c, false, false));
  c = fia_case("prefill_padded_rows_offset_band", BF, 2, 4, 2, 9, 21, 32, "BNSD");
  c.act_q = {9, 4};
  c.act_kv = {21, 15};
  sparse(c, 4, MaskForm::kTemplate, 5, 1);
  v.push_back(pq(c, false, true));
  // output layouts other than the input's: per channel [N, V_D] (BNSD_BSND also its 4-d forms)
  c = fia_case("decode_bsnd_nbsd_channel_offset", BF, 3, 8, 2, 1, 64, 64, "BSND_NBSD");
  c.act_kv = {64, 9, 40};
  v.push_back(pq(c, true, true));
  c = fia_case("decode_paged_bsh_nbsd_tensor_fp16", F16, 2, 4, 1, 1, 200, 32, "BSH_NBSD");
  c.act_kv = {200, 31};
  paged(c, 5, 128);  // NZ pool
  v.push_back(pq(c, false, true));
  c = fia_case("prefill_bnsd_nbsd_causal_channel", BF, 2, 4, 2, 12, 30, 32, "BNSD_NBSD");
  c.act_q = {12, 5};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(pq(c, true, false, BF));
  c = fia_case("prefill_bnsd_bsnd_channel_4d_offset", BF, 2, 4, 4, 16, 24, 64, "BNSD_BSND");
  v.push_back(pq(c, true, true, DType::kFloat32, 0));
  c = fia_case("prefill_bnsd_bsnd_channel_bsnd_form_fp16", F16, 1, 8, 2, 10, 40, 32, "BNSD_BSND");
  v.push_back(pq(c, true, false, DType::kFloat32, 2));
  c = fia_case("prefill_bsh_bnsd_tensor_offset", BF, 2, 4, 2, 20, 50, 64, "BSH_BNSD");
  c.act_kv = {50, 26};
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back(pq(c, false, true));
  c = fia_case("prefill_bsnd_bnsd_channel_fp16", F16, 1, 4, 2, 18, 18, 128, "BSND_BNSD");
  v.push_back(pq(c, true, true));
  return v;
}

void PrintTo(const PqCase& c, std::ostream* os) { *os << c.c.name; }

// The quantScale2 / quantOffset2 tensors of a case (per tensor [1]; per channel the layout's shape).
HostTensor pq_tensor(const PqCase& p, bool offset, uint32_t seed) {
  const FiaCase& c = p.c;
  const int64_t N = c.N, VD = c.Dv;
  std::vector<int64_t> dims = {1};
  if (p.channel) {
    const std::string l = c.cfg.layout;
    if (l == "BNSD_BSND" && p.shape_form != 1) dims = p.shape_form == 0 ? std::vector<int64_t>{1, N, 1, VD}
                                                                           : std::vector<int64_t>{1, 1, N, VD};
    else if (l.find('_') != std::string::npos) dims = {N, VD};  // other output layouts: [N, V_D] only
    else if (p.shape_form == 1) dims = l == "BSH" ? std::vector<int64_t>{N * VD} : std::vector<int64_t>{N, VD};
    else if (l == "BSH") dims = {1, 1, N * VD};
    else if (l == "BSND") dims = {1, 1, N, VD};
    else dims = {1, N, 1, VD};
  }
  HostTensor t(p.pdt, dims);
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // Scales spread the outputs over the INT8 range and beyond (saturation); offsets with halves.
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set_flat(i, offset ? std::round(-20 + 40 * u(g)) + (i % 3 == 0 ? 0.5 : 0.0) : 60.0 + 340.0 * u(g));
  return t;
}

// A run of the case (operator or reference) with its post-quant and antiquant tensors bound.
struct PqRun {
  std::unique_ptr<FiaRun> run;
  HostTensor k8, v8, aq;
  TensorView sc_v, of_v, aq_v;
};

std::unique_ptr<PqRun> build(const PqCase& p, const FiaCaseData& d, const HostTensor& sc, const HostTensor& of) {
  auto r = std::make_unique<PqRun>();
  r->run = fia_test::build_fia_run(d.canon, d.cfg);
  if (!r->run) return nullptr;
  FiaParams& prm = r->run->params;
  r->sc_v = sc.view();
  r->of_v = of.view();
  prm.quant_scale2 = &r->sc_v;
  prm.quant_offset2 = p.offset ? &r->of_v : nullptr;
  if (p.int8_kv) {  // per-tensor symmetric INT8 of the key / value (scales: the query dtype)
    r->aq = HostTensor(p.c.dtype, {2});
    r->k8 = HostTensor(DType::kInt8, r->run->key.dims);
    r->v8 = HostTensor(DType::kInt8, r->run->value.dims);
    const HostTensor* src[2] = {&r->run->key, &r->run->value};
    HostTensor* dst[2] = {&r->k8, &r->v8};
    for (int k = 0; k < 2; ++k) {
      double mx = 1e-6;
      for (int64_t i = 0; i < src[k]->numel(); ++i) mx = std::max(mx, std::fabs(src[k]->flat(i)));
      r->aq.set_flat(k, mx / 127.0);
      const double s = r->aq.flat(k);
      for (int64_t i = 0; i < src[k]->numel(); ++i)
        dst[k]->set_flat(i, std::min(127.0, std::max(-127.0, std::round(src[k]->flat(i) / s))));
    }
    prm.key = {r->k8.view()};
    prm.value = {r->v8.view()};
    r->aq_v = r->aq.view();
    prm.antiquant_scale = &r->aq_v;
    prm.antiquant_mode = 0;
  }
  return r;
}

class FiaPostQuant : public ::testing::TestWithParam<PqCase> {};

TEST_P(FiaPostQuant, MatchesReference) {
  const PqCase& p = GetParam();
  const FiaCase& c = p.c;
  auto data = make_case_data(c);
  const HostTensor sc = pq_tensor(p, false, c.seed * 7 + 1), of = pq_tensor(p, true, c.seed * 7 + 2);
  // References: INT8 output from the float64 attention (INT8 KV: the dequantised values unrounded).
  auto ref = build(p, *data, sc, of);
  ASSERT_TRUE(ref);
  ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->run->params), kSuccess) << last_error_message();
  // The float64 attention before the quantisation (FP64 output, no quantScale2).
  const HostTensor xf = [&] {
    PqCase pf = p;
    pf.c.cfg.out_dtype = DType::kFloat64;
    auto d2 = make_case_data(pf.c);
    auto r = build(pf, *d2, sc, of);
    r->run->params.quant_scale2 = nullptr;
    r->run->params.quant_offset2 = nullptr;
    EXPECT_EQ(fused_infer_attention_score_v4_ref(r->run->params), kSuccess) << last_error_message();
    return r->run->out_bnsd();
  }();
  const Tolerance tol = fia_out_tolerance(c.dtype);
  // The channel parameters as the reference reads them (FP16 rounding inside post_quant_int8).
  const auto chan = [&](const HostTensor& t, int64_t n, int64_t dd) { return t.flat(p.channel ? n * c.Dv + dd : 0); };
  double worst_pct = 0;
  int runs = 0;
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    const std::string where = fia_kernel_config_name(c.name, k);
    for (int t : {1, 2}) {
      set_num_threads(t);
      auto op = build(p, *data, sc, of);
      ASSERT_TRUE(op);
      const FiaRun& R = *ref->run;
      const Status s = run_fia_cpp(op->run->params);
      set_num_threads(0);
      ASSERT_EQ(s, kSuccess) << where << ": " << last_error_message();
      ASSERT_EQ(op->run->out.dtype, DType::kInt8);
      const HostTensor a = op->run->out_bnsd(), b = R.out_bnsd();
      double ss = 0;
      for (int64_t i = 0; i < xf.numel(); ++i) ss += xf.flat(i) * xf.flat(i);
      const double rms = std::sqrt(ss / static_cast<double>(std::max<int64_t>(xf.numel(), 1)));
      int64_t mism = 0, big = 0, unexplained = 0;
      const int64_t VD = c.Dv, S = a.numel() / (c.B * c.N * VD);
      for (int64_t i = 0; i < a.numel(); ++i) {
        const double d = std::fabs(a.flat(i) - b.flat(i));
        if (d == 0) continue;
        ++mism;
        if (d > 1) ++big;
        const int64_t n = (i / (S * VD)) % c.N, dd = i % VD;
        const double t0 = tol.rtol * std::fabs(xf.flat(i)) + tol.atol_rms * rms;
        const double q1 = ref::post_quant_int8(xf.flat(i) - t0, chan(sc, n, dd), p.offset ? chan(of, n, dd) : 0.0);
        const double q2 = ref::post_quant_int8(xf.flat(i) + t0, chan(sc, n, dd), p.offset ? chan(of, n, dd) : 0.0);
        if (a.flat(i) < std::min(q1, q2) || a.flat(i) > std::max(q1, q2)) ++unexplained;
      }
      const double pct = 100.0 * static_cast<double>(mism) / static_cast<double>(a.numel());
      worst_pct = std::max(worst_pct, pct);
      EXPECT_EQ(big, 0) << where << " threads=" << t << ": elements off by more than 1";
      EXPECT_EQ(unexplained, 0) << where << " threads=" << t
                                << ": INT8 values outside the quantised tolerance interval of the float reference";
      if (c.cfg.lse) {
        const HostTensor la = op->run->lse_bns(), lb = R.lse_bns();
        for (int64_t i = 0; i < lb.numel(); ++i) {
          const double x = la.flat(i), y = lb.flat(i);
          if (std::isinf(x) || std::isinf(y)) {
            EXPECT_EQ(x, y) << where << " lse " << i;
            continue;
          }
          EXPECT_LE(std::fabs(x - y), 1e-4 * std::fabs(y) + 1e-5) << where << " lse " << i;
        }
      }
      ++runs;
    }
  }
  set_kernel_override("");
  reset_isa();
  EXPECT_GT(runs, 0);
  std::printf("[fia-post-quant] %s %s: %d runs, worst int8 mismatch %.3f %%\n", c.name.c_str(), dtype_name(c.dtype),
              runs, worst_pct);
}

INSTANTIATE_TEST_SUITE_P(Cases, FiaPostQuant, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PqCase>& i) { return i.param.c.name; });

// Post-quant changes the output: a fully masked row and a padded row hold quant(0) = the offset.
TEST(FiaPostQuantRows, PaddedRowsHoldTheQuantisedZero) {
  PqCase p = pq(fia_case("padded", BF, 2, 2, 2, 4, 10, 32, "BNSD"), false, true);
  p.c.act_q = {4, 2};
  auto data = make_case_data(p.c);
  HostTensor sc(DType::kFloat32, {1}), of(DType::kFloat32, {1});
  sc.set_flat(0, 100.0);
  of.set_flat(0, -7.0);
  auto op = build(p, *data, sc, of);
  ASSERT_EQ(run_fia_cpp(op->run->params), kSuccess) << last_error_message();
  const HostTensor& o = op->run->out;  // BNSD [2, 2, 4, 32]
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t s = 2; s < 4; ++s)
      for (int64_t d = 0; d < 32; ++d) EXPECT_EQ(o.get({1, n, s, d}), -7.0);
}

// ---- FIA-26 rejections (every message; output bytes unchanged) ----

constexpr aclnnStatus kInvS = ACLNN_ERR_PARAM_INVALID;

// Per-tensor FLOAT scale / offset for the base cases (kept alive for the calls).
TensorView f32_1(float v) {
  static float store[8];
  static int next = 0;
  float* s = &store[next++ % 8];
  *s = v;
  return make_view(s, DType::kFloat32, {1});
}

// Sets quantScale2 (10), quantOffset2 (11) and an INT8 attentionOut on the args.
void with_pq(FiaAclArgs& a, bool offset) {
  a.in[10] = f32_1(50.0f);
  a.passed[10] = true;
  if (offset) {
    a.in[11] = f32_1(1.0f);
    a.passed[11] = true;
  }
  a.out.dtype = DType::kInt8;
}

TEST(FiaPostQuantRules, FIA26_Pairing) {
  // offset without scale
  expect_rejected(Base::kBsnd, {kInvS, "quantOffset2Optional", "FIA-26"}, [](FiaAclArgs& a) {
    a.in[11] = f32_1(1.0f);
    a.passed[11] = true;
  });
  // quantScale2 with a non-INT8 output, and INT8 output without quantScale2
  expect_rejected(Base::kBsnd, {kInvS, "attentionOut", "FIA-26"}, [](FiaAclArgs& a) {
    a.in[10] = f32_1(1.0f);
    a.passed[10] = true;
  });
  expect_rejected(Base::kBsnd, {kInvS, "attentionOut", "FIA-26"}, [](FiaAclArgs& a) { a.out.dtype = DType::kInt8; });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("allowed BF16, got INT8"), std::string::npos) << aclGetRecentErrMsg();
}

TEST(FiaPostQuantRules, FIA26_DtypesAndShapes) {
  static uint16_t bf[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80};
  static float f[512] = {};
  // FP16 scale (BF16 query: FLOAT or BF16 only)
  expect_rejected(Base::kBsnd, {kInvS, "quantScale2Optional", "FIA-26"}, [](FiaAclArgs& a) {
    with_pq(a, false);
    a.in[10] = make_view(bf, DType::kFloat16, {1});
  });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("allowed {FLOAT, BF16}, got FLOAT16"), std::string::npos);
  // offset of another dtype / shape than the scale
  expect_rejected(Base::kBsnd, {kInvS, "quantOffset2Optional", "FIA-26"}, [](FiaAclArgs& a) {
    with_pq(a, true);
    a.in[11] = make_view(bf, DType::kBFloat16, {1});
  });
  expect_rejected(Base::kBsnd, {kInvS, "quantOffset2Optional", "FIA-26"}, [](FiaAclArgs& a) {
    with_pq(a, true);
    a.in[11] = make_view(f, DType::kFloat32, {2});
  });
  // shape: BSND N = 4, V_D = 16 allows [1], [1, 1, 4, 16], [4, 16]
  expect_rejected(Base::kBsnd, {kInvS, "quantScale2Optional", "FIA-26"}, [](FiaAclArgs& a) {
    with_pq(a, false);
    a.lse_flag = false;
    a.lse_passed = false;
    a.in[10] = make_view(f, DType::kFloat32, {1, 4, 1, 16});
  });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("allowed [1], [1, 1, 4, 16], [4, 16], got [1, 4, 1, 16]"),
            std::string::npos)
      << aclGetRecentErrMsg();
  // per channel with softmaxLse
  expect_rejected(Base::kBsnd, {kInvS, "softmaxLse", "FIA-26"}, [](FiaAclArgs& a) {
    with_pq(a, false);
    a.in[10] = make_view(f, DType::kFloat32, {4, 16});
  });
  // per channel with V_D % 32 != 0 (V_D 16)
  expect_rejected(Base::kBsnd, {kInvS, "quantScale2Optional", "FIA-26"}, [](FiaAclArgs& a) {
    with_pq(a, false);
    a.lse_flag = false;
    a.lse_passed = false;
    a.in[10] = make_view(f, DType::kFloat32, {4, 16});
  });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("V_D % 32 == 0"), std::string::npos) << aclGetRecentErrMsg();
}

TEST(FiaPostQuantRules, FIA26_Exclusions) {
  expect_rejected(Base::kTndSink, {kInvS, "quantScale2Optional", "FIA-26"}, [](FiaAclArgs& a) { with_pq(a, false); });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("learnableSink"), std::string::npos);
  expect_rejected(Base::kMla, {kInvS, "quantScale2Optional", "FIA-26"}, [](FiaAclArgs& a) { with_pq(a, false); });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("MLA"), std::string::npos);
  expect_rejected(Base::kGqaPagedTnd, {kInvS, "quantScale2Optional", "FIA-26"}, [](FiaAclArgs& a) { with_pq(a, false); });
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("layout TND"), std::string::npos);
}

// An empty key / value: every output element is its channel's quantised 0 = clamp(round(offset)),
// in every output layout (the channel is the element's (n, d)); softmaxLse +inf. Operator and
// reference agree exactly, and both equal the value computed here.
TEST(FiaPostQuantRows, EmptyKvGivesTheQuantisedOffsetPerChannel) {
  for (const char* layout : {"BSH", "BSND", "BNSD", "BSND_NBSD", "BNSD_NBSD", "BSH_BNSD", "BNSD_BSND"}) {
    for (bool channel : {false, true}) {
      SCOPED_TRACE(std::string(layout) + (channel ? " per channel" : " per tensor"));
      PqCase p = pq(fia_case("empty_kv", BF, 2, 4, 2, 3, 0, 32, layout), channel, true);
      if (!channel) p.c.cfg.lse = true;
      auto data = make_case_data(p.c);
      const HostTensor sc = pq_tensor(p, false, 5), of = pq_tensor(p, true, 6);
      auto op = build(p, *data, sc, of);
      auto ref = build(p, *data, sc, of);
      ASSERT_TRUE(op && ref);
      std::memset(op->run->out.data(), 0x5A, op->run->out.storage.size() * 8);
      ASSERT_EQ(run_fia_cpp(op->run->params), kSuccess) << last_error_message();
      ASSERT_EQ(fused_infer_attention_score_v4_ref(ref->run->params), kSuccess) << last_error_message();
      const HostTensor& o = op->run->out;
      ASSERT_EQ(o.numel(), ref->run->out.numel());
      for (int64_t i = 0; i < o.numel(); ++i) ASSERT_EQ(o.flat(i), ref->run->out.flat(i)) << i;
      // Canonical check: out(b, n, s, d) = clamp(rne(offset[n, d]), -128, 127) (x = 0; the offsets
      // are integers or halves, exact in FP16).
      const HostTensor ob = op->run->out_bnsd();
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t n = 0; n < 4; ++n)
          for (int64_t s = 0; s < 3; ++s)
            for (int64_t d = 0; d < 32; ++d) {
              const double off = of.flat(channel ? n * 32 + d : 0);
              const double want = std::min(127.0, std::max(-128.0, std::nearbyint(off)));
              ASSERT_EQ(ob.get({b, n, s, d}), want) << b << " " << n << " " << s << " " << d;
            }
      if (p.c.cfg.lse) {
        const HostTensor l = op->run->lse_bns();
        for (int64_t i = 0; i < l.numel(); ++i) EXPECT_TRUE(std::isinf(l.flat(i)) && l.flat(i) > 0);
      }
    }
  }
}

// The FIA-26 rules hold with an empty key / value too (nothing written).
TEST(FiaPostQuantRules, FIA26_EmptyKv) {
  struct Row {
    const char* name;
    const char* layout;
    std::vector<int64_t> dims;
    const char* names;
  };
  const Row rows[] = {
      {"bad_channel_shape", "BSND", {4, 16}, "allowed [1], [1, 1, 4, 32], [4, 32], got [4, 16]"},
      {"nbsd_4d_shape", "BSND_NBSD", {1, 1, 4, 32}, "allowed [1], [4, 32], got [1, 1, 4, 32]"},
      {"packed_layout", "TND", {1}, "layout TND"},
  };
  for (const Row& w : rows) {
    SCOPED_TRACE(w.name);
    FiaCase c = fia_case(w.name, BF, 2, 4, 2, 3, 0, 32, w.layout);
    c.cfg.out_dtype = DType::kInt8;
    c.cfg.lse = false;
    auto d = make_case_data(c);
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    ASSERT_TRUE(r);
    static float f[256] = {};
    TensorView sc = make_view(f, DType::kFloat32, w.dims.data(), static_cast<int>(w.dims.size()));
    r->params.quant_scale2 = &sc;
    std::memset(r->out.data(), 0x5A, r->out.storage.size() * 8);
    const std::vector<uint64_t> out0 = r->out.storage;
    EXPECT_EQ(run_fia_cpp(r->params), kParamInvalid);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("FIA-26"), std::string::npos) << msg;
    EXPECT_NE(msg.find(w.names), std::string::npos) << msg;
    EXPECT_TRUE(r->out.storage == out0);
  }
}

// Per-channel shapes of the output layouts other than the input's: [N, V_D] (BNSD_BSND: also its
// BNSD and BSND 4-d forms); nothing written on a rejection.
TEST(FiaPostQuantRules, FIA26_OutputLayoutShapes) {
  struct Row {
    const char* layout;
    std::vector<int64_t> dims;
    bool ok;
  };
  const Row rows[] = {
      {"BSND_NBSD", {4, 32}, true},        {"BSND_NBSD", {1, 1, 4, 32}, false}, {"BSH_NBSD", {128}, false},
      {"BNSD_NBSD", {1, 4, 1, 32}, false}, {"BNSD_BSND", {1, 4, 1, 32}, true},  {"BNSD_BSND", {1, 1, 4, 32}, true},
      {"BNSD_BSND", {4, 32}, true},        {"BSH_BNSD", {1, 1, 128}, false},    {"BSND_BNSD", {4, 32}, true},
  };
  for (const Row& w : rows) {
    SCOPED_TRACE(std::string(w.layout) + " " + std::to_string(w.dims.size()) + "-d");
    FiaCase c = fia_case("shape", BF, 1, 4, 2, 2, 20, 32, w.layout);
    c.cfg.out_dtype = DType::kInt8;
    c.cfg.lse = false;
    auto d = make_case_data(c);
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    ASSERT_TRUE(r);
    static float f[256];
    std::fill(f, f + 256, 20.0f);
    TensorView sc = make_view(f, DType::kFloat32, w.dims.data(), static_cast<int>(w.dims.size()));
    r->params.quant_scale2 = &sc;
    std::memset(r->out.data(), 0x5A, r->out.storage.size() * 8);
    const std::vector<uint64_t> out0 = r->out.storage;
    if (w.ok) {
      EXPECT_EQ(run_fia_cpp(r->params), kSuccess) << last_error_message();
    } else {
      EXPECT_EQ(run_fia_cpp(r->params), kParamInvalid);
      const std::string msg = last_error_message();
      EXPECT_NE(msg.find("FIA-26 shape for layout"), std::string::npos) << msg;
      EXPECT_TRUE(r->out.storage == out0);
    }
  }
}

// §3.6 with quantOffset2: configurations that can leave a row fully masked are rejected per batch.
TEST(FiaPostQuantRules, FIA26_OffsetMaskedRowConditions) {
  struct Row {
    const char* name;
    int64_t mode, pre, next;
    std::vector<int64_t> act_q, act_kv;
    bool mask;
    const char* names;  // what the message names
  };
  const Row rows[] = {
      {"mode0_pre_too_small", 0, 1, 2147483647, {6, 6}, {20, 3}, true, "batch 1"},  // q - kv - pre > 0 in batch 1
      {"mode0_next_negative", 0, 2147483647, -1, {6, 6}, {20, 20}, true, "batch 0"},
      {"mode3_kv_shorter", 3, 2147483647, 2147483647, {6, 6}, {20, 4}, true, "batch 1"},  // kv - q < 0 in batch 1
      {"mode4_next_short", 4, 3, 0, {6, 6}, {20, 5}, true, "batch 1"},               // next + kv - q < 0 in batch 1
      {"mode4_negative_pre", 4, -1, 2, {6, 6}, {20, 20}, true, "preTokens"},
  };
  for (const Row& w : rows) {
    SCOPED_TRACE(w.name);
    FiaCase c = fia_case(w.name, BF, 2, 4, 2, 6, 20, 32, "BSND");
    c.act_q = w.act_q;
    c.act_kv = w.act_kv;
    sparse(c, w.mode, w.mode == 0 ? MaskForm::kRank3 : MaskForm::kTemplate, w.pre, w.next);
    c.cfg.out_dtype = DType::kInt8;
    auto d = make_case_data(c);
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    ASSERT_TRUE(r);
    TensorView sc = f32_1(10.0f), of = f32_1(1.0f);
    r->params.quant_scale2 = &sc;
    r->params.quant_offset2 = &of;
    std::memset(r->out.data(), 0x5A, r->out.storage.size() * 8);
    const std::vector<uint64_t> out0 = r->out.storage, lse0 = r->lse.storage;
    EXPECT_EQ(run_fia_cpp(r->params), kParamInvalid);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("FIA-26"), std::string::npos) << msg;
    EXPECT_NE(msg.find("quantOffset2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(w.names), std::string::npos) << msg;
    EXPECT_TRUE(r->out.storage == out0);
    EXPECT_TRUE(r->lse.storage == lse0);
    // Without the offset the same call runs (rows fully masked give quant(0) = 0).
    r->params.quant_offset2 = nullptr;
    EXPECT_EQ(run_fia_cpp(r->params), kSuccess) << last_error_message();
  }
}

}  // namespace
}  // namespace mlaops::testing
