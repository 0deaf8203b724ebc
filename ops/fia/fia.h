// FusedInferAttentionScoreV4 inside mlaops (docs/architecture.md, docs/ops/fused_infer_attention_score.md):
//   fia_check.cpp  the rules (phase 1) -> FiaCall, the validated facts
//   fia_plan.cpp   FiaCall -> FiaPlan: work items, tasks, kernels, workspace
//   fia_run.cpp        run (phase 2): bind tensors, pre-pass, run the plan
//   fia_paths.*                               the execution paths, one ordered table (plan and run per path)
//   fia_antiquant.*                           the INT8 key / value feature (rules and its run)
//   fia_inner_precise.*                       innerPrecise: its rules, the FP16 emulation switch, legacy rows
//   fia_inputs.cpp                            the inputs read as logical views / once; the workspace rule
// Public parameters: include/mlaops/fused_infer_attention_score.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan_state.h"
#include "kernels/cpu/quant/dequant_row.h"
#include "kernels/cpu/attention/attn_panel.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/runtime.h"
#include "mlaops/status.h"
#include "ops/common/auto_contiguous.h"
#include "ops/fia/fia_antiquant.h"
#include "ops/fia/fia_inner_precise.h"
#include "ops/fia/fia_left_padding.h"
#include "ops/fia/fia_mla_quant.h"
#include "ops/fia/fia_paths.h"
#include "ops/fia/fia_prefix.h"
#include "ops/fia/fia_tensor_list.h"
#include "ops/fia/fia_tree_mask.h"

namespace mlaops {

// The inputs read as their logical views when strided (ops/common/auto_contiguous.h): every input
// (FusedInferAttentionScore, IncreFlashAttention: the vendor marks all AutoContiguous), or
// PromptFlashAttention's query, key, value, pseShift and attenMask (its wrapper makes those
// contiguous and passes the rest as given, so they must be dense).
enum class FiaStageSet { kAllInputs, kPfa };

struct FiaCheckOptions {
  const char* op = "fused_infer_attention_score_v4";  // the name used in messages
  // The aclnn layer: the vendor's ranges (FIA-19) and feature exclusions (FIA-24) on top of the
  // rules every call obeys.
  bool vendor_ranges = false;
  FiaStageSet stage_set = FiaStageSet::kAllInputs;
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

// The validated facts of one call (fia_check): layouts, per-batch lengths, strides, the mask rule
// and the optional features. Nothing here depends on tensor contents or data pointers.
struct FiaCall {
  FiaLayout in_l = FiaLayout::kBSH, out_l = FiaLayout::kBSH;
  bool noop = false;      // empty query / output: nothing to do
  bool empty_kv = false;  // key/value empty: output zeros, lse +inf
  bool packed = false, paged = false, rope = false, fp16 = false, lse = false;
  int64_t B = 0, N = 0, KVN = 0, G = 1;
  int64_t QS = 0;  // Q_S, or T_q for packed layouts
  int64_t QD = 0, DR = 0, VD = 0;
  int64_t kv_s = 0;  // the key's sequence extent (paged: blockTable width * blockSize)
  int64_t block_size = 0, block_num = 0;
  std::vector<int64_t> act_q, q_start, act_kv, kv_start;  // per batch
  FiaSeqStrides q, qr, out, lse_st;
  FiaKvStrides k, v, kr;
  int64_t bt_row_stride = 0;  // blockTable row stride (elements; dense rows)
  // Mask: valid(i, j) iff i + lo <= j <= i + hi (fia_row_deltas) and the explicit mask (if any) is 0.
  int64_t mode = 0;
  bool decode_rule = false;  // Q_S == 1 non-packed, no rope, Q_D == V_D: only the explicit mask
  bool explicit_mask = false;
  int64_t mask_b = 0, mask_i = 0, mask_j = 0;  // explicit mask strides (mask_b = 0: broadcast)
  int64_t pre = 0, next = 0;
  // Tree mask (sparseMode 9, ops/fia/fia_tree_mask.h): batch b's block at element tree_off[b] of
  // attenMask, row stride tree_i[b], column stride mask_j, covering columns [S2 - S1, S2).
  bool tree = false;
  std::vector<int64_t> tree_off, tree_i;
  // pseShift (FIA-22): element (b, n, i, j) at b * pse_b + n * pse_n + i * pse_i + j (pse_b = 0:
  // broadcast over the batch).
  bool pse = false;
  int64_t pse_b = 0, pse_n = 0, pse_i = 0;
  bool sink = false;  // learnableSink (FIA-23)
  // Post-quant INT8 output (quantScale2 / quantOffset2): per channel (N * V_D elements in (n, d)
  // order) or per tensor (one element); attentionOut is INT8.
  bool post_quant = false, pq_channel = false;
  FiaAntiquant aq;    // INT8 / INT4 key / value (FIA-21, FIA-33)
  FiaPrefix prefix;     // shared prefix (FIA-45..49, ops/fia/fia_prefix.h)
  FiaMlaQuant mq;     // MLA full quant: INT8 query and latent cache (FIA-27..29, ops/fia/fia_mla_quant.h)
  FiaLeftPad lp;      // left padding (FIA-40..42, ops/fia/fia_left_padding.h): moves q_start / kv_start
  bool full_quant = false;  // INT8 query / key / value (FIA-30..32, ops/fia/fia_full_quant.h)
  FiaTensorList tl;  // tensor-list key / value (FIA-50, 51, ops/fia/fia_tensor_list.h): per-batch sources
  FiaInnerPrecise ip;       // what innerPrecise does in this call (ops/fia/fia_inner_precise.h)
  // Strided inputs (ops/common/auto_contiguous.h): which inputs are copied to dense buffers at the front
  // of the workspace; every rule above saw the inputs' dense shapes.
  FiaStageSet stage_set = FiaStageSet::kAllInputs;
  StagePlan stage;
};

struct FiaPlan : FiaCall {
  int path = 0;            // the row of the FIA path table that plans and runs it (ops/fia/fia_paths.h;
                           // none for an empty query / key / value)
  Isa isa = Isa::kScalar;  // the level the kernels were chosen for
  int threads = 1;
  int64_t R = 1;           // query rows per work item
  int64_t tile = 64;       // KV positions per block of the panel path
  int64_t copy_rows = 0;   // lane path dense copy chunk (kernels::FlashShape::copy_rows)
  int64_t splits = 1;      // KV splits per item (flash-decoding) when items < threads
  struct Item {
    int64_t b, h, r0, rows;
  };
  std::vector<Item> items;  // (b, h, r0) order; (b, r0, h) when the lane path copies rows
  // A task runs n consecutive items (adjacent KV heads of one batch and query block) together on
  // one row of the attention family (kernels/cpu/attention/attn.h), once per KV split; INT8 rows
  // that row cannot read in place are dequantised chunk by chunk first (dequant).
  struct Task {
    int64_t first = 0, n = 1;
    int row = 0;
    bool dequant = false;
  };
  std::vector<Task> tasks;
  // The kinds of item (query rows, whether the rule masks inside the KV range) and their rows.
  struct Kind {
    int64_t first = 0, count = 0;  // the first item of the kind, the number of items
    int64_t rows = 1;
    bool full = true;
    int row = 0;
    bool dequant = false;
  };
  std::vector<Kind> kinds;
  // Shared prefix as its own work range (ops/fia/fia_prefix.h, pgroup): the query rows of every batch
  // of one KV head ("flattened": f = b for Q_S 1, f = b * Q_S + s otherwise) form the units'
  // rows, each unit (KV head, block of flattened rows) reads the prefix once per psplits chunk
  // into partial states; the items then cover the batches' own rows only and always write
  // partials, and a merge per item combines both (attn_combine.h).
  bool pgroup = false;
  struct PUnit {
    int64_t h = 0, f0 = 0, rows = 0;
    int row = 0;
    bool dequant = false;
  };
  std::vector<PUnit> punits;
  int64_t psplits = 1;
  int64_t prow_rows = 1;                            // flattened rows per unit (the last: fewer)
  int64_t prow_q = 0, prow_mask = 0, prow_bias = 0;  // element strides of one flattened row
  int64_t off_ppartial = 0, pp_per = 0;             // unit partials: [unit, psplit] x pp_per floats
  int64_t pp_o_floats = 0;                          // G * prow_rows * V_D (then m, l: G * prow_rows each)
  // One region, no barrier: per KV head a count of the units' chunks and the tasks' KV splits
  // that read it (pcount); whoever finishes the last one merges the head's items (hitems[hat[h]
  // .. hat[h + 1]), item indices), counters at off_pcount ([KV_N] int64).
  std::vector<int64_t> pcount, hitems, hat;
  int64_t off_pcount = 0;
  kernels::FlashShape shape;        // the items' scratch geometry
  kernels::FlashKernels panel;      // the panel path's GEMM / softmax / convert / transpose rows
  kernels::DequantRowFn dequant = nullptr;  // INT8 rows -> query dtype
  kernels::DequantRow4Fn dequant4 = nullptr;  // INT4 rows (FIA-33) -> query dtype
  int fq_row = 0;  // INT8 full quantisation: the flash_quant row (ops/fia/fia_full_quant.h)
  // Workspace layout (bytes).
  int64_t thread_bytes = 0, off_thread = 0;
  int64_t off_partial = 0, partial_o_floats = 0, partial_ml_floats = 0;  // per (item, split)
  int64_t off_sink = 0;  // [N] floats: the sink logits
  int64_t off_pq = 0;    // [2, N, V_D] floats: post-quant scale and offset, rounded to FP16
  int64_t aq_thread_bytes = 0, off_aq_thread = 0, off_aq_ch = 0;
  int64_t workspace_bytes = 0;  // the plan's own, after the strided inputs' buffers (stage.bytes)
};

// The workspace a call needs: the strided inputs' dense copies, then the plan's own.
int64_t fia_workspace_bytes(const FiaPlan& plan);

// The inputs of `p` read as logical views (FiaStageSet), in a fixed order, as slots pointing
// into `p` (optional inputs are copied into *store first and repointed, so the caller's views are
// never changed; *store must outlive the slots).
std::vector<StageSlot> fia_stage_slots(FiaParams* p, FiaStageSet set, std::vector<TensorView>* store);

// Phase 1, the rules (every one not depending on data pointers or tensor contents): fills `call`.
Status fia_check(const FiaParams& p, const FiaCheckOptions& o, FiaCall* call);
// The rules on data pointers (null data of a non-empty tensor, alignment, overlaps), checked
// when planning and again when a plan runs on new tensors.
Status fia_check_pointers(const FiaParams& p, const FiaCall& call, const char* op);
// Phase 2: the workspace bytes a run uses overlap no tensor bound to the call (FIA-18).
Status fia_check_workspace(const FiaParams& p, const void* workspace, int64_t bytes, const char* op);
// Phase 1, the plan: work items, KV splits, tasks and their kernels (for the active level and
// thread count), workspace layout.
Status fia_plan(const FiaCall& call, const char* op, FiaPlan* plan);
// What phase 2 will do, in words.
std::string fia_explain(const FiaPlan& plan);
// The shapes, dtypes, attributes and host arrays a plan depends on.
CallSignature fia_signature(const FiaParams& p);

// Mask rule of batch b (docs/ops/fused_infer_attention_score.md) as row-relative deltas: column j
// of row i is inside the rule iff i + *lo <= j <= i + *hi (clamped to +-2^62; the explicit mask
// applies on top).
void fia_row_deltas(const FiaCall& call, int64_t b, int64_t* lo, int64_t* hi);

// The rows of KV head h of batch b of a key / value / keyRope source with strides `st`: the
// addressing (FlashKv without its base) and, in *base_offset, the element offset of the head's
// rows (contiguous: of position 0; paged: in block 0) from the tensor's data.
kernels::FlashKv fia_kv_rows(const FiaParams& p, const FiaCall& c, const FiaKvStrides& st, int64_t b, int64_t h,
                             int64_t* base_offset);

// The kernel work item of `w` (query rows, KV sources, mask, bias, sink and output pointers);
// `sink` the [N] sink floats, `pq` the [2, N, V_D] post-quant floats (either null when unused).
kernels::FlashItem fia_item(const FiaParams& p, const FiaPlan& plan, const FiaPlan::Item& w, const float* sink,
                            const float* pq);

// The output side of a work item: attentionOut (FP16 / BF16, or INT8 with post-quant) and
// softmaxLse from query head n0 and token s0 of batch b on (fia_item's; MLA full quant's rows).
void fia_item_out(const FiaParams& p, const FiaPlan& plan, int64_t b, int64_t n0, int64_t s0, kernels::FlashItem* it);

// Phase 2: the strided inputs copied to their dense buffers, the read-only pre-pass over the
// block table (ids of every block a batch uses within [0, blockNum)), the workspace check, then
// the plan's tasks.
Status fia_run(const FiaParams& p, const FiaPlan& plan, void* workspace, uint64_t workspace_size, const char* op);

}  // namespace mlaops
