// The FusedInferAttentionScoreV4 rows of the performance coverage (coverage.h): one case or more
// per feature row of tests/support/fia_features.tsv at a serving-sized shape (GQA 32q / 8kv,
// D 128: decode B 8, L 4096 and prefill 512 x 2048; MLA D 512 + 64: N 32 / 128, L 4096, B 8),
// each call planned once and its plan run and timed, the plan's path named in the row.
//
// One description (Spec) of a call builds every case: the layouts, paged caches (BnBsH, BnNBsD,
// NZ), masks, antiquant modes, quantisation, pse / sink, shared prefix, left padding and
// tensor-list KV are its fields. The work it counts: the two matmuls over the positions each
// query row sees (causal and band modes only those), on the int8 units for INT8 full
// quantisation (and MLA full quant's q . k); the bytes: the KV read once (at its element size),
// the query, the output, pse and the mask.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/case_defs.h"
#include "bench/coverage.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/plan.h"

namespace bench {
namespace {

using mlaops::DType;

enum class Mask { kNone, kTemplate, kExplicit, kTree };

// Antiquant parameters (docs/ops/fused_infer_attention_score.md, "KV antiquant").
enum class Aq { kNone, kPerChannel, kPerTensor, kPerToken, kPerHead, kTokenHead, kPagedToken, kPagedTokenHead,
                kKey0Value1, kCombined0, kCombined1 };

struct Spec {
  std::string layout = "BNSD";  // inputLayout ("IN" or "IN_OUT")
  DType qdt = DType::kBFloat16, kvdt = DType::kBFloat16;  // kvdt kInt32: INT4 packed 8 per word
  int64_t B = 1, N = 1, KVN = 1, S = 1, L = 1, D = 128, Dv = 128, Dr = 0;
  int cache = 0;  // 0 contiguous, 3 BnBsH, 4 BnNBsD, 5 FRACTAL_NZ
  int64_t bs = 128;
  bool value_is_key = false;  // MLA: the latent is key and value
  int64_t sparse = 0, pre = 2147483647, next = 2147483647;
  Mask mask = Mask::kNone;
  bool lse = false, pse = false, sink = false, post_quant = false, full_quant = false, mla_fq = false;
  int64_t inner_precise = 0;
  Aq aq = Aq::kNone;
  int64_t prefix = 0;   // shared prefix positions
  int64_t kv_pad = 0;   // kvPaddingSize (left padding)
  bool ragged = false;  // per-batch KV lengths L, L - L / (2B), ...
  bool tensor_list = false;
};

std::string in_layout(const std::string& l) { return l.substr(0, l.find('_')); }
std::string out_layout(const std::string& l) {
  const size_t u = l.find('_');
  return u == std::string::npos ? l : l.substr(u + 1);
}
bool packed(const std::string& l) { return l == "TND" || l == "NTD"; }

std::vector<int64_t> layout_dims(const std::string& l, int64_t B, int64_t N, int64_t S, int64_t D) {
  if (l == "BSH") return {B, S, N * D};
  if (l == "BSND") return {B, S, N, D};
  if (l == "BNSD") return {B, N, S, D};
  if (l == "NBSD") return {N, B, S, D};
  if (l == "TND") return {B * S, N, D};
  return {N, B * S, D};  // NTD
}

double elem_bytes(DType dt) { return dt == DType::kInt32 ? 0.5 : static_cast<double>(mlaops::dtype_size(dt)); }

// A built call: the buffers it owns and FiaParams pointing at them.
struct Call {
  std::vector<std::unique_ptr<Buf>> bufs;
  std::vector<int64_t> aq, akv;
  mlaops::FiaParams p;
  const mlaops::TensorView* add(Buf b) {
    bufs.push_back(std::make_unique<Buf>(std::move(b)));
    return &bufs.back()->v;
  }
};

// The per-batch KV lengths of `s` (without the prefix).
std::vector<int64_t> kv_lengths(const Spec& s) {
  std::vector<int64_t> l(static_cast<size_t>(s.B), s.L);
  if (s.ragged)
    for (int64_t b = 0; b < s.B; ++b) l[static_cast<size_t>(b)] = s.L - b * s.L / (2 * s.B);
  return l;
}

// Positions query row i (of S) sees out of `kv` under the spec's sparse mode.
double seen_row(const Spec& s, int64_t i, int64_t kv) {
  const int64_t diag = kv - s.S + i;  // right-down diagonal
  switch (s.sparse) {
    case 2: return static_cast<double>(std::clamp<int64_t>(i + 1, 0, kv));
    case 3: return static_cast<double>(std::clamp<int64_t>(diag + 1, 0, kv));
    case 4: {
      const int64_t lo = std::max<int64_t>(0, diag - s.pre), hi = std::min<int64_t>(kv - 1, diag + s.next);
      return static_cast<double>(std::max<int64_t>(0, hi - lo + 1));
    }
    default: return static_cast<double>(kv);
  }
}

FiaWork spec_work(const Spec& s) {
  double seen = 0, positions = static_cast<double>(s.prefix);
  for (int64_t kv : kv_lengths(s)) {
    positions += static_cast<double>(kv);
    if (s.sparse == 9) {
      seen += mtp_seen_per_batch(kv, s.S, true);  // case_defs.h
      continue;
    }
    for (int64_t i = 0; i < s.S; ++i) seen += seen_row(s, i, kv + s.prefix);
  }
  const double qk = static_cast<double>(s.D + s.Dr), dv = static_cast<double>(s.value_is_key ? s.D : s.Dv);
  FiaWork w;
  const double mm = 2.0 * static_cast<double>(s.N) * seen;
  if (s.full_quant) w.ops_int8 = mm * (qk + dv);
  else if (s.mla_fq) w.ops_int8 = mm * static_cast<double>(s.D), w.flops_bf16 = mm * (static_cast<double>(s.Dr) + dv);
  else w.flops_bf16 = mm * (qk + dv);
  const double kvb = elem_bytes(s.kvdt), qb = elem_bytes(s.qdt);
  w.bytes = positions * static_cast<double>(s.KVN) * (static_cast<double>(s.D) * kvb + (s.value_is_key ? 0 : dv * kvb) +
                                                      static_cast<double>(s.Dr) * 2.0);
  const double rows = static_cast<double>(s.B * s.S * s.N);
  w.bytes += rows * (static_cast<double>(s.D) * qb + static_cast<double>(s.Dr) * 2.0);
  w.bytes += rows * dv * (s.post_quant ? 1.0 : s.full_quant ? 2.0 : qb);
  if (s.pse) w.bytes += 2.0 * static_cast<double>(s.N * s.S * (s.L + s.prefix));
  if (s.mask == Mask::kExplicit) w.bytes += static_cast<double>(s.S * s.L);
  return w;
}

// A KV tensor of `s` (head dim d) in its cache form; nb blocks when paged.
Buf kv_buf(const Spec& s, int64_t d, int64_t nb, uint32_t seed, DType dt, int64_t batches) {
  const bool i8 = dt == DType::kInt8, i4 = dt == DType::kInt32;
  const float lo = i4 ? -2e9f : i8 ? -127.f : -1.f, hi = i4 ? 2e9f : i8 ? 127.f : 1.f;
  const int64_t dd = i4 ? d / 8 : d;
  if (s.cache == 3) return make(dt, {nb, s.bs, s.KVN * dd}, seed, lo, hi);
  if (s.cache == 4) return make(dt, {nb, s.KVN, s.bs, dd}, seed, lo, hi);
  if (s.cache == 5) {
    const int64_t c0 = 32 / mlaops::dtype_size(dt);
    return make(dt, {nb, s.KVN, d / c0, s.bs, c0}, seed, lo, hi, mlaops::Format::kFractalNZ);
  }
  const int64_t kv_s = s.L + (s.kv_pad > 0 ? 2 * s.kv_pad : 0);
  return make(dt, layout_dims(in_layout(s.layout), batches, s.KVN, kv_s, dd), seed, lo, hi);
}

// The antiquant scale (offset when `offset`) of `s` for the key (`value` false) or the value.
Buf aq_param(const Spec& s, bool value, bool offset, int64_t nb) {
  const uint32_t seed = 20 + (value ? 2u : 0u) + (offset ? 1u : 0u);
  const float lo = offset ? -2.f : 0.004f, hi = offset ? 2.f : 0.012f;
  const int64_t kvs = s.L + (s.kv_pad > 0 ? 2 * s.kv_pad : 0);
  Aq m = s.aq;
  if (m == Aq::kKey0Value1) m = value ? Aq::kPerToken : Aq::kPerChannel;
  switch (m) {
    case Aq::kPerTensor: return make(s.qdt, {1}, seed, lo, hi);
    case Aq::kPerToken: return make(DType::kFloat32, {s.B, kvs}, seed, lo, hi);
    case Aq::kPerHead: return make(s.qdt, {s.KVN}, seed, lo, hi);
    case Aq::kTokenHead: return make(DType::kFloat32, {s.B, s.KVN, kvs}, seed, lo, hi);
    case Aq::kPagedToken: return make(DType::kFloat32, {nb, s.bs}, seed, lo, hi);
    case Aq::kPagedTokenHead: return make(DType::kFloat32, {nb, s.KVN, s.bs}, seed, lo, hi);
    case Aq::kCombined0: return make(s.qdt, {2, s.KVN, s.D}, seed, lo, hi);
    case Aq::kCombined1: return make(DType::kFloat32, {2, s.B, kvs}, seed, lo, hi);
    default: return make(s.qdt, {s.KVN, s.D}, seed, lo, hi);  // per channel
  }
}

int64_t aq_mode(Aq m, bool value) {
  switch (m) {
    case Aq::kPerToken: return 1;
    case Aq::kPerHead: return 2;
    case Aq::kTokenHead: return 3;
    case Aq::kPagedToken: return 4;
    case Aq::kPagedTokenHead: return 5;
    case Aq::kKey0Value1: return value ? 1 : 0;
    default: return 0;
  }
}

std::unique_ptr<Call> build(const Spec& s) {
  auto c = std::make_unique<Call>();
  mlaops::FiaParams& p = c->p;
  const std::string in = in_layout(s.layout), out = out_layout(s.layout);
  const std::vector<int64_t> lens = kv_lengths(s);
  p.query = *c->add(make(s.qdt, layout_dims(in, s.B, s.N, s.S, s.D), 1, s.qdt == DType::kInt8 ? -127.f : -1.f,
                         s.qdt == DType::kInt8 ? 127.f : 1.f));
  if (s.Dr > 0) p.query_rope = c->add(make(DType::kBFloat16, layout_dims(in, s.B, s.N, s.S, s.Dr), 2, -1, 1));
  int64_t nb = 0;
  if (s.cache != 0) {  // a shuffled block table of B rows
    const int64_t per = (s.L + s.bs - 1) / s.bs;
    nb = s.B * per;
    std::vector<int32_t> ids(static_cast<size_t>(nb));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(11));
    Buf bt = make(DType::kInt32, {s.B, per}, 0, 0, 0);
    std::memcpy(bt.b.data(), ids.data(), ids.size() * sizeof(int32_t));
    p.block_table = c->add(std::move(bt));
    p.block_size = s.bs;
  }
  const DType kvdt = s.kvdt;
  if (s.tensor_list) {
    for (int64_t b = 0; b < s.B; ++b) {
      p.key.push_back(*c->add(kv_buf(s, s.D, nb, 3 + static_cast<uint32_t>(b), kvdt, 1)));
      p.value.push_back(*c->add(kv_buf(s, s.Dv, nb, 100 + static_cast<uint32_t>(b), kvdt, 1)));
    }
  } else {
    p.key = {*c->add(kv_buf(s, s.D, nb, 3, kvdt, s.B))};
    p.value = {s.value_is_key ? p.key[0] : *c->add(kv_buf(s, s.Dv, nb, 4, kvdt, s.B))};
  }
  if (s.Dr > 0) {
    Spec r = s;
    r.kvdt = DType::kBFloat16;
    p.key_rope = c->add(kv_buf(r, s.Dr, nb, 5, DType::kBFloat16, s.B));
  }
  const std::vector<int64_t> out_dims = layout_dims(out, s.B, s.N, s.S, s.value_is_key ? s.D : s.Dv);
  p.attention_out =
      *c->add(make(s.post_quant ? DType::kInt8 : s.full_quant ? DType::kFloat16 : s.qdt == DType::kInt8 ? DType::kBFloat16 : s.qdt,
                   out_dims, 0, 0, 0));
  if (s.lse) {
    p.softmax_lse = c->add(make(DType::kFloat32, packed(in) ? std::vector<int64_t>{s.B * s.S, s.N, 1}
                                                            : std::vector<int64_t>{s.B, s.N, s.S, 1}, 0, 0, 0));
    p.softmax_lse_flag = true;
  }
  // the lengths: packed layouts cumulative, paged / ragged / padded per batch
  if (packed(in)) {
    for (int64_t b = 1; b <= s.B; ++b) c->aq.push_back(b * s.S);
    p.actual_seq_lengths = &c->aq;
    if (s.cache == 0) {
      int64_t sum = 0;
      for (int64_t l : lens) c->akv.push_back(sum += l);
    }
  }
  if (c->akv.empty() && (s.cache != 0 || s.ragged || s.kv_pad > 0)) c->akv = lens;
  if (!c->akv.empty()) p.actual_seq_lengths_kv = &c->akv;
  if (s.kv_pad > 0) {
    Buf pad = make(DType::kInt64, {1}, 0, 0, 0);
    *reinterpret_cast<int64_t*>(pad.b.data()) = s.kv_pad;
    p.kv_padding_size = c->add(std::move(pad));
  }
  if (s.mask == Mask::kTemplate || s.mask == Mask::kExplicit) {  // 1 = masked
    const int64_t rows = s.mask == Mask::kTemplate ? 2048 : s.S, cols = s.mask == Mask::kTemplate ? 2048 : s.L;
    const int64_t shift = s.mask == Mask::kTemplate ? 0 : s.L - s.S;
    Buf m = make(DType::kBool, {rows, cols}, 0, 0, 0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = i + shift + 1; j < cols; ++j) m.b[static_cast<size_t>(i * cols + j)] = 1;
    p.atten_mask = c->add(std::move(m));
  } else if (s.mask == Mask::kTree) {  // per batch the S x S binary tree: node t's parent (t - 1) / 2
    Buf m = make(DType::kBool, {s.B * s.S * s.S}, 0, 0, 0);
    std::fill(m.b.begin(), m.b.end(), 1);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t i = 0; i < s.S; ++i)
        for (int64_t t = i;; t = (t - 1) / 2) {
          m.b[static_cast<size_t>((b * s.S + i) * s.S + t)] = 0;
          if (t == 0) break;
        }
    p.atten_mask = c->add(std::move(m));
  }
  if (s.pse) p.pse_shift = c->add(make(s.qdt, {1, s.N, s.S, s.L + s.prefix}, 6, -2, 0));
  if (s.sink) p.learnable_sink = c->add(make(s.qdt, {s.N}, 7, -1, 3));
  if (s.post_quant) {
    p.quant_scale2 = c->add(make(DType::kFloat32, {s.N, s.Dv}, 8, 50, 200));
    p.quant_offset2 = c->add(make(DType::kFloat32, {s.N, s.Dv}, 9, -10, 10));
  }
  if (s.full_quant) {
    p.deq_scale1 = c->add(make(DType::kFloat32, {1}, 10, 1e-4f, 1e-4f));
    p.quant_scale1 = c->add(make(DType::kFloat32, {1}, 11, 127.f, 127.f));
    p.deq_scale2 = c->add(make(DType::kFloat32, {1}, 12, 1e-4f, 1e-4f));
  }
  if (s.mla_fq) {
    p.dequant_scale_query = c->add(make(DType::kFloat32, {s.B, s.S, s.N}, 13, 0.005f, 0.02f));
    p.query_quant_mode = 3;
    p.key_antiquant_scale = p.value_antiquant_scale = c->add(make(DType::kFloat32, {1}, 14, 0.04f, 0.04f));
  }
  if (s.aq == Aq::kCombined0 || s.aq == Aq::kCombined1) {
    p.antiquant_scale = c->add(aq_param(s, false, false, nb));
    p.antiquant_offset = c->add(aq_param(s, false, true, nb));
    p.antiquant_mode = s.aq == Aq::kCombined1 ? 1 : 0;
  } else if (s.aq != Aq::kNone) {
    p.key_antiquant_scale = c->add(aq_param(s, false, false, nb));
    p.value_antiquant_scale = c->add(aq_param(s, true, false, nb));
    if (s.cache != 5) {  // the NZ path takes no offsets
      p.key_antiquant_offset = c->add(aq_param(s, false, true, nb));
      p.value_antiquant_offset = c->add(aq_param(s, true, true, nb));
    }
    p.key_antiquant_mode = aq_mode(s.aq, false);
    p.value_antiquant_mode = aq_mode(s.aq, true);
  }
  if (s.prefix > 0) {
    p.key_shared_prefix = c->add(make(s.kvdt, layout_dims(in, 1, s.KVN, s.prefix, s.D), 15, -1, 1));
    p.value_shared_prefix = c->add(make(s.kvdt, layout_dims(in, 1, s.KVN, s.prefix, s.Dv), 16, -1, 1));
  }
  p.num_heads = s.N;
  p.num_key_value_heads = s.KVN;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(s.D + s.Dr));
  p.input_layout = s.layout;
  p.sparse_mode = s.sparse;
  p.pre_tokens = s.pre;
  p.next_tokens = s.next;
  p.inner_precise = s.inner_precise;
  return c;
}

Row run_spec(const Spec& s, int reps) {
  const std::unique_ptr<Call> c = build(s);
  Row r = time_fia_plan(c->p, reps);
  const FiaWork w = spec_work(s);
  r.flops_bf16 = w.flops_bf16;
  r.ops_int8 = w.ops_int8;
  r.bytes = w.bytes;
  return r;
}

// The shapes: GQA decode / prefill and MLA decode at serving size (tiny: the CLI test's).
struct Shapes {
  int64_t B, N, KVN, D, L;     // GQA decode
  int64_t pS, pL;              // GQA prefill (batch 1)
  std::vector<int64_t> mla_N;  // MLA decode heads (B, L as the GQA decode)
  int64_t prefix, own;         // shared prefix and own lengths
};
Shapes shapes(Size size) {
  if (size == Size::kTiny) return {2, 8, 2, 128, 256, 32, 64, {4}, 128, 64};
  return {8, 32, 8, 128, 4096, 512, 2048, {32, 128}, 4096, 512};
}

std::string shape_text(const Spec& s) {
  char b[160];
  std::snprintf(b, sizeof b, "%s B=%lld N=%lld KV_N=%lld Q_S=%lld KV_S=%lld D=%lld%s", s.layout.c_str(), (long long)s.B,
                (long long)s.N, (long long)s.KVN, (long long)s.S, (long long)s.L, (long long)s.D,
                s.Dr > 0 ? ("+" + std::to_string(s.Dr)).c_str() : "");
  return s.prefix > 0 ? std::string(b) + " prefix=" + std::to_string(s.prefix) : std::string(b);
}

struct Adder {
  std::vector<CoverageEntry>& out;
  int threads;
  void timed(const char* row, const char* feature, const std::string& tag, const Spec& s, int div = 1) {
    CoverageEntry e;
    e.row = row;
    e.feature = feature;
    e.c.id = std::string("cov.fia.r") + row + "." + tag + ".t" + std::to_string(threads);
    e.c.op = kCovFia;
    e.c.label = "FIA " + tag + " " + shape_text(s);
    e.c.threads = threads;
    e.c.run = [s, div](RunContext& ctx) { return run_spec(s, std::max(2, ctx.reps / div)); };
    out.push_back(std::move(e));
  }
  void note(const char* row, const char* feature, const char* why) {
    CoverageEntry e;
    e.row = row;
    e.feature = feature;
    e.note = why;
    e.c.id = std::string("cov.fia.r") + row + ".note";
    e.c.op = kCovFia;
    out.push_back(std::move(e));
  }
};

}  // namespace

Row time_fia_plan(const mlaops::FiaParams& p, int reps) {
  Row r;
  mlaops::OpPlan plan;
  if (!plan_path(r, mlaops::fused_infer_attention_score_v4_plan(p, &plan), plan)) return r;
  std::vector<uint64_t> ws(plan.workspace_size() / 8 + 1);
  bool ok = true;
  const Times t = time_it(
      [&] {
        ok = ok && mlaops::fused_infer_attention_score_v4_run(plan, p, ws.data(), plan.workspace_size()) ==
                       mlaops::kSuccess;
      },
      reps);
  if (!ok) {
    r.error = mlaops::last_error_message();
    return r;
  }
  r.best_us = t.best * 1e6;
  r.median_us = t.median * 1e6;
  return r;
}

std::vector<CoverageEntry> coverage_fia(Size size, int threads) {
  std::vector<CoverageEntry> out;
  Adder a{out, threads};
  const Shapes sh = shapes(size);
  Spec dec;  // GQA decode, BNSD BF16 contiguous
  dec.B = sh.B, dec.N = sh.N, dec.KVN = sh.KVN, dec.D = dec.Dv = sh.D, dec.L = sh.L;
  Spec pre = dec;  // GQA prefill, BSND, batch 1
  pre.layout = "BSND", pre.B = 1, pre.S = sh.pS, pre.L = sh.pL;
  auto with = [](Spec s, auto f) {
    f(s);
    return s;
  };
  const char* f1 = "core attention FP16 / BF16, GQA head mapping";
  a.timed("1", f1, "gqa_decode.bf16", dec);
  a.timed("1", f1, "gqa_decode.fp16", with(dec, [](Spec& s) { s.qdt = s.kvdt = DType::kFloat16; }));
  const char* f2 = "layouts BSH / BSND / BNSD and the output variants";
  for (const char* l : {"BSH", "BSND", "BNSD_BSND", "BSH_BNSD", "BSND_BNSD"})
    a.timed("2", f2, std::string("layout.") + l, with(dec, [l](Spec& s) { s.layout = l; }));
  const char* f3 = "TND / NTD packed with cumulative lengths";
  a.timed("3", f3, "prefill.TND", with(pre, [](Spec& s) { s.layout = "TND"; }), 2);
  a.timed("3", f3, "prefill.NTD_TND", with(pre, [](Spec& s) { s.layout = "NTD_TND"; }), 2);
  a.timed("4", "actualSeqLengthsKv decoding (per-batch KV lengths)", "decode.ragged",
          with(dec, [](Spec& s) { s.layout = "BSND", s.ragged = true; }));
  const char* f5 = "paged KV: BnBsH, BnNBsD, blockTable";
  a.timed("5", f5, "paged.BnBsH", with(dec, [](Spec& s) { s.cache = 3; }));
  a.timed("5", f5, "paged.BnNBsD", with(dec, [](Spec& s) { s.cache = 4; }));
  Spec mla = dec;  // MLA decode: D 512 + 64, value = the latent, KV_N 1, paged BnNBsD, lse
  mla.layout = "BNSD_NBSD", mla.KVN = 1, mla.D = mla.Dv = 512, mla.Dr = 64, mla.value_is_key = true, mla.cache = 4,
  mla.lse = true;
  for (int64_t n : sh.mla_N)
    a.timed("6", "MLA rope split (D 512 + 64, value = latent), KV_N 1", "mla_decode.N" + std::to_string(n),
            with(mla, [n](Spec& s) { s.N = n; }));
  a.timed("7", "softmaxLse", "gqa_decode.lse", with(dec, [](Spec& s) { s.lse = true; }));
  a.timed("8", "sparse mode 3 (right-down causal, 2048 template)", "prefill.sparse3",
          with(pre, [](Spec& s) { s.sparse = 3, s.mask = Mask::kTemplate; }), 2);
  a.note("9", "fully masked rows give 0 / +inf",
         "not a path of its own: a result of the mask on the sparse 0..4 paths timed in rows 8, 12, 13, 14");
  a.note("10", "empty-tensor rules", "no attention work: an empty query, output or KV is answered without running a kernel");
  a.note("11", "validation and status codes",
         "phase 1 rules, no attention work; the floor column is the cost of a minimal valid call");
  const char* f12 = "sparse 0 / 1 explicit masks";
  a.timed("12", f12, "prefill.sparse0.mask", with(pre, [](Spec& s) { s.mask = Mask::kExplicit; }), 2);
  a.timed("12", f12, "prefill.sparse1.mask", with(pre, [](Spec& s) { s.sparse = 1, s.mask = Mask::kExplicit; }), 2);
  a.timed("13", "sparse 4 band / sliding window", "prefill.sparse4.band",
          with(pre, [&](Spec& s) { s.sparse = 4, s.mask = Mask::kTemplate, s.pre = s.S / 2, s.next = 0; }), 2);
  a.timed("14", "sparse 2 left-up causal", "prefill.sparse2",
          with(pre, [](Spec& s) { s.sparse = 2, s.mask = Mask::kTemplate; }), 2);
  a.timed("15", "FRACTAL_NZ paged cache (BF16) incl. keyRope NZ", "mla_decode.nz.N" + std::to_string(sh.mla_N[0]),
          with(mla, [&](Spec& s) { s.N = sh.mla_N[0], s.cache = 5, s.layout = "BSND_NBSD"; }));
  a.timed("16", "MLA full quant: INT8 query, INT8 NZ KV, BF16 rope", "mla_decode_fq.N" + std::to_string(sh.mla_N[0]),
          with(mla, [&](Spec& s) {
            s.N = sh.mla_N[0], s.cache = 5, s.layout = "BSND_NBSD", s.qdt = s.kvdt = DType::kInt8, s.mla_fq = true;
          }));
  Spec aq = dec;  // INT8 KV antiquant over a contiguous BSH cache
  aq.layout = "BSH", aq.kvdt = DType::kInt8, aq.inner_precise = 1;
  const char* f17 = "KV antiquant INT8 per-channel / per-tensor / per-token (modes 0 / 1)";
  a.timed("17", f17, "antiquant.per_channel", with(aq, [](Spec& s) { s.aq = Aq::kPerChannel; }));
  a.timed("17", f17, "antiquant.per_tensor", with(aq, [](Spec& s) { s.aq = Aq::kPerTensor; }));
  a.timed("17", f17, "antiquant.per_token", with(aq, [](Spec& s) { s.aq = Aq::kPerToken; }));
  const char* f18 = "KV antiquant modes 2 / 3 / 4 / 5 and key 0 + value 1";
  a.timed("18", f18, "antiquant.mode2", with(aq, [](Spec& s) { s.aq = Aq::kPerHead; }));
  a.timed("18", f18, "antiquant.mode3", with(aq, [](Spec& s) { s.aq = Aq::kTokenHead; }));
  a.timed("18", f18, "antiquant.mode4.paged", with(aq, [](Spec& s) { s.aq = Aq::kPagedToken, s.cache = 3; }));
  a.timed("18", f18, "antiquant.mode5.paged", with(aq, [](Spec& s) { s.aq = Aq::kPagedTokenHead, s.cache = 3; }));
  a.timed("18", f18, "antiquant.key0_value1",
          with(aq, [](Spec& s) { s.aq = Aq::kKey0Value1, s.qdt = DType::kFloat16; }));
  a.timed("19", "post-quant INT8 output (per channel, offsets)", "gqa_decode.postquant",
          with(dec, [](Spec& s) { s.post_quant = true; }));
  a.timed("20", "learnableSink", "gqa_decode.sink", with(dec, [](Spec& s) { s.sink = true; }));
  a.timed("21", "pseShift / ALiBi full bias", "prefill.pse", with(pre, [](Spec& s) { s.pse = true; }), 2);
  a.timed("22", "tree mask (sparse mode 9)", "mla_mtp.tree.N" + std::to_string(sh.mla_N[0]) + ".Q4",
          with(mla, [&](Spec& s) {
            s.N = sh.mla_N[0], s.S = 4, s.layout = "TND", s.sparse = 9, s.mask = Mask::kTree;
          }));
  const char* f23 = "innerPrecise numerics (FP16 softmax emulation)";
  for (int64_t ip : {0, 1})
    a.timed("23", f23, "prefill.fp16.ip" + std::to_string(ip),
            with(pre, [ip](Spec& s) { s.qdt = s.kvdt = DType::kFloat16, s.inner_precise = ip; }), 2);
  a.timed("24", "shared prefix", "gqa_decode.prefix",
          with(dec, [&](Spec& s) { s.prefix = sh.prefix, s.L = sh.own; }));
  const char* f25 = "left padding (query / kv), also with INT8 full quantisation";
  a.timed("25", f25, "decode.kv_left_pad", with(dec, [](Spec& s) { s.layout = "BSND", s.kv_pad = 64; }));
  a.timed("25", f25, "prefill.int8fq.kv_left_pad",
          with(pre, [](Spec& s) { s.qdt = s.kvdt = DType::kInt8, s.full_quant = true, s.kv_pad = 64; }), 2);
  a.timed("26", "tensor-list KV (one tensor per batch)", "decode.tensor_list",
          with(dec, [](Spec& s) { s.layout = "BSH", s.tensor_list = true; }));
  a.timed("27", "INT4 (INT32-packed) KV antiquant", "antiquant.int4.per_channel",
          with(aq, [](Spec& s) { s.kvdt = DType::kInt32, s.aq = Aq::kPerChannel; }));
  a.timed("28", "INT8 full quant GQA prefill", "prefill.int8fq",
          with(pre, [](Spec& s) { s.qdt = s.kvdt = DType::kInt8, s.full_quant = true; }), 2);
  const char* f29 = "combined antiquantScale / antiquantOffset (antiquantMode 0 / 1)";
  a.timed("29", f29, "antiquant.combined0", with(aq, [](Spec& s) { s.aq = Aq::kCombined0; }));
  a.timed("29", f29, "antiquant.combined1", with(aq, [](Spec& s) { s.aq = Aq::kCombined1; }));
  a.timed("30", "GQA antiquant KV-NZ path (BF16 query, D 128)", "antiquant.nz",
          with(dec, [](Spec& s) { s.kvdt = DType::kInt8, s.cache = 5, s.aq = Aq::kPerChannel, s.inner_precise = 1; }));
  return out;
}

// The FIA floor: one query row of 1 head over 16 positions, D 64, BSH, BF16.
Case coverage_fia_floor(int threads) {
  Spec s;
  s.layout = "BSH", s.L = 16, s.D = s.Dv = 64;
  Case c;
  c.id = "floor.fia";
  c.op = kCovFia;
  c.label = "FIA floor: " + shape_text(s);
  c.threads = threads;
  c.run = [s](RunContext& ctx) { return run_spec(s, std::max(ctx.reps, 20)); };
  return c;
}

}  // namespace bench
