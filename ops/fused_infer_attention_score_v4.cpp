// FusedInferAttentionScoreV4 phase 2 (spec fused-infer-attention-score.md §0, §2) and the C++ API:
//   1. read-only pre-pass: every block id a batch uses (blockTable[b][0 .. ceil(actKV[b]/blockSize)))
//      must lie in [0, blockNum) (FIA-13); workspace size (FIA-20) — only then the first write
//   2. padded query rows (non-packed layouts, rows >= actQ[b]): output 0, lse +inf
//   3. work items (batch, kv head, block of query rows [, KV split]) in parallel: flash attention
//      over the KV range (kernels/cpu/flash_attn.h; items with one query row per head and no mask
//      inside their range: the decode kernel of kernels/cpu/flash_decode.h, the KV heads of a
//      batch together) writing the rows in the output layout; INT8 key / value are first
//      dequantised per item (ops/fia_antiquant.h)
//   4. KV splits (flash-decoding, when there are fewer items than threads): LSE merge of partials
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "kernels/cpu/attn_combine.h"
#include "kernels/cpu/flash_attn.h"
#include "kernels/cpu/flash_decode.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "ops/fused_infer_attention_score_v4.h"

namespace mlaops {

// ------------------------------------------------------------------------------------------
// Layout strings (public, include/mlaops/fused_infer_attention_score.h).
// ------------------------------------------------------------------------------------------

namespace {

struct LayoutRow {
  const char* name;
  FiaLayout in;
  FiaLayout out;
};
// The A2/A3 V4 checker list (spec §2.1).
constexpr LayoutRow kLayoutRows[] = {
    {"BSH", FiaLayout::kBSH, FiaLayout::kBSH},          {"BSND", FiaLayout::kBSND, FiaLayout::kBSND},
    {"BNSD", FiaLayout::kBNSD, FiaLayout::kBNSD},       {"TND", FiaLayout::kTND, FiaLayout::kTND},
    {"NTD", FiaLayout::kNTD, FiaLayout::kNTD},          {"BSH_BNSD", FiaLayout::kBSH, FiaLayout::kBNSD},
    {"BSND_BNSD", FiaLayout::kBSND, FiaLayout::kBNSD},  {"BNSD_BSND", FiaLayout::kBNSD, FiaLayout::kBSND},
    {"NTD_TND", FiaLayout::kNTD, FiaLayout::kTND},      {"TND_NTD", FiaLayout::kTND, FiaLayout::kNTD},
    {"BSH_NBSD", FiaLayout::kBSH, FiaLayout::kNBSD},    {"BSND_NBSD", FiaLayout::kBSND, FiaLayout::kNBSD},
    {"BNSD_NBSD", FiaLayout::kBNSD, FiaLayout::kNBSD},
};

}  // namespace

bool parse_fia_layout(const std::string& layout, FiaLayout* in, FiaLayout* out) {
  for (const LayoutRow& r : kLayoutRows) {
    if (layout == r.name) {
      if (in != nullptr) *in = r.in;
      if (out != nullptr) *out = r.out;
      return true;
    }
  }
  return false;
}

const char* fia_layout_name(FiaLayout layout) {
  switch (layout) {
    case FiaLayout::kBSH: return "BSH";
    case FiaLayout::kBSND: return "BSND";
    case FiaLayout::kBNSD: return "BNSD";
    case FiaLayout::kTND: return "TND";
    case FiaLayout::kNTD: return "NTD";
    case FiaLayout::kNBSD: return "NBSD";
  }
  return "?";
}

// ------------------------------------------------------------------------------------------
// Run.
// ------------------------------------------------------------------------------------------

namespace {

struct RunCtx {
  const FiaParams* p;
  const FiaPlan* plan;
  kernels::FlashKernels fk;
  FiaAqChannels aq_ch;  // KV antiquant: per-channel scales / offsets as floats
  kernels::FlashDecodeFn decode = nullptr;  // null: the ISA has no decode kernel
  kernels::FlashDecodeI8Fn decode_i8 = nullptr;  // null: INT8 rows are dequantised instead
  int64_t group = 1;                         // items per task (decode_group_size)
  WorkspaceArena* ws;
  kernels::FlashShape shape;
};

// The item's rows, KV sources, mask and output pointers (split s of `splits`).
kernels::FlashItem make_item(const RunCtx& c, const FiaPlan::Item& w) {
  const FiaParams& p = *c.p;
  const FiaPlan& P = *c.plan;
  const size_t b = static_cast<size_t>(w.b);
  const int64_t s0 = P.q_start[b] + w.r0;  // first query token of the item (absolute for packed)
  const int64_t n0 = w.h * P.G;            // first query head
  kernels::FlashItem it;
  it.q = p.query.ptr<const uint16_t>() + w.b * P.q.b + n0 * P.q.n + s0 * P.q.s;
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
  auto kv = [&](const TensorView& t, const FiaKvStrides& st) {
    kernels::FlashKv k;
    k.c0 = st.c0;
    k.c0_stride = st.c0_stride;
    k.slot_stride = st.slot;
    if (P.paged) {
      k.base = t.ptr<const uint16_t>() + w.h * st.h;
      k.block_ids = p.block_table->ptr<const int32_t>() + w.b * P.bt_row_stride;
      k.block_size = P.block_size;
      k.blk_stride = st.blk;
    } else {
      k.base = t.ptr<const uint16_t>() + w.b * st.b + w.h * st.h + P.kv_start[b] * st.slot;
    }
    return k;
  };
  it.k = kv(p.key[0], P.k);
  it.v = kv(p.value[0], P.v);
  if (P.rope) it.kr = kv(*p.key_rope, P.kr);
  it.kv_begin = 0;
  it.kv_end = P.act_kv[b];
  it.scale = static_cast<float>(p.scale_value);
  it.row0 = w.r0;
  fia_row_deltas(P, w.b, &it.lo_delta, &it.hi_delta);
  if (P.explicit_mask) {
    it.mask = p.atten_mask->ptr<const uint8_t>() + w.b * P.mask_b;
    it.mask_i_stride = P.mask_i;
    it.mask_j_stride = P.mask_j;
  }
  it.out = p.attention_out.ptr<uint16_t>() + w.b * P.out.b + n0 * P.out.n + s0 * P.out.s;
  it.out_n_stride = P.out.n;
  it.out_s_stride = P.out.s;
  if (P.lse) {
    it.lse = p.softmax_lse->ptr<float>() + w.b * P.lse_st.b + n0 * P.lse_st.n + s0 * P.lse_st.s;
    it.lse_n_stride = P.lse_st.n;
    it.lse_s_stride = P.lse_st.s;
  }
  return it;
}

// The item of work index `index` (item * splits + split) with its KV split range and partials.
kernels::FlashItem item_at(const RunCtx& c, int64_t index) {
  const FiaPlan& P = *c.plan;
  const int64_t item = index / P.splits, split = index % P.splits;
  kernels::FlashItem it = make_item(c, P.items[static_cast<size_t>(item)]);
  if (P.splits > 1) {
    const int64_t s2 = it.kv_end;
    const int64_t chunk = round_up(ceil_div(std::max<int64_t>(s2, 1), P.splits), P.tile);
    it.kv_begin = std::min(s2, split * chunk);
    it.kv_end = std::min(s2, it.kv_begin + chunk);
    const int64_t per = P.partial_o_floats + 2 * P.partial_ml_floats;
    float* base = c.ws->at<float>(P.off_partial) + index * per;
    it.partial_o = base;
    it.partial_m = base + P.partial_o_floats;
    it.partial_l = base + P.partial_o_floats + P.partial_ml_floats;
  }
  return it;
}

// Task (group of c.group consecutive items, split): the decode kernel runs the group's items in
// lockstep where it applies, else flash_attn_group (the lane path's grouped dense copy, or each
// item in turn).
void run_group(void* ctx, int64_t task, int thread) {
  const RunCtx& c = *static_cast<const RunCtx*>(ctx);
  const FiaPlan& P = *c.plan;
  const int64_t first = task / P.splits * c.group, split = task % P.splits;
  kernels::FlashItem items[16];
  for (int64_t i = 0; i < c.group; ++i) items[i] = item_at(c, (first + i) * P.splits + split);
  void* scratch = c.ws->at<char>(P.off_thread + thread * P.thread_bytes);
  if (P.aq.on) {  // INT8 key / value: dequantised chunk by chunk (ops/fia_antiquant.h)
    const FiaPlan::Item& w = P.items[static_cast<size_t>(first)];
    const FiaAqKernels k{&c.fk, &c.shape, c.decode, scratch, P.thread_bytes, c.decode_i8};
    fia_aq_run_group(*c.p, P, c.aq_ch, w.b, w.h, items, c.group, k,
                     c.ws->at<char>(P.off_aq_thread + thread * P.aq_thread_bytes));
    return;
  }
  if (kernels::flash_decode_try(c.decode, items, c.group, scratch, P.thread_bytes)) return;
  kernels::flash_attn_group(items, c.group, c.shape, c.fk, scratch);
}

// Items per task: the KV heads of one batch run together (a power of two <= 16 dividing KV_N)
// when every item is a decode row (item index = b * KV_N + h), the heads share the K / V rows
// (paged BnBsH, BSH / BSND: head stride < row stride; INT8 caches: always, through the chunk
// buffer), the group's scratch fits and there are still at least as many tasks as threads; else 1.
int64_t decode_group_size(const FiaPlan& P, kernels::FlashDecodeFn decode) {
  // INT8 key / value: the chunk buffer holds the group's heads row by row whatever the cache layout
  const bool shared_rows = P.aq.on || (P.k.h < P.k.slot && P.v.h < P.v.slot);
  if (decode == nullptr || P.R != 1 || P.rope || !shared_rows) return 1;
  const int64_t n_items = static_cast<int64_t>(P.items.size());
  for (int64_t i = 0; i < n_items; ++i)
    if (P.items[static_cast<size_t>(i)].h != i % P.KVN || P.items[static_cast<size_t>(i)].rows != 1) return 1;
  int64_t g = 1;
  while (g < 16 && P.KVN % (2 * g) == 0) g *= 2;
  while (g > 1 && (n_items / g * P.splits < P.threads ||
                   kernels::flash_decode_scratch_bytes(g, P.G, P.QD, P.VD, P.fp16) > P.thread_bytes))
    g /= 2;
  return g;
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

}  // namespace

Status fia_run(const FiaParams& p, const FiaPlan& P, void* workspace, uint64_t workspace_size, const char* op) {
  if (P.noop) return kSuccess;
  const float inf = std::numeric_limits<float>::infinity();
  if (P.empty_kv) {
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
  MLAOPS_CHECK(workspace_size >= static_cast<uint64_t>(P.workspace_bytes), kParamInvalid,
               "%s: workspaceSize: FIA-20 value; allowed >= %lld, got %llu", op, (long long)P.workspace_bytes,
               (unsigned long long)workspace_size);
  MLAOPS_CHECK(P.workspace_bytes == 0 || workspace != nullptr, kParamNullptr,
               "%s: workspace: FIA-20 null, but %lld bytes are needed", op, (long long)P.workspace_bytes);

  // Padded query rows of non-packed layouts: 0 / +inf.
  if (!P.packed) {
    for (int64_t b = 0; b < P.B; ++b) {
      const int64_t s1 = P.act_q[static_cast<size_t>(b)];
      if (s1 >= P.QS) continue;
      kernels::FlashItem e;
      e.G = P.N;
      e.R = P.QS - s1;
      e.VD = P.VD;
      e.out = p.attention_out.ptr<uint16_t>() + b * P.out.b + s1 * P.out.s;
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

  WorkspaceArena ws(workspace, workspace_size);
  RunCtx c;
  c.p = &p;
  c.plan = &P;
  c.fk = kernels::flash_kernels(active_isa());
  c.decode = kernels::flash_decode_kernel(active_isa());
  c.decode_i8 = kernels::flash_decode_i8_kernel(active_isa());
  c.group = P.lane_group > 1 ? P.lane_group : decode_group_size(P, c.decode);
  c.ws = &ws;
  if (P.aq.on) c.aq_ch = fia_aq_channels(P.aq, P.KVN, P.QD, P.VD, ws.at<float>(P.off_aq_ch));
  c.shape.M = P.G * P.R;
  c.shape.R = P.R;
  c.shape.QD = P.QD;
  c.shape.DR = P.DR;
  c.shape.VD = P.VD;
  c.shape.tile = P.tile;
  c.shape.fp16 = P.fp16;
  c.shape.copy_rows = P.copy_rows;
  const int64_t n_items = static_cast<int64_t>(P.items.size());
  parallel_items(n_items / c.group * P.splits, P.threads, run_group, &c);
  if (P.splits > 1) parallel_items(n_items, P.threads, merge_item, &c);
  return kSuccess;
}

// ------------------------------------------------------------------------------------------
// C++ API (include/mlaops/fused_infer_attention_score.h).
// ------------------------------------------------------------------------------------------

Status fused_infer_attention_score_v4_workspace_size(const FiaParams& p, uint64_t* workspace_size) {
  MLAOPS_CHECK(workspace_size != nullptr, kParamNullptr,
               "fused_infer_attention_score_v4: workspace_size: FIA-01 out-pointer is null");
  FiaPlan plan;
  MLAOPS_TRY(fia_check(p, FiaCheckOptions{}, &plan));
  *workspace_size = static_cast<uint64_t>(plan.workspace_bytes);
  return kSuccess;
}

Status fused_infer_attention_score_v4(const FiaParams& p, void* workspace, uint64_t workspace_size) {
  FiaPlan plan;
  MLAOPS_TRY(fia_check(p, FiaCheckOptions{}, &plan));
  return fia_run(p, plan, workspace, workspace_size, "fused_infer_attention_score_v4");
}

}  // namespace mlaops
