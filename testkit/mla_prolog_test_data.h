// Test data for MlaProlog (reference and operator tests): owning host tensors, seeded random
// bf16 / int8 / fp32 data, FRACTAL_NZ packing (core/fractal_nz.h), and a whole-case builder
// that produces every tensor of one call for a scenario and a set of small shapes.
//
// Data are drawn per tensor from its own seed (case seed, tensor id), in a fixed order that
// does not depend on the scenario, so two cases differing only in dtypes share their values
// (e.g. NO_QUANT and PARTIAL with integer_weights: the same weightUqQr values, bf16 vs int8).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <ostream>
#include <random>
#include <vector>

#include "core/element_access.h"
#include "core/fractal_nz.h"
#include "core/host_tensor.h"
#include "mlaops/dtype.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/numeric.h"
#include "mlaops/tensor_view.h"

namespace mlaops::testdata {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }
  int64_t randint(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }  // [lo, hi]
  std::mt19937_64& engine() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

// HostTensor, make_tensor, from_values: core/host_tensor.h (shared with the tools).
using mlaops::HostTensor;
using mlaops::from_values;
using mlaops::make_tensor;

inline std::vector<double> uniform_values(int64_t n, uint64_t seed, double lo, double hi) {
  Rng rng(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = rng.uniform(lo, hi);
  return v;
}
inline std::vector<double> int_values(int64_t n, uint64_t seed, int64_t lo, int64_t hi) {
  Rng rng(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<double>(rng.randint(lo, hi));
  return v;
}
inline HostTensor random_bf16(const std::vector<int64_t>& dims, uint64_t seed, double lo, double hi) {
  HostTensor h = make_tensor(DType::kBFloat16, dims);
  return from_values(DType::kBFloat16, dims, uniform_values(h.numel(), seed, lo, hi));
}
inline HostTensor random_f32(const std::vector<int64_t>& dims, uint64_t seed, double lo, double hi) {
  HostTensor h = make_tensor(DType::kFloat32, dims);
  return from_values(DType::kFloat32, dims, uniform_values(h.numel(), seed, lo, hi));
}
inline HostTensor random_int8(const std::vector<int64_t>& dims, uint64_t seed, int64_t lo, int64_t hi) {
  HostTensor h = make_tensor(DType::kInt8, dims);
  return from_values(DType::kInt8, dims, int_values(h.numel(), seed, lo, hi));
}

// FRACTAL_NZ packing of a contiguous 2-D ND tensor [rows, cols]:
// 4-D storage view [C1, R1, 16, c0] (the aclnn examples' form) ...
inline HostTensor to_nz_4d(const HostTensor& nd) {
  const int64_t rows = nd.view.dims[0], cols = nd.view.dims[1], es = dtype_size(nd.view.dtype);
  int64_t s[4];
  nz_storage_shape(rows, cols, es, s);
  HostTensor h = make_tensor(nd.view.dtype, {s[0], s[1], s[2], s[3]}, Format::kFractalNZ);
  nd_to_nz(nd.bytes.data(), h.bytes.data(), rows, cols, es);
  return h;
}
// ... or a 2-D logical view [rows, cols] with the 4-D storage dims (torch_npu's form).
inline HostTensor to_nz_2d(const HostTensor& nd) {
  HostTensor h = to_nz_4d(nd);
  const int64_t rows = nd.view.dims[0], cols = nd.view.dims[1];
  TensorView v = make_view(h.bytes.data(), nd.view.dtype, {rows, cols}, Format::kFractalNZ);
  v.storage_rank = 4;
  for (int i = 0; i < 4; ++i) v.storage_dims[i] = h.view.dims[i];
  h.view = v;
  return h;
}

// Byte-exact comparison of two tensors' buffers.
inline bool same_bytes(const HostTensor& a, const HostTensor& b) { return a.bytes == b.bytes; }
// True if every byte equals b.
inline bool all_bytes(const HostTensor& h, uint8_t b) {
  return std::all_of(h.bytes.begin(), h.bytes.end(), [b](uint8_t x) { return x == b; });
}

// ---- a whole MlaProlog case ----

enum class WeightForm { kNz4d, kNz2d, kNd };

struct MlaPrologCaseConfig {
  MlaPrologScenario scenario = MlaPrologScenario::kNoQuant;
  int64_t B = 2, S = 3;
  bool bsh = true;  // token_x [B, S, He]; false: TND, token_x [T = B*S, He]
  int64_t He = 64, Hcq = 32, N = 2, D = 16, Dr = 16, Hckv = 32;
  int64_t block_num = 4, block_size = 16;
  MlaPrologCacheMode cache_mode = MlaPrologCacheMode::kPaBsnd;
  WeightForm weight_form = WeightForm::kNz4d;
  bool integer_weights = false;     // the three LoRA weights drawn as integers in [-8, 8]
  bool unit_weight_scales = false;  // dequantScaleW* = 1
  bool smooth = false;              // pass smoothScalesCq (partial / full)
  bool q_nope_out = true;           // V2: pass dequantScaleQNopeOut ((1) placeholder when unused)
  // V3: the α scales and the queryNormOut output (with dequantScaleQNormOut when quantized)
  double qc_qr_scale = 1.0, kc_scale = 1.0;
  bool query_norm = false;
  // V3 cache modes: PA_BLK_* block tables; with tokenX [T, He] the batches' token counts (T is
  // their sum, actualSeqLenOptional their prefix sums; empty: B batches of S tokens)
  std::vector<int64_t> seq_lens;
  // V3 per-tile KV quant (the *PerTile scenarios): kNopeClipAlphaOptional[0]
  double clip_alpha = 0.75;
  // FULL_QUANT_KV_QUANT: quantScaleCkvOptional of shape (1), the form aclnnMlaPrologV3WeightNz
  // takes (kvCacheQuantMode 1); false: V1 / V2's (1, Hckv), of which element 0 is read
  bool quant_scale_ckv_1d = false;
  uint64_t seed = 1;
  uint8_t canary = 0xA5;            // initial byte of caches and outputs
  int64_t T() const {
    return seq_lens.empty() ? B * S : std::accumulate(seq_lens.begin(), seq_lens.end(), int64_t{0});
  }
  int64_t batches() const { return seq_lens.empty() ? B : static_cast<int64_t>(seq_lens.size()); }
  int64_t batch_len(int64_t b) const { return seq_lens.empty() ? S : seq_lens[static_cast<size_t>(b)]; }
  // kv cache row: Hckv, or the per-tile packed row (Hckv int8 | Dr bf16 | fp32 per 128 channels)
  int64_t kv_row() const { return mla_prolog_is_per_tile(scenario) ? Hckv + 2 * Dr + 4 * (Hckv / 128) : Hckv; }
};

struct MlaPrologCase {
  MlaPrologCaseConfig cfg;
  HostTensor token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq, rmsnorm_gamma_ckv;
  HostTensor rope_sin, rope_cos, cache_index, kv_cache, kr_cache;
  HostTensor dequant_scale_x, dequant_scale_w_dq, dequant_scale_w_uq_qr, dequant_scale_w_dkv_kr;
  HostTensor quant_scale_ckv, quant_scale_ckr, smooth_scales_cq;
  HostTensor query_out, query_rope_out, dequant_scale_q_nope_out;
  HostTensor query_norm_out, dequant_scale_q_norm_out;  // V3 outputs
  HostTensor actual_seq_len, k_nope_clip_alpha;         // V3 inputs (absent unless a test sets them)

  // Views of this object (do not move the case while the params are in use).
  MlaPrologParams params() const {
    auto opt = [](const HostTensor& h) -> const TensorView* { return h.present() ? &h.view : nullptr; };
    MlaPrologParams p;
    p.token_x = token_x.view;
    p.weight_dq = weight_dq.view;
    p.weight_uq_qr = weight_uq_qr.view;
    p.weight_uk = weight_uk.view;
    p.weight_dkv_kr = weight_dkv_kr.view;
    p.rmsnorm_gamma_cq = rmsnorm_gamma_cq.view;
    p.rmsnorm_gamma_ckv = rmsnorm_gamma_ckv.view;
    p.rope_sin = rope_sin.view;
    p.rope_cos = rope_cos.view;
    p.cache_index = cache_index.present() ? cache_index.view : TensorView{};
    p.kv_cache = kv_cache.view;
    p.kr_cache = kr_cache.view;
    p.dequant_scale_x = opt(dequant_scale_x);
    p.dequant_scale_w_dq = opt(dequant_scale_w_dq);
    p.dequant_scale_w_uq_qr = opt(dequant_scale_w_uq_qr);
    p.dequant_scale_w_dkv_kr = opt(dequant_scale_w_dkv_kr);
    p.quant_scale_ckv = opt(quant_scale_ckv);
    p.quant_scale_ckr = opt(quant_scale_ckr);
    p.smooth_scales_cq = opt(smooth_scales_cq);
    p.cache_mode = cfg.cache_mode;
    p.query_out = query_out.view;
    p.query_rope_out = query_rope_out.view;
    p.dequant_scale_q_nope_out = opt(dequant_scale_q_nope_out);
    p.qc_qr_scale = cfg.qc_qr_scale;
    p.kc_scale = cfg.kc_scale;
    p.query_norm_out = opt(query_norm_out);
    p.dequant_scale_q_norm_out = opt(dequant_scale_q_norm_out);
    p.actual_seq_len = opt(actual_seq_len);
    p.k_nope_clip_alpha = opt(k_nope_clip_alpha);
    p.kv_quant_per_tile = mla_prolog_is_per_tile(cfg.scenario);
    return p;
  }

  // A deep copy (equal to make_mla_prolog_case(cfg) when this case is untouched): tests that run
  // one case under every ISA generate it once and clone it per run.
  MlaPrologCase clone() const {
    MlaPrologCase c;
    c.cfg = cfg;
    HostTensor MlaPrologCase::*const members[] = {  // every tensor member
        &MlaPrologCase::token_x, &MlaPrologCase::weight_dq, &MlaPrologCase::weight_uq_qr, &MlaPrologCase::weight_uk,
        &MlaPrologCase::weight_dkv_kr, &MlaPrologCase::rmsnorm_gamma_cq, &MlaPrologCase::rmsnorm_gamma_ckv,
        &MlaPrologCase::rope_sin, &MlaPrologCase::rope_cos, &MlaPrologCase::cache_index, &MlaPrologCase::kv_cache,
        &MlaPrologCase::kr_cache, &MlaPrologCase::dequant_scale_x, &MlaPrologCase::dequant_scale_w_dq,
        &MlaPrologCase::dequant_scale_w_uq_qr, &MlaPrologCase::dequant_scale_w_dkv_kr, &MlaPrologCase::quant_scale_ckv,
        &MlaPrologCase::quant_scale_ckr, &MlaPrologCase::smooth_scales_cq, &MlaPrologCase::query_out,
        &MlaPrologCase::query_rope_out, &MlaPrologCase::dequant_scale_q_nope_out, &MlaPrologCase::query_norm_out,
        &MlaPrologCase::dequant_scale_q_norm_out, &MlaPrologCase::actual_seq_len, &MlaPrologCase::k_nope_clip_alpha};
    for (HostTensor MlaPrologCase::*m : members) c.*m = (this->*m).clone();
    return c;
  }

  // Refills caches and outputs with the canary byte.
  void reset_outputs() {
    for (HostTensor* h : {&kv_cache, &kr_cache, &query_out, &query_rope_out, &dequant_scale_q_nope_out,
                          &query_norm_out, &dequant_scale_q_norm_out})
      h->fill_bytes(cfg.canary);
  }
};

// Per-tensor seed.
inline uint64_t tensor_seed(uint64_t seed, int id) { return seed * 1000003ull + static_cast<uint64_t>(id); }

// A LoRA weight [rows, cols]: int8 draws in [-100, 100] (or [-8, 8] with integer_weights) when
// `int8`, else bf16 draws in [-0.25, 0.25] (or integers in [-8, 8]); packed per cfg.weight_form.
inline HostTensor make_lora_weight(const MlaPrologCaseConfig& cfg, int id, int64_t rows, int64_t cols, bool int8) {
  const uint64_t seed = tensor_seed(cfg.seed, id);
  std::vector<double> v = cfg.integer_weights ? int_values(rows * cols, seed, -8, 8)
                          : int8                ? int_values(rows * cols, seed, -100, 100)
                                                : uniform_values(rows * cols, seed, -0.25, 0.25);
  HostTensor nd = from_values(int8 ? DType::kInt8 : DType::kBFloat16, {rows, cols}, v);
  switch (cfg.weight_form) {
    case WeightForm::kNz4d: return to_nz_4d(nd);
    case WeightForm::kNz2d: return to_nz_2d(nd);
    case WeightForm::kNd: return nd;
  }
  return nd;
}

// Rotary tables in the "doubled halves" layout the callers pass: row t is
// [cos(pos*theta_0..theta_{h-1}), cos(pos*theta_0..theta_{h-1})] (sin likewise), bf16.
inline void make_rope_tables(const MlaPrologCaseConfig& cfg, std::vector<double>* sin_v, std::vector<double>* cos_v) {
  const int64_t T = cfg.T(), Dr = cfg.Dr, h = Dr / 2;
  sin_v->assign(static_cast<size_t>(T * Dr), 0.0);
  cos_v->assign(static_cast<size_t>(T * Dr), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const double pos = static_cast<double>(7 * t + 3);
    for (int64_t i = 0; i < h; ++i) {
      const double theta = pos * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(Dr));
      for (int64_t half = 0; half < 2; ++half) {
        (*sin_v)[static_cast<size_t>(t * Dr + half * h + i)] = std::sin(theta);
        (*cos_v)[static_cast<size_t>(t * Dr + half * h + i)] = std::cos(theta);
      }
    }
  }
}

inline MlaPrologCase make_mla_prolog_case(const MlaPrologCaseConfig& cfg) {
  MlaPrologCase c;
  c.cfg = cfg;
  const MlaPrologScenario sc = cfg.scenario;
  const bool full = mla_prolog_is_full_quant(sc);
  const bool partial = mla_prolog_is_partial_quant(sc);
  const bool kvq = mla_prolog_is_kv_quant(sc);
  const bool full_kvq = sc == MlaPrologScenario::kFullQuantKvQuant;
  const bool partial_kvq = sc == MlaPrologScenario::kPartialQuantKvQuant;
  const bool per_tile = mla_prolog_is_per_tile(sc);
  const MlaPrologCacheMode mode = cfg.cache_mode;
  const int64_t T = cfg.T(), He = cfg.He, Hcq = cfg.Hcq, N = cfg.N, D = cfg.D, Dr = cfg.Dr, Hckv = cfg.Hckv;
  const int64_t uq_cols = N * (D + Dr);
  auto tok = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> dims = cfg.bsh ? std::vector<int64_t>{cfg.B, cfg.S} : std::vector<int64_t>{T};
    dims.insert(dims.end(), tail.begin(), tail.end());
    return dims;
  };

  // inputs
  if (full) {
    c.token_x = from_values(DType::kInt8, tok({He}), int_values(T * He, tensor_seed(cfg.seed, 1), -100, 100));
  } else {
    c.token_x = from_values(DType::kBFloat16, tok({He}), uniform_values(T * He, tensor_seed(cfg.seed, 1), -1, 1));
  }
  c.weight_dq = make_lora_weight(cfg, 2, He, Hcq, full);
  c.weight_uq_qr = make_lora_weight(cfg, 3, Hcq, uq_cols, full || partial);
  c.weight_uk = random_bf16({N, D, Hckv}, tensor_seed(cfg.seed, 4), -0.25, 0.25);
  c.weight_dkv_kr = make_lora_weight(cfg, 5, He, Hckv + Dr, full);
  c.rmsnorm_gamma_cq = random_bf16({Hcq}, tensor_seed(cfg.seed, 6), 0.5, 1.5);
  c.rmsnorm_gamma_ckv = random_bf16({Hckv}, tensor_seed(cfg.seed, 7), 0.5, 1.5);
  std::vector<double> sin_v, cos_v;
  make_rope_tables(cfg, &sin_v, &cos_v);
  c.rope_sin = from_values(DType::kBFloat16, tok({Dr}), sin_v);
  c.rope_cos = from_values(DType::kBFloat16, tok({Dr}), cos_v);

  // cacheIndex: distinct slots (PA_BSND, PA_NZ) or block ids (PA_BLK_*: a seeded permutation) when
  // the cache has room, else 0; none in BSND / TND
  const bool blocks = mla_prolog_cache_blocks(mode);
  const int64_t slots = blocks ? cfg.block_num : cfg.block_num * cfg.block_size;
  int64_t entries = T;  // PA_BLK: the batches' block counts
  if (blocks) {
    entries = 0;
    for (int64_t b = 0; b < cfg.batches(); ++b) entries += (cfg.batch_len(b) + cfg.block_size - 1) / cfg.block_size;
  }
  std::vector<double> idx(static_cast<size_t>(entries), 0.0);
  if (slots > 0) {
    std::vector<int64_t> perm(static_cast<size_t>(slots));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    Rng rng(tensor_seed(cfg.seed, 8));
    std::shuffle(perm.begin(), perm.end(), rng.engine());
    for (int64_t t = 0; t < entries; ++t)
      idx[static_cast<size_t>(t)] = static_cast<double>(perm[static_cast<size_t>(t % slots)]);
  }
  if (mla_prolog_cache_paged(mode)) {
    std::vector<int64_t> idx_dims = cfg.bsh ? std::vector<int64_t>{cfg.B, cfg.S} : std::vector<int64_t>{T};
    if (blocks) idx_dims = cfg.bsh ? std::vector<int64_t>{cfg.B, entries / std::max<int64_t>(cfg.B, 1)}
                                   : std::vector<int64_t>{entries};
    c.cache_index = from_values(DType::kInt64, idx_dims, idx);
  }
  if (blocks && !cfg.bsh) {
    std::vector<double> cum;
    int64_t sum = 0;
    for (int64_t b = 0; b < cfg.batches(); ++b) cum.push_back(static_cast<double>(sum += cfg.batch_len(b)));
    c.actual_seq_len = from_values(DType::kInt32, {cfg.batches()}, cum);
  }

  auto cache_dims = [&](int64_t width) {
    if (mode == MlaPrologCacheMode::kBsnd) return std::vector<int64_t>{cfg.B, cfg.S, 1, width};
    if (mode == MlaPrologCacheMode::kTnd) return std::vector<int64_t>{T, 1, width};
    return std::vector<int64_t>{cfg.block_num, cfg.block_size, 1, width};
  };
  c.kv_cache = make_tensor(kvq ? DType::kInt8 : DType::kBFloat16, cache_dims(cfg.kv_row()));
  c.kr_cache = per_tile ? make_tensor(DType::kBFloat16, {0})  // the rope row is in the kv row
                        : make_tensor(partial_kvq ? DType::kInt8 : DType::kBFloat16, cache_dims(Dr));
  if (per_tile) c.k_nope_clip_alpha = from_values(DType::kFloat32, {1}, {cfg.clip_alpha});

  // scales
  auto w_scale = [&](int id, int64_t n) {
    return cfg.unit_weight_scales ? from_values(DType::kFloat32, {1, n}, std::vector<double>(static_cast<size_t>(n), 1.0))
                                  : random_f32({1, n}, tensor_seed(cfg.seed, id), 0.005, 0.015);
  };
  if (full) {
    c.dequant_scale_x = random_f32({T, 1}, tensor_seed(cfg.seed, 9), 0.005, 0.015);
    c.dequant_scale_w_dq = w_scale(10, Hcq);
    c.dequant_scale_w_dkv_kr = w_scale(12, Hckv + Dr);
  }
  if (full || partial) {
    c.dequant_scale_w_uq_qr = w_scale(11, uq_cols);
    if (cfg.smooth) c.smooth_scales_cq = random_f32({1, Hcq}, tensor_seed(cfg.seed, 15), 0.5, 1.5);
  }
  if (kvq && !per_tile) c.quant_scale_ckv = random_f32({1, Hckv}, tensor_seed(cfg.seed, 13), 10, 30);
  if (full_kvq && cfg.quant_scale_ckv_1d)  // the same element 0, as a (1) tensor
    c.quant_scale_ckv = from_values(DType::kFloat32, {1}, {c.quant_scale_ckv.get(0)});
  if (partial_kvq) c.quant_scale_ckr = random_f32({1, Dr}, tensor_seed(cfg.seed, 14), 20, 60);

  // outputs
  c.query_out = make_tensor(full_kvq ? DType::kInt8 : DType::kBFloat16, tok({N, Hckv}));
  c.query_rope_out = make_tensor(DType::kBFloat16, tok({N, Dr}));
  if (cfg.q_nope_out) {
    c.dequant_scale_q_nope_out = full_kvq ? make_tensor(DType::kFloat32, {T, N, 1}) : make_tensor(DType::kFloat32, {1});
  }
  if (cfg.query_norm) {
    c.query_norm_out = make_tensor(full || partial ? DType::kInt8 : DType::kBFloat16, tok({Hcq}));
    if (full || partial) c.dequant_scale_q_norm_out = make_tensor(DType::kFloat32, {T, 1});
  }
  c.reset_outputs();
  return c;
}

// The split sizes the C API accepts (Hcq 1536, Hckv 512, D 128, Dr 64: MP-07 in
// docs/ops/mla_prolog.md), set on `c`.
inline void set_vendor_sizes(MlaPrologCaseConfig& c) {
  c.Hcq = 1536;
  c.Hckv = 512;
  c.D = 128;
  c.Dr = 64;
}

// The vendor's shapes (He 7168, Hcq 1536, Hckv 512, D 128, Dr 64), N 2, T 3, two 16-token blocks
// (the V3 tests, the MlaProlog negative tests, the concurrency jobs and the MlaProlog fuzz
// targets; those with another T, He or seed set it on the result).
inline MlaPrologCaseConfig vendor_small_cfg(MlaPrologScenario sc, bool bsh, MlaPrologCacheMode mode) {
  MlaPrologCaseConfig c;
  c.scenario = sc;
  c.N = 2;
  c.He = 7168;
  set_vendor_sizes(c);
  c.B = 3;
  c.S = 1;
  c.bsh = bsh;
  c.cache_mode = mode;
  c.block_num = 2;
  c.block_size = 16;
  c.smooth = sc == MlaPrologScenario::kPartialQuantKvQuant;
  c.seed = 3 + static_cast<int>(sc);
  return c;
}

// ---- the vendor-shape matrix (test_mla_prolog_aclnn, the performance coverage of `mlaops bench
// --coverage`) ----

struct MlaPrologVendorCase {
  MlaPrologScenario sc;
  int64_t N, He, B, S;
  bool bsh;
  MlaPrologCacheMode mode;
  WeightForm form;
};

inline void PrintTo(const MlaPrologVendorCase& c, std::ostream* os) {
  *os << mla_prolog_scenario_name(c.sc) << " N=" << c.N << " He=" << c.He << " B=" << c.B << " S=" << c.S
      << (c.bsh ? " BSH " : " TND ") << mla_prolog_cache_mode_name(c.mode);
}

// The case's seed in the vendor-shape matrix.
inline uint64_t mla_prolog_vendor_seed(const MlaPrologVendorCase& v) { return static_cast<uint64_t>(v.N * 7 + v.He + v.B); }

// The config of a vendor-shape case (the split sizes MP-07 accepts; blockSize 128 for an odd
// seed, else 16; room for every token).
inline MlaPrologCaseConfig mla_prolog_vendor_cfg(const MlaPrologVendorCase& v, uint64_t seed) {
  MlaPrologCaseConfig c;
  c.scenario = v.sc;
  c.N = v.N;
  c.He = v.He;
  set_vendor_sizes(c);
  c.B = v.B;
  c.S = v.S;
  c.bsh = v.bsh;
  c.cache_mode = v.mode;
  c.weight_form = v.form;
  c.block_size = (seed % 2) ? 128 : 16;
  c.block_num = (v.B * v.S + c.block_size - 1) / c.block_size + 1;
  c.seed = seed;
  return c;
}

// The matrix at the vendor's shapes: every N in {1,2,8,32,64,128} x every He in
// {6144, 7168, 7680}; each (N, He) pair gets the next scenario, token layout, cache mode and NZ
// form in turn and a token count from {1, 3, 5} (T = 1 and T not a multiple of any tile), so
// every scenario meets BSH and TND, PA_BSND and PA_NZ. (The full scenario x layout x cache-mode x
// weight-form product runs at small shapes in test_mla_prolog_cross.cpp.)
inline std::vector<MlaPrologVendorCase> mla_prolog_vendor_cases() {
  const MlaPrologScenario sc[] = {MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvNoQuant,
                                  MlaPrologScenario::kPartialQuantKvQuant, MlaPrologScenario::kFullQuantKvNoQuant,
                                  MlaPrologScenario::kFullQuantKvQuant};
  std::vector<MlaPrologVendorCase> v;
  int i = 0;
  for (int64_t N : {1, 2, 8, 32, 64, 128}) {
    for (int64_t He : {6144, 7168, 7680}) {
      const int64_t T = (i % 3 == 0) ? 1 : (i % 3 == 1) ? 3 : 5;
      const bool bsh = (i / 5) % 2 == 0;
      v.push_back({sc[i % 5], N, He, bsh ? 1 : T, bsh ? T : 1, bsh,
                   (i % 2) ? MlaPrologCacheMode::kPaNz : MlaPrologCacheMode::kPaBsnd,
                   (i % 4 < 2) ? WeightForm::kNz4d : WeightForm::kNz2d});
      ++i;
    }
  }
  return v;
}

}  // namespace mlaops::testdata
