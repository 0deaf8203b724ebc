// The serving stacks' MLAPO op (include/mlaops/mlapo.h, docs/ops/mla_preprocess.md "The serving
// stacks' MLAPO op"): the fast path against the float64 reference (mlapo_ref) over dtypes, cache
// modes, quant modes, with and without RoPE and beta1, seeds and shapes, under every ISA level
// and 1 / 2 threads; its first stage (the quant without RmsNorm) element by element against the
// vendor kernel's rounding steps; the plan / run API; the rules the op adds (MPP-20) or changes
// (optional beta1 / cos / sin, either deScale encoding) with nothing written on a refusal; and the
// inputs longer than the kernel reads (MPP-09, both forms).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "mlaops/mlapo.h"
#include "mlaops/numeric.h"
#include "ops/mla_preprocess/mla_preprocess_harness.h"

namespace mlaops::testing {
namespace {

using CM = MlaPreprocessCacheMode;
using QM = MlaPreprocessQuantMode;

Status run_mlapo(const MlaPreprocessCase& c) {
  const MlapoParams p = c.mlapo_params();
  uint64_t bytes = 0;
  Status s = mlapo_workspace_size(p, &bytes);
  if (s != kSuccess) return s;
  std::vector<uint8_t> ws(static_cast<size_t>(bytes) + 1);
  return mlapo(p, ws.data(), bytes);
}

// The reference once, then the fast path under every ISA level and thread count.
void mlapo_all_isas(const MlaPreprocessCaseConfig& cfg) {
  MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mlapo_ref(ref.mlapo_params()), kSuccess) << last_error_message() << " | " << describe(cfg);
  for_each_isa_and_threads([&] {
    MlaPreprocessCase fast = testdata::make_mla_preprocess_case(cfg);
    ASSERT_EQ(run_mlapo(fast), kSuccess) << last_error_message() << " | " << describe(cfg);
    expect_match(fast, ref);
  });
}

MlaPreprocessCaseConfig mlapo_cfg(DType dt, CM cm, QM qm, bool float_weights, uint64_t seed) {
  MlaPreprocessCaseConfig c;
  c.mlapo = true;
  c.dtype = dt;
  c.cache_mode = cm;
  c.quant_mode = qm;
  c.float_weights = float_weights;
  c.seed = seed;
  return c;
}

// dtype x cache mode x (per-tensor, per-token, weights in the input dtype) x (RoPE and beta1,
// neither, RoPE without beta1), with shapes, wuk forms, weight forms and qDownOut varied by seed.
TEST(Mlapo, MatchesReferenceEveryModeIsaAndThreadCount) {
  uint64_t seed = 300;
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache})
      for (int path = 0; path < 3; ++path)
        for (int variant = 0; variant < 3; ++variant) {
          MlaPreprocessCaseConfig c = mlapo_cfg(dt, cm, path == 1 ? QM::kPerTokenSymm : QM::kPerTensorAsymm, path == 2,
                                                ++seed);
          c.rope = variant != 1;
          c.beta1 = variant == 0;
          c.tokens = 1 + static_cast<int64_t>(seed % 9);
          c.heads = 1 + static_cast<int64_t>(seed % 4);
          c.hidden = seed % 2 ? 64 : 96;
          c.wuk_nz = seed % 3 == 0;
          c.weight_form = static_cast<testdata::MlaPreprocessWeightForm>(seed % 3);
          c.q_down = seed % 2 == 0;
          SCOPED_TRACE(describe(c));
          mlapo_all_isas(c);
        }
}

// The vendor's sizes (hidden 7168, Hcq 1536, Hckv 512, Dr 64, D 128, blockSize 128): the calls of
// vllm-ascend (bf16 / fp16, krope_ctkv, per-tensor, inner_out) and SGLang (bf16, nzcache,
// per-tensor), and bf16 per-token with the int8 NZ cache; the active ISA level, 2 threads.
TEST(Mlapo, MatchesReferenceAtVendorSizes) {
  struct V {
    DType dt;
    CM cm;
    QM qm;
    bool rope, q_down;
  };
  for (const V& v : {V{DType::kBFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, true, true},
                     V{DType::kFloat16, CM::kKropeCtkv, QM::kPerTensorAsymm, true, false},
                     V{DType::kBFloat16, CM::kNzCache, QM::kPerTensorAsymm, false, false},
                     V{DType::kBFloat16, CM::kInt8NzCache, QM::kPerTokenSymm, true, true}}) {
    testdata::MlaPreprocessVendorCase vc{v.dt, 4, 16, v.cm, v.qm, false, testdata::MlaPreprocessWeightForm::kNzAtb, false};
    MlaPreprocessCaseConfig c = testdata::vendor_cfg(vc, 11);
    c.mlapo = true;
    c.rope = v.rope;
    c.q_down = v.q_down;
    c.block_num = 2;
    SCOPED_TRACE(describe(c));
    MlaPreprocessCase ref = testdata::make_mla_preprocess_case(c);
    ASSERT_EQ(mlapo_ref(ref.mlapo_params()), kSuccess) << last_error_message();
    set_num_threads(2);
    MlaPreprocessCase fast = testdata::make_mla_preprocess_case(c);
    ASSERT_EQ(run_mlapo(fast), kSuccess) << last_error_message();
    expect_match(fast, ref);
    set_num_threads(0);
  }
}

// The first stage element by element. wdqkv's kpe rows pick input columns 0..Dr-1 (row Hckv + j
// = e_j), deScale0 = 1, bias0 = 0 and no RoPE, so the rope cache row of a token is its a0[0:Dr]
// (quantMode 0) or dtype(a0 * s) (quantMode 1). Expected values follow the kernel's steps:
// quantMode 0 fp16(fp32(fp32(x * fp32(1 / qs)) + qo)), clamp to [-128, 127], round half to even;
// quantMode 1 s = fp32(max|x| / 127), a0 = quant(fp32(x * fp32(1 / s))). The inputs include ties
// (x / qs + qo = k + 0.5), saturation, +-inf and NaN (-> 0).
TEST(Mlapo, FirstStageFollowsTheKernelsRoundingSteps) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (QM qm : {QM::kPerTensorAsymm, QM::kPerTokenSymm}) {
      MlaPreprocessCaseConfig cfg = mlapo_cfg(dt, CM::kKropeCtkv, qm, false, 7);
      cfg.rope = false;
      cfg.tokens = 8;
      cfg.hidden = 32;
      const int64_t T = cfg.tokens, He = cfg.hidden, Dr = cfg.Dr, Hckv = cfg.Hckv, m1 = Hckv + Dr + cfg.Hcq;
      // the values: ties, saturation, specials, then bf16-representable draws in [-3, 3]
      std::vector<double> x = {-1.25, -0.75, 0.25, 0.75, -2.75, 2.25, 60.0, 70.0, -70.0, -63.5, 0.0, -0.0,
                               INFINITY, -INFINITY, NAN, 1.0 / 1024};
      for (double v : testdata::mla_preprocess_float_values(T * Dr, 99, -3.0, 3.0)) x.push_back(v);
      x.resize(static_cast<size_t>(T * Dr));
      if (qm == QM::kPerTokenSymm)  // a finite max per token: drop the specials
        for (double& v : x)
          if (!std::isfinite(v)) v = 1.5;
      MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
      std::vector<double> in(static_cast<size_t>(T * He), 0.0), w(static_cast<size_t>(m1 * He), 0.0);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < Dr; ++j) in[static_cast<size_t>(t * He + j)] = x[static_cast<size_t>(t * Dr + j)];
      for (int64_t j = 0; j < Dr; ++j) w[static_cast<size_t>((Hckv + j) * He + j)] = 1.0;
      c.input = from_values(dt, {T, He}, in);
      c.wdqkv = testdata::to_nz_4d(from_values(DType::kInt8, {m1, He}, w));
      c.de_scale0 = from_values(DType::kFloat32, {m1}, std::vector<double>(static_cast<size_t>(m1), 1.0));
      if (qm == QM::kPerTensorAsymm) {
        c.quant_scale0 = from_values(dt, {1}, {0.5});
        c.quant_offset0 = from_values(DType::kInt8, {1}, {3.0});
        c.bias0 = from_values(DType::kInt32, {m1}, std::vector<double>(static_cast<size_t>(m1), 0.0));
      }
      std::vector<double> slots(static_cast<size_t>(T));
      for (int64_t t = 0; t < T; ++t) slots[static_cast<size_t>(t)] = static_cast<double>(t);
      c.slot_mapping = from_values(DType::kInt32, {T}, slots);
      // expected rope cache rows, the kernel's fp32 steps
      std::vector<double> want(static_cast<size_t>(T * Dr));
      const auto quant = [](float v) {
        double h = round_fp16(static_cast<double>(v));
        if (std::isnan(h)) return 0.0;
        return std::nearbyint(std::fmin(127.0, std::fmax(-128.0, h)));
      };
      for (int64_t t = 0; t < T; ++t) {
        float s = 1.0f;
        if (qm == QM::kPerTokenSymm) {
          float m = 0.0f;
          for (int64_t k = 0; k < He; ++k) m = std::fmax(m, std::fabs(static_cast<float>(in[static_cast<size_t>(t * He + k)])));
          s = m / 127.0f;
        }
        for (int64_t j = 0; j < Dr; ++j) {
          const float xv = static_cast<float>(in[static_cast<size_t>(t * He + j)]);
          double r;
          if (qm == QM::kPerTensorAsymm) {
            const float inv = 1.0f / 0.5f;
            const float p = static_cast<float>(static_cast<double>(xv) * inv);  // the product, rounded to fp32
            r = quant(static_cast<float>(static_cast<double>(p) + 3.0));      // then the offset, rounded to fp32
          } else {
            const float inv = 1.0f / s;
            r = static_cast<double>(quant(static_cast<float>(static_cast<double>(xv) * inv)));
            r = static_cast<double>(static_cast<float>(r) * s);  // dequant: float(acc) * deScale (1) * s
          }
          want[static_cast<size_t>(t * Dr + j)] = dt == DType::kFloat16 ? round_fp16(r) : round_bf16(r);
        }
      }
      const auto check = [&](const MlaPreprocessCase& run, const char* what) {
        for (int64_t t = 0; t < T; ++t)
          for (int64_t j = 0; j < Dr; ++j) {
            const double got = run.kv_cache_rope.get(t * Dr + j), exp = want[static_cast<size_t>(t * Dr + j)];
            EXPECT_TRUE(got == exp || (std::isnan(got) && std::isnan(exp)))
                << what << " " << dtype_name(dt) << " qm " << static_cast<int>(qm) << " token " << t << " x "
                << x[static_cast<size_t>(t * Dr + j)] << ": got " << got << ", want " << exp;
          }
      };
      MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg);
      ref.input = from_values(dt, {T, He}, in);  // the same replacements, for the reference
      ref.wdqkv = testdata::to_nz_4d(from_values(DType::kInt8, {m1, He}, w));
      ref.de_scale0 = c.de_scale0.clone();
      if (qm == QM::kPerTensorAsymm) {
        ref.quant_scale0 = c.quant_scale0.clone();
        ref.quant_offset0 = c.quant_offset0.clone();
        ref.bias0 = c.bias0.clone();
      }
      ref.slot_mapping = c.slot_mapping.clone();
      ASSERT_EQ(mlapo_ref(ref.mlapo_params()), kSuccess) << last_error_message();
      // the reference rounds once in double: the same a0 here (x / qs + qo is exact); with
      // quantMode 1 its double scale may round the dequantised value differently
      if (qm == QM::kPerTensorAsymm) check(ref, "reference");
      for_each_isa_and_threads([&](Isa isa, int threads) {
        c.reset_outputs();
        ASSERT_EQ(run_mlapo(c), kSuccess) << last_error_message();
        check(c, (std::string(isa_name(isa)) + " threads " + std::to_string(threads)).c_str());
      });
    }
}

// Weights in the input dtype read neither gamma0 / beta0 nor the first-stage quant: the MLAPO
// op equals MlaPreprocess's unquantized path bit for bit (both read beta1 and RoPE alike).
TEST(Mlapo, DtypeWeightsEqualMlaPreprocessUnquantizedPath) {
  for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kNzCache}) {
    const MlaPreprocessCaseConfig cfg = mlapo_cfg(DType::kBFloat16, cm, QM::kPerTensorAsymm, true, 40);
    MlaPreprocessCase a = testdata::make_mla_preprocess_case(cfg), b = testdata::make_mla_preprocess_case(cfg);
    ASSERT_EQ(run_mlapo(a), kSuccess) << last_error_message();
    ASSERT_EQ(run_fast(b), kSuccess) << last_error_message();
    EXPECT_TRUE(outputs_equal(a, b)) << mla_preprocess_cache_mode_name(cm);
  }
}

// deScale0 / deScale1 as FP32 or as INT64 holding the fp32 bits: the same result with either
// input dtype.
TEST(Mlapo, EitherDescaleEncodingWithEitherDtype) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const MlaPreprocessCaseConfig cfg = mlapo_cfg(dt, CM::kKropeCtkv, QM::kPerTensorAsymm, false, 41);
    MlaPreprocessCase a = testdata::make_mla_preprocess_case(cfg), b = testdata::make_mla_preprocess_case(cfg);
    for (HostTensor* h : {&b.de_scale0, &b.de_scale1}) {  // the other encoding of the same values
      const int64_t n = h->numel();
      HostTensor o = make_tensor(h->view.dtype == DType::kInt64 ? DType::kFloat32 : DType::kInt64, {n});
      for (int64_t i = 0; i < n; ++i) {
        if (o.view.dtype == DType::kFloat32) {
          const uint32_t bits = static_cast<uint32_t>(reinterpret_cast<const uint64_t*>(h->bytes.data())[i]);
          reinterpret_cast<float*>(o.bytes.data())[i] = bits_float(bits);
        } else {
          reinterpret_cast<int64_t*>(o.bytes.data())[i] = float_bits(reinterpret_cast<const float*>(h->bytes.data())[i]);
        }
      }
      *h = std::move(o);
    }
    ASSERT_EQ(run_mlapo(a), kSuccess) << last_error_message();
    ASSERT_EQ(run_mlapo(b), kSuccess) << last_error_message();
    EXPECT_TRUE(outputs_equal(a, b)) << dtype_name(dt);
  }
}

// A copy of `h` `extra` rows longer (dim 0), the rest 0x7F bytes (would show if read).
HostTensor longer(const HostTensor& h, int64_t extra) {
  std::vector<int64_t> dims(h.view.dims, h.view.dims + h.view.rank);
  const int64_t row = h.numel() / dims[0];
  dims[0] += extra;
  HostTensor l = make_tensor(h.view.dtype, dims);
  std::fill(l.bytes.begin(), l.bytes.end(), uint8_t{0x7F});
  std::memcpy(l.bytes.data(), h.bytes.data(), static_cast<size_t>((dims[0] - extra) * row * dtype_size(h.view.dtype)));
  return l;
}

// SGLang passes a beta1 of length hidden (a dummy when the q RmsNorm has no bias) and the kernel
// reads the first Hcq; every prefix-read vector may be longer. Accepted by both forms, the same
// result as the exact lengths (the MLAPO op and MlaPreprocess's C++ API, against the reference).
TEST(Mlapo, LongerPrefixInputsAcceptedInBothForms) {
  MlaPreprocessCaseConfig cfg = mlapo_cfg(DType::kBFloat16, CM::kInt8NzCache, QM::kPerTensorAsymm, false, 42);
  cfg.hidden = 128;
  const auto lengthen = [](MlaPreprocessCase& c) {
    c.beta1 = longer(c.beta1, c.cfg.hidden - c.cfg.Hcq);  // length hidden, as SGLang's dummy
    for (HostTensor* h : {&c.quant_scale0, &c.quant_offset0, &c.quant_scale1, &c.quant_offset1, &c.de_scale0,
                          &c.bias0, &c.de_scale1, &c.bias1, &c.ctkv_scale, &c.q_nope_scale, &c.slot_mapping,
                          &c.cos, &c.sin, &c.gamma0, &c.beta0})
      *h = longer(*h, 3);
  };
  MlaPreprocessCase plain = testdata::make_mla_preprocess_case(cfg), lengthened = testdata::make_mla_preprocess_case(cfg);
  lengthen(lengthened);
  ASSERT_EQ(run_mlapo(plain), kSuccess) << last_error_message();
  ASSERT_EQ(run_mlapo(lengthened), kSuccess) << last_error_message();
  EXPECT_TRUE(outputs_equal(plain, lengthened));
  // MlaPreprocess (CANN form) through the C++ API, and both references
  cfg.mlapo = false;
  MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg), fast = testdata::make_mla_preprocess_case(cfg);
  lengthen(ref);
  lengthen(fast);
  ASSERT_EQ(mla_preprocess_ref(ref.params()), kSuccess) << last_error_message();
  ASSERT_EQ(run_fast(fast), kSuccess) << last_error_message();
  expect_match(fast, ref);
  MlaPreprocessCase exact = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(run_fast(exact), kSuccess) << last_error_message();
  EXPECT_TRUE(outputs_equal(exact, fast));
}

// ---- rules: refused with nothing written ----

bool untouched(const MlaPreprocessCase& c) {
  for (const HostTensor* h : {&c.q_out, &c.q_rope_out, &c.kv_cache, &c.kv_cache_rope, &c.q_down_out})
    if (!testdata::all_bytes(*h, c.cfg.canary)) return false;
  return true;
}

// Plans and runs `p` (one shot) on c's buffers; expects `code` and `text` in the message, and no
// output or cache byte written.
void expect_refused(const MlaPreprocessCase& c, const MlapoParams& p, Status code, const std::string& text) {
  std::vector<uint8_t> ws(1 << 20);
  EXPECT_EQ(mlapo(p, ws.data(), ws.size()), code) << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find(text), std::string::npos) << last_error_message();
  EXPECT_TRUE(untouched(c)) << text;
}

TEST(MlapoRules, CosAndSinTogetherMPP20) {
  const MlaPreprocessCase c = testdata::make_mla_preprocess_case(mlapo_cfg(DType::kFloat16, CM::kKropeCtkv,
                                                                             QM::kPerTensorAsymm, false, 43));
  MlapoParams p = c.mlapo_params();
  p.sin = nullptr;
  expect_refused(c, p, kParamNullptr, "mlapo: sin: MPP-20 cos and sin are given together");
  p = c.mlapo_params();
  p.cos = nullptr;
  expect_refused(c, p, kParamNullptr, "mlapo: cos: MPP-20");
}

TEST(MlapoRules, RequiredTensorsMPP01AndModeTensorsMPP10) {
  const MlaPreprocessCase c = testdata::make_mla_preprocess_case(mlapo_cfg(DType::kBFloat16, CM::kInt8NzCache,
                                                                             QM::kPerTensorAsymm, false, 44));
  using P = MlapoParams;
  for (auto [name, field] : {std::pair{"input", &P::input}, std::pair{"wdqkv", &P::wdqkv},
                             std::pair{"gamma1", &P::gamma1}, std::pair{"wuq", &P::wuq},
                             std::pair{"gamma2", &P::gamma2}, std::pair{"wuk", &P::wuk},
                             std::pair{"kvCache", &P::kv_cache}, std::pair{"slotMapping", &P::slot_mapping},
                             std::pair{"qOut", &P::q_out}}) {
    MlapoParams p = c.mlapo_params();
    p.*field = TensorView{};
    expect_refused(c, p, kParamNullptr, std::string("mlapo: ") + name + ": MPP-01 required tensor is null");
  }
  for (auto [name, field] : {std::pair{"quantScale0", &P::quant_scale0}, std::pair{"quantOffset0", &P::quant_offset0},
                             std::pair{"deScale0", &P::de_scale0}, std::pair{"bias1", &P::bias1},
                             std::pair{"ctkvScale", &P::ctkv_scale}, std::pair{"kvCacheRope", &P::kv_cache_rope},
                             std::pair{"qRopeOut", &P::q_rope_out}}) {
    MlapoParams p = c.mlapo_params();
    p.*field = nullptr;
    expect_refused(c, p, kParamInvalid, std::string("mlapo: ") + name + ": MPP-10");
  }
}

TEST(MlapoRules, ShapesAndDtypesMPP09MPP02) {
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(mlapo_cfg(DType::kFloat16, CM::kKropeCtkv,
                                                                       QM::kPerTensorAsymm, false, 45));
  const HostTensor short_beta1 = from_values(DType::kFloat16, {c.cfg.Hcq - 1}, std::vector<double>(
                                                                                    static_cast<size_t>(c.cfg.Hcq - 1), 0.0));
  MlapoParams p = c.mlapo_params();
  p.beta1 = &short_beta1.view;
  expect_refused(c, p, kParamInvalid, "mlapo: beta1: MPP-09");
  const HostTensor bf16_beta1 = from_values(DType::kBFloat16, {c.cfg.Hcq},
                                            std::vector<double>(static_cast<size_t>(c.cfg.Hcq), 0.0));
  p = c.mlapo_params();
  p.beta1 = &bf16_beta1.view;
  expect_refused(c, p, kParamInvalid, "mlapo: beta1: MPP-02");
  const HostTensor short_cos = from_values(DType::kFloat16, {c.cfg.tokens - 1, c.cfg.Dr},
                                           std::vector<double>(static_cast<size_t>((c.cfg.tokens - 1) * c.cfg.Dr), 0.0));
  p = c.mlapo_params();
  p.cos = &short_cos.view;
  expect_refused(c, p, kParamInvalid, "mlapo: cos: MPP-09");
  const HostTensor f16_descale = from_values(DType::kFloat16, {c.de_scale0.numel()},
                                             std::vector<double>(static_cast<size_t>(c.de_scale0.numel()), 0.0));
  p = c.mlapo_params();
  p.de_scale0 = &f16_descale.view;
  expect_refused(c, p, kParamInvalid, "mlapo: deScale0: MPP-02");
  // without RoPE, Dr comes from the rope cache: a qRopeOut of another width is refused
  MlaPreprocessCaseConfig cfg = c.cfg;
  cfg.rope = false;
  MlaPreprocessCase d = testdata::make_mla_preprocess_case(cfg);
  HostTensor wide = make_tensor(DType::kFloat16, {cfg.tokens, cfg.heads, cfg.Dr + 2});
  p = d.mlapo_params();
  p.q_rope_out = &wide.view;
  expect_refused(d, p, kParamInvalid, "mlapo: qRopeOut: MPP-09");
}

// ---- plan / run ----

TEST(MlapoPlan, OnePlanSeveralCallsAndForeignPlansRefused) {
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    MlaPreprocessCaseConfig cfg = mlapo_cfg(DType::kBFloat16, CM::kNzCache, QM::kPerTokenSymm, false, 50);
    cfg.rope = false;
    const MlaPreprocessCase first = testdata::make_mla_preprocess_case(cfg);
    OpPlan plan;
    ASSERT_EQ(mlapo_plan(first.mlapo_params(), &plan), kSuccess) << last_error_message();
    const std::string ex = plan.explain();
    EXPECT_NE(ex.find("mlapo: BF16 input, first stage without RmsNorm, PER_TOKEN_QUANT_SYMM, no RoPE rotation"),
              std::string::npos)
        << ex;
    EXPECT_NE(ex.find("the quant of the input rows"), std::string::npos) << ex;
    std::vector<uint8_t> ws(plan.workspace_size());
    for (uint64_t seed : {50, 51, 52}) {
      cfg.seed = seed;
      MlaPreprocessCase planned = testdata::make_mla_preprocess_case(cfg), one = testdata::make_mla_preprocess_case(cfg);
      ASSERT_EQ(mlapo_run(plan, planned.mlapo_params(), ws.data(), ws.size()), kSuccess) << last_error_message();
      ASSERT_EQ(run_mlapo(one), kSuccess) << last_error_message();
      EXPECT_TRUE(outputs_equal(planned, one)) << "seed " << seed << " isa " << isa_name(isa);
    }
    // a MlaPreprocess plan in mlapo_run and a MLAPO plan in mla_preprocess_run: foreign plans
    MlaPreprocessCase other = testdata::make_mla_preprocess_case(cfg);
    OpPlan cann;
    ASSERT_EQ(mla_preprocess_plan(other.params(), &cann), kSuccess) << last_error_message();
    std::vector<uint8_t> ws2(cann.workspace_size() + plan.workspace_size());
    EXPECT_EQ(mlapo_run(cann, other.mlapo_params(), ws2.data(), ws2.size()), kParamInvalid);
    EXPECT_EQ(mla_preprocess_run(plan, other.params(), ws2.data(), ws2.size()), kParamInvalid);
    EXPECT_EQ(mlapo_run(OpPlan(), other.mlapo_params(), ws2.data(), ws2.size()), kParamNullptr);
    EXPECT_TRUE(untouched(other));
    // another call shape with this plan: MPP-18
    cfg.tokens += 1;
    MlaPreprocessCase bigger = testdata::make_mla_preprocess_case(cfg);
    EXPECT_EQ(mlapo_run(plan, bigger.mlapo_params(), ws.data(), ws.size()), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("MPP-18"), std::string::npos) << last_error_message();
    EXPECT_TRUE(untouched(bigger));
    // cos given at run but not at plan time: MPP-18
    cfg.tokens -= 1;
    cfg.rope = true;
    MlaPreprocessCase with_rope = testdata::make_mla_preprocess_case(cfg);
    EXPECT_EQ(mlapo_run(plan, with_rope.mlapo_params(), ws.data(), ws.size()), kParamInvalid);
    EXPECT_TRUE(untouched(with_rope));
  }
  reset_isa();
  EXPECT_EQ(mlapo_plan(MlapoParams{}, nullptr), kParamNullptr);
  uint64_t* none = nullptr;
  EXPECT_EQ(mlapo_workspace_size(MlapoParams{}, none), kParamNullptr);
}

}  // namespace
}  // namespace mlaops::testing
