// The online softmax of FusedInferAttentionScore's INT8 full-quantisation path (GQA / MHA
// prefill, INT8 query / key / value; docs/ops/fused_infer_attention_score.md "Full quantisation
// (INT8 query)") over the flash_quant family's rows (flash_quant.h). Per query row and KV chunk
// of kFqChunk positions, with the running max m over the chunks so far:
//   s  = fp16(fp16(clamp(fp32(int32(q.k) * deq1), +-65504)) * fp16(scaleValue))  (+ pse in fp32)
//   e  = exp(s - m);  P = clamp(rint(fp16(fp16(e) * fp16(quantScale1))), -128, 127)
//   o  = o * exp(m_old - m) + fp32(int32(P.v) * deq2);  l = l * exp(m_old - m) + sum e
//   out = o / l, lse = m + log(l)   (the combine step, attn_combine.h)
// Masked positions (the attention variant, attn_variant.h: band and explicit mask) are left out.
// Raw pointers and validated sizes only; the operator (ops/fia/fia_full_quant.cpp) builds the item.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention/attn_item.h"
#include "kernels/cpu/attention/flash_quant.h"

namespace mlaops::kernels {

// The INT8 operands of one item and the scales as the kernels use them: the 19-bit deq1 / deq2,
// quantScale1 and scaleValue rounded to FP16.
struct FullQuantArgs {
  // Query row (g, r), g < G, r < R: q + g * q_n_stride + r * q_s_stride, QD bytes.
  const int8_t* q = nullptr;
  int64_t q_n_stride = 0, q_s_stride = 0;
  // Key / value position p (contiguous rows): k + p * k_stride [QD], v + p * v_stride [VD].
  const int8_t* k = nullptr;
  int64_t k_stride = 0;
  const int8_t* v = nullptr;
  int64_t v_stride = 0;
  float deq1 = 0, deq2 = 0, qs1_h = 0, scale_h = 0;
};

// Scratch bytes of an item of up to M = G x rows query rows (a multiple of 64).
int64_t flash_full_quant_scratch(int64_t M, int64_t D, int64_t VD);
// Runs item `it` (G, R, QD, VD, row0, positions [0, kv_end), the variant and the output side) on
// the flash_quant row `fk`; scratch: flash_full_quant_scratch(max_m, QD, VD) bytes, max_m >= G * R
// (the same layout for every item of a plan).
void flash_full_quant_item(const FlashQuantKernels& fk, const FullQuantArgs& a, const FlashItem& it, int64_t max_m,
                           void* scratch);

}  // namespace mlaops::kernels
