// FusedInferAttentionScoreV4 inside mlaops: validation and plan
// (fused_infer_attention_score_v4_check.cpp), run (fused_infer_attention_score_v4.cpp).
// Public parameters: include/mlaops/fused_infer_attention_score.h. Rules: docs/ops/fused_infer_attention_score.md.
#pragma once

#include <cstdint>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "ops/fia_antiquant.h"

namespace mlaops {

struct FiaCheckOptions {
  const char* op = "fused_infer_attention_score_v4";  // the name used in messages
  bool vendor_ranges = false;  // the aclnn layer: N, KV_N, B, D, blockSize limited to the vendor's ranges
};

// Element (b, n, s, d) of a query-like tensor (query, queryRope, attentionOut, softmaxLse) or a
// contiguous key-like tensor: b * b + n * n + s * s + d (elements; packed layouts: s absolute).
struct FiaSeqStrides {
  int64_t b = 0, n = 0, s = 0;
};

// A key / value / keyRope source: contiguous (per layout) or paged (per cache rank).
struct FiaKvStrides {
  int64_t b = 0;          // contiguous: batch stride (0 for packed layouts)
  int64_t h = 0;          // kv head stride
  int64_t blk = 0;        // paged: block stride
  int64_t slot = 0;       // position-in-block (contiguous: position) stride
  int64_t c0 = 1;         // channels per contiguous chunk (D, or 16 for NZ)
  int64_t c0_stride = 0;  // stride between chunks (NZ)
};

struct FiaPlan {
  FiaLayout in_l = FiaLayout::kBSH, out_l = FiaLayout::kBSH;
  bool noop = false;      // empty query / output (§2.19): nothing to do
  bool empty_kv = false;  // key/value empty: output zeros, lse +inf
  bool packed = false, paged = false, rope = false, fp16 = false, lse = false;
  int64_t B = 0, N = 0, KVN = 0, G = 1;
  int64_t QS = 0;  // Q_S, or T_q for packed layouts
  int64_t QD = 0, DR = 0, VD = 0;
  int64_t block_size = 0, block_num = 0;
  std::vector<int64_t> act_q, q_start, act_kv, kv_start;  // per batch
  FiaSeqStrides q, qr, out, lse_st;
  FiaKvStrides k, v, kr;
  int64_t bt_row_stride = 0;  // blockTable row stride (elements; dense rows)
  // Mask: valid(i, j) iff i + lo_delta <= j <= i + hi_delta (per batch, see lo/hi below) and the
  // explicit mask (if any) is 0.
  int64_t mode = 0;
  bool decode_rule = false;  // Q_S == 1 non-packed, no rope, Q_D == V_D: only the explicit mask
  bool explicit_mask = false;
  int64_t mask_b = 0, mask_i = 0, mask_j = 0;  // explicit mask strides (mask_b = 0: broadcast)
  int64_t pre = 0, next = 0;
  // Work decomposition.
  int64_t R = 1;       // query rows per work item
  int64_t tile = 64;   // KV positions per block
  int64_t copy_rows = 0;  // lane path dense copy chunk (kernels::FlashShape::copy_rows)
  int64_t lane_group = 1;  // dense copy: items of adjacent KV heads per task (kernels::flash_attn_group)
  int64_t splits = 1;  // KV splits per item (flash-decoding) when items < threads
  struct Item {
    int64_t b, h, r0, rows;
  };
  std::vector<Item> items;  // (b, h, r0) order; (b, r0, h) when lane_group > 1
  int threads = 1;
  // Workspace layout (bytes).
  int64_t thread_bytes = 0, off_thread = 0;
  int64_t off_partial = 0, partial_o_floats = 0, partial_ml_floats = 0;  // per (item, split)
  int64_t workspace_bytes = 0;
  // KV antiquant (INT8 key / value, FIA-21): dequantisation per item into the thread's buffer
  FiaAntiquant aq;
  int64_t aq_thread_bytes = 0, off_aq_thread = 0, off_aq_ch = 0;
};

// Phase 1: every shape / dtype / attribute / host-array rule; nothing is read from tensor data
// and nothing is written.
Status fia_check(const FiaParams& p, const FiaCheckOptions& o, FiaPlan* plan);

// Mask rule of batch b (spec §2.5) as row-relative deltas: column j of row i is inside the rule
// iff i + *lo <= j <= i + *hi (clamped to +-2^62; the explicit mask applies on top).
void fia_row_deltas(const FiaPlan& plan, int64_t b, int64_t* lo, int64_t* hi);

// Phase 2: read-only pre-pass over the block table (ids of every block a batch uses within
// [0, blockNum)), workspace check, then the computation. Requires a plan from fia_check on the
// same shapes and host arrays.
Status fia_run(const FiaParams& p, const FiaPlan& plan, void* workspace, uint64_t workspace_size, const char* op);

}  // namespace mlaops
