// MlaPreprocess phase 2 (docs/ops/mla_preprocess.md): binds the tensors to a plan
// (ops/mla_preprocess/mla_preprocess_plan.cpp), re-checks what may change between the phases (the call
// signature, the pointer rules, the slotMapping values in a read-only pre-pass, the workspace),
// then runs the plan's kernels per chunk of tokens:
//   1. per token: RmsNormQuant(input) -> a0 int8 (quantized path; the unquantized path feeds the
//      input itself to the GEMM)
//   2. a0 @ wdqkv^T                   transposed-NZ GEMM, parallel over 16-channel groups
//   3. per token: dequant -> m1 = [ckv | kpe | cq] in the input dtype; RmsNormQuant(cq) -> a1
//      (or RmsNorm + dtype rounding); kN = RmsNorm(ckv), kR = RoPE(kpe) -> cache rows staged
//   4. per head (parallel over heads): a1 @ wuq[head]^T -> dequant -> [qn | qp];
//      qn @ wuk[head] -> qNope (-> int8 * qNopeScale in cacheMode 2); RoPE(qp) -> qRope.
//      Decode chunks (plan.wuq_whole) run a1 @ wuq^T for all heads first, as one GEMM split
//      evenly over the threads (long runs of W in address order), and the heads start at dequant.
//   5. scatter the staged rows into the cache outputs (kvCacheOut / krCacheOut, placed by the input
//      caches' geometry) in token order (duplicates: last wins; -1 skips)
// Each weight is streamed once per chunk (one chunk for T <= 256 tokens). The element-wise
// stages (RmsNorm, quant, dequant, dtype conversions) run in fp32 as the vendor kernel does,
// through the row kernels of kernels/cpu/rows/mla_preprocess_rows.h (bit-identical on every ISA); the
// GEMMs are exact int32 (int8 path) or fp32-accumulated (dtype path, wuk).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/workspace.h"
#include "kernels/cpu/rows/mla_rows.h"
#include "mlaops/numeric.h"
#include "ops/common/cpp_api.h"
#include "ops/mla_preprocess/mla_preprocess.h"
#include "ops/common/mla_uk.h"

namespace mlaops {
namespace {

using kernels::GemmArgs;
using kernels::GemmTArgs;
using CacheMode = MlaPreprocessCacheMode;

inline float ld_dt(uint16_t v, bool fp16) { return fp16 ? fp16_to_float(v) : bf16_to_float(v); }

// Per-call constants, read once (the small parameter tensors), as fp32 values.
struct Consts {
  std::vector<float> gamma0, beta0, gamma1, beta1, gamma2;  // beta1 empty: none (the MLAPO op)
  std::vector<float> q_nope_scale;
  // deScale and bias per channel: the tensors' own values where they are FP32 / INT32 already
  // (no per-call copy: N * (D + Dr) values each at N = 128), else the converted copy.
  std::vector<float> ds0_v, ds1_v;
  const float *ds0 = nullptr, *ds1 = nullptr;
  const int32_t *bias0 = nullptr, *bias1 = nullptr;
  float qs0_inv = 0, qo0 = 0, qs1_inv = 0, qo1 = 0, ctkv_inv = 0;
};

std::vector<float> load_dt_vec(const TensorView& t, int64_t n, bool fp16) {
  std::vector<float> v(static_cast<size_t>(n));
  const uint16_t* p = t.ptr<const uint16_t>();
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = ld_dt(p[i], fp16);
  return v;
}

// deScale: INT64 holding fp32 bits in the low 32 bits (fp16 input; converted into `v`) or FP32
// (bf16 input; read in place).
const float* load_descale(const TensorView& t, int64_t n, std::vector<float>& v) {
  if (t.dtype != DType::kInt64) return t.ptr<const float>();
  v.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = static_cast<uint64_t>(t.ptr<const int64_t>()[i]);
    v[static_cast<size_t>(i)] = bits_float(static_cast<uint32_t>(bits & 0xffffffffu));
  }
  return v.data();
}

Consts load_consts(const MlaPreprocessParams& p, const MlaPreprocessPlan& pl) {
  const MlaPreprocessShape& d = pl.dims;
  const bool f = pl.fp16;
  Consts c;
  if (pl.first_norm) {  // the MLAPO op has no first-stage RmsNorm
    c.gamma0 = load_dt_vec(p.gamma0, d.He, f);
    c.beta0 = load_dt_vec(p.beta0, d.He, f);
  }
  c.gamma1 = load_dt_vec(p.gamma1, d.Hcq, f);
  if (p.beta1.dtype != DType::kUndefined) c.beta1 = load_dt_vec(p.beta1, d.Hcq, f);  // optional in the MLAPO op
  c.gamma2 = load_dt_vec(p.gamma2, d.Hckv, f);
  if (pl.quant) {
    c.ds0 = load_descale(*p.de_scale0, d.m1_cols, c.ds0_v);
    c.ds1 = load_descale(*p.de_scale1, d.m2_cols, c.ds1_v);
    if (!pl.per_token) {
      c.bias0 = p.bias0->ptr<const int32_t>();
      c.bias1 = p.bias1->ptr<const int32_t>();
      c.qs0_inv = 1.0f / ld_dt(p.quant_scale0->ptr<const uint16_t>()[0], f);  // the kernel multiplies by 1/qs
      c.qs1_inv = 1.0f / ld_dt(p.quant_scale1->ptr<const uint16_t>()[0], f);
      c.qo0 = p.quant_offset0->ptr<const int8_t>()[0];
      c.qo1 = p.quant_offset1->ptr<const int8_t>()[0];
    }
  }
  if (pl.cache_mode == CacheMode::kInt8NzCache) {
    c.ctkv_inv = 1.0f / ld_dt(p.ctkv_scale->ptr<const uint16_t>()[0], f);  // DIVIDE: 1 / ctkvScale
    c.q_nope_scale = load_dt_vec(*p.q_nope_scale, pl.q_nope_scale_n, f);
  }
  return c;
}

inline int64_t load_slot(const TensorView& s, int64_t t) {
  return s.dtype == DType::kInt32 ? static_cast<int64_t>(s.ptr<const int32_t>()[t]) : s.ptr<const int64_t>()[t];
}

struct RunCtx {
  const MlaPreprocessParams* p;
  const MlaPreprocessPlan* plan;
  const Consts* k;
  const kernels::MlaPreprocessRowKernels* rk;  // plan->rows
  WorkspaceArena* ws;
  int64_t t0 = 0, tc = 0;  // chunk start, chunk length
  std::atomic<int64_t>* head_ns = nullptr;  // MLAOPS_PROFILE: this call's sub-step times (4), summed over threads
};

// y = v / sqrt(sum(v^2)/n + eps) * gamma (+ beta), in fp32.
void rms_norm(const RunCtx& c, const float* v, const float* gamma, const float* beta, int64_t n, float* y) {
  const float ss = c.rk->sum_sq(v, n);
  const float r = std::sqrt(ss / static_cast<float>(n) + static_cast<float>(c.p->epsilon));
  c.rk->norm(v, r, gamma, beta, n, y);
}

// The activation quant of one fp32 row y: quantMode 0 q = quant(fp32(fp32(y * (1/qs)) + qo)), the
// kernel's two vector steps (Muls, then Adds), each rounded to fp32 (tmp holds the product; the
// row kernel's fused add of 1 * tmp + qo rounds once, as the kernel's Adds does); quantMode 1
// s = max|y|/127, q = quant(y * (1/s)), returns s (0 for an all-zero row, q = 0).
float quant_row(const RunCtx& c, const float* y, int64_t n, float qs_inv, float qo, float* tmp, int8_t* q) {
  if (!c.plan->per_token) {
    for (int64_t i = 0; i < n; ++i) tmp[i] = y[i] * qs_inv;
    c.rk->quant_f16(tmp, 1.0f, qo, n, q);
    return 1.0f;
  }
  const float m = c.plan->cv->absmax(y, n);
  if (!(m > 0.0f)) {
    std::memset(q, 0, static_cast<size_t>(n));
    return 0.0f;
  }
  const float s = m / 127.0f;
  c.rk->quant_f16(y, 1.0f / s, 0.0f, n, q);
  return s;
}

// RmsNormQuant of one row: y = RmsNorm(v) * gamma + beta, then quant_row (tmp may be v).
float rms_norm_quant(const RunCtx& c, const float* v, const float* gamma, const float* beta, int64_t n, float qs_inv,
                     float qo, float* y, float* tmp, int8_t* q) {
  rms_norm(c, v, gamma, beta, n, y);
  return quant_row(c, y, n, qs_inv, qo, tmp, q);
}

// The scratch of per-thread buffer `slot` (the plan's off_scratch): GEMM scratch and row vectors.
char* thread_scratch(const RunCtx& c, int slot) {
  return c.ws->at<char>(c.plan->off_thread + slot * c.plan->thread_bytes + c.plan->off_scratch);
}

// Runs fn(c, b, e, slot) over the chunk's tokens, parallel (slot: the per-thread buffer).
void for_rows(const RunCtx& c, void (*fn)(const RunCtx&, int64_t, int64_t, int)) {
  struct Ctx {
    const RunCtx* c;
    void (*fn)(const RunCtx&, int64_t, int64_t, int);
  } x{&c, fn};
  parallel_chunks(
      c.tc, kMlaPreprocessRowsMinChunk, c.plan->threads,
      [](void* v, int64_t b, int64_t e, int slot) {
        const Ctx& k = *static_cast<const Ctx*>(v);
        k.fn(*k.c, b, e, slot);
      },
      &x);
}

// Step 1 for tokens [b, e) of the chunk: a0 = RmsNormQuant(input[t]), or (the MLAPO op) the
// quant of input[t] itself.
void stage1_rows(const RunCtx& c, int64_t b, int64_t e, int slot) {
  const MlaPreprocessParams& p = *c.p;
  const MlaPreprocessPlan& pl = *c.plan;
  const int64_t He = pl.dims.He;
  float* const x = reinterpret_cast<float*>(thread_scratch(c, slot));  // [He], then y [He]
  float* const y = x + round_up(He * 4, kWorkspaceAlign) / 4;
  for (int64_t i = b; i < e; ++i) {
    c.rk->load_dt(p.input.ptr<const uint16_t>() + (c.t0 + i) * He, pl.fp16, x, He);
    int8_t* const a0 = c.ws->at<int8_t>(pl.off_a0) + i * He;
    c.ws->at<double>(pl.off_scale)[2 * i] =
        pl.first_norm
            ? rms_norm_quant(c, x, c.k->gamma0.data(), c.k->beta0.data(), He, c.k->qs0_inv, c.k->qo0, y, x, a0)
            : quant_row(c, x, He, c.k->qs0_inv, c.k->qo0, y, a0);
  }
}

// A transposed-NZ GEMM g over all of its g.N columns, parallel over 16-channel groups in
// contiguous ranges (each thread reads its tiles of every k panel in address order).
void t_gemm_all(const RunCtx& c, kernels::GemmTFn fn, const GemmTArgs& g) {
  auto range = [&](int64_t b, int64_t e, int slot) {
    GemmTArgs gi = g;
    gi.n_begin = b * 16;
    gi.n_end = std::min(e * 16, g.N);
    gi.scratch = thread_scratch(c, slot);
    fn(gi);
  };
  parallel_chunks(
      ceil_div(g.N, 16), 1, c.plan->threads,
      [](void* r, int64_t b, int64_t e, int slot) { (*static_cast<decltype(range)*>(r))(b, e, slot); }, &range);
}

// Step 2: acc1[tc, m1_cols] = A @ wdqkv^T (int32 or fp32), parallel over 16-channel groups.
void project_input(const RunCtx& c) {
  const MlaPreprocessParams& p = *c.p;
  const MlaPreprocessPlan& pl = *c.plan;
  const MlaPreprocessShape& d = pl.dims;
  GemmTArgs g;
  g.M = c.tc;
  g.N = d.m1_cols;
  g.K = d.He;
  g.A = pl.quant ? static_cast<const void*>(c.ws->at<int8_t>(pl.off_a0))
                 : static_cast<const void*>(p.input.ptr<const uint16_t>() + c.t0 * d.He);
  g.lda = d.He;
  g.W = p.wdqkv.data;
  g.r1 = pl.wdqkv_r1;
  g.C = c.ws->at<char>(pl.off_acc1);
  g.ldc = d.m1_cols;
  if (pl.route_x.onednn) {  // one product on oneDNN's threads
    kernels::onednn_gemm_run(pl.route_x.plan, c.tc, g.A, d.He, g.C, d.m1_cols, c.ws->at<char>(pl.off_route_x));
    return;
  }
  if (pl.quant) {  // a0's row sums, once for every group call
    int32_t* const sums = c.ws->at<int32_t>(pl.off_rowsum);
    pl.rowsum(c.ws->at<int8_t>(pl.off_a0), d.He, c.tc, d.He, sums);
    g.a_rowsum = sums;
  }
  t_gemm_all(c, pl.wdqkv_gemm, g);
}

// The A operand, weights and output of the wuq GEMM (columns set by the caller).
GemmTArgs wuq_args(const RunCtx& c) {
  const MlaPreprocessPlan& pl = *c.plan;
  const MlaPreprocessShape& d = pl.dims;
  GemmTArgs g;
  g.M = c.tc;
  g.N = d.m2_cols;
  g.K = d.Hcq;
  g.A = c.ws->at<char>(pl.off_a1);
  g.lda = d.Hcq;
  g.W = c.p->wuq.data;
  g.r1 = pl.wuq_r1;
  if (pl.quant) g.a_rowsum = c.ws->at<int32_t>(pl.off_rowsum) + pl.chunk;  // summed once per chunk (run)
  return g;
}

// Step 4a (plan.wuq_whole, decode): acc2[tc, m2_cols] = a1 @ wuq^T for all heads at once.
void project_wuq(const RunCtx& c) {
  GemmTArgs g = wuq_args(c);
  g.C = c.ws->at<char>(c.plan->off_acc2);
  g.ldc = c.plan->dims.m2_cols;
  if (c.plan->route_uq.onednn) {  // one product on oneDNN's threads
    kernels::onednn_gemm_run(c.plan->route_uq.plan, c.tc, g.A, g.lda, g.C, g.ldc, c.ws->at<char>(c.plan->off_route_uq));
    return;
  }
  t_gemm_all(c, c.plan->wuq_gemm, g);
}

// out = RoPE(v) with token t's cos / sin (Dr values), or v itself without RoPE (the MLAPO op
// without cos / sin: the values as computed, already in the dtype).
void rope_row(const RunCtx& c, const float* v, int64_t t, float* out) {
  const MlaPreprocessPlan& pl = *c.plan;
  const int64_t Dr = pl.dims.Dr;
  if (!pl.rope) {
    std::memcpy(out, v, static_cast<size_t>(Dr) * 4);
    return;
  }
  pl.cv->rope_half(v, c.p->cos.ptr<const uint16_t>() + t * Dr, c.p->sin.ptr<const uint16_t>() + t * Dr, pl.fp16, Dr, out);
}

// Step 3 for tokens [b, e) of the chunk.
void stage2_rows(const RunCtx& c, int64_t b, int64_t e, int slot) {
  const MlaPreprocessParams& p = *c.p;
  const MlaPreprocessPlan& pl = *c.plan;
  const MlaPreprocessShape& d = pl.dims;
  const Consts& k = *c.k;
  const kernels::MlaPreprocessRowKernels& rk = *c.rk;
  const bool f = pl.fp16;
  const CacheMode cm = pl.cache_mode;
  float* const y = reinterpret_cast<float*>(thread_scratch(c, slot));  // [max(Hcq, Hckv)], rope [Dr], tmp [Hcq]
  float* const rope = y + round_up(std::max(d.Hcq, d.Hckv) * 4, kWorkspaceAlign) / 4;
  float* const tmp = rope + round_up(d.Dr * 4, kWorkspaceAlign) / 4;
  const float* const beta1 = k.beta1.empty() ? nullptr : k.beta1.data();
  for (int64_t i = b; i < e; ++i) {
    const int64_t t = c.t0 + i;
    // m1 = dtype(dequant(acc1)), [ckv | kpe | cq], as fp32 values of the dtype
    float* m1 = c.ws->at<float>(pl.off_m1) + i * d.m1_cols;
    if (pl.quant) {
      rk.dequant(c.ws->at<int32_t>(pl.off_acc1) + i * d.m1_cols, pl.per_token ? nullptr : k.bias0,
                 k.ds0, static_cast<float>(c.ws->at<double>(pl.off_scale)[2 * i]), f, d.m1_cols, m1);
    } else {
      std::memcpy(m1, c.ws->at<float>(pl.off_acc1) + i * d.m1_cols, static_cast<size_t>(d.m1_cols) * 4);
      rk.round_dt(m1, f, d.m1_cols);
    }
    // a1: RmsNormQuant(cq) (int8) or dtype(RmsNorm(cq) * gamma1 + beta1)
    const float* cq = m1 + d.Hckv + d.Dr;
    if (pl.quant) {
      c.ws->at<double>(pl.off_scale)[2 * i + 1] = rms_norm_quant(
          c, cq, k.gamma1.data(), beta1, d.Hcq, k.qs1_inv, k.qo1, y, tmp, c.ws->at<int8_t>(pl.off_a1) + i * d.Hcq);
    } else {
      rms_norm(c, cq, k.gamma1.data(), beta1, d.Hcq, y);
      rk.store_dt(y, f, c.ws->at<uint16_t>(pl.off_a1) + i * d.Hcq, d.Hcq);
    }
    // qDownOut = dtype(RmsNorm(cq) * gamma1 + beta1) (y before the quant; the wuq operand without it)
    if (pl.q_down) rk.store_dt(y, f, p.q_down_out->ptr<uint16_t>() + t * d.Hcq, d.Hcq);
    // cache rows: kN = RmsNorm(ckv, gamma2), kR = RoPE(kpe)
    if (load_slot(p.slot_mapping, t) == -1) continue;
    rms_norm(c, m1, k.gamma2.data(), nullptr, d.Hckv, y);
    char* kv_row = c.ws->at<char>(pl.off_kv) + i * pl.kv.width * pl.kv.elem_size;
    if (cm == CacheMode::kInt8NzCache) {  // fp32 RmsNorm value / ctkvScale, through the fp16 double rounding
      rk.quant_f16(y, k.ctkv_inv, 0.0f, d.Hckv, reinterpret_cast<int8_t*>(kv_row));
    } else {
      rk.store_dt(y, f, reinterpret_cast<uint16_t*>(kv_row), d.Hckv);
    }
    rope_row(c, m1 + d.Hckv, t, rope);
    uint16_t* kr = cm == CacheMode::kKvCache ? reinterpret_cast<uint16_t*>(kv_row) + d.Hckv
                                             : c.ws->at<uint16_t>(pl.off_kr) + i * d.Dr;
    rk.store_dt(rope, f, kr, d.Dr);
  }
}

// Step 4 for head h, using the calling thread's buffers.
void head(const RunCtx& c, int64_t h, int thread) {
  const MlaPreprocessParams& p = *c.p;
  const MlaPreprocessPlan& pl = *c.plan;
  const MlaPreprocessShape& d = pl.dims;
  const Consts& k = *c.k;
  const kernels::MlaPreprocessRowKernels& rk = *c.rk;
  const bool f = pl.fp16;
  const CacheMode cm = pl.cache_mode;
  const int64_t hw = d.D + d.Dr;
  const int64_t col0 = h * hw;
  const int64_t lo = col0 / 16 * 16;
  const int64_t hi = std::min(round_up(col0 + hw, 16), d.m2_cols);
  char* tb = c.ws->at<char>(pl.off_thread + thread * pl.thread_bytes);
  // The head's wuq product, row i at q0 + i * qld: the whole GEMM's acc2 (wuq_whole), else this
  // thread's [tc, head_cols] buffer of wuq columns lo..hi-1.
  const int64_t q_bytes = pl.wuq_whole ? 0 : round_up(c.tc * pl.head_cols * 4, kWorkspaceAlign);
  float* const q0 = pl.wuq_whole ? c.ws->at<float>(pl.off_acc2) + col0
                                 : reinterpret_cast<float*>(tb) + (col0 - lo);
  const int64_t qld = pl.wuq_whole ? d.m2_cols : pl.head_cols;
  uint16_t* qn = reinterpret_cast<uint16_t*>(tb + q_bytes);  // [tc, D]
  float* qo = reinterpret_cast<float*>(reinterpret_cast<char*>(qn) + round_up(c.tc * d.D * 2, kWorkspaceAlign));
  auto t = c.head_ns != nullptr ? ProfileClock::now() : ProfileClock::time_point{};
  char* const scratch = thread_scratch(c, thread);  // the GEMMs' scratch, then rope [Dr]
  if (!pl.wuq_whole) {  // a1 @ wuq[lo:hi]^T (the kernel addresses C by absolute column)
    GemmTArgs g = wuq_args(c);
    g.C = reinterpret_cast<char*>(tb) - lo * 4;
    g.ldc = pl.head_cols;
    g.n_begin = lo;
    g.n_end = hi;
    g.scratch = scratch;
    pl.wuq_gemm(g);
  }
  profile_lap(c.head_ns, 0, t);
  const double* scale = c.ws->at<double>(pl.off_scale);
  for (int64_t i = 0; i < c.tc; ++i) {
    float* row = q0 + i * qld;
    if (!pl.quant) {
      rk.round_dt(row, f, hw);
    } else {  // in place: int32 in, fp32 values of the dtype out
      rk.dequant(reinterpret_cast<const int32_t*>(row), pl.per_token ? nullptr : k.bias1 + col0,
                 k.ds1 + col0, static_cast<float>(scale[2 * i + 1]), f, hw, row);
    }
    rk.store_dt(row, f, qn + i * d.D, d.D);
  }
  profile_lap(c.head_ns, 1, t);
  // qNope = qn @ wuk[h] (B [D, Hckv] in 16-column panels), then the epilogue, uk_rows tokens at
  // a time (ops/common/mla_uk.h).
  GemmArgs g3;
  mla_uk_operand(p.wuk.ptr<const uint16_t>() + h * pl.wuk_head_stride, !pl.wuk_nz, pl.wuk_panel_stride, d.D,
                 d.Hckv, c.tc, reinterpret_cast<char*>(qo) + round_up(pl.uk_rows * d.Hckv * 4, kWorkspaceAlign), &g3);
  g3.lda = d.D;
  g3.ldc = d.Hckv;
  g3.scratch = scratch;
  const int64_t q_width = cm == CacheMode::kKvCache ? d.Hckv + d.Dr : d.Hckv;
  float* const rope = reinterpret_cast<float*>(scratch + pl.head_gemm_scratch);
  mla_uk_blocks(pl.wuk_gemm, g3, qn, c.tc, pl.uk_rows, qo, [&](int64_t r0, int64_t m) {
    profile_lap(c.head_ns, 2, t);
    for (int64_t i = r0; i < r0 + m; ++i) {
      const int64_t tk = c.t0 + i, row_out = tk * d.N + h;
      const float* q = qo + (i - r0) * d.Hckv;
      if (cm == CacheMode::kInt8NzCache) {  // MULTIPLY by qNopeScale[h], round half to even, saturate
        const float s = k.q_nope_scale[static_cast<size_t>(pl.q_nope_scale_n == 1 ? 0 : h)];
        rk.scale_i8(q, s, f, d.Hckv, p.q_out.ptr<int8_t>() + row_out * q_width);
      } else {
        rk.store_dt(q, f, p.q_out.ptr<uint16_t>() + row_out * q_width, d.Hckv);
      }
      rope_row(c, q0 + i * qld + d.D, tk, rope);
      uint16_t* rope_out = cm == CacheMode::kKvCache ? p.q_out.ptr<uint16_t>() + row_out * q_width + d.Hckv
                                                     : p.q_rope_out->ptr<uint16_t>() + row_out * d.Dr;
      rk.store_dt(rope, f, rope_out, d.Dr);
    }
    profile_lap(c.head_ns, 3, t);
  });
}

// Element offset of (slot, j) in a cache.
inline int64_t cache_offset(const MlaPreprocessCacheGeom& g, int64_t block_size, int64_t slot, int64_t j) {
  const int64_t b = slot / block_size, o = slot % block_size;
  if (!g.nz) return b * g.block_stride + o * g.width + j;
  return b * g.block_stride + (j / g.c0) * block_size * g.c0 + o * g.c0 + (j % g.c0);
}

void scatter_rows(const MlaPreprocessCacheGeom& g, int64_t block_size, void* cache, const char* rows, int64_t i,
                  int64_t slot) {
  char* base = static_cast<char*>(cache);
  const char* src = rows + i * g.width * g.elem_size;
  if (!g.nz) {
    std::memcpy(base + cache_offset(g, block_size, slot, 0) * g.elem_size, src, static_cast<size_t>(g.width * g.elem_size));
    return;
  }
  for (int64_t j = 0; j < g.width; j += g.c0)  // one c0 chunk (32 bytes) per fractal row
    std::memcpy(base + cache_offset(g, block_size, slot, j) * g.elem_size, src + j * g.elem_size,
                static_cast<size_t>(g.c0 * g.elem_size));
}

// Step 5: staged rows into the cache outputs, tokens in order.
void scatter(const RunCtx& c) {
  const MlaPreprocessParams& p = *c.p;
  const MlaPreprocessPlan& pl = *c.plan;
  const int64_t bs = pl.dims.block_size;
  for (int64_t i = 0; i < c.tc; ++i) {
    const int64_t slot = load_slot(p.slot_mapping, c.t0 + i);
    if (slot == -1) continue;
    scatter_rows(pl.kv, bs, mla_preprocess_kv_out(p).data, c.ws->at<char>(pl.off_kv), i, slot);
    if (pl.cache_mode != CacheMode::kKvCache)
      scatter_rows(pl.kr, bs, mla_preprocess_kr_out(p)->data, c.ws->at<char>(pl.off_kr), i, slot);
  }
}

// MPP-19: the row of `slot` (the input cache's geometry) lies within the output's extent.
Status row_fits(const char* op, const char* name, const MlaPreprocessCacheGeom& g, int64_t block_size,
                const TensorView& out, int64_t t, int64_t slot) {
  int64_t span = 0;
  mla_preprocess_view_span(out, &span);  // checked in phase 1
  const int64_t end = cache_offset(g, block_size, slot, g.width - 1) + 1;
  MLAOPS_CHECK(end <= span, kParamInvalid,
               "%s: %s: MPP-19 the row of slotMapping[%lld] = %lld must lie within the output; allowed elements up to "
               "%lld, got a row ending at element %lld",
               op, name, (long long)t, (long long)slot, (long long)span, (long long)end);
  return kSuccess;
}

}  // namespace

Status mla_preprocess_run(const OpPlan& plan, const MlaPreprocessParams& params, void* workspace,
                          uint64_t workspace_size) {
  const MlaPreprocessParams p = mla_preprocess_unread_dropped(params);
  const MlaPreprocessPlan* pl = nullptr;
  MLAOPS_TRY(check::plan_state(plan, kMlaPreprocessOp, &pl));
  return mla_preprocess_execute(*pl, p, workspace, workspace_size);
}

Status mla_preprocess_execute(const MlaPreprocessPlan& plan, const MlaPreprocessParams& caller, void* workspace,
                              uint64_t workspace_size) {
  const MlaPreprocessPlan* const pl = &plan;
  const char* op = pl->options.op;
  MLAOPS_TRY(check::same_call(op, "MPP-18", pl->signature, mla_preprocess_signature(caller)));
  const MlaPreprocessShape& d = pl->dims;
  // MPP-05 / MPP-14, and the workspace bytes this run uses disjoint from every bound tensor
  MLAOPS_TRY(mla_preprocess_check_pointers(caller, op, workspace,
                                     d.T == 0 ? 0 : std::min<uint64_t>(pl->workspace_bytes, workspace_size)));
  if (d.T == 0) return kSuccess;  // no token: nothing computed, caches untouched
  // Strided inputs and index tensors (ops/common/auto_contiguous.h): copied into the workspace's front
  // before anything is read; everything below reads the copies (the slotMapping pre-pass included).
  MlaPreprocessParams p = caller;
  std::vector<TensorView> store;
  const std::vector<StageSlot> staged = mla_preprocess_stage_slots(&p, &store);
  if (!pl->stage.entries.empty()) MLAOPS_TRY(check::workspace_ok(op, pl->workspace_bytes, workspace, workspace_size));
  MLAOPS_TRY(stage_run(op, "MPP-05", staged, pl->stage, workspace, workspace_size));
  const uint64_t front = static_cast<uint64_t>(pl->stage.bytes);
  workspace = front == 0 ? workspace : static_cast<char*>(workspace) + front;
  workspace_size -= front;
  // MPP-17: every slotMapping value is checked before the first write (contents may change
  // between the two phases), and MPP-19 that its row fits the cache outputs. -1 skips the
  // token's cache writes in every mode.
  const int64_t slots = d.block_num * d.block_size;  // fits: checked in phase 1
  for (int64_t t = 0; t < d.T; ++t) {
    const int64_t s = load_slot(p.slot_mapping, t);
    MLAOPS_CHECK(s == -1 || (s >= 0 && s < slots), kParamInvalid,
                 "%s: slotMapping: MPP-17 slotMapping[%lld] out of range; allowed [0, %lld) (blockNum*blockSize) or -1 "
                 "(skip), got %lld",
                 op, (long long)t, (long long)slots, (long long)s);
    if (s == -1) continue;
    MLAOPS_TRY(row_fits(op, "kvCacheOut", pl->kv, d.block_size, mla_preprocess_kv_out(p), t, s));
    if (pl->cache_mode != CacheMode::kKvCache)
      MLAOPS_TRY(row_fits(op, "krCacheOut", pl->kr, d.block_size, *mla_preprocess_kr_out(p), t, s));
  }
  MLAOPS_TRY(check::workspace_ok(op, pl->workspace_bytes - front, workspace, workspace_size));
  WorkspaceArena ws(workspace, workspace_size);
  const Consts consts = load_consts(p, *pl);
  RunCtx c;
  c.p = &p;
  c.plan = pl;
  c.k = &consts;
  c.rk = pl->rows;
  c.ws = &ws;
  // MLAOPS_PROFILE=1 prints the time of each phase (and of the sub-steps of the heads, summed
  // over threads) to stderr.
  const bool profile = profile_enabled();
  std::atomic<int64_t> head_ns[4] = {0, 0, 0, 0};  // per call: concurrent calls keep their own
  c.head_ns = profile ? head_ns : nullptr;
  using clock = std::chrono::steady_clock;
  double phase[6] = {0, 0, 0, 0, 0, 0};
  auto lap = [&](int i, clock::time_point& t) {
    const auto now = clock::now();
    phase[i] += std::chrono::duration<double, std::micro>(now - t).count();
    t = now;
  };
  // the oneDNN routes' weights (W^T in NZ), converted once per call (kernels/cpu/gemm/gemm_onednn.h)
  const auto t_pack = clock::now();
  auto pack = [&](const GemmRoute& r, const void* data, int64_t r1, int64_t off) {
    if (!r.onednn) return;
    kernels::WeightSource w;
    w.transposed = true;
    w.data = data;
    w.r1 = r1;
    kernels::onednn_gemm_pack(r.plan, w, ws.at<char>(off));
  };
  pack(pl->route_x, p.wdqkv.data, pl->wdqkv_r1, pl->off_route_x);
  pack(pl->route_uq, p.wuq.data, pl->wuq_r1, pl->off_route_uq);
  const double pack_us = std::chrono::duration<double, std::micro>(clock::now() - t_pack).count();
  for (c.t0 = 0; c.t0 < d.T; c.t0 += pl->chunk) {
    c.tc = std::min(pl->chunk, d.T - c.t0);
    auto t = clock::now();
    if (pl->quant) for_rows(c, stage1_rows);
    lap(0, t);
    project_input(c);
    lap(1, t);
    for_rows(c, stage2_rows);
    if (pl->quant)  // the int8 a1 rows stage 2 wrote: their row sums serve every wuq call
      pl->rowsum(ws.at<int8_t>(pl->off_a1), d.Hcq, c.tc, d.Hcq, ws.at<int32_t>(pl->off_rowsum) + pl->chunk);
    lap(2, t);
    if (pl->wuq_whole) project_wuq(c);
    lap(3, t);
    struct HeadCtx {
      const RunCtx* c;
    } hc{&c};
    parallel_items(d.N, pl->threads,
                   [](void* ctx, int64_t n, int thread) { head(*static_cast<HeadCtx*>(ctx)->c, n, thread); }, &hc);
    lap(4, t);
    scatter(c);
    lap(5, t);
  }
  if (profile)
    std::fprintf(stderr,
                 "%s: T=%lld N=%lld He=%lld cacheMode=%d quantMode=%d: oneDNN weight conversion %.0f us, rmsnormquant "
                 "%.0f us, wdqkv %.0f us, token rows %.0f us, wuq (all heads) %.0f us, heads %.0f us, scatter %.0f us\n",
                 op, (long long)d.T, (long long)d.N, (long long)d.He, static_cast<int>(pl->cache_mode),
                 pl->per_token ? 1 : 0, pack_us, phase[0], phase[1], phase[2], phase[3], phase[4], phase[5]);
  if (profile)
    std::fprintf(stderr, "%s: heads (thread-summed): wuq gemm %.0f us, dequant %.0f us, wuk gemm %.0f us, epilogue %.0f us\n",
                 op, head_ns[0].load() / 1e3, head_ns[1].load() / 1e3, head_ns[2].load() / 1e3,
                 head_ns[3].load() / 1e3);
  return kSuccess;
}

Status mla_preprocess_plan(const MlaPreprocessParams& p, OpPlan* plan) {
  MLAOPS_CHECK(plan != nullptr, kParamNullptr, "mla_preprocess: plan: out-pointer is null");
  return mla_preprocess_make_plan(p, MlaPreprocessCheckOptions{}, plan);
}

Status mla_preprocess_workspace_size(const MlaPreprocessParams& p, uint64_t* workspace_size) {
  MLAOPS_CHECK(workspace_size != nullptr, kParamNullptr, "mla_preprocess: workspace_size: out-pointer is null");
  return cpp_api_workspace_size(p, workspace_size, mla_preprocess_plan);
}

Status mla_preprocess(const MlaPreprocessParams& p, void* workspace, uint64_t workspace_size) {
  return cpp_api_one_shot(p, workspace, workspace_size, mla_preprocess_plan, mla_preprocess_run);
}

}  // namespace mlaops
