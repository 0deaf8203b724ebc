// Float64 golden reference of FusedInferAttentionScoreV4 MLA full quant
// (docs/ops/fused_infer_attention_score.md "MLA full quant"): INT8 query with dequantScaleQuery
// (per token x head), INT8 paged FRACTAL_NZ latent cache as key and value with per-tensor scales,
// BF16 rope (keyRope NZ), BF16 (or FP32 / FP64, reference-only) output. Per batch b, head n,
// query row i (batch-relative) and valid position j:
//   q[d]  = q_int8[d] * dq,   qr[r] = queryRope[r] * dq * keyScale   (dq = dequantScaleQuery[b, i, n])
//   k[d]  = k_int8[j][d] * keyScale,   kr[r] = keyRope[j][r],   v[d] = v_int8[j][d] * valueScale
//   s[j]  = scaleValue * (q . k + qr . kr)
//   out   = sum_j exp(s[j] - m) v[j] / sum_j exp(s[j] - m),   lse = m + log(sum_j exp(s[j] - m))
// (so the score is scaleValue * dq * keyScale * (q_int8 . k_int8 + queryRope . keyRope): queryRope
// comes pre-divided by dq * keyScale, as MlaPrologV2 full quant produces it). Valid positions:
// j < actKV[b], and with sparseMode 3 j <= i + actKV[b] - actQ[b]; with sparseMode 9 (tree mask,
// (B, S, S) or 1-D sum actQ^2 with TND) position actKV[b] - actQ[b] + t of row i only when
// tree[i][t] == 0. Rows without a valid position
// and padded rows (i >= actQ[b], non-packed layouts) are 0 with lse +inf.
//
// Layouts BSH, BSND, TND with the outputs of BSH / BSND / BSH_NBSD / BSND_NBSD / TND / TND_NTD;
// key / value [blockNum, 1, D/32, blockSize, 32], keyRope [blockNum, 1, DR/16, blockSize, 16],
// blockTable [B, W], actualSeqLengthsKv (1 or >= B values), TND: cumulative actualSeqLengths.
// Plain single-threaded double arithmetic, its own parsing (reference/common/ref_util.h); checks what
// it reads and returns kParamInvalid rather than reading outside a tensor. Nothing is written on
// error.
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

Status fia_mla_quant_ref(const FiaParams& p);

}  // namespace mlaops
