// bench_identity: the MlaProlog (V1 / V2 / V3) and MlaPreprocess cases (docs/performance.md,
// "Proving a change changes nothing"). Public headers only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/identity_common.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"

namespace bench_identity {

// ---- MlaProlog ----

struct PrologCfg {
  int version = 2;          // 1, 2, 3
  bool full = false;        // token_x INT8 (full quant)
  bool partial = false;     // weight_uq_qr INT8 (partial quant)
  bool kvq = false;         // kv_cache INT8
  bool per_tile = false;    // V3 kvCacheQuantMode 3
  bool smooth = false;
  bool nd_weights = false;  // bf16 ND weights instead of NZ
  bool norm_out = false;    // V3 queryNormOut
  double qc = 1.0, kc = 1.0;
  mlaops::MlaPrologCacheMode cm = mlaops::MlaPrologCacheMode::kPaBsnd;
  bool bsnd_tokens = false;  // token_x [B, S, He]
  int64_t B = 2, S = 3, N = 4;
  int64_t He = 256, Hcq = 128, Hckv = 128, D = 32, Dr = 64, bs = 16;
};

inline std::unique_ptr<Prepared> build_prolog(const PrologCfg& c) {
  using CM = mlaops::MlaPrologCacheMode;
  auto P = std::make_unique<Prepared>();
  P->op = Prepared::Op::kProlog;
  mlaops::MlaPrologParams& p = P->prolog;
  const int64_t T = c.B * c.S, N = c.N, QD = c.D + c.Dr;
  const bool quant = c.full || c.partial;
  auto tok = [&](int64_t last) {
    return c.bsnd_tokens ? std::vector<int64_t>{c.B, c.S, last} : std::vector<int64_t>{T, last};
  };
  auto tok_h = [&](int64_t h, int64_t last) {
    return c.bsnd_tokens ? std::vector<int64_t>{c.B, c.S, h, last} : std::vector<int64_t>{T, h, last};
  };
  auto weight = [&](bool int8, int64_t rows, int64_t cols, uint32_t seed) -> Buf& {
    if (int8) return P->in(DType::kInt8, {cols / 32, rows / 16, 16, 32}, seed, -100, 100, Format::kFractalNZ);
    if (c.nd_weights) return P->in(DType::kBFloat16, {rows, cols}, seed, -0.05f, 0.05f);
    return P->in(DType::kBFloat16, {cols / 16, rows / 16, 16, 16}, seed, -0.05f, 0.05f, Format::kFractalNZ);
  };
  p.token_x = P->in(c.full ? DType::kInt8 : DType::kBFloat16, tok(c.He), 11, c.full ? -100.f : -1.f, c.full ? 100.f : 1.f).v;
  p.weight_dq = weight(c.full, c.He, c.Hcq, 1).v;
  p.weight_uq_qr = weight(quant, c.Hcq, N * QD, 2).v;
  p.weight_uk = P->in(DType::kBFloat16, {N, c.D, c.Hckv}, 4, -0.05f, 0.05f).v;
  p.weight_dkv_kr = weight(c.full, c.He, c.Hckv + c.Dr, 3).v;
  p.rmsnorm_gamma_cq = P->in(DType::kBFloat16, {c.Hcq}, 5, 0.9f, 1.1f).v;
  p.rmsnorm_gamma_ckv = P->in(DType::kBFloat16, {c.Hckv}, 6, 0.9f, 1.1f).v;
  p.rope_sin = P->in(DType::kBFloat16, tok(c.Dr), 12, -1, 1).v;
  p.rope_cos = P->in(DType::kBFloat16, tok(c.Dr), 13, -1, 1).v;
  p.cache_mode = c.cm;
  p.rmsnorm_epsilon_cq = 1e-5;
  p.rmsnorm_epsilon_ckv = 2e-5;
  // the caches: paged ones of BlockNum blocks with scattered slots / block ids (one token
  // skipped in the slot modes), or one row per token
  const int64_t per = (c.S + c.bs - 1) / c.bs, block_num = std::max<int64_t>(c.B * per, (T + c.bs - 1) / c.bs) + 1;
  const int64_t kv_row = c.per_tile ? c.Hckv + 2 * c.Dr + 4 * c.Hckv / 128 : c.Hckv;
  const DType kvt = c.kvq ? DType::kInt8 : DType::kBFloat16;
  const DType krt = c.kvq && c.partial && !c.per_tile ? DType::kInt8 : DType::kBFloat16;
  std::vector<int64_t> kvd, krd;
  if (mlaops::mla_prolog_cache_paged(c.cm)) {
    kvd = {block_num, c.bs, 1, kv_row};
    krd = {block_num, c.bs, 1, c.per_tile ? 0 : c.Dr};
    if (mlaops::mla_prolog_cache_blocks(c.cm)) {
      Buf& ids = P->in(DType::kInt64, c.bsnd_tokens ? std::vector<int64_t>{c.B, per} : std::vector<int64_t>{c.B * per}, 0, 0, 0);
      for (int64_t i = 0; i < c.B * per; ++i) reinterpret_cast<int64_t*>(ids.b.data())[i] = (i * 5 + 1) % block_num;
      p.cache_index = ids.v;
      if (!c.bsnd_tokens) {
        Buf& asl = P->in(DType::kInt32, {c.B}, 0, 0, 0);
        for (int64_t b = 0; b < c.B; ++b) reinterpret_cast<int32_t*>(asl.b.data())[b] = static_cast<int32_t>((b + 1) * c.S);
        p.actual_seq_len = &asl.v;
      }
    } else {
      Buf& slots = P->in(DType::kInt64, tok(1).size() == 3 ? std::vector<int64_t>{c.B, c.S} : std::vector<int64_t>{T}, 0, 0, 0);
      const int64_t slot_count = block_num * c.bs;
      for (int64_t t = 0; t < T; ++t)
        reinterpret_cast<int64_t*>(slots.b.data())[t] = t == 1 ? -1 : (t * 37 + 5) % slot_count;
      p.cache_index = slots.v;
    }
  } else if (c.cm == CM::kBsnd) {
    kvd = {c.B, c.S, 1, kv_row};
    krd = {c.B, c.S, 1, c.per_tile ? 0 : c.Dr};
  } else {
    kvd = {T, 1, kv_row};
    krd = {T, 1, c.per_tile ? 0 : c.Dr};
  }
  p.kv_cache = P->out(kvt, kvd, 20, -3, 3).v;  // in/out: the untouched rows keep their bytes
  p.kr_cache = P->out(krt, krd, 21, -3, 3).v;
  const bool q_int8 = c.full && c.kvq && !c.per_tile;
  p.query_out = P->out(q_int8 ? DType::kInt8 : DType::kBFloat16, tok_h(N, c.Hckv)).v;
  p.query_rope_out = P->out(DType::kBFloat16, tok_h(N, c.Dr)).v;
  if (c.full) {
    p.dequant_scale_x = &P->in(DType::kFloat32, {T, 1}, 14, 0.001f, 0.002f).v;
    p.dequant_scale_w_dq = &P->in(DType::kFloat32, {1, c.Hcq}, 7, 0.001f, 0.002f).v;
    p.dequant_scale_w_dkv_kr = &P->in(DType::kFloat32, {1, c.Hckv + c.Dr}, 9, 0.001f, 0.002f).v;
  }
  if (quant) p.dequant_scale_w_uq_qr = &P->in(DType::kFloat32, {1, N * QD}, 8, 0.001f, 0.002f).v;
  if (c.kvq && !c.per_tile) {
    p.quant_scale_ckv = &P->in(DType::kFloat32, {1, c.Hckv}, 10, 10.f, 20.f).v;
    if (c.partial) p.quant_scale_ckr = &P->in(DType::kFloat32, {1, c.Dr}, 15, 10.f, 20.f).v;
  }
  if (c.smooth) p.smooth_scales_cq = &P->in(DType::kFloat32, {1, c.Hcq}, 16, 0.5f, 1.5f).v;
  // V2 / V3: [T, N, 1] in FULL_QUANT_KV_QUANT, else the (1) placeholder the vendor passes
  if (c.version >= 2) p.dequant_scale_q_nope_out = &P->out(DType::kFloat32, q_int8 ? std::vector<int64_t>{T, N, 1} : std::vector<int64_t>{1}).v;
  if (c.version >= 3) {
    p.qc_qr_scale = c.qc;
    p.kc_scale = c.kc;
    if (c.norm_out) {
      p.query_norm_out = &P->out(quant ? DType::kInt8 : DType::kBFloat16, tok(c.Hcq)).v;
      if (quant) p.dequant_scale_q_norm_out = &P->out(DType::kFloat32, {T, 1}).v;
    }
    if (c.per_tile) {
      p.kv_quant_per_tile = true;
      p.k_nope_clip_alpha = &P->in(DType::kFloat32, {1}, 17, 0.8f, 0.9f).v;
    }
  }
  return P;
}

inline void prolog_cases(std::vector<Case>& out) {
  using CM = mlaops::MlaPrologCacheMode;
  struct Scen {
    const char* name;
    bool full, partial, kvq, per_tile;
  };
  const Scen scens[] = {{"no_quant", false, false, false, false},
                        {"partial_kv_no_quant", false, true, false, false},
                        {"partial_kv_quant", false, true, true, false},
                        {"full_kv_no_quant", true, false, false, false},
                        {"full_kv_quant", true, false, true, false},
                        {"partial_per_tile", false, true, true, true},
                        {"full_per_tile", true, false, true, true}};
  for (const Scen& sc : scens)
    for (CM cm : {CM::kPaBsnd, CM::kPaNz, CM::kPaBlkBsnd, CM::kPaBlkNz, CM::kBsnd, CM::kTnd})
      for (int version : {1, 2, 3}) {
        if (version < 3 && (sc.per_tile || (cm != CM::kPaBsnd && cm != CM::kPaNz))) continue;
        if (sc.per_tile && (mlaops::mla_prolog_cache_nz(cm) || mlaops::mla_prolog_cache_blocks(cm))) continue;
        if (version == 1 && sc.full && sc.kvq) continue;  // needs the V2 output dequantScaleQNope
        PrologCfg c;
        c.version = version, c.full = sc.full, c.partial = sc.partial, c.kvq = sc.kvq, c.per_tile = sc.per_tile, c.cm = cm;
        c.bsnd_tokens = cm == CM::kBsnd;
        const std::string base = std::string("prolog.v") + num(version) + "." + sc.name + "." +
                                 mlaops::mla_prolog_cache_mode_name(cm);
        out.push_back({base, [c] { return build_prolog(c); }});
        if (version == 3) {
          PrologCfg v = c;
          v.qc = 0.75, v.kc = 1.5, v.norm_out = true, v.smooth = sc.full || sc.partial;
          out.push_back({base + ".alpha_norm_out", [v] { return build_prolog(v); }});
        }
      }
  // token layouts, ND weights, longer runs of tokens, odd head counts
  for (bool bsnd : {false, true})
    for (int64_t T : {1, 40}) {
      PrologCfg c;
      c.bsnd_tokens = bsnd, c.B = bsnd ? 2 : T, c.S = bsnd ? (T + 1) / 2 : 1, c.N = 3;
      out.push_back({"prolog.v2.tokens." + std::string(bsnd ? "bsh" : "th") + ".T" + num(c.B * c.S),
                     [c] { return build_prolog(c); }});
      c.nd_weights = true;
      out.push_back({"prolog.v2.nd_weights." + std::string(bsnd ? "bsh" : "th") + ".T" + num(c.B * c.S),
                     [c] { return build_prolog(c); }});
      c.nd_weights = false, c.partial = true, c.smooth = true;
      out.push_back({"prolog.v2.partial_smooth." + std::string(bsnd ? "bsh" : "th") + ".T" + num(c.B * c.S),
                     [c] { return build_prolog(c); }});
    }
  // DeepSeek-V3 dims (He 7168, Hcq 1536, Hckv 512, D 128, Dr 64), N 8: bf16 and W8A8 + KV quant
  for (bool int8 : {false, true}) {
    PrologCfg c;
    c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 8, c.B = 3, c.S = 1, c.bs = 128;
    c.full = c.kvq = int8;
    c.cm = int8 ? CM::kPaNz : CM::kPaBsnd;
    out.push_back({std::string("prolog.v2.deepseek.") + (int8 ? "int8" : "bf16"), [c] { return build_prolog(c); }});
    // several chunks of tokens (the plan's chunk is 256): T 600 = 256 + 256 + 88, as T 1024 runs 4
    c.B = 600;
    out.push_back({std::string("prolog.v2.deepseek_chunks.") + (int8 ? "int8" : "bf16") + ".T600",
                   [c] { return build_prolog(c); }});
  }
}

// ---- MlaPreprocess ----

struct PreCfg {
  DType dt = DType::kBFloat16;
  mlaops::MlaPreprocessCacheMode cm = mlaops::MlaPreprocessCacheMode::kKvCache;
  mlaops::MlaPreprocessQuantMode qm = mlaops::MlaPreprocessQuantMode::kPerTensorAsymm;
  bool unquant = false;      // weights in the input dtype, do_rms_norm false
  bool wuk_nz = false;
  bool q_down = false;
  bool distinct_out = false;  // kv_cache_out / kr_cache_out distinct from the input caches
  int64_t T = 5, N = 2, He = 256, Hcq = 64, Hckv = 64, D = 32, Dr = 16, bs = 16, blocks = 3;
};

inline std::unique_ptr<Prepared> build_pre(const PreCfg& c) {
  using CM = mlaops::MlaPreprocessCacheMode;
  auto P = std::make_unique<Prepared>();
  P->op = Prepared::Op::kPreprocess;
  mlaops::MlaPreprocessParams& p = P->pre;
  const DType dt = c.dt;
  const int64_t QKV = c.Hckv + c.Dr + c.Hcq, UQ = c.N * (c.D + c.Dr), T = c.T;
  const DType wdt = c.unquant ? dt : DType::kInt8;
  p.input = P->in(dt, {T, c.He}, 17, -2.f, 2.f).v;
  p.gamma0 = P->in(dt, {c.He}, 4, 0.9f, 1.1f).v;
  p.beta0 = P->in(dt, {c.He}, 5, -0.1f, 0.1f).v;
  p.wdqkv = P->bufs.emplace_back(make_nz(wdt, QKV, c.He, 1, c.unquant ? -0.05f : -100.f, c.unquant ? 0.05f : 100.f)).v;
  p.gamma1 = P->in(dt, {c.Hcq}, 6, 0.9f, 1.1f).v;
  p.beta1 = P->in(dt, {c.Hcq}, 7, -0.1f, 0.1f).v;
  p.wuq = P->bufs.emplace_back(make_nz(wdt, UQ, c.Hcq, 2, c.unquant ? -0.05f : -100.f, c.unquant ? 0.05f : 100.f)).v;
  p.gamma2 = P->in(dt, {c.Hckv}, 8, 0.9f, 1.1f).v;
  p.cos = P->in(dt, {T, c.Dr}, 18, -1.f, 1.f).v;
  p.sin = P->in(dt, {T, c.Dr}, 19, -1.f, 1.f).v;
  p.wuk = c.wuk_nz ? P->in(dt, {c.N, c.Hckv / 16, c.D, 16}, 3, -0.05f, 0.05f, Format::kFractalNZ).v
                   : P->in(dt, {c.N, c.D, c.Hckv}, 3, -0.05f, 0.05f).v;
  if (c.unquant) {
    p.do_rms_norm = false;
  } else {
    const DType ds = dt == DType::kFloat16 ? DType::kInt64 : DType::kFloat32;
    p.de_scale0 = &P->in(ds, {QKV}, 13, 0.0005f, 0.001f).v;
    p.de_scale1 = &P->in(ds, {UQ}, 14, 0.0005f, 0.001f).v;
    if (c.qm == mlaops::MlaPreprocessQuantMode::kPerTensorAsymm) {
      p.quant_scale0 = &P->in(dt, {1}, 9, 0.02f, 0.03f).v;
      p.quant_scale1 = &P->in(dt, {1}, 10, 0.02f, 0.03f).v;
      p.quant_offset0 = &P->in(DType::kInt8, {1}, 11, -3.f, 3.f).v;
      p.quant_offset1 = &P->in(DType::kInt8, {1}, 12, -3.f, 3.f).v;
      p.bias0 = &P->in(DType::kInt32, {QKV}, 15, -10.f, 10.f).v;
      p.bias1 = &P->in(DType::kInt32, {UQ}, 16, -10.f, 10.f).v;
    }
  }
  p.cache_mode = c.cm;
  p.quant_mode = c.qm;
  const bool nz = mlaops::mla_preprocess_is_nz_cache(c.cm);
  const DType kvt = c.cm == CM::kInt8NzCache ? DType::kInt8 : dt;
  std::vector<int64_t> kvd, krd;
  if (c.cm == CM::kKvCache) {
    kvd = {c.blocks, c.bs, 1, c.Hckv + c.Dr};
  } else if (!nz) {
    kvd = {c.blocks, c.bs, 1, c.Hckv};
    krd = {c.blocks, c.bs, 1, c.Dr};
  } else {
    const int64_t c0 = kvt == DType::kInt8 ? 32 : 16;
    kvd = {c.blocks, c.Hckv / c0, c.bs, c0};
    krd = {c.blocks, c.Dr / 16, c.bs, 16};
  }
  const Format cf = nz ? Format::kFractalNZ : Format::kND;
  Buf& kv = c.distinct_out ? P->in(kvt, kvd, 20, -3, 3, cf) : P->out(kvt, kvd, 20, -3, 3, cf);
  p.kv_cache = kv.v;
  if (c.distinct_out) p.kv_cache_out = P->out(kvt, kvd, 22, -3, 3, cf).v;
  if (!krd.empty()) {
    Buf& kr = c.distinct_out ? P->in(dt, krd, 21, -3, 3, cf) : P->out(dt, krd, 21, -3, 3, cf);
    p.kv_cache_rope = &kr.v;
    if (c.distinct_out) p.kr_cache_out = &P->out(dt, krd, 23, -3, 3, cf).v;
    p.q_rope_out = &P->out(dt, {T, c.N, c.Dr}).v;
  }
  Buf& slots = P->in(DType::kInt32, {T}, 0, 0, 0);
  for (int64_t t = 0; t < T; ++t)
    reinterpret_cast<int32_t*>(slots.b.data())[t] = t == 2 ? -1 : static_cast<int32_t>((t * 11 + 3) % (c.blocks * c.bs));
  p.slot_mapping = slots.v;
  if (c.cm == CM::kInt8NzCache) {
    p.ctkv_scale = &P->in(dt, {1}, 24, 0.02f, 0.03f).v;
    p.q_nope_scale = &P->in(dt, {c.N}, 25, 5.f, 20.f).v;
  }
  p.q_out = P->out(c.cm == CM::kInt8NzCache ? DType::kInt8 : dt, {T, c.N, c.cm == CM::kKvCache ? c.Hckv + c.Dr : c.Hckv}).v;
  if (c.q_down) p.q_down_out = &P->out(dt, {T, c.Hcq}).v;
  return P;
}

inline void preprocess_cases(std::vector<Case>& out) {
  using CM = mlaops::MlaPreprocessCacheMode;
  using QM = mlaops::MlaPreprocessQuantMode;
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache})
      for (QM qm : {QM::kPerTensorAsymm, QM::kPerTokenSymm}) {
        PreCfg c;
        c.dt = dt, c.cm = cm, c.qm = qm;
        const std::string base = std::string("preprocess.") + dt_name(dt) + "." + mlaops::mla_preprocess_cache_mode_name(cm) +
                                 "." + (qm == QM::kPerTensorAsymm ? "per_tensor" : "per_token");
        out.push_back({base, [c] { return build_pre(c); }});
        PreCfg v = c;
        v.wuk_nz = true, v.q_down = true, v.distinct_out = true, v.T = 37;
        out.push_back({base + ".nz_wuk.q_down.distinct_out.T37", [v] { return build_pre(v); }});
      }
  for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kNzCache}) {
    PreCfg c;
    c.unquant = true, c.cm = cm;
    out.push_back({std::string("preprocess.bf16.unquant.") + mlaops::mla_preprocess_cache_mode_name(cm),
                   [c] { return build_pre(c); }});
  }
  // DeepSeek-V3 dims, N 4, the W8A8 configuration of the bench (cacheMode 1, quantMode 0)
  PreCfg c;
  c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 4, c.T = 3, c.bs = 128, c.blocks = 2;
  c.cm = CM::kKropeCtkv;
  out.push_back({"preprocess.deepseek.krope_ctkv", [c] { return build_pre(c); }});
}

}  // namespace bench_identity
