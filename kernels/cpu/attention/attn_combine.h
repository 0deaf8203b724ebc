// The combine step of every attention path (panel, lane, decode, INT8 decode, the dequantising
// INT8 path, KV splits): finishing a row from its fp32 online-softmax state, the sink term,
// merging the partial states of KV splits or chunks by log-sum-exp, and the rows written for
// empty or fully masked rows. One place for these rules:
//   * a row with no valid position (l == 0) gives output 0 and lse +inf, sink or not; a NaN l
//     (a NaN or +inf score) is not that: the row comes out NaN (docs/numerics.md);
//   * a row with valid positions whose scores are all -inf has the state m = -inf,
//     l = kAllNegInfL (a kernel sets it when a block's max is -inf although the row had a valid
//     position there; a later finite block replaces it, as its alpha = 0): without a sink it
//     comes out NaN, out and lse, as exp(-inf - -inf) in an fp32 softmax (and in the float64
//     reference); with a sink the sink alone is the denominator (out 0, lse = the sink logit);
//   * with a sink logit t for the row's head: M = max(m, t), L = l * exp(m - M) + exp(t - M),
//     out = o * exp(m - M) / L, lse = M + log(L) (the sink enters the denominator only);
//   * otherwise out = o / l, lse = m + log(l);
//   * the output is rounded once to the operand dtype (round to nearest even), lse is fp32.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention/attn_item.h"

namespace mlaops::kernels {

// l of a row state whose valid positions all scored -inf (m = -inf); any l != 0 with m = -inf
// means that, as no other state has m = -inf and l != 0 (attn_combine.h, above).
inline constexpr float kAllNegInfL = 1.0f;

// The item's result from its state: rows m = g * R + r (g < G, r < R) at o + m * ldo [VD]
// unnormalised, running max mx[m] and sum l[m]. Writes the partial of a KV split
// (it.partial_o non-null: O [M][VD], m, l as they are) or the final rows (out / lse).
void attn_finish(const FlashItem& it, const float* o, int64_t ldo, const float* mx, const float* l);

// Merges the partials of `splits` KV splits of one item (split s: o + s * o_stride [M][VD],
// m + s * ml_stride and l + s * ml_stride [M]) by log-sum-exp and finishes the rows. Split 0's o
// is overwritten with the merged state.
void attn_merge_splits(const FlashItem& it, int64_t splits, float* o, const float* m, const float* l,
                       int64_t o_stride, int64_t ml_stride);

// Online merge of a chunk's state (o2 [M][VD], m2, l2) into a running state (o, m, l).
void attn_merge_state(float* o, float* m, float* l, const float* o2, const float* m2, const float* l2, int64_t M,
                      int64_t VD);

// Post-quant INT8 output of one element (quantScale2 / quantOffset2), evaluated in FP16 as the
// vendor golden: scale_h and offset_h are the parameters already rounded to FP16 (offset 0 when
// absent); x (the fp32 normalised attention output) is rounded to FP16, p = fp16(x * scale_h)
// (the product of two FP16 values is exact in fp32, rounded once), y = fp16(p + offset_h)
// (the sum is exact in double, rounded once), then clamp(y, -256, 255), round half to even,
// clamp to [-128, 127]. NaN gives 0. A row without a valid position quantises x = 0.
int8_t attn_post_quant(float x, float scale_h, float offset_h);

// Writes rows (g, r) of `it`, g < G, r < R, as output 0 and lse +inf.
void attn_write_empty(const FlashItem& it);

}  // namespace mlaops::kernels
