// Test data for MlaPreprocess (reference and operator tests): a whole-case builder producing
// every tensor of one call with the data distributions of the vendor test (ATB
// test_mla_preprocess.py, docs/ops/mla_preprocess.md). Reuses HostTensor, Rng, the seeded value
// generators and the FRACTAL_NZ packing of mla_prolog_test_data.h.
//
// Distributions (the vendor test's; "randint(lo, hi)" has numpy's exclusive upper bound):
//   input U(-2, 2); gamma0/1/2 U(-1, 1); beta0/1 randint(-2, 2) = {-2, -1, 0, 1};
//   quantScale U(-2, 2), redrawn while |qs| < 0.25 (a tiny divisor saturates everything);
//   quantOffset uniform integer in [-128, 127]; int8 weights trunc(U(-2, 2)) = {-1, 0, 1} (the
//   torch .to(int8) truncation); deScale U(0, 1) / 1000 as fp32 (INT64 fp32-bits encoding for
//   fp16 inputs, FP32 for bf16); bias randint(-10, 10) = [-10, 9]; slotMapping the first T entries
//   of a random permutation of [0, BlockNum*BlockSize) with slot[0] = -1; qNopeScale U(-1, 1) per
//   head. Not given by the vendor test (choices): wuk U(-1, 1); ctkvScale U(0.02, 0.05) (kN / ctkvScale
//   spans most of the int8 range); weights of the unquantized path U(-1, 1) * 2 / sqrt(K);
//   cos / sin the real rotary tables of mla_prolog_test_data.h (halves repeated, position 7t+3).
// Every float value is drawn bf16-representable (rounded to bf16, |v| < 2^-14 flushed to 0), so
// it is exact in fp16 too: an fp16 case and a bf16 case with the same seed share their inputs.
// Data are drawn per tensor from its own seed (case seed, tensor id).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "core/fractal_nz.h"
#include "mlaops/dtype.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mlapo.h"
#include "mlaops/numeric.h"
#include "mlaops/tensor_view.h"
#include "testkit/mla_prolog_test_data.h"

namespace mlaops::testdata {

// The accepted views of the NZ weights wdqkv / wuq (mlaops/mla_preprocess.h).
enum class MlaPreprocessWeightForm {
  kNz4d,   // [C1, R1, 16, c0]
  kNzAtb,  // [1, C1, R1*16, c0] (ATB test)
  kNz2d,   // 2-D logical view + 4-D storage dims
  kNd,     // plain ND [rows, cols]
};

struct MlaPreprocessCaseConfig {
  DType dtype = DType::kFloat16;  // input dtype: kFloat16 or kBFloat16
  int64_t tokens = 5, heads = 2, hidden = 64;
  // Split sizes (vendor: Hckv 512, Dr 64, Hcq 1536, D 128); small by default for fast tests.
  int64_t Hckv = 64, Dr = 16, Hcq = 48, D = 32;
  MlaPreprocessCacheMode cache_mode = MlaPreprocessCacheMode::kKvCache;
  MlaPreprocessQuantMode quant_mode = MlaPreprocessQuantMode::kPerTensorAsymm;
  bool float_weights = false;  // unquantized path: weights in the input dtype, doRmsNorm = false
  bool wuk_nz = false;         // wuk FRACTAL_NZ per head [N, Hckv/16, D, 16] (else ND [N, D, Hckv])
  MlaPreprocessWeightForm weight_form = MlaPreprocessWeightForm::kNz4d;
  int64_t block_num = 4, block_size = 16;
  double epsilon = 1e-6;  // the vendor test's
  uint64_t seed = 1;
  uint8_t canary = 0xA5;  // initial byte of the caches and outputs
  bool q_down = false;    // build qDownOut [T, Hcq] (aclnnMlaPreprocessV2)
  // The MLAPO op (mlaops/mlapo.h, MlaPreprocessCase::mlapo_params): quantScale0 U(0.016, 0.02) and
  // quantOffset0 in [-2, 2] for its un-normalised input (|input / qs| <= 125, so the first stage
  // does not saturate); rope: pass cos / sin; beta1: pass beta1.
  bool mlapo = false;
  bool rope = true;
  bool beta1 = true;
};

struct MlaPreprocessCase {
  MlaPreprocessCaseConfig cfg;
  HostTensor input, gamma0, beta0, quant_scale0, quant_offset0, wdqkv, de_scale0, bias0;
  HostTensor gamma1, beta1, quant_scale1, quant_offset1, wuq, de_scale1, bias1;
  HostTensor gamma2, cos, sin, wuk, kv_cache, kv_cache_rope, slot_mapping, ctkv_scale, q_nope_scale;
  HostTensor q_out, q_rope_out;  // kvCacheOut / krCacheOut are kv_cache / kv_cache_rope
  HostTensor q_down_out;         // cfg.q_down

  // Views of this object (do not move the case while the params are in use). Every tensor the
  // builder made is passed (the vendor test passes all 24); absent ones are null.
  MlaPreprocessParams params() const {
    auto opt = [](const HostTensor& h) -> const TensorView* { return h.present() ? &h.view : nullptr; };
    MlaPreprocessParams p;
    p.input = input.view;
    p.gamma0 = gamma0.view;
    p.beta0 = beta0.view;
    p.quant_scale0 = opt(quant_scale0);
    p.quant_offset0 = opt(quant_offset0);
    p.wdqkv = wdqkv.view;
    p.de_scale0 = opt(de_scale0);
    p.bias0 = opt(bias0);
    p.gamma1 = gamma1.view;
    p.beta1 = beta1.view;
    p.quant_scale1 = opt(quant_scale1);
    p.quant_offset1 = opt(quant_offset1);
    p.wuq = wuq.view;
    p.de_scale1 = opt(de_scale1);
    p.bias1 = opt(bias1);
    p.gamma2 = gamma2.view;
    p.cos = cos.view;
    p.sin = sin.view;
    p.wuk = wuk.view;
    p.kv_cache = kv_cache.view;
    p.kv_cache_rope = opt(kv_cache_rope);
    p.slot_mapping = slot_mapping.view;
    p.ctkv_scale = opt(ctkv_scale);
    p.q_nope_scale = opt(q_nope_scale);
    p.epsilon = cfg.epsilon;
    p.cache_mode = cfg.cache_mode;
    p.quant_mode = cfg.quant_mode;
    p.do_rms_norm = !cfg.float_weights;
    p.q_out = q_out.view;
    p.kv_cache_out = kv_cache.view;
    p.q_rope_out = opt(q_rope_out);
    p.kr_cache_out = opt(kv_cache_rope);
    p.q_down_out = opt(q_down_out);
    return p;
  }

  // The MLAPO op's params on the same tensors (gamma0 / beta0 not passed; beta1, cos / sin per
  // cfg.beta1 / cfg.rope).
  MlapoParams mlapo_params() const {
    const MlaPreprocessParams c = params();
    MlapoParams p;
    p.input = c.input;
    p.quant_scale0 = c.quant_scale0;
    p.quant_offset0 = c.quant_offset0;
    p.wdqkv = c.wdqkv;
    p.de_scale0 = c.de_scale0;
    p.bias0 = c.bias0;
    p.gamma1 = c.gamma1;
    p.beta1 = cfg.beta1 ? &beta1.view : nullptr;
    p.quant_scale1 = c.quant_scale1;
    p.quant_offset1 = c.quant_offset1;
    p.wuq = c.wuq;
    p.de_scale1 = c.de_scale1;
    p.bias1 = c.bias1;
    p.gamma2 = c.gamma2;
    p.cos = cfg.rope ? &cos.view : nullptr;
    p.sin = cfg.rope ? &sin.view : nullptr;
    p.wuk = c.wuk;
    p.kv_cache = c.kv_cache;
    p.kv_cache_rope = c.kv_cache_rope;
    p.slot_mapping = c.slot_mapping;
    p.ctkv_scale = c.ctkv_scale;
    p.q_nope_scale = c.q_nope_scale;
    p.cache_mode = c.cache_mode;
    p.quant_mode = c.quant_mode;
    p.q_out = c.q_out;
    p.kv_cache_out = c.kv_cache_out;
    p.q_rope_out = c.q_rope_out;
    p.kr_cache_out = c.kr_cache_out;
    p.q_down_out = c.q_down_out;
    return p;
  }

  // Refills the caches and outputs with the canary byte.
  void reset_outputs() {
    for (HostTensor* h : {&kv_cache, &kv_cache_rope, &q_out, &q_rope_out, &q_down_out}) h->fill_bytes(cfg.canary);
  }
};

// n values drawn U(lo, hi), rounded to bf16 (so exact in fp16 as well), |v| < 2^-14 flushed to 0.
inline std::vector<double> mla_preprocess_float_values(int64_t n, uint64_t seed, double lo, double hi) {
  std::vector<double> v = uniform_values(n, seed, lo, hi);
  for (double& x : v) {
    x = round_bf16(x);
    if (std::fabs(x) < 6.103515625e-05) x = 0.0;
  }
  return v;
}

// A logical [rows, cols] weight packed per the config's form.
inline HostTensor mla_preprocess_pack_weight(const HostTensor& nd, MlaPreprocessWeightForm form) {
  switch (form) {
    case MlaPreprocessWeightForm::kNz4d: return to_nz_4d(nd);
    case MlaPreprocessWeightForm::kNz2d: return to_nz_2d(nd);
    case MlaPreprocessWeightForm::kNzAtb: {
      HostTensor h = to_nz_4d(nd);
      const int64_t c1 = h.view.dims[0], r1 = h.view.dims[1], c0 = h.view.dims[3];
      h.view = make_view(h.bytes.data(), h.view.dtype, {1, c1, r1 * 16, c0}, Format::kFractalNZ);
      return h;
    }
    case MlaPreprocessWeightForm::kNd: break;
  }
  return nd.clone();
}

// A projection weight [rows = output channels, cols = K]: int8 trunc(U(-2, 2)) in the quantized
// path, else the input dtype U(-1, 1) * 2 / sqrt(K).
inline HostTensor mla_preprocess_weight(const MlaPreprocessCaseConfig& cfg, int id, int64_t rows, int64_t cols) {
  const uint64_t seed = tensor_seed(cfg.seed, id);
  if (cfg.float_weights) {
    std::vector<double> v = uniform_values(rows * cols, seed, -1.0, 1.0);
    const double k = 2.0 / std::sqrt(static_cast<double>(cols > 0 ? cols : 1));
    for (double& x : v) x = round_bf16(x * k);
    return mla_preprocess_pack_weight(from_values(cfg.dtype, {rows, cols}, v), cfg.weight_form);
  }
  std::vector<double> v = uniform_values(rows * cols, seed, -2.0, 2.0);
  for (double& x : v) x = std::trunc(x);
  return mla_preprocess_pack_weight(from_values(DType::kInt8, {rows, cols}, v), cfg.weight_form);
}

// deScale of n channels: U(0, 1) / 1000 rounded to fp32; INT64 holding the fp32 bits (fp16
// input) or FP32 (bf16 input).
inline HostTensor mla_preprocess_descale(const MlaPreprocessCaseConfig& cfg, int id, int64_t n) {
  std::vector<double> v = uniform_values(n, tensor_seed(cfg.seed, id), 0.0, 1.0);
  if (cfg.dtype == DType::kBFloat16) {
    for (double& x : v) x /= 1000.0;
    return from_values(DType::kFloat32, {n}, v);
  }
  HostTensor h = make_tensor(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t bits = static_cast<int64_t>(float_bits(static_cast<float>(v[static_cast<size_t>(i)] / 1000.0)));
    std::memcpy(h.bytes.data() + i * 8, &bits, 8);
  }
  return h;
}

// quantScale: U(-2, 2) redrawn while |qs| < 0.25, bf16-representable, [1] in the input dtype.
inline HostTensor mla_preprocess_quant_scale(const MlaPreprocessCaseConfig& cfg, int id) {
  Rng rng(tensor_seed(cfg.seed, id));
  double qs = 0.0;
  while (std::fabs(qs) < 0.25) qs = round_bf16(rng.uniform(-2.0, 2.0));
  return from_values(cfg.dtype, {1}, {qs});
}

// A whole case. Tokens beyond the cache's slot count get slot -1.
inline MlaPreprocessCase make_mla_preprocess_case(const MlaPreprocessCaseConfig& cfg) {
  MlaPreprocessCase c;
  c.cfg = cfg;
  const DType dt = cfg.dtype;
  const int64_t T = cfg.tokens, He = cfg.hidden, N = cfg.heads, Hckv = cfg.Hckv, Dr = cfg.Dr, Hcq = cfg.Hcq;
  const int64_t D = cfg.D, m1_cols = Hckv + Dr + Hcq, m2_cols = N * (D + Dr);
  const bool quant = !cfg.float_weights;
  const bool per_tensor = cfg.quant_mode == MlaPreprocessQuantMode::kPerTensorAsymm;
  const MlaPreprocessCacheMode cm = cfg.cache_mode;
  const bool cm2 = cm == MlaPreprocessCacheMode::kInt8NzCache;
  auto fv = [&](int id, int64_t n, double lo, double hi) {
    return mla_preprocess_float_values(n, tensor_seed(cfg.seed, id), lo, hi);
  };

  c.input = from_values(dt, {T, He}, fv(1, T * He, -2.0, 2.0));
  c.gamma0 = from_values(dt, {He}, fv(2, He, -1.0, 1.0));
  c.beta0 = from_values(dt, {He}, int_values(He, tensor_seed(cfg.seed, 3), -2, 1));
  c.wdqkv = mla_preprocess_weight(cfg, 6, m1_cols, He);
  c.gamma1 = from_values(dt, {Hcq}, fv(9, Hcq, -1.0, 1.0));
  c.beta1 = from_values(dt, {Hcq}, int_values(Hcq, tensor_seed(cfg.seed, 10), -2, 1));
  c.wuq = mla_preprocess_weight(cfg, 13, m2_cols, Hcq);
  if (quant) {
    c.de_scale0 = mla_preprocess_descale(cfg, 7, m1_cols);
    c.de_scale1 = mla_preprocess_descale(cfg, 14, m2_cols);
    if (per_tensor) {
      c.quant_scale0 = cfg.mlapo ? from_values(dt, {1}, fv(4, 1, 0.016, 0.02)) : mla_preprocess_quant_scale(cfg, 4);
      c.quant_offset0 = from_values(DType::kInt8, {1}, int_values(1, tensor_seed(cfg.seed, 5), cfg.mlapo ? -2 : -128,
                                                                  cfg.mlapo ? 2 : 127));
      c.bias0 = from_values(DType::kInt32, {m1_cols}, int_values(m1_cols, tensor_seed(cfg.seed, 8), -10, 9));
      c.quant_scale1 = mla_preprocess_quant_scale(cfg, 11);
      c.quant_offset1 = from_values(DType::kInt8, {1}, int_values(1, tensor_seed(cfg.seed, 12), -128, 127));
      c.bias1 = from_values(DType::kInt32, {m2_cols}, int_values(m2_cols, tensor_seed(cfg.seed, 15), -10, 9));
    }
  }
  c.gamma2 = from_values(dt, {Hckv}, fv(16, Hckv, -1.0, 1.0));

  MlaPrologCaseConfig rope_cfg;  // the rotary tables of the MlaProlog tests, [T, Dr]
  rope_cfg.B = T;
  rope_cfg.S = 1;
  rope_cfg.Dr = Dr;
  std::vector<double> sin_v, cos_v;
  make_rope_tables(rope_cfg, &sin_v, &cos_v);
  for (double& v : sin_v) v = round_bf16(v);
  for (double& v : cos_v) v = round_bf16(v);
  c.cos = from_values(dt, {T, Dr}, cos_v);
  c.sin = from_values(dt, {T, Dr}, sin_v);

  // wuk [N, D, Hckv] U(-1, 1); NZ: each head's [D, Hckv] packed (c0 = 16), heads back to back
  HostTensor wuk_nd = from_values(dt, {N, D, Hckv}, fv(17, N * D * Hckv, -1.0, 1.0));
  if (cfg.wuk_nz) {
    const int64_t es = dtype_size(dt), c0 = 32 / es;
    c.wuk = make_tensor(dt, {N, Hckv / c0, D, c0}, Format::kFractalNZ);
    const int64_t head_bytes = D * Hckv * es;
    for (int64_t h = 0; h < N; ++h)
      nd_to_nz(wuk_nd.bytes.data() + h * head_bytes, c.wuk.bytes.data() + h * head_bytes, D, Hckv, es);
  } else {
    c.wuk = std::move(wuk_nd);
  }

  // caches
  const int64_t bn = cfg.block_num, bs = cfg.block_size;
  switch (cm) {
    case MlaPreprocessCacheMode::kKvCache:
      c.kv_cache = make_tensor(dt, {bn, bs, 1, Hckv + Dr});
      break;
    case MlaPreprocessCacheMode::kKropeCtkv:
      c.kv_cache = make_tensor(dt, {bn, bs, 1, Hckv});
      c.kv_cache_rope = make_tensor(dt, {bn, bs, 1, Dr});
      break;
    case MlaPreprocessCacheMode::kInt8NzCache:
      c.kv_cache = make_tensor(DType::kInt8, {bn, Hckv / 32, bs, 32});
      c.kv_cache_rope = make_tensor(dt, {bn, Dr / 16, bs, 16});
      break;
    case MlaPreprocessCacheMode::kNzCache:
      c.kv_cache = make_tensor(dt, {bn, Hckv / 16, bs, 16});
      c.kv_cache_rope = make_tensor(dt, {bn, Dr / 16, bs, 16});
      break;
  }

  // slotMapping: distinct slots, slot[0] = -1
  std::vector<int64_t> perm(static_cast<size_t>(bn * bs));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  Rng rng(tensor_seed(cfg.seed, 18));
  std::shuffle(perm.begin(), perm.end(), rng.engine());
  std::vector<double> slots(static_cast<size_t>(T), -1.0);
  for (int64_t t = 1; t < T && t < bn * bs; ++t) slots[static_cast<size_t>(t)] = static_cast<double>(perm[static_cast<size_t>(t)]);
  c.slot_mapping = from_values(DType::kInt32, {T}, slots);

  if (cm2) {
    c.ctkv_scale = from_values(dt, {1}, fv(19, 1, 0.02, 0.05));
    c.q_nope_scale = from_values(dt, {N}, fv(20, N, -1.0, 1.0));
  }

  // outputs
  c.q_out = make_tensor(cm2 ? DType::kInt8 : dt, {T, N, cm == MlaPreprocessCacheMode::kKvCache ? Hckv + Dr : Hckv});
  if (cm != MlaPreprocessCacheMode::kKvCache) c.q_rope_out = make_tensor(dt, {T, N, Dr});
  if (cfg.q_down) c.q_down_out = make_tensor(dt, {T, cfg.Hcq});
  c.reset_outputs();
  return c;
}

// A case at the vendor's sizes (the aclnn tests and the MlaPreprocess fuzz targets).
struct MlaPreprocessVendorCase {
  DType dt;
  int64_t tokens, heads;
  MlaPreprocessCacheMode cm;
  MlaPreprocessQuantMode qm;
  bool wuk_nz;
  MlaPreprocessWeightForm form;
  bool float_weights;
};

inline MlaPreprocessCaseConfig vendor_cfg(const MlaPreprocessVendorCase& v, uint64_t seed) {
  MlaPreprocessCaseConfig c;
  c.dtype = v.dt;
  c.tokens = v.tokens;
  c.heads = v.heads;
  c.hidden = v.float_weights ? 6144 : 7168;
  c.Hckv = 512;
  c.Dr = 64;
  c.Hcq = 1536;
  c.D = 128;
  c.cache_mode = v.cm;
  c.quant_mode = v.qm;
  c.wuk_nz = v.wuk_nz;
  c.weight_form = v.form;
  c.float_weights = v.float_weights;
  c.block_size = 128;
  c.block_num = 3;
  c.seed = seed;
  return c;
}

// The vendor-shape cases (test_mla_preprocess_aclnn, the performance coverage of `mlaops bench
// --coverage`): both input dtypes, every cache mode, both quant modes, both wuk formats, every NZ
// weight view, the BF16-weight path.
inline const std::vector<MlaPreprocessVendorCase>& mla_preprocess_vendor_cases() {
  using CM = MlaPreprocessCacheMode;
  using QM = MlaPreprocessQuantMode;
  static const std::vector<MlaPreprocessVendorCase> cases = {
    // the aclnn doc example: fp16, tokenNum 8, headNum 32, cacheMode 1, quantMode 0, ND wuk
    {DType::kFloat16, 8, 32, CM::kKropeCtkv, QM::kPerTensorAsymm, false, MlaPreprocessWeightForm::kNz4d, false},
    {DType::kBFloat16, 1, 64, CM::kInt8NzCache, QM::kPerTensorAsymm, false, MlaPreprocessWeightForm::kNzAtb, false},
    {DType::kFloat16, 3, 16, CM::kKvCache, QM::kPerTokenSymm, true, MlaPreprocessWeightForm::kNz2d, false},
    {DType::kBFloat16, 2, 16, CM::kNzCache, QM::kPerTokenSymm, false, MlaPreprocessWeightForm::kNz4d, false},
    {DType::kFloat16, 1, 128, CM::kInt8NzCache, QM::kPerTokenSymm, true, MlaPreprocessWeightForm::kNz4d, false},
    {DType::kBFloat16, 2, 16, CM::kKvCache, QM::kPerTensorAsymm, false, MlaPreprocessWeightForm::kNz4d, true},
    {DType::kBFloat16, 1, 32, CM::kKropeCtkv, QM::kPerTensorAsymm, true, MlaPreprocessWeightForm::kNzAtb, true},
    // bf16 weights at the aclnn doc's sizes (hidden 6144, tokenNum 8, headNum 32): the vendor rule
    // fails here between two fp32 paths (scalar against AVX-512), the dtype-weights rule holds
    {DType::kBFloat16, 8, 32, CM::kKvCache, QM::kPerTensorAsymm, false, MlaPreprocessWeightForm::kNz4d, true},
  };
  return cases;
}

}  // namespace mlaops::testdata
