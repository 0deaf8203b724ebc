// Float64 golden reference of aclnnFusedInferAttentionScoreV4 (spec fused-infer-attention-score.md
// §6), for the scope of issue 4 (spec §7 rows 1-15): FP16/BF16 attention with scaleValue,
// MHA/GQA/MQA, the layouts BSH/BSND/BNSD/TND/NTD and their output variants, actual-length
// decoding, paged KV (BnBsH, BnNBsD, 5-D NZ), the MLA rope split, sparse modes 0..4 with explicit
// masks or the analytic 2048 template, fully masked rows, softmaxLse and the empty-tensor rules.
//
// Plain single-threaded float64 code: inputs are read exactly (BF16/FP16 -> double), scores,
// softmax and P*V are evaluated in double without emulating any NPU intermediate rounding, and
// only the final store rounds (attention_out to its dtype, softmaxLse to FP32).
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

// Computes attention_out (and softmax_lse when softmax_lse_flag) for p.
//
// Returns kParamInvalid with a "... not supported yet" message for inputs outside the scope
// (pseShift, shared prefix, left padding, learnable sink, dequantScaleQuery,
// keyRopeAntiquantScale, quantised query / output, INT4 K/V, sparse mode 9, tensor lists with more
// than one tensor). INT8 key / value with KV antiquant (spec §2.11, modes 0..5) are supported. The reference assumes otherwise validated inputs, but checks every
// shape, length and block id it relies on and returns kParamInvalid (kParamNullptr for missing
// required tensors) instead of reading or writing outside a tensor; nothing is written on error.
//
// Output dtypes: FP16 / BF16 as the operator; FP32 and FP64 are also accepted (reference-only
// extension, handy for tight comparisons). softmax_lse must be FP32.
//
// KV antiquant (spec §2.11): x_deq = (x + offset) * scale is rounded to the query dtype before the
// products (kRoundToQueryDtype: the vendor golden of the "one" run, the default), or kept exact
// (kExact: its FP32 high-precision golden, which the operator's in-place INT8 decode kernel
// follows; docs/ops/fused_infer_attention_score.md).
enum class FiaRefAntiquant { kRoundToQueryDtype, kExact };
Status fused_infer_attention_score_v4_ref(const FiaParams& p,
                                          FiaRefAntiquant antiquant = FiaRefAntiquant::kRoundToQueryDtype);

}  // namespace mlaops
