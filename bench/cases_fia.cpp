// FusedInferAttentionScoreV4 cases of the benchmark suite (suite.h), C++ API, bf16:
//   * DeepSeek MLA decode: N in {32, 128} heads, KV_N 1, D 512 + rope 64, value = the key latent,
//     paged BnNBsD cache (blockSize 128, scattered block table), L in {1k, 4k, 32k}, batch in
//     {1, 8} (quick: B 1, L 4k), BNSD_NBSD, softmax LSE; peer: vLLM's CPU MLA decode (peer_vllm.cpp)
//   * GQA decode: 32 query / 8 kv heads, D 128, L 4096, batch 8, BNSD, paged BnBsH, BF16 cache,
//     INT8 cache (KV antiquant mode 0, per-channel scales and offsets) and BF16 cache with the
//     post-quant INT8 output (per-channel quantScale2 / quantOffset2); peer: PyTorch's
//     scaled_dot_product_attention on the same shapes (contiguous K / V) when a Python with torch
//     is found
//   * MLA MTP decode (speculative decoding): 4 query tokens per batch, N 128, L 4096, B in {1, 4},
//     TND, the same cache as the MLA decode rows, sparse mode 3 (causal draft tokens) beside
//     sparse mode 9 (a binary tree mask, node t's parent (t - 1) / 2); FLOPs count the positions
//     each row sees; and 2 causal draft tokens at N 16 / 32 (DeepSeek's heads per rank at TP 8 / 4),
//     B 1 / 8, against the one-token call on the same cache as alternated pairs
//   * GQA decode over a contiguous BSH cache (INT4 KV is not paged): INT8 and INT4 (INT32-packed)
//     caches, per-channel (mode 0) and per-token (mode 1) scales, innerPrecise 1 and 0; and over
//     a paged INT8 NZ cache (the GQA antiquant NZ path)
//   * MLA prefill: 128 query tokens x 4096 KV, N 128, D 128 + rope 64, V_D 128, TND, sparse mode 3
//   * MLA decode full quant (W8A8: INT8 query with dequantScaleQuery, INT8 NZ latent cache with
//     per-tensor scales, BF16 NZ rope cache), N in {32, 128}, L 4096, B 1, BSND_NBSD, beside the
//     BF16 MLA decode of the same shape: q . k counts as int8 OPs, the rope part and P . V as bf16
//     FLOPs; bytes: the INT8 latent and the BF16 rope read once
//   * GQA prefill: 32 query / 8 kv heads, D 128, Q_S 512 x KV_S 2048, BSND, no mask: BF16, and
//     INT8 full quantisation (INT8 query / key / value, deqScale1 / quantScale1 / deqScale2, FP16
//     output) whose matmuls run on the int8 units (bound from the measured int8 VNNI rate)
//   * GQA decode with a shared prefix (32q / 8kv, D 128, prefix 4096 + own 512, B 8, BNSD) and
//     the same attention with the prefix copied into every batch's KV
// FLOPs count the two matmuls (2 N L (Dk + Dv) per query row, causal rows only what they see);
// bytes count the KV read once. Targets: MLA decode N = 128 >= 70 % and N = 32 >= 60 %
// of the bound (compute), GQA decode >= 75 % (memory, with or without post-quant) and INT8 KV
// >= 1.7x faster than BF16 KV,
// MLA prefill >= 60 % (compute).
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/case_defs.h"
#include "bench/suite.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"

namespace bench {
namespace {

using mlaops::DType;

Buf zeros(DType dt, std::vector<int64_t> dims) { return make(dt, std::move(dims), 0, 0, 0); }

// The row's work (case_defs.h).
void set_work(Row* r, const FiaWork& w) {
  r->flops_bf16 = w.flops_bf16;
  r->ops_int8 = w.ops_int8;
  r->bytes = w.bytes;
}

// Times the operator; fills best / median or the error. Returns one more such call (true on
// success; it owns the workspace, `p` must outlive it) for timing pairs, or an empty function
// after an error.
std::function<bool()> time_call(const mlaops::FiaParams& p, int reps, Row* r) {
  uint64_t ws = 0;
  if (mlaops::fused_infer_attention_score_v4_workspace_size(p, &ws) != mlaops::kSuccess) {
    r->error = mlaops::last_error_message();
    return {};
  }
  auto w = std::make_shared<std::vector<uint64_t>>(ws / 8 + 1);
  std::function<bool()> once = [&p, w, ws] {
    return mlaops::fused_infer_attention_score_v4(p, w->data(), ws) == mlaops::kSuccess;
  };
  bool ok = true;
  const Times t = time_it([&] { ok = ok && once(); }, reps);
  if (!ok) {
    r->error = mlaops::last_error_message();
    return {};
  }
  r->best_us = t.best * 1e6;
  r->median_us = t.median * 1e6;
  return once;
}

// What every case sets: query / key / value / output, the heads, scaleValue = 1 / sqrt(scale_d)
// and inputLayout.
mlaops::FiaParams base_params(const Buf& q, const Buf& k, const Buf& v, const Buf& out, int64_t N, int64_t KVN,
                              int64_t scale_d, const char* layout) {
  mlaops::FiaParams p;
  p.query = q.v;
  p.key = {k.v};
  p.value = {v.v};
  p.num_heads = N;
  p.num_key_value_heads = KVN;
  p.scale_value = 1.0 / std::sqrt(static_cast<double>(scale_d));
  p.input_layout = layout;
  p.attention_out = out.v;
  return p;
}

// An INT32 block table of B rows of `per` blocks: ids 0, 1, 2, ... or scattered ((i * 7919) % count).
Buf block_table(int64_t B, int64_t per, bool scattered) {
  Buf bt = zeros(DType::kInt32, {B, per});
  auto* ids = reinterpret_cast<int32_t*>(bt.b.data());
  const int64_t nb = B * per;
  for (int64_t i = 0; i < nb; ++i) ids[i] = static_cast<int32_t>(scattered ? (i * 7919) % nb : i);
  return bt;
}

// The vendor's causal mask of sparse 2 / 3: the strict upper triangle of 2048 x 2048 (1 = masked).
Buf causal_template() {
  Buf mask = zeros(DType::kBool, {2048, 2048});
  for (int64_t i = 0; i < 2048; ++i)
    for (int64_t j = i + 1; j < 2048; ++j) mask.b[static_cast<size_t>(i * 2048 + j)] = 1;
  return mask;
}

Row mla_decode(RunContext& ctx, int64_t N, int64_t L, int64_t B, int64_t D, int64_t Dr) {
  const int64_t bs = 128, blocks_per = (L + bs - 1) / bs, nb = B * blocks_per;
  Buf q = make(DType::kBFloat16, {B, N, 1, D}, 1, -1, 1), qr = make(DType::kBFloat16, {B, N, 1, Dr}, 2, -1, 1);
  Buf k = make(DType::kBFloat16, {nb, 1, bs, D}, 3, -1, 1), kr = make(DType::kBFloat16, {nb, 1, bs, Dr}, 4, -1, 1);
  Buf bt = block_table(B, blocks_per, true);
  Buf out = zeros(DType::kBFloat16, {N, B, 1, D}), lse = zeros(DType::kFloat32, {B, N, 1, 1});
  std::vector<int64_t> akv(static_cast<size_t>(B), L);
  mlaops::FiaParams p = base_params(q, k, k, out, N, 1, D + Dr, "BNSD_NBSD");
  p.query_rope = &qr.v;
  p.key_rope = &kr.v;
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths_kv = &akv;
  p.softmax_lse = &lse.v;
  p.softmax_lse_flag = true;
  Row r;
  time_call(p, ctx.reps, &r);
  set_work(&r, mla_decode_work(N, L, B, D, Dr));
  return r;
}

// The query side of an MLA MTP call over a given paged cache: QS draft tokens per batch in TND,
// sparse 3 (causal) or 9 (the tree mask, docs/ops/fused_infer_attention_score.md "Tree mask").
struct MtpCall {
  Buf q, qr, out, lse, mask;
  std::vector<int64_t> aq, akv;
  mlaops::FiaParams p;
};
void make_mtp(MtpCall* c, const Buf& k, const Buf& kr, const Buf& bt, int64_t bs, int64_t N, int64_t L, int64_t B,
              int64_t QS, int64_t D, int64_t Dr, bool tree) {
  const int64_t T = B * QS;
  c->q = make(DType::kBFloat16, {T, N, D}, 1, -1, 1);
  c->qr = make(DType::kBFloat16, {T, N, Dr}, 2, -1, 1);
  c->out = zeros(DType::kBFloat16, {T, N, D});
  c->lse = zeros(DType::kFloat32, {T, N, 1});
  // the masks: the 2048 template, or per batch the QS x QS tree (1 = masked) of a binary tree
  c->mask = tree ? zeros(DType::kBool, {B * QS * QS}) : causal_template();
  if (tree) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < QS; ++i) {
        for (int64_t t = 0; t < QS; ++t) c->mask.b[static_cast<size_t>((b * QS + i) * QS + t)] = 1;
        for (int64_t t = i;; t = (t - 1) / 2) {
          c->mask.b[static_cast<size_t>((b * QS + i) * QS + t)] = 0;
          if (t == 0) break;
        }
      }
  }
  c->aq.clear();
  for (int64_t b = 1; b <= B; ++b) c->aq.push_back(b * QS);
  c->akv.assign(static_cast<size_t>(B), L);
  mlaops::FiaParams& p = c->p;
  p = base_params(c->q, k, k, c->out, N, 1, D + Dr, "TND");
  p.query_rope = &c->qr.v;
  p.key_rope = &kr.v;
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths = &c->aq;
  p.actual_seq_lengths_kv = &c->akv;
  p.atten_mask = &c->mask.v;
  p.sparse_mode = tree ? 9 : 3;
  p.softmax_lse = &c->lse.v;
  p.softmax_lse_flag = true;
}

// MLA MTP decode: QS draft tokens per batch over the MLA decode rows' paged cache.
Row mla_mtp(RunContext& ctx, int64_t N, int64_t L, int64_t B, int64_t QS, int64_t D, int64_t Dr, bool tree) {
  const int64_t bs = 128, blocks_per = (L + bs - 1) / bs, nb = B * blocks_per;
  Buf k = make(DType::kBFloat16, {nb, 1, bs, D}, 3, -1, 1), kr = make(DType::kBFloat16, {nb, 1, bs, Dr}, 4, -1, 1);
  Buf bt = block_table(B, blocks_per, true);
  MtpCall c;
  make_mtp(&c, k, kr, bt, bs, N, L, B, QS, D, Dr, tree);
  Row r;
  time_call(c.p, ctx.reps, &r);
  set_work(&r, mla_mtp_work(N, L, B, QS, D, Dr, tree));  // FLOPs: the positions the rows see
  return r;
}

// MTP against plain decode on one cache: QS causal draft tokens per batch (ours) and the same call
// with one token per batch (the "peer"), then `reps` alternated pairs; the pair ratio is the
// one-token time / the QS-token time (>= 0.8: the draft tokens cost at most 1.25x one token).
Row mla_mtp_vs_decode(RunContext& ctx, int64_t N, int64_t L, int64_t B, int64_t QS, int64_t D, int64_t Dr) {
  const int64_t bs = 128, blocks_per = (L + bs - 1) / bs, nb = B * blocks_per;
  Buf k = make(DType::kBFloat16, {nb, 1, bs, D}, 3, -1, 1), kr = make(DType::kBFloat16, {nb, 1, bs, Dr}, 4, -1, 1);
  Buf bt = block_table(B, blocks_per, true);
  MtpCall mtp, one;
  make_mtp(&mtp, k, kr, bt, bs, N, L, B, QS, D, Dr, false);
  make_mtp(&one, k, kr, bt, bs, N, L, B, 1, D, Dr, false);
  Row r;
  const std::function<bool()> ours = time_call(mtp.p, ctx.reps, &r);
  set_work(&r, mla_mtp_work(N, L, B, QS, D, Dr, false));
  if (!ours) return r;
  Row o;
  const std::function<bool()> peer = time_call(one.p, ctx.reps, &o);
  if (!peer) {
    r.error = o.error;
    return r;
  }
  const FiaWork w1 = mla_mtp_work(N, L, B, 1, D, Dr, false);
  r.peers.push_back({"Q_S 1, same cache", o.best_us, o.median_us, "one token per batch: the plain decode call", w1.flops_bf16,
                     0, w1.bytes});
  r.peers.back().pair_ratio = paired_ratio_median(ctx.reps, ours, peer);
  r.peers.back().pairs = ctx.reps;
  return r;
}

// MLA full quant (docs/ops/fused_infer_attention_score.md "MLA full quant").
Row mla_decode_fq(RunContext& ctx, int64_t N, int64_t L, int64_t B) {
  const int64_t D = 512, Dr = 64, bs = 128, blocks_per = (L + bs - 1) / bs, nb = B * blocks_per;
  Buf q = make(DType::kInt8, {B, 1, N, D}, 1, -127, 127), qr = make(DType::kBFloat16, {B, 1, N, Dr}, 2, -100, 100);
  Buf dq = make(DType::kFloat32, {B, 1, N}, 5, 0.005f, 0.02f);
  Buf k = make(DType::kInt8, {nb, 1, D / 32, bs, 32}, 3, -127, 127, mlaops::Format::kFractalNZ);
  Buf kr = make(DType::kBFloat16, {nb, 1, Dr / 16, bs, 16}, 4, -1, 1, mlaops::Format::kFractalNZ);
  Buf ks = make(DType::kFloat32, {1}, 6, 0.04f, 0.04f);
  Buf bt = block_table(B, blocks_per, true);
  Buf out = zeros(DType::kBFloat16, {N, B, 1, D}), lse = zeros(DType::kFloat32, {B, N, 1, 1});
  std::vector<int64_t> akv(static_cast<size_t>(B), L);
  mlaops::FiaParams p = base_params(q, k, k, out, N, 1, D + Dr, "BSND_NBSD");
  p.query_rope = &qr.v;
  p.key_rope = &kr.v;
  p.dequant_scale_query = &dq.v;
  p.query_quant_mode = 3;
  p.key_antiquant_scale = &ks.v;
  p.value_antiquant_scale = &ks.v;
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths_kv = &akv;
  p.softmax_lse = &lse.v;
  p.softmax_lse_flag = true;
  Row r;
  time_call(p, ctx.reps, &r);
  set_work(&r, mla_decode_fq_work(N, L, B, D, Dr));
  return r;
}

// int8: INT8 cache with per-channel BF16 scales and offsets (KV antiquant mode 0). post_quant:
// BF16 cache, INT8 output with per-channel FP32 quantScale2 / quantOffset2.
Row gqa_decode(RunContext& ctx, int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t L, int threads, bool int8,
               bool post_quant = false) {
  const int64_t bs = 128, per = (L + bs - 1) / bs, nb = B * per;
  const DType kvt = int8 ? DType::kInt8 : DType::kBFloat16;
  Buf q = make(DType::kBFloat16, {B, N, 1, D}, 1, -1, 1);
  Buf k = make(kvt, {nb, bs, KVN * D}, 3, int8 ? -127 : -1, int8 ? 127 : 1);
  Buf v = make(kvt, {nb, bs, KVN * D}, 4, int8 ? -127 : -1, int8 ? 127 : 1);
  Buf ks = make(DType::kBFloat16, {1, KVN, D}, 5, 0.004f, 0.012f), vs = make(DType::kBFloat16, {1, KVN, D}, 6, 0.004f, 0.012f);
  Buf ko = make(DType::kBFloat16, {1, KVN, D}, 7, -2, 2), vo = make(DType::kBFloat16, {1, KVN, D}, 8, -2, 2);
  Buf bt = block_table(B, per, false);
  Buf out = zeros(post_quant ? DType::kInt8 : DType::kBFloat16, {B, N, 1, D});
  Buf qs2 = make(DType::kFloat32, {N, D}, 9, 50, 200), qo2 = make(DType::kFloat32, {N, D}, 10, -10, 10);
  std::vector<int64_t> akv(static_cast<size_t>(B), L);
  mlaops::FiaParams p = base_params(q, k, v, out, N, KVN, D, "BNSD");
  if (post_quant) {
    p.quant_scale2 = &qs2.v;
    p.quant_offset2 = &qo2.v;
  }
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths_kv = &akv;
  if (int8) {
    p.key_antiquant_scale = &ks.v;
    p.value_antiquant_scale = &vs.v;
    p.key_antiquant_offset = &ko.v;
    p.value_antiquant_offset = &vo.v;
  }
  Row r;
  time_call(p, ctx.reps, &r);
  set_work(&r, gqa_decode_work(B, N, KVN, D, L, int8 ? 1.0 : 2.0));
  if (ctx.peers && !int8) {
    if (ctx.python.empty())
      r.peers.push_back({"torch SDPA", 0, 0, "no Python with torch (set MLAOPS_PYTHON or --python)"});
    else
      r.peers.push_back(torch_sdpa_peer(ctx.python, B, N, KVN, D, L, ctx.reps, threads));
  }
  return r;
}

// A contiguous BSH cache of INT8 or INT4 (INT32 words, 8 per word) with per-channel (mode 0,
// BF16 scale and offset) or per-token (mode 1, FP32 scale) parameters, innerPrecise `ip`.
Row gqa_decode_quant(RunContext& ctx, int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t L, bool int4,
                     int64_t mode, int64_t ip) {
  const int64_t W = int4 ? KVN * D / 8 : KVN * D;
  Buf q = make(DType::kBFloat16, {B, 1, N * D}, 1, -1, 1);
  Buf k = make(int4 ? DType::kInt32 : DType::kInt8, {B, L, W}, 3, int4 ? -2e9f : -127, int4 ? 2e9f : 127);
  Buf v = make(int4 ? DType::kInt32 : DType::kInt8, {B, L, W}, 4, int4 ? -2e9f : -127, int4 ? 2e9f : 127);
  const float lo = int4 ? 0.06f : 0.004f, hi = int4 ? 0.2f : 0.012f;
  Buf ks = mode == 0 ? make(DType::kBFloat16, {1, KVN, D}, 5, lo, hi) : make(DType::kFloat32, {1, B, L}, 5, lo, hi);
  Buf vs = mode == 0 ? make(DType::kBFloat16, {1, KVN, D}, 6, lo, hi) : make(DType::kFloat32, {1, B, L}, 6, lo, hi);
  Buf out = zeros(DType::kBFloat16, {B, 1, N * D});
  std::vector<int64_t> akv(static_cast<size_t>(B), L);
  mlaops::FiaParams p = base_params(q, k, v, out, N, KVN, D, "BSH");
  p.actual_seq_lengths_kv = &akv;
  p.inner_precise = ip;
  p.key_antiquant_scale = &ks.v;
  p.value_antiquant_scale = &vs.v;
  p.key_antiquant_mode = p.value_antiquant_mode = mode;
  Row r;
  time_call(p, ctx.reps, &r);
  set_work(&r, gqa_decode_work(B, N, KVN, D, L, int4 ? 0.5 : 1.0));
  return r;
}

// The GQA antiquant NZ path: a paged INT8 cache (blockNum, KV_N, D / 32, blockSize, 32), BF16
// per-channel scales (KV_N, D), no offsets, innerPrecise 1 (the vendor's settings).
Row gqa_decode_nz(RunContext& ctx, int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t L) {
  const int64_t bs = 128, per = (L + bs - 1) / bs, nb = B * per;
  Buf q = make(DType::kBFloat16, {B, N, 1, D}, 1, -1, 1);
  Buf k = make(DType::kInt8, {nb, KVN, D / 32, bs, 32}, 3, -127, 127, mlaops::Format::kFractalNZ);
  Buf v = make(DType::kInt8, {nb, KVN, D / 32, bs, 32}, 4, -127, 127, mlaops::Format::kFractalNZ);
  Buf ks = make(DType::kBFloat16, {KVN, D}, 5, 0.004f, 0.012f), vs = make(DType::kBFloat16, {KVN, D}, 6, 0.004f, 0.012f);
  Buf bt = block_table(B, per, false);
  Buf out = zeros(DType::kBFloat16, {B, N, 1, D});
  std::vector<int64_t> akv(static_cast<size_t>(B), L);
  mlaops::FiaParams p = base_params(q, k, v, out, N, KVN, D, "BNSD");
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths_kv = &akv;
  p.inner_precise = 1;
  p.key_antiquant_scale = &ks.v;
  p.value_antiquant_scale = &vs.v;
  Row r;
  time_call(p, ctx.reps, &r);
  set_work(&r, gqa_decode_work(B, N, KVN, D, L, 1.0));
  return r;
}

Row mla_prefill(RunContext& ctx, int64_t T, int64_t L, int64_t N, int64_t D, int64_t Dr) {
  const int64_t bs = 128, per = (L + bs - 1) / bs;
  Buf q = make(DType::kBFloat16, {T, N, D}, 1, -1, 1), qr = make(DType::kBFloat16, {T, N, Dr}, 2, -1, 1);
  Buf k = make(DType::kBFloat16, {per, bs, N * D}, 3, -1, 1), v = make(DType::kBFloat16, {per, bs, N * D}, 4, -1, 1);
  Buf kr = make(DType::kBFloat16, {per, bs, N * Dr}, 5, -1, 1);
  Buf bt = block_table(1, per, false);
  Buf mask = causal_template();
  Buf out = zeros(DType::kBFloat16, {T, N, D});
  std::vector<int64_t> aq = {T}, akv = {L};
  mlaops::FiaParams p = base_params(q, k, v, out, N, N, D + Dr, "TND");
  p.query_rope = &qr.v;
  p.key_rope = &kr.v;
  p.block_table = &bt.v;
  p.block_size = bs;
  p.actual_seq_lengths = &aq;
  p.actual_seq_lengths_kv = &akv;
  p.atten_mask = &mask.v;
  p.sparse_mode = 3;
  Row r;
  time_call(p, std::max(2, ctx.reps / 2), &r);
  set_work(&r, mla_prefill_work(T, L, N, D, Dr));  // causal right-down
  return r;
}

// The GQA prefill's element types: BF16; FP16 (on the bf16 units as exact hi / lo parts,
// docs/ops/fused_infer_attention_score.md "Numerics": more work than its nominal FLOPs); INT8 full
// quantisation (its two matmuls are int8 OPs).
enum class PrefillType { kBf16, kFp16, kInt8 };

Row gqa_prefill(RunContext& ctx, int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t S, int64_t L, PrefillType t) {
  const bool int8 = t == PrefillType::kInt8;
  const DType dt = int8 ? DType::kInt8 : t == PrefillType::kFp16 ? DType::kFloat16 : DType::kBFloat16;
  const float lo = int8 ? -100.f : -1.f, hi = int8 ? 100.f : 1.f;
  Buf q = make(dt, {B, S, N, D}, 1, lo, hi), k = make(dt, {B, L, KVN, D}, 2, lo, hi), v = make(dt, {B, L, KVN, D}, 3, lo, hi);
  Buf out = zeros(int8 || t == PrefillType::kFp16 ? DType::kFloat16 : DType::kBFloat16, {B, S, N, D});
  Buf deq1 = make(DType::kFloat32, {1}, 4, 1e-4f, 1e-4f), qs1 = make(DType::kFloat32, {1}, 5, 127.f, 127.f);
  Buf deq2 = make(DType::kFloat32, {1}, 6, 1e-4f, 1e-4f);
  mlaops::FiaParams p = base_params(q, k, v, out, N, KVN, D, "BSND");
  if (int8) {
    p.deq_scale1 = &deq1.v;
    p.quant_scale1 = &qs1.v;
    p.deq_scale2 = &deq2.v;
  }
  Row r;
  time_call(p, std::max(2, ctx.reps / 2), &r);
  set_work(&r, gqa_prefill_work(B, N, KVN, D, S, L, int8));
  return r;
}

// GQA decode with a shared prefix (BNSD, contiguous): every batch attends the prefix of Lp
// positions (keySharedPrefix / valueSharedPrefix, batch 1) and its own L positions; or
// (copied) the same attention with the prefix copied into every batch's KV. Bytes: the prefix
// counted once, the own KV once per batch (copied: every batch's Lp + L).
Row gqa_decode_prefix(RunContext& ctx, int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t Lp, int64_t L,
                      bool copied) {
  const int64_t S = copied ? Lp + L : L;
  Buf q = make(DType::kBFloat16, {B, N, 1, D}, 1, -1, 1);
  Buf k = make(DType::kBFloat16, {B, KVN, S, D}, 3, -1, 1);
  Buf v = make(DType::kBFloat16, {B, KVN, S, D}, 4, -1, 1);
  Buf kp = make(DType::kBFloat16, {1, KVN, copied ? 1 : Lp, D}, 5, -1, 1);
  Buf vp = make(DType::kBFloat16, {1, KVN, copied ? 1 : Lp, D}, 6, -1, 1);
  Buf out = zeros(DType::kBFloat16, {B, N, 1, D});
  mlaops::FiaParams p = base_params(q, k, v, out, N, KVN, D, "BNSD");
  if (!copied) {
    p.key_shared_prefix = &kp.v;
    p.value_shared_prefix = &vp.v;
  }
  Row r;
  time_call(p, ctx.reps, &r);
  set_work(&r, gqa_prefix_work(B, N, KVN, D, Lp, L, copied));
  return r;
}

// The GQA shape of the tables (case_defs.h): 32 query / 8 KV heads, D 128, L 4096, batch 8.
struct GqaShape {
  int64_t B, N, KVN, D, L;
};

// "FIA GQA decode 32q/8kv D=128 L=4096 B=8" and `suffix`.
void gqa_decode_label(char* label, size_t n, const GqaShape& s, const std::string& suffix) {
  std::snprintf(label, n, "FIA GQA decode %lldq/%lldkv D=%lld L=%lld B=%lld%s", (long long)s.N, (long long)s.KVN,
                (long long)s.D, (long long)s.L, (long long)s.B, suffix.c_str());
}

void add(std::vector<Case>& out, const char* id, const char* label, int threads, std::function<Row(RunContext&)> f) {
  Case c;
  c.id = id;
  c.op = "fia";
  c.label = label;
  c.threads = threads;
  c.run = std::move(f);
  out.push_back(std::move(c));
}

}  // namespace

std::vector<Case> fia_cases(Size size, int threads) {
  std::vector<Case> out;
  const bool tiny = size == Size::kTiny;
  const FiaShapes sh = fia_shapes(size);  // case_defs.h
  const int64_t D = sh.D, Dr = sh.Dr;
  const std::vector<int64_t>&Ns = sh.Ns, &Ls = sh.Ls, &Bs = sh.Bs;
  char id[96], label[96];
  for (int64_t N : Ns)
    for (int64_t L : Ls)
      for (int64_t B : Bs) {
        std::vector<int> tcounts = {threads};
        // the compute-bound headline case also at 1 thread: the 1 -> 2 thread scaling target
        if (((N == 128 && L == 4096) || tiny) && B == 1 && threads > 1) tcounts.push_back(1);
        for (int nt : tcounts) {
          std::snprintf(id, sizeof id, "fia.mla_decode.N%lld.L%lld.B%lld.t%d", (long long)N, (long long)L,
                        (long long)B, nt);
          std::snprintf(label, sizeof label, "FIA MLA decode N=%lld L=%lld B=%lld", (long long)N, (long long)L,
                        (long long)B);
          const double target = (!tiny && L == 4096 && B == 1 && nt == threads) ? (N == 128 ? 70 : 60) : 0;
          add(out, id, label, nt, [=](RunContext& ctx) {
            Row r = mla_decode(ctx, N, L, B, D, Dr);
            r.target_pct = target;
            if (!tiny) add_vllm_mla_peer(r, ctx, B, N, L, nt);  // target: >= 2x faster at N 128, L 4096
            if (!tiny && N == 128 && L == 4096) r.target_peer_ratio = 2.0;
            return r;
          });
        }
      }
  // GQA decode over a paged BnBsH cache (gqa_shape: the GQA rows below share it)
  const GqaShape g{sh.gB, sh.gN, sh.gKVN, sh.gD, sh.gL};
  for (int kind : {0, 1, 2}) {  // BF16 KV, INT8 KV, BF16 KV with post-quant INT8 output
    const bool int8 = kind == 1, pq = kind == 2;
    std::snprintf(id, sizeof id, "fia.gqa_decode.%s.B%lld.t%d", int8 ? "int8kv" : pq ? "postquant" : "bf16",
                  (long long)g.B, threads);
    gqa_decode_label(label, sizeof label, g, int8 ? " int8 KV" : pq ? " int8 out" : "");
    add(out, id, label, threads, [=](RunContext& ctx) {
      Row r = gqa_decode(ctx, g.B, g.N, g.KVN, g.D, g.L, threads, int8, pq);
      r.target_pct = tiny || int8 ? 0 : 75;
      return r;
    });
    out.back().bracket_dram = true;  // the 75 % target is against the DRAM rate of that moment
  }
  // GQA decode with a shared prefix, and the same attention with the prefix copied per batch
  {
    const int64_t Lp = sh.prefix_Lp, L = sh.prefix_L;
    for (bool copied : {false, true}) {
      std::snprintf(id, sizeof id, "fia.gqa_decode.%s.B%lld.t%d", copied ? "prefix_copied" : "prefix", (long long)g.B,
                    threads);
      std::snprintf(label, sizeof label, "FIA GQA decode %lldq/%lldkv D=%lld prefix %lld%s + own %lld B=%lld",
                    (long long)g.N, (long long)g.KVN, (long long)g.D, (long long)Lp, copied ? " copied" : "",
                    (long long)L, (long long)g.B);
      add(out, id, label, threads,
          [=](RunContext& ctx) { return gqa_decode_prefix(ctx, g.B, g.N, g.KVN, g.D, Lp, L, copied); });
    }
  }
  // MLA MTP decode: causal draft tokens (sparse 3) beside the tree mask (sparse 9)
  for (int64_t B : sh.mtp_Bs)
    for (bool tree : {false, true}) {
      const int64_t N = sh.mtp_N, L = sh.mtp_L, QS = sh.mtp_QS;
      std::snprintf(id, sizeof id, "fia.mla_mtp.%s.N%lld.L%lld.B%lld.Q%lld.t%d", tree ? "tree" : "causal",
                    (long long)N, (long long)L, (long long)B, (long long)QS, threads);
      std::snprintf(label, sizeof label, "FIA MLA MTP N=%lld L=%lld B=%lld Q_S=%lld %s", (long long)N, (long long)L,
                    (long long)B, (long long)QS, tree ? "tree (sparse 9)" : "causal (sparse 3)");
      add(out, id, label, threads, [=](RunContext& ctx) { return mla_mtp(ctx, N, L, B, QS, D, Dr, tree); });
    }
  // MTP with 2 draft tokens against the one-token call on the same cache, at DeepSeek's heads per
  // rank for TP 8 and 4 (target: the two tokens cost at most 1.25x one, as alternated pairs)
  for (int64_t N : sh.mtp2_Ns)
    for (int64_t B : sh.mtp2_Bs) {
      const int64_t L = sh.mtp_L, QS = 2;
      std::snprintf(id, sizeof id, "fia.mla_mtp2.N%lld.L%lld.B%lld.t%d", (long long)N, (long long)L, (long long)B,
                    threads);
      std::snprintf(label, sizeof label, "FIA MLA MTP N=%lld L=%lld B=%lld Q_S=2 vs Q_S=1", (long long)N, (long long)L,
                    (long long)B);
      add(out, id, label, threads, [=](RunContext& ctx) {
        Row r = mla_mtp_vs_decode(ctx, N, L, B, QS, D, Dr);
        if (!tiny) r.target_pair_ratio = 0.8;
        return r;
      });
    }
  // MLA decode full quant beside the BF16 rows of the same shape (fia.mla_decode.N*.L4096.B1)
  for (int64_t N : sh.fq_Ns) {
    const int64_t L = sh.fq_L;
    std::snprintf(id, sizeof id, "fia.mla_decode_fq.N%lld.L%lld.B1.t%d", (long long)N, (long long)L, threads);
    std::snprintf(label, sizeof label, "FIA MLA decode full quant N=%lld L=%lld B=1", (long long)N, (long long)L);
    add(out, id, label, threads, [=](RunContext& ctx) { return mla_decode_fq(ctx, N, L, 1); });
  }
  // the same GQA shape over contiguous INT8 / INT4 caches
  for (bool int4 : {false, true})
    for (int64_t mode : {0, 1})
      for (int64_t ip : {1, 0}) {
        std::snprintf(id, sizeof id, "fia.gqa_decode.%s.m%lld.ip%lld.B%lld.t%d", int4 ? "int4kv" : "int8kv_bsh",
                      (long long)mode, (long long)ip, (long long)g.B, threads);
        gqa_decode_label(label, sizeof label, g,
                         std::string(int4 ? " int4 KV" : " int8 KV") + " BSH mode " + std::to_string(mode) + " ip " +
                             std::to_string(ip));
        add(out, id, label, threads, [=](RunContext& ctx) {
          Row r = gqa_decode_quant(ctx, g.B, g.N, g.KVN, g.D, g.L, int4, mode, ip);
          r.target_pct = 0;
          return r;
        });
      }
  {  // the same GQA shape over a paged INT8 NZ cache
    std::snprintf(id, sizeof id, "fia.gqa_decode.int8kv_nz.B%lld.t%d", (long long)g.B, threads);
    gqa_decode_label(label, sizeof label, g, " int8 KV NZ");
    add(out, id, label, threads, [=](RunContext& ctx) {
      Row r = gqa_decode_nz(ctx, g.B, g.N, g.KVN, g.D, g.L);
      r.target_pct = 0;
      return r;
    });
  }
  {
    const int64_t T = sh.pre_T, L = sh.pre_L, N = sh.pre_N, PD = sh.pre_D;
    for (int nt : threads > 1 ? std::vector<int>{threads, 1} : std::vector<int>{threads}) {
      std::snprintf(id, sizeof id, "fia.mla_prefill.T%lld.L%lld.N%lld.t%d", (long long)T, (long long)L, (long long)N,
                    nt);
      std::snprintf(label, sizeof label, "FIA MLA prefill T=%lld L=%lld N=%lld D=%lld+%lld", (long long)T,
                    (long long)L, (long long)N, (long long)PD, (long long)Dr);
      const double target = tiny || nt != threads ? 0 : 60;
      add(out, id, label, nt, [=](RunContext& ctx) {
        Row r = mla_prefill(ctx, T, L, N, PD, Dr);
        r.target_pct = target;
        return r;
      });
    }
  }
  {  // the GQA heads and head dim, batch 1
    const int64_t S = sh.gpre_S, L = sh.gpre_L;
    static const struct {
      PrefillType t;
      const char* id;
      const char* label;
    } kTypes[] = {{PrefillType::kBf16, "bf16", ""}, {PrefillType::kFp16, "fp16", " FP16"},
                  {PrefillType::kInt8, "int8fq", " INT8 full quant"}};
    for (const auto& ty : kTypes) {
      std::snprintf(id, sizeof id, "fia.gqa_prefill.%s.S%lld.L%lld.t%d", ty.id, (long long)S, (long long)L, threads);
      std::snprintf(label, sizeof label, "FIA GQA prefill %lldq/%lldkv D=%lld S=%lld L=%lld%s", (long long)g.N,
                    (long long)g.KVN, (long long)g.D, (long long)S, (long long)L, ty.label);
      const PrefillType t = ty.t;
      add(out, id, label, threads, [=](RunContext& ctx) { return gqa_prefill(ctx, 1, g.N, g.KVN, g.D, S, L, t); });
    }
  }
  return out;
}

}  // namespace bench
