// MlaProlog V1 / V2WeightNz / V3WeightNz phase 2 (docs/ops/mla_prolog.md): binds the tensors to a plan
// (ops/mla_prolog/mla_prolog_plan.cpp), re-checks what may change between the phases (the call signature,
// the pointer rules; in a read-only pre-pass the cacheIndex values, actualSeqLen and the clip alpha;
// the workspace), fills the token -> cache slot table, then runs the plan's kernels per chunk of
// tokens:
//   1. x @ [W_DQ | W_DKV_KR]          panel GEMM, parallel over weight panels
//   2. per token: dequant / bf16 rounding, α_q·RmsNorm(c_Q) -> bf16 or dynamic int8 (A of step 3,
//      also queryNormOut); α_kv·RmsNorm(c_KV), RoPE(k_r), cache quant (per channel, per tensor or
//      per tile) -> kv / kr rows staged
//   3. per head (parallel over heads): c_Q' @ W_UQ_QR[:, head] -> q_nope, q_rope;
//      q_nope @ W_UK[head] -> query; RoPE -> query_rope; full+KV quant: per (token, head) int8
//   4. scatter the staged kv / kr rows into the caches in token order (duplicates: last wins)
// Each weight is streamed once per chunk (one chunk for T <= 256 tokens).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/workspace.h"
#include "kernels/cpu/rows/mla_rows.h"
#include "mlaops/numeric.h"
#include "ops/common/cpp_api.h"
#include "ops/mla_prolog/mla_prolog.h"
#include "ops/common/mla_uk.h"

namespace mlaops {
namespace {

using kernels::GemmArgs;

// Element (slot p, channel j) of a cache row in an NZ block layout (PA_NZ, PA_BLK_NZ;
// docs/ops/mla_prolog.md); the other layouts are dense rows, element p*width + j.
inline int64_t nz_cache_offset(int64_t block_size, int64_t width, int64_t c0, int64_t p, int64_t j) {
  const int64_t b = p / block_size, o = p % block_size;
  return b * block_size * width + (j / c0) * block_size * c0 + o * c0 + (j % c0);
}

// The cache slot of every token in token order (-1: no write), from the cache mode: PA_BSND /
// PA_NZ cacheIndex[t]; BSND / TND t; PA_BLK_* token s of batch b: block cacheIndex[off_b + s /
// BlockSize], slot block*BlockSize + s % BlockSize, off_b = the batches' block counts before b
// (ceil(S_b / BlockSize) each; S_b = S for tokenX [B, S, He], else actualSeqLen's differences).
// Reads tensor contents only; validates every value it reads before it reads through it, and
// writes the table to `slots` when given (a validating pass with nullptr writes nothing).
Status cache_slots(const MlaPrologParams& p, const MlaPrologPlan& pl, int64_t* slots) {
  const char* op = pl.options.op;
  const MlaPrologDims& d = pl.dims;
  const MlaPrologCacheMode mode = pl.cache_mode;
  if (!mla_prolog_cache_paged(mode)) {
    if (slots != nullptr)
      for (int64_t t = 0; t < d.T; ++t) slots[t] = t;
    return kSuccess;
  }
  const int64_t* idx = p.cache_index.ptr<const int64_t>();
  if (!mla_prolog_cache_blocks(mode)) {
    const int64_t n = d.block_num * d.block_size;  // fits: the cache tensor's size was checked
    for (int64_t t = 0; t < d.T; ++t) {
      MLAOPS_CHECK(idx[t] < n, kParamInvalid,
                   "%s: cacheIndex: MP-17 cacheIndex[%lld] out of range; allowed [0, %lld) (BlockNum*BlockSize) or "
                   "negative (skip), got %lld",
                   op, (long long)t, (long long)n, (long long)idx[t]);
      if (slots != nullptr) slots[t] = idx[t] < 0 ? -1 : idx[t];
    }
    return kSuccess;
  }
  const int64_t bs = d.block_size, ids = p.cache_index.numel();
  const int32_t* asl = d.bsh ? nullptr : p.actual_seq_len->ptr<const int32_t>();
  const int64_t batches = d.bsh ? d.B : p.actual_seq_len->dims[0];
  int64_t t = 0, off = 0;  // the batch's first token and first block id position
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t end = d.bsh ? t + d.S : asl[b];
    MLAOPS_CHECK(end >= t && end <= d.T, kParamInvalid,
                 "%s: actualSeqLenOptional: MP-28 actualSeqLenOptional[%lld] must be a non-decreasing prefix sum of "
                 "the batches' token counts; allowed [%lld, %lld] (T), got %lld",
                 op, (long long)b, (long long)t, (long long)d.T, (long long)end);
    const int64_t nb = ceil_div(end - t, bs);
    MLAOPS_CHECK(off + nb <= ids, kParamInvalid,
                 "%s: cacheIndex: MP-28 block ids of batches 0..%lld; allowed at least %lld (sum of ceil(S_b/%lld)), "
                 "got %lld",
                 op, (long long)b, (long long)(off + nb), (long long)bs, (long long)ids);
    for (int64_t s = 0; t < end; ++s, ++t) {
      const int64_t blk = idx[off + s / bs];
      MLAOPS_CHECK(blk < d.block_num, kParamInvalid,
                   "%s: cacheIndex: MP-17 cacheIndex[%lld] (block of token %lld) out of range; allowed [0, %lld) "
                   "(BlockNum) or negative (skip), got %lld",
                   op, (long long)(off + s / bs), (long long)t, (long long)d.block_num, (long long)blk);
      if (slots != nullptr) slots[t] = blk < 0 ? -1 : blk * bs + s % bs;
    }
    off += nb;
  }
  MLAOPS_CHECK(t == d.T, kParamInvalid,
               "%s: actualSeqLenOptional: MP-28 the last prefix sum is the token count; allowed %lld (T), got %lld", op,
               (long long)d.T, (long long)t);
  return kSuccess;
}

// kvCacheQuantMode 3, one row: c (Hckv fp32) -> q int8 per tile of 128 channels with its fp32
// scale, in the packed row q | rope (bf16, already in `row`) | scales. A tile with a_g = 0 (or
// whose scale has no finite reciprocal) is stored as scale 0 and q = 0.
void per_tile_quant_row(const float* c, int64_t hckv, int64_t dr, float alpha, int8_t* row) {
  const int64_t tiles = hckv / mla_prolog_table::kKvQuantTile;
  for (int64_t g = 0; g < tiles; ++g) {
    const float* cg = c + g * mla_prolog_table::kKvQuantTile;
    int8_t* q = row + g * mla_prolog_table::kKvQuantTile;
    float a = 0.0f;
    for (int64_t j = 0; j < mla_prolog_table::kKvQuantTile; ++j) a = std::max(a, std::fabs(cg[j]));
    const float bound = alpha * a;      // clip at ±α·a_g
    float scale = bound / 127.0f;       // s_g
    const float inv = 1.0f / scale;     // the kernel multiplies by 1/s_g
    if (scale == 0.0f || !std::isfinite(inv)) {
      scale = 0.0f;
      std::memset(q, 0, static_cast<size_t>(mla_prolog_table::kKvQuantTile));
    } else {
      for (int64_t j = 0; j < mla_prolog_table::kKvQuantTile; ++j)
        q[j] = int8_rint_sat(std::min(std::max(cg[j], -bound), bound) * inv);  // fp32 -> int32 (rint) -> fp16 -> int8
    }
    std::memcpy(row + hckv + 2 * dr + 4 * g, &scale, 4);
  }
}

struct RunCtx {
  const MlaPrologParams* p;
  const MlaPrologPlan* plan;
  WorkspaceArena* ws;
  int64_t t0 = 0, tc = 0;  // chunk start, chunk length
  std::atomic<int64_t>* head_ns = nullptr;  // MLAOPS_PROFILE: this call's head sub-step times (4), summed over threads
};

// The scratch of per-thread buffer `slot` (the plan's off_scratch): GEMM scratch and row vectors.
char* thread_scratch(const RunCtx& c, int slot) {
  return c.ws->at<char>(c.plan->off_thread + slot * c.plan->thread_bytes + c.plan->off_scratch);
}

// B: the weight's data, laid out as `w` says.
GemmArgs panel_gemm(const PanelMatrix& w, const void* B, const void* A, int64_t lda, int64_t M, void* C, int64_t ldc) {
  GemmArgs g;
  g.M = M;
  g.N = w.cols;
  g.K = w.rows;
  g.A = A;
  g.lda = lda;
  g.B = B;
  g.ldb = w.ldb;
  g.panel_stride = w.panel_stride;
  g.panel_width = w.panel_width;
  g.C = C;
  g.ldc = ldc;
  return g;
}

// Step 1: acc1[tc, Hcq + Hckv + Dr] = x[t0:t0+tc] @ [W_DQ | W_DKV_KR] (fp32 or int32).
void project_x(const RunCtx& c) {
  const MlaPrologParams& p = *c.p;
  const MlaPrologPlan& pl = *c.plan;
  const MlaPrologDims& d = pl.dims;
  const bool full = mla_prolog_is_full_quant(pl.scenario);
  const int64_t es = full ? 1 : 2;
  const char* x = static_cast<const char*>(p.token_x.data) + c.t0 * d.He * es;
  const int64_t ldc = d.Hcq + d.Hckv + d.Dr;
  char* acc = c.ws->at<char>(pl.off_acc1);
  if (pl.route_x.onednn) {  // one product on oneDNN's threads
    kernels::onednn_gemm_run(pl.route_x.plan, c.tc, x, d.He, acc, ldc, c.ws->at<char>(pl.off_route_x));
    return;
  }
  const int64_t p1 = ceil_div(d.Hcq, pl.wdq.panel_width);
  const int64_t p2 = ceil_div(d.Hckv + d.Dr, pl.wdkvkr.panel_width);
  const kernels::GemmFn fn = pl.x_gemm;
  int32_t* const rowsum = full ? c.ws->at<int32_t>(pl.off_rowsum) : nullptr;  // x's, for every panel call
  if (full) pl.rowsum(reinterpret_cast<const int8_t*>(x), d.He, c.tc, d.He, rowsum);
  // Enough panels per chunk of work that small T stays on one thread only when cheap.
  auto range = [&](int64_t b, int64_t e, int slot) {
    if (b < p1) {
      GemmArgs g = panel_gemm(pl.wdq, p.weight_dq.data, x, d.He, c.tc, acc, ldc);
      g.n_begin = b * pl.wdq.panel_width;
      g.n_end = std::min(std::min(e, p1) * pl.wdq.panel_width, d.Hcq);
      g.scratch = thread_scratch(c, slot);
      g.a_rowsum = rowsum;
      fn(g);
    }
    if (e > p1) {
      // the W_DKV_KR columns land after the Hcq columns: offset C by Hcq elements
      GemmArgs g = panel_gemm(pl.wdkvkr, p.weight_dkv_kr.data, x, d.He, c.tc, acc + d.Hcq * 4, ldc);
      g.n_begin = (std::max(b, p1) - p1) * pl.wdkvkr.panel_width;
      g.n_end = std::min((e - p1) * pl.wdkvkr.panel_width, d.Hckv + d.Dr);
      g.scratch = thread_scratch(c, slot);
      g.a_rowsum = rowsum;
      fn(g);
    }
  };
  parallel_chunks(
      p1 + p2, 1, pl.threads,
      [](void* r, int64_t b, int64_t e, int slot) { (*static_cast<decltype(range)*>(r))(b, e, slot); }, &range);
}

float load_f32(const TensorView* t, int64_t i) { return t->ptr<const float>()[i]; }

// Step 2 for tokens [b, e) of the chunk, with per-thread buffer `slot`.
void token_rows(const RunCtx& c, int64_t b, int64_t e, int slot) {
  const MlaPrologParams& p = *c.p;
  const MlaPrologPlan& pl = *c.plan;
  const MlaPrologDims& d = pl.dims;
  const MlaPrologScenario sc = pl.scenario;
  const bool full = mla_prolog_is_full_quant(sc), kvq = mla_prolog_is_kv_quant(sc);
  const bool per_tile = mla_prolog_is_per_tile(sc);
  const float clip_alpha = per_tile ? load_f32(p.k_nope_clip_alpha, 0) : 0.0f;
  const int64_t ldc = d.Hcq + d.Hckv + d.Dr;
  float* const tmp = reinterpret_cast<float*>(thread_scratch(c, slot));  // [max(Hcq, Hckv + Dr)], then rope [Dr]
  float* const rope = tmp + round_up(std::max(d.Hcq, d.Hckv + d.Dr) * 4, kWorkspaceAlign) / 4;
  const uint16_t* gamma_cq = p.rmsnorm_gamma_cq.ptr<const uint16_t>();
  const uint16_t* gamma_ckv = p.rmsnorm_gamma_ckv.ptr<const uint16_t>();
  for (int64_t i = b; i < e; ++i) {
    const int64_t t = c.t0 + i;
    float* accf = c.ws->at<float>(pl.off_acc1) + i * ldc;
    const int32_t* acci = c.ws->at<int32_t>(pl.off_acc1) + i * ldc;
    // c_Q (Q1) and its RmsNorm (Q2)
    float* cq = accf;  // converted in place
    if (full) {
      const float sx = load_f32(p.dequant_scale_x, t);
      for (int64_t j = 0; j < d.Hcq; ++j) cq[j] = static_cast<float>(acci[j]) * sx * load_f32(p.dequant_scale_w_dq, j);
    } else {
      pl.cv->round_bf16(cq, d.Hcq);
    }
    kernels::rms_norm_row(cq, gamma_cq, d.Hcq, p.rmsnorm_epsilon_cq, tmp);
    if (pl.scale_q)  // V3 α_q, before the smooth scale / dynamic quant
      for (int64_t j = 0; j < d.Hcq; ++j) tmp[j] *= pl.alpha_q;
    if (sc == MlaPrologScenario::kNoQuant) {
      uint16_t* a2 = c.ws->at<uint16_t>(pl.off_a2) + i * d.Hcq;
      pl.cv->f32_to_bf16(tmp, a2, d.Hcq);
      if (pl.query_norm) std::memcpy(p.query_norm_out->ptr<uint16_t>() + t * d.Hcq, a2, static_cast<size_t>(d.Hcq) * 2);
    } else {
      if (p.smooth_scales_cq != nullptr)
        for (int64_t j = 0; j < d.Hcq; ++j) tmp[j] *= load_f32(p.smooth_scales_cq, j);
      int8_t* a2 = c.ws->at<int8_t>(pl.off_a2) + i * d.Hcq;
      const float s_cq = kernels::dyn_quant_row(*pl.cv, tmp, d.Hcq, a2);
      c.ws->at<float>(pl.off_scale)[i] = s_cq;
      if (pl.query_norm) {  // V3: the int8 A operand and its per-token scale
        std::memcpy(p.query_norm_out->ptr<int8_t>() + t * d.Hcq, a2, static_cast<size_t>(d.Hcq));
        p.dequant_scale_q_norm_out->ptr<float>()[t] = s_cq;
      }
    }
    // c_KV | k_r (K1), RmsNorm (K2), RoPE (K3), cache rows
    float* ck = accf + d.Hcq;
    if (full) {
      const float sx = load_f32(p.dequant_scale_x, t);
      for (int64_t j = 0; j < d.Hckv + d.Dr; ++j)
        ck[j] = static_cast<float>(acci[d.Hcq + j]) * sx * load_f32(p.dequant_scale_w_dkv_kr, j);
    } else {
      pl.cv->round_bf16(ck, d.Hckv + d.Dr);
    }
    kernels::rms_norm_row(ck, gamma_ckv, d.Hckv, p.rmsnorm_epsilon_ckv, tmp);
    if (pl.scale_kv)  // V3 α_kv, before the cast or quant
      for (int64_t j = 0; j < d.Hckv; ++j) tmp[j] *= pl.alpha_kv;
    pl.cv->rope_deinterleave(ck + d.Hckv, p.rope_cos.ptr<const uint16_t>() + t * d.Dr,
                             p.rope_sin.ptr<const uint16_t>() + t * d.Dr, d.Dr, rope);
    if (per_tile) {  // the packed row: int8 tiles | bf16 rope | fp32 scales
      int8_t* row = c.ws->at<int8_t>(pl.off_kv) + i * d.kv_row;
      for (int64_t j = 0; j < d.Dr; ++j) {
        const uint16_t r = float_to_bf16(rope[j]);
        std::memcpy(row + d.Hckv + 2 * j, &r, 2);
      }
      per_tile_quant_row(tmp, d.Hckv, d.Dr, clip_alpha, row);
      continue;
    }
    if (kvq) {
      int8_t* kv = c.ws->at<int8_t>(pl.off_kv) + i * d.Hckv;
      if (sc == MlaPrologScenario::kPartialQuantKvQuant) {  // per channel
        for (int64_t j = 0; j < d.Hckv; ++j) kv[j] = int8_rint_sat(tmp[j] * load_f32(p.quant_scale_ckv, j));
      } else {
        pl.cv->mul_rint_i8(tmp, load_f32(p.quant_scale_ckv, 0), kv, d.Hckv);
      }
    } else {
      pl.cv->f32_to_bf16(tmp, c.ws->at<uint16_t>(pl.off_kv) + i * d.Hckv, d.Hckv);
    }
    if (sc == MlaPrologScenario::kPartialQuantKvQuant) {
      int8_t* kr = c.ws->at<int8_t>(pl.off_kr) + i * d.Dr;
      for (int64_t j = 0; j < d.Dr; ++j) kr[j] = int8_rint_sat(round_bf16(rope[j]) * load_f32(p.quant_scale_ckr, j));
    } else {
      uint16_t* kr = c.ws->at<uint16_t>(pl.off_kr) + i * d.Dr;
      for (int64_t j = 0; j < d.Dr; ++j) kr[j] = float_to_bf16(rope[j]);
    }
  }
}

// Step 3 for head n, using the calling thread's buffers.
void head(const RunCtx& c, int64_t n, int thread) {
  const MlaPrologParams& p = *c.p;
  const MlaPrologPlan& pl = *c.plan;
  const MlaPrologDims& d = pl.dims;
  const MlaPrologScenario sc = pl.scenario;
  const bool quant_a = sc != MlaPrologScenario::kNoQuant;
  const int64_t W = pl.wuqqr.panel_width;
  const int64_t qcols = d.N * (d.D + d.Dr);
  const int64_t col0 = n * (d.D + d.Dr);
  const int64_t lo = col0 / W * W;
  const int64_t hi = std::min(round_up(col0 + d.D + d.Dr, W), qcols);
  char* tb = c.ws->at<char>(pl.off_thread + thread * pl.thread_bytes);
  float* qq = reinterpret_cast<float*>(tb);                                   // [tc, head_cols]
  uint16_t* qn = reinterpret_cast<uint16_t*>(tb + round_up(c.tc * pl.head_cols * 4, kWorkspaceAlign));  // [tc, D]
  float* qo = reinterpret_cast<float*>(reinterpret_cast<char*>(qn) + round_up(c.tc * d.D * 2, kWorkspaceAlign));
  ProfileClock::time_point lap_t = c.head_ns != nullptr ? ProfileClock::now() : ProfileClock::time_point{};
  // c_Q' @ W_UQ_QR[:, lo:hi]   (qq holds columns lo..hi-1; the kernel addresses C by absolute
  // column). Token i's columns of this head: qbase + i * qld + col0 (on the oneDNN route, the
  // product of every head, made before the heads).
  float* qbase = qq - lo;
  int64_t qld = pl.head_cols;
  char* const scratch = thread_scratch(c, thread);  // the GEMM's scratch, then rope [Dr]
  if (pl.route_uq.onednn) {
    qbase = c.ws->at<float>(pl.off_q_all);
    qld = qcols;
  } else {
    GemmArgs g = panel_gemm(pl.wuqqr, p.weight_uq_qr.data, c.ws->at<char>(pl.off_a2), d.Hcq, c.tc, qq - lo,
                            pl.head_cols);
    g.n_begin = lo;
    g.n_end = hi;
    g.scratch = scratch;
    if (quant_a) g.a_rowsum = c.ws->at<int32_t>(pl.off_rowsum) + pl.chunk;  // summed once per chunk (run)
    pl.uq_gemm(g);
  }
  profile_lap(c.head_ns, 0, lap_t);
  float* const rope = reinterpret_cast<float*>(
      scratch + kernels::gemm_scratch_bytes(quant_a ? kernels::GemmKind::kS8 : kernels::GemmKind::kBf16, pl.chunk, d.Hcq,
                                            pl.head_cols));  // as planned
  const float* scale = c.ws->at<float>(pl.off_scale);
  for (int64_t i = 0; i < c.tc; ++i) {
    float* row = qbase + i * qld + col0;
    if (quant_a) {
      const int32_t* rowi = reinterpret_cast<const int32_t*>(row);
      for (int64_t j = 0; j < d.D + d.Dr; ++j)
        row[j] = static_cast<float>(rowi[j]) * scale[i] * load_f32(p.dequant_scale_w_uq_qr, col0 + j);
    } else {
      pl.cv->round_bf16(row, d.D + d.Dr);
    }
    pl.cv->f32_to_bf16(row, qn + i * d.D, d.D);
  }
  profile_lap(c.head_ns, 1, lap_t);
  // q_nope @ W_UK[n] (ND [D, Hckv]), then the epilogue, uk_rows tokens at a time (ops/common/mla_uk.h).
  GemmArgs g3;
  mla_uk_operand(p.weight_uk.ptr<const uint16_t>() + n * d.D * d.Hckv, true, 0, d.D, d.Hckv, c.tc,
                 reinterpret_cast<char*>(qo) + round_up(pl.uk_rows * d.Hckv * 4, kWorkspaceAlign), &g3);
  g3.lda = d.D;
  g3.ldc = d.Hckv;
  g3.scratch = scratch;  // bf16: none used
  const bool q_int8 = sc == MlaPrologScenario::kFullQuantKvQuant;
  mla_uk_blocks(pl.uk_gemm, g3, qn, c.tc, pl.uk_rows, qo, [&](int64_t r0, int64_t m) {
    profile_lap(c.head_ns, 2, lap_t);
    for (int64_t i = r0; i < r0 + m; ++i) {
      const int64_t t = c.t0 + i;
      const int64_t row_out = t * d.N + n;
      float* q = qo + (i - r0) * d.Hckv;
      const float* row = qbase + i * qld + col0;
      pl.cv->rope_deinterleave(row + d.D, p.rope_cos.ptr<const uint16_t>() + t * d.Dr,
                               p.rope_sin.ptr<const uint16_t>() + t * d.Dr, d.Dr, rope);
      uint16_t* rope_out = p.query_rope_out.ptr<uint16_t>() + row_out * d.Dr;
      if (q_int8) {
        pl.cv->round_bf16(q, d.Hckv);
        const float dqs = pl.cv->absmax(q, d.Hckv) / 127.0f;
        int8_t* out = p.query_out.ptr<int8_t>() + row_out * d.Hckv;
        if (dqs == 0.0f) {
          std::memset(out, 0, static_cast<size_t>(d.Hckv));
        } else {
          pl.cv->div_round_i8(q, dqs, out, d.Hckv);
        }
        p.dequant_scale_q_nope_out->ptr<float>()[row_out] = dqs;
        const float qs = load_f32(p.quant_scale_ckv, 0);
        if (dqs == 0.0f) {
          std::memset(rope_out, 0, static_cast<size_t>(d.Dr) * 2);
        } else {  // bf16(round_bf16(rope) * qs / dqs), element by element in fp32
          pl.cv->round_bf16(rope, d.Dr);
          for (int64_t j = 0; j < d.Dr; ++j) rope[j] = rope[j] * qs / dqs;
          pl.cv->f32_to_bf16(rope, rope_out, d.Dr);
        }
      } else {
        pl.cv->f32_to_bf16(q, p.query_out.ptr<uint16_t>() + row_out * d.Hckv, d.Hckv);
        pl.cv->f32_to_bf16(rope, rope_out, d.Dr);
      }
    }
    profile_lap(c.head_ns, 3, lap_t);
  });
}

// Step 4: staged rows into the caches at the pre-pass's slots, tokens in order.
void scatter(const RunCtx& c) {
  const MlaPrologParams& p = *c.p;
  const MlaPrologPlan& pl = *c.plan;
  const MlaPrologDims& d = pl.dims;
  if (d.block_num == 0) return;
  const int64_t* slots = c.ws->at<int64_t>(pl.off_slots);
  const bool kr_rows_on = !mla_prolog_is_per_tile(pl.scenario);  // per tile: the rope is in the kv row
  const int64_t kv_es = dtype_size(p.kv_cache.dtype), kr_es = dtype_size(p.kr_cache.dtype);
  const int64_t kv_w = d.kv_row;
  char* kv = static_cast<char*>(p.kv_cache.data);
  char* kr = static_cast<char*>(p.kr_cache.data);
  const char* kv_rows = c.ws->at<char>(pl.off_kv);
  const char* kr_rows = c.ws->at<char>(pl.off_kr);
  for (int64_t i = 0; i < c.tc; ++i) {
    const int64_t slot = slots[c.t0 + i];
    if (slot < 0) continue;
    if (!mla_prolog_cache_nz(pl.cache_mode)) {  // dense rows
      std::memcpy(kv + slot * kv_w * kv_es, kv_rows + i * kv_w * kv_es, static_cast<size_t>(kv_w * kv_es));
      if (kr_rows_on)
        std::memcpy(kr + slot * d.Dr * kr_es, kr_rows + i * d.Dr * kr_es, static_cast<size_t>(d.Dr * kr_es));
      continue;
    }
    const int64_t c0kv = 32 / kv_es, c0kr = 32 / kr_es;
    for (int64_t j = 0; j < d.Hckv; j += c0kv)
      std::memcpy(kv + nz_cache_offset(d.block_size, d.Hckv, c0kv, slot, j) * kv_es, kv_rows + (i * d.Hckv + j) * kv_es,
                  32);
    for (int64_t j = 0; j < d.Dr; j += c0kr)
      std::memcpy(kr + nz_cache_offset(d.block_size, d.Dr, c0kr, slot, j) * kr_es, kr_rows + (i * d.Dr + j) * kr_es, 32);
  }
}

}  // namespace

Status mla_prolog_run(const OpPlan& plan, const MlaPrologParams& caller, void* workspace, uint64_t workspace_size) {
  const MlaPrologPlan* pl = nullptr;
  MLAOPS_TRY(check::plan_state(plan, kMlaPrologOp, &pl));
  const char* op = pl->options.op;
  MLAOPS_TRY(check::same_call(op, "MP-18", pl->signature, mla_prolog_signature(caller)));
  const MlaPrologDims& d = pl->dims;
  // MP-05 / MP-12, and the workspace bytes this run uses disjoint from every bound tensor
  MLAOPS_TRY(mla_prolog_check_pointers(caller, pl->scenario, op, workspace,
                                     d.T == 0 ? 0 : std::min<uint64_t>(pl->workspace_bytes, workspace_size)));
  if (d.T == 0) return kSuccess;  // empty query: nothing computed, caches untouched
  // Strided inputs and index tensors (ops/common/auto_contiguous.h): copied into the workspace's front
  // before anything is read; everything below reads the copies (the pre-pass included).
  MlaPrologParams p = caller;
  std::vector<TensorView> store;
  const std::vector<StageSlot> slots = mla_prolog_stage_slots(&p, &store);
  if (!pl->stage.entries.empty()) MLAOPS_TRY(check::workspace_ok(op, pl->workspace_bytes, workspace, workspace_size));
  MLAOPS_TRY(stage_run(op, "MP-05", slots, pl->stage, workspace, workspace_size));
  const uint64_t front = static_cast<uint64_t>(pl->stage.bytes);
  workspace = front == 0 ? workspace : static_cast<char*>(workspace) + front;
  workspace_size -= front;
  // A read-only pre-pass over the contents that address the caches or scale them, before the
  // first write (contents may change between the two phases): the cacheIndex values (MP-17),
  // actualSeqLen and the block table's length (MP-28), the clip alpha (MP-28). Negative slots or
  // block ids skip the row (vendor kernel); with BlockNum == 0 nothing is written, so the index
  // values are not looked at.
  if (d.block_num > 0) MLAOPS_TRY(cache_slots(p, *pl, nullptr));
  if (mla_prolog_is_per_tile(pl->scenario)) {
    const float a = p.k_nope_clip_alpha->ptr<const float>()[0];
    MLAOPS_CHECK(std::isfinite(a) && a > 0.0f, kParamInvalid,
                 "%s: kNopeClipAlphaOptional: MP-28 value; allowed finite and > 0, got %g", op, static_cast<double>(a));
  }
  MLAOPS_TRY(check::workspace_ok(op, pl->workspace_bytes - front, workspace, workspace_size));
  WorkspaceArena ws(workspace, workspace_size);
  if (d.block_num > 0) MLAOPS_TRY(cache_slots(p, *pl, ws.at<int64_t>(pl->off_slots)));  // validated above
  RunCtx c;
  c.p = &p;
  c.plan = pl;
  c.ws = &ws;
  // MLAOPS_PROFILE=1 prints the time of each phase to stderr (profile evidence,
  // docs/performance.md).
  const bool profile = profile_enabled();
  std::atomic<int64_t> head_ns[4] = {0, 0, 0, 0};  // per call: concurrent calls keep their own
  c.head_ns = profile ? head_ns : nullptr;
  using clock = std::chrono::steady_clock;
  double phase[4] = {0, 0, 0, 0};
  auto lap = [&](int i, clock::time_point& t) {
    const auto now = clock::now();
    phase[i] += std::chrono::duration<double, std::micro>(now - t).count();
    t = now;
  };
  // the oneDNN routes' weights, converted once per call (kernels/cpu/gemm/gemm_onednn.h)
  auto pack = [&](const GemmRoute& r, const PanelMatrix& m, const void* data, int64_t off, int64_t col0) {
    if (!r.onednn) return;
    kernels::WeightSource w;
    w.data = data;
    w.ldb = m.ldb, w.panel_stride = m.panel_stride, w.panel_width = m.panel_width;
    kernels::onednn_gemm_pack(r.plan, w, ws.at<char>(off), col0, m.cols);
  };
  const auto t_pack = clock::now();
  pack(pl->route_x, pl->wdq, p.weight_dq.data, pl->off_route_x, 0);
  pack(pl->route_x, pl->wdkvkr, p.weight_dkv_kr.data, pl->off_route_x, d.Hcq);
  pack(pl->route_uq, pl->wuqqr, p.weight_uq_qr.data, pl->off_route_uq, 0);
  const double pack_us = std::chrono::duration<double, std::micro>(clock::now() - t_pack).count();
  for (c.t0 = 0; c.t0 < d.T; c.t0 += pl->chunk) {
    c.tc = std::min(pl->chunk, d.T - c.t0);
    auto t = clock::now();
    project_x(c);
    lap(0, t);
    parallel_chunks(
        c.tc, kMlaPrologRowsMinChunk, pl->threads,
        [](void* rc, int64_t b, int64_t e, int slot) { token_rows(*static_cast<const RunCtx*>(rc), b, e, slot); }, &c);
    if (pl->scenario != MlaPrologScenario::kNoQuant && !pl->route_uq.onednn)  // the int8 c_Q' rows the token rows wrote
      pl->rowsum(ws.at<int8_t>(pl->off_a2), d.Hcq, c.tc, d.Hcq, ws.at<int32_t>(pl->off_rowsum) + pl->chunk);
    if (pl->route_uq.onednn)  // c_Q' @ W_UQ_QR for every head at once
      kernels::onednn_gemm_run(pl->route_uq.plan, c.tc, ws.at<char>(pl->off_a2), d.Hcq, ws.at<char>(pl->off_q_all),
                               d.N * (d.D + d.Dr), ws.at<char>(pl->off_route_uq));
    lap(1, t);
    struct HeadCtx {
      const RunCtx* c;
    } hc{&c};
    parallel_items(d.N, pl->threads,
                   [](void* ctx, int64_t n, int thread) { head(*static_cast<HeadCtx*>(ctx)->c, n, thread); }, &hc);
    lap(2, t);
    scatter(c);
    lap(3, t);
  }
  if (profile)
    std::fprintf(stderr,
                 "%s: T=%lld N=%lld %s: oneDNN weight conversion %.0f us, x-projections %.0f us, token rows (and W_UQ_QR "
                 "on oneDNN) %.0f us, heads %.0f us, scatter %.0f us\n",
                 op, (long long)d.T, (long long)d.N, mla_prolog_scenario_name(pl->scenario), pack_us, phase[0],
                 phase[1], phase[2], phase[3]);
  if (profile)
    std::fprintf(stderr, "%s: heads (thread-summed): wuq gemm %.0f us, dequant %.0f us, wuk gemm %.0f us, epilogue %.0f us\n",
                 op, head_ns[0].load() / 1e3, head_ns[1].load() / 1e3, head_ns[2].load() / 1e3,
                 head_ns[3].load() / 1e3);
  return kSuccess;
}

Status mla_prolog_plan(const MlaPrologParams& p, OpPlan* plan) {
  MLAOPS_CHECK(plan != nullptr, kParamNullptr, "mla_prolog: plan: out-pointer is null");
  return mla_prolog_make_plan(p, MlaPrologCheckOptions{}, plan);
}

Status mla_prolog_workspace_size(const MlaPrologParams& p, uint64_t* workspace_size) {
  MLAOPS_CHECK(workspace_size != nullptr, kParamNullptr, "mla_prolog: workspace_size: out-pointer is null");
  return cpp_api_workspace_size(p, workspace_size, mla_prolog_plan);
}

Status mla_prolog(const MlaPrologParams& p, void* workspace, uint64_t workspace_size) {
  return cpp_api_one_shot(p, workspace, workspace_size, mla_prolog_plan, mla_prolog_run);
}

}  // namespace mlaops
