// Float64 golden reference of aclnnFusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md):
// FP16/BF16 attention with scaleValue, MHA/GQA/MQA, the layouts BSH/BSND/BNSD/TND/NTD and their
// output variants, actual-length decoding, paged KV (BnBsH, BnNBsD, 5-D NZ), the MLA rope split,
// sparse modes 0..4 with explicit masks or the analytic 2048 template, the tree mask of sparse
// mode 9 (row i sees j < S2 - S1, and S2 - S1 + t iff tree[i][t] == 0), fully masked rows,
// INT8 KV antiquant, pseShift (ALiBi given as a full bias), learnableSink, softmaxLse and the
// empty-tensor rules.
//
// Plain single-threaded float64 code: inputs are read exactly (BF16/FP16 -> double), scores,
// softmax and P*V are evaluated in double without emulating any NPU intermediate rounding, and
// only the final store rounds (attention_out to its dtype, softmaxLse to FP32).
//
// Independent of the code under test: the reference shares only the public enums and plain
// structs and the error channel with the library; layout strings, element access, the 16-bit
// float encodings and checked arithmetic are its own (reference/common/ref_util.h).
//
// Per batch b, query head n (KV head n / (N / KV_N)), valid query row i and valid KV position j
// (i, j batch-relative: i < actQ[b], j < actKV[b]):
//   s[j] = scaleValue * dot(q[i], k[j])       (MLA: nope and rope parts in one dot product)
//          + pse[b or 0][n][i][j]             (pseShift, added after scaling, before the mask)
//   masked positions are left out; with m = max of the remaining s[j] and, with learnableSink,
//   m' = max(m, sink[n]) (else m' = m):
//   den  = sum_j exp(s[j] - m') + exp(sink[n] - m')      (the sink term only with learnableSink)
//   out  = sum_j exp(s[j] - m') v[j] / den,  lse = m' + log(den)
// The sink is one extra logit per query head with no value row: not scaled, not masked. A row
// without any valid position (fully masked, actKV = 0, a padded row i >= actQ) is written 0 with
// lse +inf whatever the sink. Values are used as given: a pse of -inf at every valid position of
// a row (without a sink) gives NaN, as the formula does.
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

// Computes attention_out (and softmax_lse when softmax_lse_flag) for p.
//
// Returns kParamInvalid with a "... not supported yet" message for inputs outside the scope
// (keyRopeAntiquantScale). Tensor lists of more than one tensor: fia_tensor_list_ref.h.
// With dequantScaleQuery (or an INT8 query with queryRope) the call is MLA full quant, computed by
// fia_mla_quant_ref (reference/fia/fia_mla_quant_ref.h); an INT8 query without them is GQA full
// quantisation, computed by fia_full_quant_ref (reference/fia/fia_full_quant_ref.h). The reference assumes
// otherwise validated inputs, but checks every shape, length and block id it relies on and
// returns kParamInvalid (kParamNullptr for missing required tensors or null data) instead of
// reading or writing outside a tensor; nothing is written on error.
//
// pseShift and learnableSink are accepted in every layout and path (TND, MLA rope, paged, INT8
// KV, decode with Q_S = 1 where the decode rule ignores the sparse mode but not the pse), alone
// or together: the reference is the golden model of whatever the C++ API accepts, the vendor's
// exclusions are the operator's checks. It checks what it reads: pseShift FP16 / BF16 (read
// exactly, whatever the query dtype), rank 4, dim 0 B or 1 (broadcast), dim 1 N, dim 2 >= max
// actQ, dim 3 >= max actKV; learnableSink FP16 / BF16, shape (N).
//
// Output dtypes: FP16 / BF16 as the operator; FP32 and FP64 are also accepted (reference-only
// extension, handy for tight comparisons). softmax_lse must be FP32.
//
// KV antiquant: x_deq = (x + offset) * scale, evaluated in double and never rounded to the query
// dtype, whatever innerPrecise says: the vendor's A2 / A3 kernels do not round the dequantised
// K / V (docs/ops/fused_infer_attention_score.md "KV antiquant").
Status fused_infer_attention_score_v4_ref(const FiaParams& p);

}  // namespace mlaops
