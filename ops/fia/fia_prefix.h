// The shared prefix of FusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md
// "Shared prefix"): keySharedPrefix / valueSharedPrefix (batch dim 1) and actualSharedPrefixLen
// (Lp) are prepended logically to every batch's KV. Effective position j < Lp is prefix row j,
// position Lp + t the batch's own row t; mask / pse columns and the sparse rules use the
// effective positions (S2 = Lp + actKV[b]).
//
// Run: each work item runs as KV splits (kernels/cpu/attention/attn_item.h partials) over two sources, the
// first half of the splits over the prefix rows [0, Lp), the second half over the batch's own rows
// [0, actKV) with the mask / pse columns and the rule shifted by Lp; the combine step
// (kernels/cpu/attention/attn_combine.h) merges them by log-sum-exp. The plan orders the items (KV head,
// batch, query block) so that the batches of one head read its prefix from cache in turn.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention/attn_item.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;
struct FiaPlan;

struct FiaPrefix {
  bool on = false;
  int64_t len = 0;  // Lp
  int64_t s = 0;    // the prefix tensors' sequence extent
  int64_t k_h = 0, k_slot = 0, v_h = 0, v_slot = 0;  // element strides of a head and a position
                                                     // (INT4 in INT32 words: nibbles, as FiaCall::k)
};

// FIA-45..48; fills c->prefix. Runs after the key / value rules (and the INT4 nibble dims),
// before the antiquant rules (per-token extents include Lp) and the mask / pse rules.
Status fia_prefix_check(const FiaParams& p, const char* op, FiaCall* c);
// The empty key / value branch: a prefix is rejected there (FIA-49).
Status fia_prefix_check_empty(const FiaParams& p, const char* op);
// Split `split` of `splits` (even) of the item of batch b, KV head h: the first half covers the
// prefix, the second the batch's own rows [0, it->kv_end); chunks of whole tiles. Returns true
// for a prefix split. INT8 / INT4 key / value: the K / V sources are left to the antiquant path
// (fia_antiquant_run_task reads the prefix rows itself).
bool fia_prefix_range(const FiaParams& p, const FiaCall& c, int64_t b, int64_t h, int64_t split, int64_t splits,
                      int64_t tile, kernels::FlashItem* it);

// The prefix work range (FiaPlan::pgroup, the prefix_group path of ops/fia/fia_paths.h): null when
// the call qualifies, else why not. Qualifies when every row's mask / pse element of a prefix
// column is addressable from its flattened row with one stride (Q_S 1: the batch strides; Q_S > 1:
// the BSH / BSND query and a mask / pse whose batch stride is Q_S row strides), every valid row
// sees every prefix column under the sparse rule, and the antiquant parameters do not depend on
// the batch (per-token modes 1 / 3 and the value of key 0 + value 1 keep the per-batch form).
const char* fia_prefix_group_why_not(const FiaCall& c);
// The units and the flattened row strides of a call that qualifies (sets FiaPlan::pgroup).
// `rows_max` caps the flattened rows of a unit (the units' M = G x rows).
void fia_prefix_plan_units(FiaPlan* P, int64_t rows_max);
// The work item of unit index / psplits, prefix chunk index % psplits, with its partial state at
// `partial` (FiaPlan::pp_per floats).
kernels::FlashItem fia_prefix_unit_item(const FiaParams& p, const FiaPlan& P, int64_t index, float* partial);
// The own rows of an item of the prefix work range: mask / pse columns and the rule's deltas
// move by Lp (the prefix's columns come first).
void fia_prefix_own_shift(const FiaCall& c, kernels::FlashItem* it);
// The merge of item (b, h, r0, rows) of the prefix work range into its final rows (`it`, no
// partial): its own splits' partials (splits of `own_per` floats from `own`, layout of
// FiaPlan::partial_o_floats / partial_ml_floats) and the prefix units' (from `units`, every
// psplit), by log-sum-exp; `tmp`: 2 x G x rows x (V_D + 2) floats.
void fia_prefix_merge(const FiaPlan& P, const kernels::FlashItem& it, int64_t b, int64_t h, int64_t r0, int64_t rows,
                      const float* own, int64_t own_per, const float* units, float* tmp);

}  // namespace mlaops
