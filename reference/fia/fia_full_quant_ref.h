// Float64 reference of FusedInferAttentionScoreV4's INT8 full quantisation (INT8 query / key /
// value without queryRope; docs/ops/fused_infer_attention_score.md "Full quantisation (INT8 query)"),
// called by fused_infer_attention_score_v4_ref for such calls.
//
// Exact double arithmetic except the rounding steps the vendor golden names, in this order, per
// batch b, query head n (KV head n / (N / KV_N)), query row i < actQ[b] and KV position j < actKV[b]
// of the batch's windows. Left padding (fia_left_padding_ref.h) moves the windows: row i is query
// row q0 + i, position j key / value row kv0 + j (q0 = Q_S - qPad - actQ[b], kv0 = KV_S - kvPad -
// actKV[b]); the explicit mask and pseShift are read at (q0 + i, kv0 + j), sparse 0 then ignores
// pre / next, sparse 2 / 3 / 4 apply to (i, j); the rows outside the window are written 0 / +inf.
//   deq1, deq2  the 19-bit scales: the float32 bit pattern (UINT64: its low 32 bits) & 0xffffe000
//   qs_h        quantScale1 rounded to FP16;  sc_h = scaleValue as float32, rounded to FP16
//   s_j         x = fp32(int(q.k_j) * deq1), clamped to [-65504, 65504];  s_j = fp16(fp16(x) * sc_h);
//               with pseShift s_j = fp32(s_j + pse[b or 0][n][q0 + i][kv0 + j])
//   masked positions (sparse rule, explicit mask) are left out
//   chunks      window positions [1024 c, 1024 (c + 1)) ∩ [0, actKV[b]); m_c = max of the valid s_j of
//               chunks 0..c; for each valid j of chunk c: e_j = exp(s_j - m_c) (double),
//               P_j = clamp(round_half_even(fp16(fp16(e_j) * qs_h)), -128, 127);
//               o_c = deq2 * sum_j P_j v_j (the integer sum exact)
//   row         m = last m_c, l = sum_j exp(s_j - m), o = sum_c o_c exp(m_c - m),
//               out = o / l, lse = m + log(l); a row without any valid position: out 0, lse +inf
//   output      FP16 (or FP32 / FP64: no final rounding), or INT8 by ref::post_quant_int8
// Layouts BSH, BSND, BNSD and their output variants (incl. *_NBSD); contiguous (non-paged) key /
// value; Q_S > 1. Shares no code with the library (reference/common/ref_util.h and the reference's own
// left-padding windows, fia_left_padding_ref.h, only).
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

// Whether fused_infer_attention_score_v4_ref hands the call to fia_full_quant_ref: an INT8 query
// without queryRope and dequantScaleQuery (those are MLA full quant, fia_mla_quant_ref.h).
bool fia_ref_is_full_quant(const FiaParams& p);
Status fia_full_quant_ref(const FiaParams& p);

}  // namespace mlaops
