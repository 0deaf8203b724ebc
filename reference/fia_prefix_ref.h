// Float64 golden reference of the FusedInferAttentionScoreV4 shared prefix
// (docs/ops/fused_infer_attention_score.md "Shared prefix"): keySharedPrefix / valueSharedPrefix
// (batch dim 1) and actualSharedPrefixLen (Lp) are prepended logically to every batch's KV:
//   K_eff[b] = concat(keySharedPrefix[0][:, :Lp], K[b][:, :actKV[b]]), V likewise,
// so the mask / pse columns [0, Lp) are the prefix and [Lp, Lp + actKV[b]) the batch's own
// tokens, and the sparse rules use S2 = Lp + actKV[b]. The reference builds K_eff / V_eff as
// plain tensors of the key's layout (S' = Lp + KV_S) and runs fused_infer_attention_score_v4_ref
// on them with actualSeqLengthsKv = Lp + actKV[b]; its own checks cover what it reads.
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "reference/fused_infer_attention_score_v4_ref.h"

namespace mlaops {

Status fia_prefix_ref(const FiaParams& p, FiaRefAntiquant antiquant);

}  // namespace mlaops
