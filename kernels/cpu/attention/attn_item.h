// The work item every attention kernel of FusedInferAttentionScore runs (panel, lane, decode,
// INT8 decode): the G query heads that share one KV head, R consecutive query rows of one batch,
// a range of KV positions, the mask rule, the optional additive bias and sink logits, and where
// the rows (or the partial state of a KV split) go. Raw pointers and validated sizes only: the
// operator (ops/fused_infer_attention_score_v4*.cpp) has checked every shape, length and block id.
#pragma once

#include <cstdint>

namespace mlaops::kernels {

// Rows of one KV head of one batch: element (position p, channel d) is at
//   base + row(p) + (d / c0) * c0_stride + d % c0,
//   row(p) = block_ids ? block_ids[p / block_size] * blk_stride + (p % block_size) * slot_stride
//                      : p * slot_stride.
// Contiguous BSH/BSND/BNSD/TND/NTD: block_ids null, c0 = D. Paged BnBsH / BnNBsD: c0 = D.
// Paged NZ [blockNum, KV_N, D/16, blockSize, 16]: c0 = 16, c0_stride = blockSize * 16.
struct FlashKv {
  const uint16_t* base = nullptr;   // bf16 / fp16 bits
  const int32_t* block_ids = nullptr;  // [>= ceil(positions / block_size)] validated ids
  int64_t block_size = 1;
  int64_t blk_stride = 0, slot_stride = 0;
  int64_t c0 = 1, c0_stride = 0;

  // row(p): the element offset of position p's row (the one KV row addressing of every path;
  // INT8 rows use it with their own base).
  int64_t row(int64_t p) const {
    if (block_ids == nullptr) return p * slot_stride;
    return static_cast<int64_t>(block_ids[p / block_size]) * blk_stride + (p % block_size) * slot_stride;
  }
  // row(p) of positions [p0, p0 + n) into out (one block lookup per cache block).
  void rows(int64_t p0, int64_t n, int64_t* out) const {
    if (block_ids == nullptr) {
      for (int64_t i = 0; i < n; ++i) out[i] = (p0 + i) * slot_stride;
      return;
    }
    int64_t blk = p0 / block_size, off = p0 % block_size;
    int64_t r = static_cast<int64_t>(block_ids[blk]) * blk_stride + off * slot_stride;
    for (int64_t i = 0; i < n; ++i) {
      out[i] = r;
      r += slot_stride;
      if (++off == block_size && i + 1 < n) {
        off = 0;
        r = static_cast<int64_t>(block_ids[++blk]) * blk_stride;
      }
    }
  }
};

struct FlashItem {
  // Query rows (g, r), g < G heads, r < R rows: q + g * q_n_stride + r * q_s_stride, [QD] each;
  // rope part (DR > 0) likewise [DR].
  const uint16_t* q = nullptr;
  int64_t q_n_stride = 0, q_s_stride = 0;
  const uint16_t* qr = nullptr;
  int64_t qr_n_stride = 0, qr_s_stride = 0;
  int64_t G = 1, R = 1, QD = 0, DR = 0, VD = 0;
  bool fp16 = false;  // operands (and output) FP16, else BF16
  // FP16 operands: the FP16 high-performance softmax (innerPrecise bit 0; kernels/cpu/attention/attn_fp16_softmax.h):
  // scores, P, the running output and the final division rounded to FP16 per 128-position block.
  // Runs on the panel and lane kinds with the item whole (no KV split); false: FP32 intermediates.
  bool fp16_softmax = false;
  FlashKv k, kr, v;   // kr used when DR > 0
  int64_t kv_begin = 0, kv_end = 0;  // positions [kv_begin, kv_end) of this item
  float scale = 1.0f;
  // Mask of row i = row0 + r (batch-relative) and column j: valid iff
  //   i + lo_delta <= j <= i + hi_delta   and   (mask == null or j < mask_j0 or
  //   mask[i * mask_i_stride + (j - mask_j0) * mask_j_stride] == 0).
  // mask_j0: the first column the explicit mask covers (0: a full mask; the tree mask of sparse 9:
  // S2 - S1, its block covering the last S1 positions; negative when a caller moved the columns).
  int64_t row0 = 0;
  int64_t lo_delta = 0, hi_delta = 0;  // clamped to +-2^62 by the caller
  const uint8_t* mask = nullptr;       // BOOL / INT8 / UINT8 bytes, already offset to the batch
  int64_t mask_i_stride = 0, mask_j_stride = 0;
  int64_t mask_j0 = 0;
  // Additive bias (pseShift) of head g, row i = row0 + r and position j, in the operand dtype:
  //   bias[g * bias_n_stride + i * bias_i_stride + j], added to the scaled score (null: none).
  const uint16_t* bias = nullptr;
  int64_t bias_n_stride = 0, bias_i_stride = 0;
  // Sink logit of each of the G heads (learnableSink; null: none): one more term exp(sink[g] - m)
  // in the softmax denominator, added once by the combine step (attn_combine.h).
  const float* sink = nullptr;
  // Final output (partial_o == null): row (g, r) at out + g * out_n_stride + r * out_s_stride
  // [VD] in the operand dtype; lse (nullable) at lse + g * lse_n_stride + r * lse_s_stride.
  uint16_t* out = nullptr;
  int64_t out_n_stride = 0, out_s_stride = 0;
  float* lse = nullptr;
  int64_t lse_n_stride = 0, lse_s_stride = 0;
  // Post-quant INT8 output (quantScale2; pq_scale null: none): rows go to out8 (same strides as
  // out, in bytes) instead of out, element d of head g as attn_post_quant(x, pq_scale[g * VD + d],
  // pq_offset[g * VD + d]); both [G, VD] FP16-rounded floats (per tensor: the value repeated).
  int8_t* out8 = nullptr;
  const float* pq_scale = nullptr;
  const float* pq_offset = nullptr;
  // Partial output of a KV split (flash-decoding): unnormalised O [G*R, VD], running max and
  // sum [G*R] (row index g * R + r), without the sink term. Merged by attn_merge_splits.
  float* partial_o = nullptr;
  float* partial_m = nullptr;
  float* partial_l = nullptr;
};

}  // namespace mlaops::kernels
