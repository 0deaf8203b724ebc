// The shared prefix of FusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md
// "Shared prefix"): keySharedPrefix / valueSharedPrefix (batch dim 1) and actualSharedPrefixLen
// (Lp) are prepended logically to every batch's KV. Effective position j < Lp is prefix row j,
// position Lp + t the batch's own row t; mask / pse columns and the sparse rules use the
// effective positions (S2 = Lp + actKV[b]).
//
// Run: each work item runs as KV splits (kernels/cpu/attn_item.h partials) over two sources, the
// first half of the splits over the prefix rows [0, Lp), the second half over the batch's own rows
// [0, actKV) with the mask / pse columns and the rule shifted by Lp; the combine step
// (kernels/cpu/attn_combine.h) merges them by log-sum-exp. The plan orders the items (KV head,
// batch, query block) so that the batches of one head read its prefix from cache in turn.
#pragma once

#include <cstdint>

#include "kernels/cpu/attn_item.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;

struct FiaPrefix {
  bool on = false;
  int64_t len = 0;  // Lp
  int64_t s = 0;    // the prefix tensors' sequence extent
  int64_t k_h = 0, k_slot = 0, v_h = 0, v_slot = 0;  // element strides of a head and a position
};

// FIA-45..49 (and FIA-02 for the combinations not supported yet); fills c->pre. Runs after the
// key / value and the antiquant rules, before the mask and pse rules.
Status fia_prefix_check(const FiaParams& p, const char* op, FiaCall* c);
// FIA-02 (existence group): a prefix with INT8 / INT4 key/value is not supported yet.
Status fia_prefix_check_scope(const FiaParams& p, const char* op);
// The empty key / value branch: a prefix is rejected there (FIA-49).
Status fia_prefix_check_empty(const FiaParams& p, const char* op);
// Split `split` of `splits` (even) of the item of KV head h: the first half covers the prefix,
// the second the batch's own rows [0, it->kv_end); chunks of whole tiles.
void fia_prefix_range(const FiaParams& p, const FiaCall& c, int64_t h, int64_t split, int64_t splits, int64_t tile,
                      kernels::FlashItem* it);

}  // namespace mlaops
