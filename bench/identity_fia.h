// bench_identity: the FusedInferAttentionScoreV4 cases (docs/performance.md, "Proving a change
// changes nothing"). Public headers only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/identity_common.h"
#include "mlaops/fused_infer_attention_score.h"

namespace bench_identity {

// ---- FusedInferAttentionScoreV4 ----

// The KV cache form: contiguous (the query's layout), or paged BnBsH / BnNBsD / NZ.
enum class Kv { kContig, kBnBsH, kBnNBsD, kNz };

struct FiaCfg {
  DType dt = DType::kBFloat16;
  std::string layout = "BSND";  // inputLayout, with its "_OUT" part when there is one
  int64_t B = 2, N = 4, KVN = 2, QS = 1, KVS = 37, D = 64, Dv = 64, Dr = 0;
  Kv kv = Kv::kContig;
  int64_t bs = 16;
  bool varlen = false;  // per-batch lengths below the extents (packed layouts: always per batch)
  bool uniform = false;  // packed layouts too: every batch the full extents
  int64_t sparse = 0;
  int mask = 0;  // 0 none, 1 [B, 1, QS, KVS], 2 2-D ([QS, KVS] or [B, KVS] for QS 1), 3 [2048, 2048]
  int64_t pre = 2147483647, next = 2147483647;
  bool pse = false, sink = false, lse = false, legacy = false, plan_run = false;
  int64_t ip = 0;
  uint32_t seed = 1;
};

inline std::vector<int64_t> split_dims(const std::string& l, int64_t B, int64_t S, int64_t N, int64_t D, int64_t T) {
  if (l == "BSH") return {B, S, N * D};
  if (l == "BSND") return {B, S, N, D};
  if (l == "BNSD") return {B, N, S, D};
  if (l == "NBSD") return {N, B, S, D};
  if (l == "TND") return {T, N, D};
  return {N, T, D};  // NTD
}

// Per-batch lengths: the extent, or (varlen) extent, extent - 3, extent - 5, ... (at least 1).
inline std::vector<int64_t> lengths(int64_t B, int64_t S, bool varlen) {
  std::vector<int64_t> v(static_cast<size_t>(B), S);
  if (varlen)
    for (int64_t b = 0; b < B; ++b) v[static_cast<size_t>(b)] = std::max<int64_t>(1, S - (b * 7) % (S + 1) / 2);
  return v;
}

inline std::vector<int64_t> cumulative(std::vector<int64_t> v) {
  for (size_t i = 1; i < v.size(); ++i) v[i] += v[i - 1];
  return v;
}

// The vendor's causal template of sparse 2 / 3 / 4: the strict upper triangle of 2048 x 2048.
inline void fill_template(Buf& m) {
  for (int64_t i = 0; i < 2048; ++i)
    for (int64_t j = 0; j < 2048; ++j) m.b[static_cast<size_t>(i * 2048 + j)] = j > i ? 1 : 0;
}

inline std::unique_ptr<Prepared> build_fia(const FiaCfg& c) {
  auto P = std::make_unique<Prepared>();
  P->op = Prepared::Op::kFia;
  mlaops::FiaParams& p = P->fia;
  const std::string in_l = c.layout.substr(0, c.layout.find('_'));
  const std::string out_l = c.layout.find('_') == std::string::npos ? in_l : c.layout.substr(c.layout.find('_') + 1);
  const bool packed = in_l == "TND" || in_l == "NTD";
  const uint32_t s = c.seed * 100;
  // query lengths (packed: per batch, cumulative in the params) and KV lengths
  const bool vary = c.varlen || (packed && !c.uniform);
  const std::vector<int64_t> ql = lengths(c.B, c.QS, vary), kl = lengths(c.B, c.KVS, vary);
  int64_t Tq = 0, Tkv = 0;
  for (int64_t x : ql) Tq += x;
  for (int64_t x : kl) Tkv += x;
  if (packed) {
    p.actual_seq_lengths = P->array(cumulative(ql));
    if (c.kv == Kv::kContig) p.actual_seq_lengths_kv = P->array(cumulative(kl));
  } else if (c.varlen) {
    if (c.QS > 1) p.actual_seq_lengths = P->array(ql);
    p.actual_seq_lengths_kv = P->array(kl);
  }
  const float lo = -1.f, hi = 1.f;
  p.query = P->in(c.dt, split_dims(in_l, c.B, c.QS, c.N, c.D, Tq), s + 1, lo, hi).v;
  if (c.Dr > 0) p.query_rope = &P->in(c.dt, split_dims(in_l, c.B, c.QS, c.N, c.Dr, Tq), s + 2, lo, hi).v;
  const bool mla = c.Dr > 0 && c.KVN == 1 && c.Dv == c.D;  // value = the key latent
  if (c.kv == Kv::kContig) {
    const Buf& k = P->in(c.dt, split_dims(in_l, c.B, c.KVS, c.KVN, c.D, Tkv), s + 3, lo, hi);
    p.key = {k.v};
    p.value = {mla ? k.v : P->in(c.dt, split_dims(in_l, c.B, c.KVS, c.KVN, c.Dv, Tkv), s + 4, lo, hi).v};
    if (c.Dr > 0) p.key_rope = &P->in(c.dt, split_dims(in_l, c.B, c.KVS, c.KVN, c.Dr, Tkv), s + 5, lo, hi).v;
  } else {
    const int64_t per = (c.KVS + c.bs - 1) / c.bs, nb = c.B * per;
    Buf& bt = P->in(DType::kInt32, {c.B, per}, 0, 0, 0);
    for (int64_t i = 0; i < nb; ++i) reinterpret_cast<int32_t*>(bt.b.data())[i] = static_cast<int32_t>((i * 7919) % nb);
    p.block_table = &bt.v;
    p.block_size = c.bs;
    if (!p.actual_seq_lengths_kv) p.actual_seq_lengths_kv = P->array(kl);
    auto cache = [&](int64_t d, uint32_t seed) -> Buf& {
      if (c.kv == Kv::kBnBsH) return P->in(c.dt, {nb, c.bs, c.KVN * d}, seed, lo, hi);
      if (c.kv == Kv::kBnNBsD) return P->in(c.dt, {nb, c.KVN, c.bs, d}, seed, lo, hi);
      return P->in(c.dt, {nb, c.KVN, d / 16, c.bs, 16}, seed, lo, hi, Format::kFractalNZ);
    };
    const Buf& k = cache(c.D, s + 3);
    p.key = {k.v};
    p.value = {mla ? k.v : cache(c.Dv, s + 4).v};
    if (c.Dr > 0) p.key_rope = &cache(c.Dr, s + 5).v;
  }
  p.num_heads = c.N;
  p.num_key_value_heads = c.KVN;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(c.D + c.Dr));
  p.input_layout = c.layout;
  p.sparse_mode = c.sparse;
  p.pre_tokens = c.pre;
  p.next_tokens = c.next;
  p.inner_precise = c.ip;
  p.legacy_uniform_invalid_rows = c.legacy;
  if (c.mask == 1 || c.mask == 2) {
    const std::vector<int64_t> dims = c.mask == 1 ? std::vector<int64_t>{c.B, 1, c.QS, c.KVS}
                                      : c.QS > 1  ? std::vector<int64_t>{c.QS, c.KVS}
                                                  : std::vector<int64_t>{c.B, c.KVS};
    Buf& m = P->in(DType::kBool, dims, s + 6, 0.f, 0.7f);  // 1 = masked: about 30 %
    const int64_t row = dims.back();
    for (int64_t j = 0; j < row; ++j) m.b[static_cast<size_t>(j)] = 1;  // one row masked everywhere
    p.atten_mask = &m.v;
  } else if (c.mask == 3) {
    Buf& m = P->in(DType::kBool, {2048, 2048}, 0, 0, 0);
    fill_template(m);
    p.atten_mask = &m.v;
  }
  if (c.pse) p.pse_shift = &P->in(c.dt, {c.B, c.N, c.QS, c.KVS}, s + 7, -2.f, 2.f).v;
  if (c.sink) p.learnable_sink = &P->in(c.dt, {c.N}, s + 8, -1.f, 3.f).v;
  const DType odt = c.dt;
  p.attention_out = P->out(odt, split_dims(out_l, c.B, c.QS, c.N, c.Dv, Tq)).v;
  if (c.lse) {
    p.softmax_lse_flag = true;
    p.softmax_lse = &P->out(DType::kFloat32, packed ? std::vector<int64_t>{Tq, c.N, 1}
                                                    : std::vector<int64_t>{c.B, c.N, c.QS, 1})
                         .v;
  }
  return P;
}

inline void add_fia(std::vector<Case>& cases, const std::string& name, const FiaCfg& c) {
  cases.push_back({"fia." + name, [c] { return build_fia(c); }});
}

// A builder that adjusts the generic one (quant settings the generic config does not cover).
inline void add_fia_with(std::vector<Case>& cases, const std::string& name, const FiaCfg& c,
                  std::function<void(Prepared&)> edit) {
  cases.push_back({"fia." + name, [c, edit] {
                     auto P = build_fia(c);
                     edit(*P);
                     return P;
                   }});
}


inline void fia_cases(std::vector<Case>& out) {
  // layouts x dtypes x decode / prefill x GQA / MHA, contiguous KV
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (const char* l : {"BSH", "BSND", "BNSD", "TND", "NTD", "BSH_BNSD", "BNSD_BSND", "BSND_NBSD", "TND_NTD"})
      for (int64_t QS : {1, 5})
        for (int64_t KVN : {1, 2, 4}) {
          FiaCfg c;
          c.dt = dt, c.layout = l, c.QS = QS, c.KVN = KVN, c.lse = KVN == 2;
          c.varlen = QS == 5 && KVN == 4;
          add_fia(out, std::string("layout.") + dt_name(dt) + "." + l + ".qs" + num(QS) + ".kvn" + num(KVN), c);
        }
  // odd head dims, D != Dv, long KV (several KV splits), many batches
  for (int64_t D : {16, 40, 128, 256}) {
    FiaCfg c;
    c.D = c.Dv = D, c.KVS = 300, c.B = 3, c.lse = true;
    add_fia(out, "dims.d" + num(D), c);
  }
  {
    FiaCfg c;
    c.D = 64, c.Dv = 32, c.QS = 3, c.lse = true;
    add_fia(out, "dims.dv32", c);
    c = FiaCfg();
    c.KVS = 2500, c.B = 1, c.N = 8, c.KVN = 1;
    add_fia(out, "dims.long_kv", c);
    c.QS = 64, c.KVS = 700, c.N = 4, c.KVN = 2, c.sparse = 3, c.mask = 3;
    add_fia(out, "dims.prefill_causal", c);
  }
  // masks, bias, sink, inner precise, invalid rows
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (int64_t QS : {1, 6}) {
      const std::string base = std::string("mask.") + dt_name(dt) + ".qs" + num(QS);
      FiaCfg c;
      c.dt = dt, c.QS = QS, c.KVS = 45, c.lse = true;
      for (int m : {1, 2}) {
        c.mask = m, c.sparse = 0;
        add_fia(out, base + ".sparse0.m" + num(m), c);
        c.legacy = true;
        add_fia(out, base + ".sparse0.m" + num(m) + ".legacy", c);
        c.legacy = false;
        c.sparse = 1;
        add_fia(out, base + ".sparse1.m" + num(m), c);
      }
      c.mask = 0, c.sparse = 0, c.pre = 10, c.next = 0;
      add_fia(out, base + ".sparse0.band_tokens", c);
      c.mask = 1, c.sparse = 0, c.pre = 20, c.next = 3;
      add_fia(out, base + ".sparse0.mask_tokens", c);
      c.pre = 2147483647, c.next = 2147483647;
      for (int64_t sp : {2, 3}) {
        c.mask = 3, c.sparse = sp;
        add_fia(out, base + ".sparse" + num(sp), c);
      }
      c.sparse = 4, c.pre = 12, c.next = 2;
      add_fia(out, base + ".sparse4", c);
      c.sparse = 0, c.mask = 0, c.pre = 2147483647, c.next = 2147483647;
      c.pse = true;
      add_fia(out, base + ".pse", c);
      c.mask = 1;
      add_fia(out, base + ".pse_mask", c);
      c.pse = false, c.mask = 0, c.sink = true;
      add_fia(out, base + ".sink", c);
      c.sink = false;
      for (int64_t ip : {1, 2, 3}) {
        c.ip = ip, c.mask = 1;
        add_fia(out, base + ".ip" + num(ip), c);
      }
    }
  // paged caches
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (Kv kv : {Kv::kBnBsH, Kv::kBnNBsD, Kv::kNz})
      for (const char* l : {"BSH", "BNSD", "TND"})
        for (int64_t QS : {1, 3}) {
          FiaCfg c;
          c.dt = dt, c.kv = kv, c.layout = l, c.QS = QS, c.KVS = 70, c.bs = 16, c.B = 3, c.lse = true;
          c.varlen = true;
          const char* kn = kv == Kv::kBnBsH ? "BnBsH" : kv == Kv::kBnNBsD ? "BnNBsD" : "NZ";
          add_fia(out, std::string("paged.") + dt_name(dt) + "." + kn + "." + l + ".qs" + num(QS), c);
          if (QS == 3 && std::string(l) == "BSH") {
            c.mask = 3, c.sparse = 3;
            add_fia(out, std::string("paged.") + dt_name(dt) + "." + kn + ".causal", c);
          }
        }
  // MLA: latent 512 + rope 64, KV_N 1, value = key (decode, MTP, prefill-like rows); small MLA
  for (Kv kv : {Kv::kContig, Kv::kBnNBsD, Kv::kBnBsH, Kv::kNz})
    for (const char* l : {"BNSD_NBSD", "BSND", "TND"})
      for (int64_t QS : {1, 4}) {
        FiaCfg c;
        c.D = c.Dv = 512, c.Dr = 64, c.KVN = 1, c.N = 16, c.B = 2, c.QS = QS, c.KVS = 300, c.lse = true;
        c.kv = kv, c.layout = l, c.bs = 128;
        if (QS > 1) c.sparse = 3, c.mask = 3;
        const char* kn = kv == Kv::kContig ? "contig" : kv == Kv::kBnBsH ? "BnBsH" : kv == Kv::kBnNBsD ? "BnNBsD" : "NZ";
        if (kv == Kv::kContig && std::string(l) == "BNSD_NBSD") continue;
        add_fia(out, std::string("mla.") + kn + "." + l + ".qs" + num(QS), c);
      }
  {
    FiaCfg c;
    c.D = c.Dv = 64, c.Dr = 16, c.KVN = 1, c.N = 8, c.QS = 2, c.KVS = 90, c.kv = Kv::kBnBsH, c.layout = "BSND";
    c.lse = true;
    add_fia(out, "mla.small", c);
    // MLA prefill: MHA with rope, D 128 + 64, V_D 128, TND, causal
    c = FiaCfg();
    c.D = c.Dv = 128, c.Dr = 64, c.N = 4, c.KVN = 4, c.QS = 40, c.KVS = 100, c.layout = "TND", c.sparse = 3, c.mask = 3;
    c.kv = Kv::kBnBsH, c.bs = 128;
    add_fia(out, "mla.prefill", c);
    // MTP with the tree mask (sparse 9): 4 draft tokens per batch
    c = FiaCfg();
    c.D = c.Dv = 512, c.Dr = 64, c.KVN = 1, c.N = 16, c.B = 2, c.QS = 4, c.KVS = 260, c.kv = Kv::kBnNBsD, c.bs = 128;
    c.layout = "TND", c.sparse = 9, c.lse = true, c.uniform = true;
    add_fia_with(out, "mla.tree", c, [](Prepared& P) {
      const int64_t B = 2, QS = 4;
      Buf& m = P.in(DType::kBool, {B * QS * QS}, 0, 0, 0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < QS; ++i) {
          for (int64_t t = 0; t < QS; ++t) m.b[static_cast<size_t>((b * QS + i) * QS + t)] = 1;
          for (int64_t t = i;; t = (t - 1) / 2) {
            m.b[static_cast<size_t>((b * QS + i) * QS + t)] = 0;
            if (t == 0) break;
          }
        }
      P.fia.atten_mask = &m.v;
    });
  }
  // MLA full quant: INT8 query + dequantScaleQuery, INT8 NZ latent, BF16 NZ rope
  for (const char* l : {"BSND_NBSD", "BSH", "TND"})
    for (int64_t QS : {1, 3}) {
      const int64_t B = 2, N = 16, D = 512, Dr = 64, L = 300, bs = 128, per = (L + bs - 1) / bs, nb = B * per;
      out.push_back({std::string("fia.mla_fq.") + l + ".qs" + num(QS), [=] {
                       auto P = std::make_unique<Prepared>();
                       mlaops::FiaParams& p = P->fia;
                       const std::string ls = l, in_l = ls.substr(0, ls.find('_'));
                       const std::string out_l = ls.find('_') == std::string::npos ? in_l : ls.substr(ls.find('_') + 1);
                       const int64_t T = B * QS;
                       p.query = P->in(DType::kInt8, split_dims(in_l, B, QS, N, D, T), 1, -127, 127).v;
                       p.query_rope = &P->in(DType::kBFloat16, split_dims(in_l, B, QS, N, Dr, T), 2, -100, 100).v;
                       const std::vector<int64_t> sdims = in_l == "TND" ? std::vector<int64_t>{T, N}
                                                                        : std::vector<int64_t>{B, QS, N};
                       p.dequant_scale_query = &P->in(DType::kFloat32, sdims, 5, 0.005f, 0.02f).v;
                       p.query_quant_mode = 3;
                       const Buf& k = P->in(DType::kInt8, {nb, 1, D / 32, bs, 32}, 3, -127, 127, Format::kFractalNZ);
                       p.key = {k.v};
                       p.value = {k.v};
                       p.key_rope = &P->in(DType::kBFloat16, {nb, 1, Dr / 16, bs, 16}, 4, -1, 1, Format::kFractalNZ).v;
                       const Buf& ks = P->in(DType::kFloat32, {1}, 6, 0.04f, 0.041f);
                       p.key_antiquant_scale = &ks.v;
                       p.value_antiquant_scale = &ks.v;
                       Buf& bt = P->in(DType::kInt32, {B, per}, 0, 0, 0);
                       for (int64_t i = 0; i < nb; ++i)
                         reinterpret_cast<int32_t*>(bt.b.data())[i] = static_cast<int32_t>((i * 7919) % nb);
                       p.block_table = &bt.v;
                       p.block_size = bs;
                       p.actual_seq_lengths_kv = P->array({L, L - 77});
                       if (in_l == "TND") p.actual_seq_lengths = P->array({QS, 2 * QS});
                       if (QS > 1) {
                         Buf& m = P->in(DType::kBool, {2048, 2048}, 0, 0, 0);
                         fill_template(m);
                         p.atten_mask = &m.v;
                         p.sparse_mode = 3;
                       }
                       p.num_heads = N;
                       p.num_key_value_heads = 1;
                       p.scale_value = 1.0 / std::sqrt(static_cast<double>(D + Dr));
                       p.input_layout = l;
                       p.attention_out = P->out(DType::kBFloat16, split_dims(out_l, B, QS, N, D, T)).v;
                       p.softmax_lse_flag = true;
                       p.softmax_lse = &P->out(DType::kFloat32, in_l == "TND" ? std::vector<int64_t>{T, N, 1}
                                                                                 : std::vector<int64_t>{B, N, QS, 1})
                                            .v;
                       return P;
                     }});
    }
  // KV antiquant: INT8 / INT4 contiguous BSH, per-channel (mode 0, with offsets) and per-token
  // (mode 1) scales, innerPrecise 0 / 1
  for (bool int4 : {false, true})
    for (int64_t mode : {0, 1})
      for (int64_t ip : {0, 1})
        for (int64_t QS : {1, 2}) {
          if (int4 && QS > 1) continue;
          const int64_t B = 2, N = 8, KVN = 2, D = 64, L = 150, W = int4 ? KVN * D / 8 : KVN * D;
          out.push_back({std::string("fia.antiquant.") + (int4 ? "int4" : "int8") + ".mode" + num(mode) + ".ip" +
                             num(ip) + ".qs" + num(QS),
                         [=] {
                           auto P = std::make_unique<Prepared>();
                           mlaops::FiaParams& p = P->fia;
                           const DType kt = int4 ? DType::kInt32 : DType::kInt8;
                           const float klo = int4 ? -2e9f : -127, khi = int4 ? 2e9f : 127;
                           p.query = P->in(DType::kBFloat16, {B, QS, N * D}, 1, -1, 1).v;
                           p.key = {P->in(kt, {B, L, W}, 3, klo, khi).v};
                           p.value = {P->in(kt, {B, L, W}, 4, klo, khi).v};
                           const float lo = int4 ? 0.06f : 0.004f, hi = int4 ? 0.2f : 0.012f;
                           if (mode == 0) {
                             p.key_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 5, lo, hi).v;
                             p.value_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 6, lo, hi).v;
                             p.key_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 7, -2, 2).v;
                             p.value_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 8, -2, 2).v;
                           } else {
                             p.key_antiquant_scale = &P->in(DType::kFloat32, {1, B, L}, 5, lo, hi).v;
                             p.value_antiquant_scale = &P->in(DType::kFloat32, {1, B, L}, 6, lo, hi).v;
                           }
                           p.key_antiquant_mode = p.value_antiquant_mode = mode;
                           p.actual_seq_lengths_kv = P->array({L, L - 40});
                           p.num_heads = N;
                           p.num_key_value_heads = KVN;
                           p.scale_value = 0.125;
                           p.input_layout = "BSH";
                           p.inner_precise = ip;
                           p.attention_out = P->out(DType::kBFloat16, {B, QS, N * D}).v;
                           return P;
                         }});
        }
  // GQA antiquant over a paged INT8 NZ cache, and over a paged BnBsH INT8 cache with the
  // post-quant INT8 output
  for (bool post : {false, true}) {
    const int64_t B = 2, N = 8, KVN = 2, D = 64, L = 200, bs = 128, per = (L + bs - 1) / bs, nb = B * per;
    out.push_back({std::string("fia.antiquant.paged") + (post ? ".bnbsh_postquant" : ".nz"), [=] {
                     auto P = std::make_unique<Prepared>();
                     mlaops::FiaParams& p = P->fia;
                     p.query = P->in(DType::kBFloat16, {B, N, 1, D}, 1, -1, 1).v;
                     if (post) {
                       p.key = {P->in(DType::kInt8, {nb, bs, KVN * D}, 3, -127, 127).v};
                       p.value = {P->in(DType::kInt8, {nb, bs, KVN * D}, 4, -127, 127).v};
                       p.key_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 5, 0.004f, 0.012f).v;
                       p.value_antiquant_scale = &P->in(DType::kBFloat16, {1, KVN, D}, 6, 0.004f, 0.012f).v;
                       p.key_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 7, -2, 2).v;
                       p.value_antiquant_offset = &P->in(DType::kBFloat16, {1, KVN, D}, 8, -2, 2).v;
                       p.quant_scale2 = &P->in(DType::kFloat32, {N, D}, 9, 50, 200).v;
                       p.quant_offset2 = &P->in(DType::kFloat32, {N, D}, 10, -10, 10).v;
                     } else {
                       p.key = {P->in(DType::kInt8, {nb, KVN, D / 32, bs, 32}, 3, -127, 127, Format::kFractalNZ).v};
                       p.value = {P->in(DType::kInt8, {nb, KVN, D / 32, bs, 32}, 4, -127, 127, Format::kFractalNZ).v};
                       p.key_antiquant_scale = &P->in(DType::kBFloat16, {KVN, D}, 5, 0.004f, 0.012f).v;
                       p.value_antiquant_scale = &P->in(DType::kBFloat16, {KVN, D}, 6, 0.004f, 0.012f).v;
                       p.inner_precise = 1;
                     }
                     Buf& bt = P->in(DType::kInt32, {B, per}, 0, 0, 0);
                     for (int64_t i = 0; i < nb; ++i) reinterpret_cast<int32_t*>(bt.b.data())[i] = static_cast<int32_t>(nb - 1 - i);
                     p.block_table = &bt.v;
                     p.block_size = bs;
                     p.actual_seq_lengths_kv = P->array({L, L - 90});
                     p.num_heads = N;
                     p.num_key_value_heads = KVN;
                     p.scale_value = 0.125;
                     p.input_layout = "BNSD";
                     p.attention_out = P->out(post ? DType::kInt8 : DType::kBFloat16, {B, N, 1, D}).v;
                     return P;
                   }});
  }
  // post-quant INT8 output of a BF16 call: per-tensor and per-channel
  for (bool per_channel : {false, true}) {
    FiaCfg c;
    c.QS = 3, c.lse = !per_channel;  // per-channel post-quant excludes softmaxLse
    add_fia_with(out, std::string("postquant.") + (per_channel ? "per_channel" : "per_tensor"), c,
                 [per_channel, c](Prepared& P) {
                   const std::vector<int64_t> sd = per_channel ? std::vector<int64_t>{c.N, c.Dv} : std::vector<int64_t>{1};
                   P.fia.quant_scale2 = &P.in(DType::kFloat32, sd, 9, 50, 200).v;
                   P.fia.quant_offset2 = &P.in(DType::kFloat32, sd, 10, -10, 10).v;
                   Buf& o = P.in(DType::kInt8, {c.B, c.QS, c.N, c.Dv}, 0, 0, 0);
                   P.outs[0] = &o;
                   P.fia.attention_out = o.v;
                 });
  }
  // INT8 full quantisation (prefill): FP16 output, and INT8 output; causal and no mask
  for (bool int8_out : {false, true})
    for (bool causal : {false, true}) {
      const int64_t B = 2, N = 4, KVN = 2, D = 64, S = 24, L = 80;
      out.push_back({std::string("fia.full_quant.") + (int8_out ? "int8_out" : "fp16_out") + (causal ? ".causal" : ""),
                     [=] {
                       auto P = std::make_unique<Prepared>();
                       mlaops::FiaParams& p = P->fia;
                       p.query = P->in(DType::kInt8, {B, S, N, D}, 1, -100, 100).v;
                       p.key = {P->in(DType::kInt8, {B, L, KVN, D}, 2, -100, 100).v};
                       p.value = {P->in(DType::kInt8, {B, L, KVN, D}, 3, -100, 100).v};
                       p.deq_scale1 = &P->in(DType::kFloat32, {1}, 4, 1e-4f, 1.01e-4f).v;
                       p.quant_scale1 = &P->in(DType::kFloat32, {1}, 5, 127.f, 127.5f).v;
                       p.deq_scale2 = &P->in(DType::kFloat32, {1}, 6, 1e-4f, 1.01e-4f).v;
                       if (int8_out) {
                         p.quant_scale2 = &P->in(DType::kFloat32, {1}, 7, 50, 60).v;
                         p.quant_offset2 = &P->in(DType::kFloat32, {1}, 8, -3, 3).v;
                       }
                       if (causal) {
                         Buf& m = P->in(DType::kBool, {2048, 2048}, 0, 0, 0);
                         fill_template(m);
                         p.atten_mask = &m.v;
                         p.sparse_mode = 3;
                       }
                       p.actual_seq_lengths = P->array({S, S - 5});
                       p.actual_seq_lengths_kv = P->array({L, L - 11});
                       p.num_heads = N;
                       p.num_key_value_heads = KVN;
                       p.scale_value = 0.125;
                       p.input_layout = "BSND";
                       p.attention_out = P->out(int8_out ? DType::kInt8 : DType::kFloat16, {B, S, N, D}).v;
                       p.softmax_lse_flag = true;
                       p.softmax_lse = &P->out(DType::kFloat32, {B, N, S, 1}).v;
                       return P;
                     }});
    }
  // shared prefix (decode and prefill) and left padding
  for (int64_t QS : {1, 4}) {
    FiaCfg c;
    c.layout = "BNSD", c.QS = QS, c.KVS = 50, c.lse = true;
    add_fia_with(out, "prefix.qs" + num(QS), c, [c](Prepared& P) {
      const int64_t Lp = 33;
      P.fia.key_shared_prefix = &P.in(c.dt, {1, c.KVN, Lp, c.D}, 21, -1, 1).v;
      P.fia.value_shared_prefix = &P.in(c.dt, {1, c.KVN, Lp, c.Dv}, 22, -1, 1).v;
      P.fia.actual_shared_prefix_len = P.array({Lp - 4});
    });
  }
  for (int64_t QS : {1, 6}) {
    FiaCfg c;
    c.layout = "BSND", c.QS = QS, c.KVS = 60, c.B = 2, c.lse = true, c.varlen = true;
    add_fia_with(out, "left_padding.qs" + num(QS), c, [QS](Prepared& P) {
      Buf& qp = P.in(DType::kInt64, {1}, 0, 0, 0);
      Buf& kp = P.in(DType::kInt64, {1}, 0, 0, 0);
      reinterpret_cast<int64_t*>(qp.b.data())[0] = 1;
      reinterpret_cast<int64_t*>(kp.b.data())[0] = 5;
      P.fia.query_padding_size = &qp.v;
      P.fia.kv_padding_size = &kp.v;
      if (QS > 1) P.fia.actual_seq_lengths = P.array({4, 3});
      P.fia.actual_seq_lengths_kv = P.array({50, 41});
    });
  }
  // tensor-list key / value: one tensor of batch 1 per batch, each with its own extent
  for (const char* l : {"BSH", "BNSD"}) {
    FiaCfg c;
    c.layout = l, c.B = 3, c.QS = 2, c.KVS = 40, c.lse = true;
    add_fia_with(out, std::string("tensor_list.") + l, c, [c, l](Prepared& P) {
      P.fia.key.clear();
      P.fia.value.clear();
      for (int64_t b = 0; b < c.B; ++b) {
        const int64_t S = c.KVS - 9 * b;
        const std::vector<int64_t> kd = std::string(l) == "BSH" ? std::vector<int64_t>{1, S, c.KVN * c.D}
                                                                : std::vector<int64_t>{1, c.KVN, S, c.D};
        P.fia.key.push_back(P.in(c.dt, kd, static_cast<uint32_t>(30 + b), -1, 1).v);
        P.fia.value.push_back(P.in(c.dt, kd, static_cast<uint32_t>(40 + b), -1, 1).v);
      }
      P.fia.actual_seq_lengths_kv = P.array({c.KVS, c.KVS - 9, c.KVS - 18});
    });
  }
}

}  // namespace bench_identity
