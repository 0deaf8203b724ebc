// Float64 golden reference of tensor-list KV of FusedInferAttentionScoreV4
// (docs/ops/fused_infer_attention_score.md "Tensor-list KV"): key and value are lists of B
// tensors, element b holding batch b (batch dim 1) with its own sequence extent S_b in the
// query's layout (BSH / BSND / BNSD); actualSeqLengthsKv, when given, is read per batch against
// S_b. The reference copies the elements into padded tensors (B, ..., max S_b, ...) of the same
// layout and runs fused_infer_attention_score_v4_ref on them with actualSeqLengthsKv = the
// per-batch lengths; its own checks cover what it reads.
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "reference/fia/fia_ref.h"

namespace mlaops {

Status fia_tensor_list_ref(const FiaParams& p);

}  // namespace mlaops
