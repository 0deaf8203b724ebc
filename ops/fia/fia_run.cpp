// FusedInferAttentionScoreV4 phase 2 (docs/ops/fused_infer_attention_score.md) and the C++ API:
//   1. read-only pre-pass: every block id a batch uses (blockTable[b][0 .. ceil(actKV[b]/blockSize)))
//      must lie in [0, blockNum) (FIA-13); left padding values read now (other
//      values than the planned ones: the planned work with the windows moved, FIA-40,
//      ops/fia/fia_left_padding.h); workspace size (FIA-20) — only then the first write
//   2. padded query rows (non-packed layouts, rows outside [q_start, q_start + actQ[b])): output 0, lse +inf
//   3. the plan's path (ops/fia/fia_paths.h) runs: its tasks in parallel, each on its kernel row
//      (kernels/cpu/attention/attn.h), once per KV split; INT8 key / value through the KV antiquant
//      path (ops/fia/fia_antiquant.h)
//   4. KV splits (flash-decoding): the combine step merges the partials (kernels/cpu/attention/attn_combine.h)
// Nothing is decided here: the plan (fia_plan.cpp) holds every choice.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "kernels/cpu/attention/attn_combine.h"
#include "kernels/cpu/attention/attn.h"
#include "mlaops/numeric.h"
#include "mlaops/plan.h"
#include "ops/common/cpp_api.h"
#include "ops/fia/fia_full_quant.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

struct RunCtx;

// A task's (or prefix unit's) items on their attention row: in place, or through the KV antiquant
// path (b, h: the batch and KV head of the first item; prefix: the items read the shared prefix).
using TaskFn = void (*)(const RunCtx& c, const kernels::AttnRow& row, bool dequant, int64_t b, int64_t h,
                        kernels::FlashItem* items, int64_t n, bool prefix, int thread);

struct RunCtx {
  const FiaParams* p;
  const FiaPlan* plan;
  FiaAntiquantChannels aq_ch;       // KV antiquant: per-channel scales / offsets as floats
  const float* sink = nullptr;  // [N] sink logits as floats
  const float* pq = nullptr;    // [2, N, V_D] post-quant scale / offset (FP16-rounded floats)
  FiaFullQuantScales fq;               // INT8 full quantisation: the scales (ops/fia/fia_full_quant.h)
  WorkspaceArena* ws;
  TaskFn task = nullptr;        // task_attn, or task_aq for INT8 / INT4 key / value
};

// The item's rows, KV sources, mask, bias, sink and output pointers.
kernels::FlashItem make_item(const RunCtx& c, const FiaPlan::Item& w) {
  const FiaParams& p = *c.p;
  const FiaPlan& P = *c.plan;
  const size_t b = static_cast<size_t>(w.b);
  const int64_t s0 = P.q_start[b] + w.r0;  // first query token of the item (absolute for packed)
  const int64_t n0 = w.h * P.G;            // first query head
  kernels::FlashItem it;
  if (!P.full_quant) it.q = p.query.ptr<const uint16_t>() + w.b * P.q.b + n0 * P.q.n + s0 * P.q.s;
  it.q_n_stride = P.q.n;
  it.q_s_stride = P.q.s;
  if (P.rope) {
    it.qr = p.query_rope->ptr<const uint16_t>() + w.b * P.qr.b + n0 * P.qr.n + s0 * P.qr.s;
    it.qr_n_stride = P.qr.n;
    it.qr_s_stride = P.qr.s;
  }
  it.G = P.G;
  it.R = w.rows;
  it.QD = P.QD;
  it.DR = P.DR;
  it.VD = P.VD;
  it.fp16 = P.fp16;
  it.fp16_softmax = P.ip.fp16_softmax;  // innerPrecise bit 0 (ops/fia/fia_inner_precise.h)
  auto kv = [&](const TensorView& t, const FiaKvStrides& st) {
    int64_t off;
    kernels::FlashKv k = fia_kv_rows(p, P, st, w.b, w.h, &off);
    k.base = t.ptr<const uint16_t>() + off;
    return k;
  };
  if (!P.full_quant) {  // full quantisation reads its INT8 rows itself
    it.k = kv(fia_kv_of(p.key, P.tl, w.b), P.k);  // tensor lists: batch b's element
    it.v = kv(fia_kv_of(p.value, P.tl, w.b), P.v);
  }
  if (P.rope) it.kr = kv(*p.key_rope, P.kr);
  it.kv_begin = 0;
  it.kv_end = P.act_kv[b];
  it.scale = static_cast<float>(p.scale_value);
  it.row0 = w.r0;
  fia_row_deltas(P, w.b, &it.lo_delta, &it.hi_delta);
  if (P.explicit_mask) {
    it.mask = p.atten_mask->ptr<const uint8_t>() + w.b * P.mask_b;
    if (P.lp.on) it.mask += P.q_start[b] * P.mask_i + P.kv_start[b] * P.mask_j;  // padded coordinates
    it.mask_i_stride = P.mask_i;
    it.mask_j_stride = P.mask_j;
    if (P.tree) {
      int64_t off;
      fia_tree_rows(P, w.b, &off, &it.mask_i_stride, &it.mask_j0);
      it.mask = p.atten_mask->ptr<const uint8_t>() + off;
    }
  }
  if (P.pse) {
    it.bias = p.pse_shift->ptr<const uint16_t>() + w.b * P.pse_b + n0 * P.pse_n;
    if (P.lp.on) it.bias += P.q_start[b] * P.pse_i + P.kv_start[b];  // padded coordinates
    it.bias_n_stride = P.pse_n;
    it.bias_i_stride = P.pse_i;
  }
  if (P.sink) it.sink = c.sink + n0;
  if (P.post_quant) {
    it.pq_scale = c.pq + n0 * P.VD;
    it.pq_offset = c.pq + (P.N + n0) * P.VD;
  }
  fia_item_out(p, P, w.b, n0, s0, &it);
  return it;
}

// The item of work index `index` (item * splits + split) with its KV split range and partials;
// *prefix (nullable): whether the split reads the shared prefix (ops/fia/fia_prefix.h).
kernels::FlashItem item_at(const RunCtx& c, int64_t index, bool* prefix = nullptr) {
  const FiaPlan& P = *c.plan;
  const int64_t item = index / P.splits, split = index % P.splits;
  const FiaPlan::Item& w = P.items[static_cast<size_t>(item)];
  kernels::FlashItem it = make_item(c, w);
  bool pre = false;
  if (P.pgroup)  // the prefix work range: the item covers the batch's own rows only
    fia_prefix_own_shift(P, &it);
  else if (P.prefix.on)
    pre = fia_prefix_range(*c.p, P, w.b, w.h, split, P.splits, P.tile, &it);
  if (prefix != nullptr) *prefix = pre;
  if (P.splits > 1 || P.pgroup) {
    if (!P.prefix.on || P.pgroup) {
      const int64_t s2 = it.kv_end;
      const int64_t chunk = round_up(ceil_div(std::max<int64_t>(s2, 1), P.splits), P.tile);
      it.kv_begin = std::min(s2, split * chunk);
      it.kv_end = std::min(s2, it.kv_begin + chunk);
    }
    const int64_t per = P.partial_o_floats + 2 * P.partial_ml_floats;
    float* base = c.ws->at<float>(P.off_partial) + index * per;
    it.partial_o = base;
    it.partial_m = base + P.partial_o_floats;
    it.partial_l = base + P.partial_o_floats + P.partial_ml_floats;
  }
  return it;
}

void task_attn(const RunCtx& c, const kernels::AttnRow& row, bool /*dequant*/, int64_t /*b*/, int64_t /*h*/,
               kernels::FlashItem* items, int64_t n, bool /*prefix*/, int thread) {
  const FiaPlan& P = *c.plan;
  kernels::attn_run(row, P.panel, P.shape, items, n, c.ws->at<char>(P.off_thread + thread * P.thread_bytes));
}

// INT8 / INT4 key / value (ops/fia/fia_antiquant.h).
void task_aq(const RunCtx& c, const kernels::AttnRow& row, bool dequant, int64_t b, int64_t h,
             kernels::FlashItem* items, int64_t n, bool prefix, int thread) {
  const FiaPlan& P = *c.plan;
  const FiaAntiquantRun k{&row, dequant, c.ws->at<char>(P.off_thread + thread * P.thread_bytes),
                   c.ws->at<char>(P.off_aq_thread + thread * P.aq_thread_bytes), prefix};
  fia_antiquant_run_task(*c.p, P, c.aq_ch, b, h, items, n, k);
}

// Task t of the plan for KV split s (index = t * splits + s).
void run_task(void* ctx, int64_t index, int thread) {
  const RunCtx& c = *static_cast<const RunCtx*>(ctx);
  const FiaPlan& P = *c.plan;
  const FiaPlan::Task& t = P.tasks[static_cast<size_t>(index / P.splits)];
  const int64_t split = index % P.splits;
  kernels::FlashItem items[16];
  bool prefix = false;  // the items of a task share the split's source
  for (int64_t i = 0; i < t.n; ++i) items[i] = item_at(c, (t.first + i) * P.splits + split, &prefix);
  const FiaPlan::Item& w = P.items[static_cast<size_t>(t.first)];
  c.task(c, kernels::attn_family().value(t.row), t.dequant, w.b, w.h, items, t.n, prefix, thread);
}

// INT8 full quantisation: item `index` (one per task, no KV splits; ops/fia/fia_full_quant.h).
void run_full_quant_item(void* ctx, int64_t index, int thread) {
  const RunCtx& c = *static_cast<const RunCtx*>(ctx);
  const FiaPlan& P = *c.plan;
  fia_full_quant_run_item(*c.p, P, index, make_item(c, P.items[static_cast<size_t>(index)]), c.fq,
                  c.ws->at<char>(P.off_thread + thread * P.thread_bytes));
}

void merge_item(void* ctx, int64_t item, int /*thread*/) {
  const RunCtx& c = *static_cast<const RunCtx*>(ctx);
  const FiaPlan& P = *c.plan;
  const kernels::FlashItem it = make_item(c, P.items[static_cast<size_t>(item)]);
  const int64_t per = P.partial_o_floats + 2 * P.partial_ml_floats;
  float* base = c.ws->at<float>(P.off_partial) + item * P.splits * per;
  kernels::attn_merge_splits(it, P.splits, base, base + P.partial_o_floats, base + P.partial_o_floats + P.partial_ml_floats,
                             per, per);
}

void merge_pgroup(void* ctx, int64_t item, int thread);

// The prefix work range: one of the (unit chunk, task split) that read KV head h is done; the
// last one merges the head's items (its partials and the others' are visible: acq_rel).
void pgroup_done(const RunCtx& c, int64_t h, int thread) {
  const FiaPlan& P = *c.plan;
  std::atomic_ref<int64_t> left(c.ws->at<int64_t>(P.off_pcount)[h]);
  if (left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  for (int64_t k = P.hat[static_cast<size_t>(h)]; k < P.hat[static_cast<size_t>(h + 1)]; ++k)
    merge_pgroup(const_cast<RunCtx*>(&c), P.hitems[static_cast<size_t>(k)], thread);
}

// The prefix work range (ops/fia/fia_prefix.h): index < units x psplits runs a unit's prefix chunk,
// the rest the tasks' KV splits (own rows only); every one writes partial states, and the last
// of a KV head merges its items (pgroup_done): one parallel region, no barrier in between.
void run_pgroup(void* ctx, int64_t index, int thread) {
  const RunCtx& c = *static_cast<const RunCtx*>(ctx);
  const FiaPlan& P = *c.plan;
  const int64_t nu = static_cast<int64_t>(P.punits.size()) * P.psplits;
  if (index >= nu) {
    run_task(ctx, index - nu, thread);
    const FiaPlan::Task& t = P.tasks[static_cast<size_t>((index - nu) / P.splits)];
    for (int64_t i = t.first; i < t.first + t.n; ++i) pgroup_done(c, P.items[static_cast<size_t>(i)].h, thread);
    return;
  }
  const FiaPlan::PUnit& u = P.punits[static_cast<size_t>(index / P.psplits)];
  kernels::FlashItem it = fia_prefix_unit_item(*c.p, P, index, c.ws->at<float>(P.off_ppartial) + index * P.pp_per);
  // KV antiquant: channel parameters only, the batch index is not read
  c.task(c, kernels::attn_family().value(u.row), u.dequant, 0, u.h, &it, 1, true, thread);
  pgroup_done(c, u.h, thread);
}

// The prefix work range: item `item`'s own splits and the units' rows of it, merged and finished.
void merge_pgroup(void* ctx, int64_t item, int thread) {
  const RunCtx& c = *static_cast<const RunCtx*>(ctx);
  const FiaPlan& P = *c.plan;
  const FiaPlan::Item& w = P.items[static_cast<size_t>(item)];
  const kernels::FlashItem it = make_item(c, w);
  const int64_t per = P.partial_o_floats + 2 * P.partial_ml_floats;
  fia_prefix_merge(P, it, w.b, w.h, w.r0, w.rows, c.ws->at<float>(P.off_partial) + item * P.splits * per, per,
                   c.ws->at<float>(P.off_ppartial), c.ws->at<float>(P.off_thread + thread * P.thread_bytes));
}

// Shared prefix with one split per source (ops/fia/fia_prefix.h): task t runs its prefix split, its
// own split and the merge, so that a call has one parallel region.
void run_task_prefix(void* ctx, int64_t t, int thread) {
  const RunCtx& c = *static_cast<const RunCtx*>(ctx);
  const FiaPlan::Task& task = c.plan->tasks[static_cast<size_t>(t)];
  run_task(ctx, t * 2, thread);
  run_task(ctx, t * 2 + 1, thread);
  for (int64_t i = 0; i < task.n; ++i) merge_item(ctx, task.first + i, thread);
}

void fill_all(const TensorView& t, float v, bool half_fp16) {
  const int64_t n = t.numel();
  if (t.dtype == DType::kFloat32) {
    float* d = t.ptr<float>();
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  } else {
    const uint16_t bits = half_fp16 ? float_to_fp16(v) : float_to_bf16(v);
    uint16_t* d = t.ptr<uint16_t>();
    for (int64_t i = 0; i < n; ++i) d[i] = bits;
  }
}

// Element e of a post-quant scale / offset (FP32 or BF16, dense: FIA-17), rounded to FP16.
float post_quant_param(const TensorView& t, int64_t e) {
  return round_fp16(t.dtype == DType::kFloat32 ? t.ptr<const float>()[e] : bf16_to_float(t.ptr<const uint16_t>()[e]));
}

// Post-quant scale then offset of every output channel (n, d) as FP16-rounded floats [2, N, VD]
// (per tensor: the one value repeated; offset absent: 0), once per run.
void post_quant_floats(const FiaParams& p, const FiaPlan& P, float* out) {
  const int64_t NV = P.N * P.VD;
  const TensorView* ts[2] = {p.quant_scale2, p.quant_offset2};
  for (int k = 0; k < 2; ++k) {
    float* o = out + k * NV;
    const TensorView* t = ts[k];
    if (t == nullptr) {
      std::fill(o, o + NV, 0.0f);
      continue;
    }
    for (int64_t i = 0; i < NV; ++i) o[i] = post_quant_param(*t, P.pq_channel ? i : 0);
  }
}

// Empty key / value with post-quant: every element of the (dense) output is its channel's
// quantised 0. Channel (n, d): d the last index (BSH: modulo V_D), n the index of the output
// layout's N dimension.
void write_empty_post_quant(const FiaParams& p, const FiaPlan& P) {
  const TensorView& out = p.attention_out;
  const FiaLayout ol = P.out_l;
  int64_t inner = P.VD;  // elements after the N index (BSH, BSND: V_D)
  if (ol == FiaLayout::kBNSD) inner = out.dims[2] * out.dims[3];
  if (ol == FiaLayout::kNBSD) inner = out.dims[1] * out.dims[2] * out.dims[3];
  int8_t* dst = out.ptr<int8_t>();
  const int64_t total = out.numel();
  for (int64_t i = 0; i < total; ++i) {
    const int64_t e = P.pq_channel ? (i / inner) % P.N * P.VD + i % P.VD : 0;
    const float of = p.quant_offset2 != nullptr ? post_quant_param(*p.quant_offset2, e) : 0.0f;
    dst[i] = kernels::attn_post_quant(0.0f, post_quant_param(*p.quant_scale2, e), of);
  }
}

// The sink logits as floats (BF16 / FP16, exact).
void sink_floats(const TensorView& t, int64_t N, float* out) {
  const uint16_t* s = t.ptr<const uint16_t>();
  for (int64_t n = 0; n < N; ++n) out[n] = t.dtype == DType::kFloat16 ? fp16_to_float(s[n]) : bf16_to_float(s[n]);
}

struct FiaPlanState : detail::PlanState {
  FiaPlan plan;
  std::string explain() const override { return fia_explain(plan); }
};

constexpr const char* kCppOp = "fused_infer_attention_score_v4";

}  // namespace

void fia_item_out(const FiaParams& p, const FiaPlan& P, int64_t b, int64_t n0, int64_t s0, kernels::FlashItem* it) {
  if (P.post_quant)
    it->out8 = p.attention_out.ptr<int8_t>() + b * P.out.b + n0 * P.out.n + s0 * P.out.s;
  else
    it->out = p.attention_out.ptr<uint16_t>() + b * P.out.b + n0 * P.out.n + s0 * P.out.s;
  it->out_n_stride = P.out.n;
  it->out_s_stride = P.out.s;
  if (P.lse) {
    it->lse = p.softmax_lse->ptr<float>() + b * P.lse_st.b + n0 * P.lse_st.n + s0 * P.lse_st.s;
    it->lse_n_stride = P.lse_st.n;
    it->lse_s_stride = P.lse_st.s;
  }
}

kernels::FlashItem fia_item(const FiaParams& p, const FiaPlan& P, const FiaPlan::Item& w, const float* sink,
                            const float* pq) {
  RunCtx c;
  c.p = &p;
  c.plan = &P;
  c.sink = sink;
  c.pq = pq;
  c.ws = nullptr;
  return make_item(c, w);
}

kernels::FlashKv fia_kv_rows(const FiaParams& p, const FiaCall& c, const FiaKvStrides& st, int64_t b, int64_t h,
                             int64_t* base_offset) {
  kernels::FlashKv k;
  k.c0 = st.c0;
  k.c0_stride = st.c0_stride;
  k.slot_stride = st.slot;
  if (c.paged) {
    *base_offset = h * st.h;
    k.block_ids = p.block_table->ptr<const int32_t>() + b * c.bt_row_stride;
    k.block_size = c.block_size;
    k.blk_stride = st.blk;
  } else {
    const int64_t hs = fia_tensor_list_head_stride(c.tl, st.h, st.slot, b);  // tensor lists (BNSD): S_b x slot
    *base_offset = b * st.b + h * hs + c.kv_start[static_cast<size_t>(b)] * st.slot;
  }
  return k;
}

namespace {

// The windows placed: the workspace (FIA-20), the post-quant floats, the padded query rows, then
// the plan's path (ops/fia/fia_paths.h).
Status run_placed(const FiaParams& p, const FiaPlan& P, void* workspace, uint64_t workspace_size, const char* op) {
  MLAOPS_CHECK(workspace_size >= static_cast<uint64_t>(P.workspace_bytes), kParamInvalid,
               "%s: workspaceSize: FIA-20 value; allowed >= %lld, got %llu", op, (long long)P.workspace_bytes,
               (unsigned long long)workspace_size);
  MLAOPS_CHECK(P.workspace_bytes == 0 || workspace != nullptr, kParamNullptr,
               "%s: workspace: FIA-20 null, but %lld bytes are needed", op, (long long)P.workspace_bytes);

  // Post-quant scale / offset (read once per run; the tensors' contents may change between runs).
  const float* pq = nullptr;
  if (P.post_quant) {
    float* f = static_cast<float*>(static_cast<void*>(static_cast<char*>(workspace) + P.off_pq));
    post_quant_floats(p, P, f);
    pq = f;
  }
  // Padded query rows of non-packed layouts (before and after the window [q_start, q_start + actQ)):
  // 0 / +inf (post-quant: x = 0 quantised).
  if (!P.packed) {
    for (int64_t k = 0; k < 2 * P.B; ++k) {  // k = 2b: the rows after batch b's window, 2b + 1: before
      const int64_t b = k / 2, q0 = P.q_start[static_cast<size_t>(b)], q1 = q0 + P.act_q[static_cast<size_t>(b)];
      const int64_t s1 = k % 2 == 0 ? q1 : 0, rows = k % 2 == 0 ? P.QS - q1 : q0;
      if (rows <= 0) continue;
      kernels::FlashItem e;
      e.G = P.N;
      e.R = rows;
      e.VD = P.VD;
      if (P.post_quant) {
        e.out8 = p.attention_out.ptr<int8_t>() + b * P.out.b + s1 * P.out.s;
        e.pq_scale = pq;
        e.pq_offset = pq + P.N * P.VD;
      } else {
        e.out = p.attention_out.ptr<uint16_t>() + b * P.out.b + s1 * P.out.s;
      }
      e.out_n_stride = P.out.n;
      e.out_s_stride = P.out.s;
      if (P.lse) {
        e.lse = p.softmax_lse->ptr<float>() + b * P.lse_st.b + s1 * P.lse_st.s;
        e.lse_n_stride = P.lse_st.n;
        e.lse_s_stride = P.lse_st.s;
      }
      kernels::attn_write_empty(e);
    }
  }
  if (P.items.empty()) return kSuccess;
  return fia_path(P.path).run(FiaRunArgs{&p, &P, workspace, workspace_size, pq});
}

// Phase 2 on dense inputs (fia_run has copied the strided ones into the workspace's front).
Status run_dense(const FiaParams& p, const FiaPlan& P, void* workspace, uint64_t workspace_size, const char* op) {
  const float inf = std::numeric_limits<float>::infinity();
  if (P.empty_kv) {
    if (P.post_quant)
      write_empty_post_quant(p, P);
    else
      fill_all(p.attention_out, 0.0f, P.fp16);
    if (P.lse) fill_all(*p.softmax_lse, inf, false);
    return kSuccess;
  }
  // FIA-13: block ids of every block each batch uses (contents may have changed since phase 1).
  if (P.paged) {
    const int32_t* bt = p.block_table->ptr<const int32_t>();
    for (int64_t b = 0; b < P.B; ++b) {
      const int64_t nblk = ceil_div(P.act_kv[static_cast<size_t>(b)], P.block_size);
      for (int64_t k = 0; k < nblk; ++k) {
        const int64_t id = bt[b * P.bt_row_stride + k];
        MLAOPS_CHECK(id >= 0 && id < P.block_num, kParamInvalid,
                     "%s: blockTableOptional: FIA-13 blockTable[%lld][%lld] out of range; allowed [0, %lld) (blockNum), "
                     "got %lld",
                     op, (long long)b, (long long)k, (long long)P.block_num, (long long)id);
      }
    }
  }
  // Left padding: the values present now; other values than the planned ones: the planned work
  // with the windows moved (ops/fia/fia_left_padding.h).
  std::unique_ptr<FiaPlan> moved;
  MLAOPS_TRY(fia_left_padding_run_windows(p, P, op, &moved));
  return run_placed(p, moved != nullptr ? *moved : P, workspace, workspace_size, op);
}

// The run of an attention path: the tensors, the per-run floats (KV antiquant channel
// parameters, sink logits) and the task function of the plan's key / value form.
RunCtx run_ctx(const FiaRunArgs& a, WorkspaceArena* ws) {
  const FiaParams& p = *a.p;
  const FiaPlan& P = *a.plan;
  RunCtx c;
  c.p = &p;
  c.plan = &P;
  c.ws = ws;
  c.pq = a.pq;
  c.task = P.aq.on ? task_aq : task_attn;
  if (P.aq.on) c.aq_ch = fia_antiquant_channels(p, P.aq, P.KVN, P.QD, P.VD, ws->at<float>(P.off_aq_ch));
  if (P.sink) {
    sink_floats(*p.learnable_sink, P.N, ws->at<float>(P.off_sink));
    c.sink = ws->at<float>(P.off_sink);
  }
  return c;
}

}  // namespace

Status fia_run_attention(const FiaRunArgs& a) {
  const FiaPlan& P = *a.plan;
  WorkspaceArena ws(a.workspace, a.workspace_size);
  RunCtx c = run_ctx(a, &ws);
  parallel_items(static_cast<int64_t>(P.tasks.size()) * P.splits, P.threads, run_task, &c);
  if (P.splits > 1) parallel_items(static_cast<int64_t>(P.items.size()), P.threads, merge_item, &c);
  fia_legacy_rows_run(*a.p, P, a.workspace, a.pq);  // innerPrecise bit 1 == 0 (ops/fia/fia_inner_precise.h)
  return kSuccess;
}

Status fia_run_prefix_pair(const FiaRunArgs& a) {
  const FiaPlan& P = *a.plan;
  WorkspaceArena ws(a.workspace, a.workspace_size);
  RunCtx c = run_ctx(a, &ws);
  parallel_items(static_cast<int64_t>(P.tasks.size()), P.threads, run_task_prefix, &c);
  return kSuccess;
}

Status fia_run_prefix_group(const FiaRunArgs& a) {
  const FiaPlan& P = *a.plan;
  WorkspaceArena ws(a.workspace, a.workspace_size);
  RunCtx c = run_ctx(a, &ws);
  std::copy(P.pcount.begin(), P.pcount.end(), ws.at<int64_t>(P.off_pcount));
  const int64_t n = static_cast<int64_t>(P.punits.size()) * P.psplits + static_cast<int64_t>(P.tasks.size()) * P.splits;
  parallel_items(n, P.threads, run_pgroup, &c);
  return kSuccess;
}

Status fia_run_full_quant(const FiaRunArgs& a) {
  const FiaPlan& P = *a.plan;
  WorkspaceArena ws(a.workspace, a.workspace_size);
  RunCtx c = run_ctx(a, &ws);
  c.fq = fia_full_quant_scales(*a.p);
  parallel_items(static_cast<int64_t>(P.items.size()), P.threads, run_full_quant_item, &c);
  return kSuccess;
}

Status fia_run(const FiaParams& caller, const FiaPlan& P, void* workspace, uint64_t workspace_size, const char* op) {
  if (P.noop) return kSuccess;
  const int64_t needed = fia_workspace_bytes(P);
  if (!P.stage.entries.empty()) {  // the copies come first: the workspace's size before anything
    MLAOPS_CHECK(workspace_size >= static_cast<uint64_t>(needed), kParamInvalid,
                 "%s: workspaceSize: FIA-20 value; allowed >= %lld, got %llu", op, (long long)needed,
                 (unsigned long long)workspace_size);
    MLAOPS_CHECK(workspace != nullptr, kParamNullptr, "%s: workspace: FIA-20 null, but %lld bytes are needed", op,
                 (long long)needed);
  }
  // FIA-18: the bytes this run uses overlap no bound tensor, before any write
  MLAOPS_TRY(fia_check_workspace(caller, workspace, std::min<int64_t>(needed, static_cast<int64_t>(std::min<uint64_t>(
                                                                                  workspace_size, INT64_MAX))),
                                 op));
  // Strided inputs and index tensors (ops/common/auto_contiguous.h): copied into the workspace's front
  // before anything is read; the run then reads the copies (and checks their contents, e.g. a
  // block table's ids, on the copy it uses).
  FiaParams p = caller;
  std::vector<TensorView> store;
  const std::vector<StageSlot> slots = fia_stage_slots(&p, P.stage_set, &store);
  MLAOPS_TRY(stage_run(op, "FIA-17", slots, P.stage, workspace, workspace_size));
  const uint64_t front = static_cast<uint64_t>(P.stage.bytes);
  return run_dense(p, P, front == 0 ? workspace : static_cast<char*>(workspace) + front, workspace_size - front, op);
}

// ------------------------------------------------------------------------------------------
// C++ API (include/mlaops/fused_infer_attention_score.h).
// ------------------------------------------------------------------------------------------

Status fused_infer_attention_score_v4_plan(const FiaParams& p, OpPlan* plan) {
  MLAOPS_CHECK(plan != nullptr, kParamNullptr, "%s: plan: FIA-01 out-pointer is null", kCppOp);
  *plan = OpPlan();
  auto st = std::make_unique<FiaPlanState>();
  FiaCall call;
  MLAOPS_TRY(fia_check(p, FiaCheckOptions{}, &call));
  MLAOPS_TRY(fia_check_pointers(p, call, kCppOp));
  MLAOPS_TRY(fia_plan(call, kCppOp, &st->plan));
  st->op = kCppOp;
  st->workspace_bytes = static_cast<uint64_t>(fia_workspace_bytes(st->plan));
  st->signature = fia_signature(p);
  verbose_plan(*st);
  *plan = OpPlan(std::move(st));
  return kSuccess;
}

Status fused_infer_attention_score_v4_run(const OpPlan& plan, const FiaParams& p, void* workspace,
                                          uint64_t workspace_size) {
  const auto* st = dynamic_cast<const FiaPlanState*>(plan.state());
  MLAOPS_CHECK(st != nullptr, kParamInvalid,
               "%s: plan: FIA-25 not a plan of this operator; allowed a plan from fused_infer_attention_score_v4_plan, "
               "got %s",
               kCppOp, plan.valid() ? plan.op() : "an empty plan");
  std::string diff;
  MLAOPS_CHECK(st->signature.matches(fia_signature(p), &diff), kParamInvalid,
               "%s: %s: FIA-25 the tensors must match the planned call; allowed the planned shapes, dtypes, attributes "
               "and host arrays, got a different call",
               kCppOp, diff.c_str());
  MLAOPS_TRY(fia_check_pointers(p, st->plan, kCppOp));
  return fia_run(p, st->plan, workspace, workspace_size, kCppOp);
}

Status fused_infer_attention_score_v4_workspace_size(const FiaParams& p, uint64_t* workspace_size) {
  MLAOPS_CHECK(workspace_size != nullptr, kParamNullptr, "%s: workspace_size: FIA-01 out-pointer is null", kCppOp);
  return cpp_api_workspace_size(p, workspace_size, fused_infer_attention_score_v4_plan);
}

// The one-shot call runs its fresh plan directly: the signature and pointers the plan just checked
// are the call's own.
Status fused_infer_attention_score_v4(const FiaParams& p, void* workspace, uint64_t workspace_size) {
  return cpp_api_one_shot(p, workspace, workspace_size, fused_infer_attention_score_v4_plan,
                          [](const OpPlan& plan, const FiaParams& q, void* ws, uint64_t ws_size) {
                            return fia_run(q, static_cast<const FiaPlanState*>(plan.state())->plan, ws, ws_size,
                                           kCppOp);
                          });
}

}  // namespace mlaops
