// The FP16 high-performance softmax of FusedInferAttentionScore (innerPrecise bit 0 = 1 with FP16
// operands, FlashItem::fp16_softmax; docs/ops/fused_infer_attention_score.md "innerPrecise"): an
// emulation of the FP16 intermediates of the vendor's general prefill template, per block of
// kFp16SoftmaxBlock KV positions (blocks aligned to the item's first position; a block without a
// valid position for a row leaves that row's state unchanged):
//   s  = fp16(fp16(q . k) * fp16(scale))            masked positions left out
//   m' = max(m, max s), e = exp(s - m'), a = exp(m - m')         (FP32; a = 0 for the first block)
//   P  = fp16(e),  l = l * a + sum e                             (the sum of the unrounded e)
//   O  = fp16(fp16(O * fp16(a)) + fp16(P x V))                   (P x V accumulated in FP32)
//   out = fp16(O / fp16(l)),  lse = m + log(l)
// Every step is one rounding of an exact FP32 result (the products and sums of two FP16 values
// are exact in FP32, or round to the same FP16 value), so these helpers are the emulation.
#pragma once

#include <cstdint>

#include "mlaops/numeric.h"

namespace mlaops::kernels {

inline constexpr int64_t kFp16SoftmaxBlock = 128;

// The score of one position from its FP32 dot product; scale_h = fp16(scale).
inline float fp16_softmax_score(float qk, float scale_h) { return round_fp16(round_fp16(qk) * scale_h); }

// One channel of the running output after a block: o and alpha_h FP16 values, pv the block's
// FP32 P x V.
inline float fp16_softmax_update(float o, float alpha_h, float pv) {
  return round_fp16(round_fp16(o * alpha_h) + round_fp16(pv));
}

// One channel of the final row (before its store to FP16): o / fp16(l).
inline float fp16_softmax_final(float o, float l) { return o / round_fp16(l); }

}  // namespace mlaops::kernels
