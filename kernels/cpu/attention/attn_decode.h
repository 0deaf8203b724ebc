// Flash decode: a FusedInferAttentionScore work item with one query row per head (R == 1), a
// group G of at most 16 query heads per KV head (run as the next power of two, the rows past G
// with a zero query and never written), no rope part and no position
// of its KV range masked by the rule (an explicit mask row, shared by the G heads, sets the masked
// keys' scores to -inf; a row without a valid key gives 0 / +inf). K and V rows are read in place (no K^T panels): per key, the G dot
// products over D run on vdpbf16ps (bf16) or fp32 FMAs (fp16, exact fp16 -> fp32), reduced
// horizontally 16 at a time; online softmax per block of keys in fp32; P x V with P rounded to
// bf16 (bf16 operands, vdpbf16ps on pair-interleaved V rows) or in fp32 (fp16 operands).
// Numerics as flash_attn_item: fp32 scores, fp32 running max / sum, lse = m + log(l).
//
// Raw pointers and validated sizes only; the operator (ops/fia/fia_run.cpp)
// has checked every shape, length and block id.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention/attn_panel.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {

// Runs a group of n items (n a power of two <= 16; the shape the attention family's row accepts:
// kernels/cpu/attention/attn.cpp) on the calling thread with `scratch`
// (flash_decode_scratch_bytes(n, ...) bytes, 64-byte aligned). The items are KV heads of
// one batch (and one KV split) that differ only in their query, K / V base and output pointers;
// they run in lockstep, key row by key row across the heads, so a paged BnBsH cache (heads
// interleaved in each row) is read in address order. Each item writes it.out / it.lse, or the
// partials it.partial_o [G, VD] / partial_m [G] / partial_l [G] when partial_o is non-null.
using FlashDecodeFn = void (*)(const FlashItem* items, int64_t n, void* scratch);

#if defined(MLAOPS_ARCH_X86_64)
// The AVX-512 kernel (the attention family lists it, kernels/cpu/attention/attn.h).
FlashDecodeFn flash_decode_kernel_avx512();
#endif

// The group size the kernels run a group of G query heads per KV head as: the next power of two
// (G <= 16).
inline int64_t flash_decode_padded_group(int64_t G) {
  int64_t p = 1;
  while (p < G) p *= 2;
  return p;
}

// Scratch bytes of a group of n items of shape (G, QD, VD, fp16) (rows of the padded group).
int64_t flash_decode_scratch_bytes(int64_t n, int64_t G, int64_t QD, int64_t VD, bool fp16);

// Shared by the kernels: keys per online-softmax step and the scratch layout of a group with
// nG = n * Gp rows (Gp = flash_decode_padded_group(G), row r = head * Gp + g).
inline constexpr int64_t kFlashDecodeBlock = 32;
struct FlashDecodeScratch {
  float* o;          // [nG, VDp] fp32 accumulators, VDp = VD rounded up to 32
  float* s;          // [kFlashDecodeBlock + 16, nG] scores, then fp32 P (fp16 operands)
  uint32_t* p;       // [kFlashDecodeBlock / 2, nG] bf16 P pairs (key 2p low, 2p + 1 high)
  float* m;          // [nG] running max
  float* l;          // [nG] running sum
  float* alpha;      // [nG] rescale of the current block
  float* q;          // [nG, QD] fp32 query (fp16 operands); bf16 operands: the packed query
                     // [QDp / 32, nG, 32] bf16 (QDp = QD rounded up to 32, zero padded)
  int64_t* k_off;    // [2, kFlashDecodeBlock] row offsets (elements): this block's keys, the next's
  int64_t* v_off;    // [2, kFlashDecodeBlock]
};
FlashDecodeScratch flash_decode_scratch(int64_t n, int64_t G, int64_t QD, int64_t VD, bool fp16, void* scratch);

// ---- INT8 (or packed INT4) key / value with antiquant, read in place (no dequantised copy) ----
// K_deq[t][d] = (K[t][d] + k_offset[d]) * k_scale[d] per head, V likewise. The kernel folds the key
// parameters into the query, q'_d = q_d * k_scale_d, splits q' per row into an int16 and an int8
// slice (q' = alpha_q * (hi + 2^-7 lo), alpha_q = max|q'| / 32767) and takes the dot products with
// the INT8 rows exactly in int32 (vpdpwssd, vpdpbusd):
//   S = scale * (alpha_q * sum_d (hi_d + 2^-7 lo_d) K_d + sum_d q'_d k_offset_d).
// P = exp(S - m) is quantised to int16 (P * 32767, round to nearest) and P x V is exact in int32
// per block of keys; at the end O_d = v_scale_d * (O_d + v_offset_d * l). The dequantised values
// are therefore used unrounded, as the vendor's kernels use them
// (docs/ops/fused_infer_attention_score.md "KV antiquant").
// INT4 rows (int4): the packed nibbles (channel d: nibble d % 2 of byte d / 2, low first), read
// the same way; strides then in bytes as well. INT8 NZ caches (k.c0 = v.c0 = 32 < QD): chunk c of
// a row at c * c0_stride.
struct FlashDecodeI8 {
  FlashKv k, v;                      // addressing only (block ids, strides in bytes); base unused
  bool int4 = false;                 // packed INT4 rows (FIA-33)
  const int8_t* kb[16] = {};         // K / V base of each head
  const int8_t* vb[16] = {};
  const float* k_scale[16] = {};     // [QD] per head
  const float* k_offset[16] = {};    // [QD] per head (zeros when symmetric)
  const float* v_scale[16] = {};     // [VD]
  const float* v_offset[16] = {};    // [VD]
  // Per-token parameters (KV antiquant modes 1, 3, 4, 5; the value of key 0 + value 1), else null:
  // position t of head i at k_tok_scale[i][tk.row(t)] (floats; tk carries the block ids of the
  // paged modes 4 / 5); the per-channel arrays are then identity (scale 1, offset 0). Keys:
  // S_t = s_t * (scale * q . K_t + o_t * scale * sum_d q_d); values: P_t * s_t is requantised per
  // block to int16 against the block's largest |s_t|, and sum_t P_t s_t o_t added to every channel.
  FlashKv tk, tv;
  const float* k_tok_scale[16] = {};
  const float* k_tok_offset[16] = {};  // nullable
  const float* v_tok_scale[16] = {};
  const float* v_tok_offset[16] = {};  // nullable
};
// Runs a group of n items (the shape the attention family's INT8 row accepts) whose K / V are described by `kv`; items
// supply the query, G / QD / VD, the KV range, scale and the outputs (or partials).
using FlashDecodeI8Fn = void (*)(const FlashItem* items, int64_t n, const FlashDecodeI8& kv, void* scratch);
#if defined(MLAOPS_ARCH_X86_64)
// The AVX-512 VNNI kernel (the attention family lists it).
FlashDecodeI8Fn flash_decode_i8_kernel_avx512();
#endif
int64_t flash_decode_i8_scratch_bytes(int64_t n, int64_t G, int64_t QD, int64_t VD);

}  // namespace mlaops::kernels
