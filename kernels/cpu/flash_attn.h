// Flash attention (online softmax, fp32 state) over one work item of FusedInferAttentionScore:
// the G query heads that share one KV head, R consecutive query rows of one batch, and a range of
// KV positions. Inner products run on the bf16 panel GEMM (kernels/cpu/gemm.h) of the active
// ISA; FP16 operands are split exactly into bf16 hi + lo parts (x = hi + lo) so FP16 inputs keep
// their precision on the bf16 dot-product units (3 GEMM terms: hi*hi + hi*lo + lo*hi).
//
// Raw pointers and validated sizes only: the operator (ops/fused_infer_attention_score_v4.cpp)
// has checked every shape, length and block id before calling.
#pragma once

#include <cstdint>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cpu/transpose.h"

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
  FlashKv k, kr, v;   // kr used when DR > 0
  int64_t kv_begin = 0, kv_end = 0;  // positions [kv_begin, kv_end) of this item
  float scale = 1.0f;
  // Mask of row i = row0 + r (batch-relative) and column j: valid iff
  //   i + lo_delta <= j <= i + hi_delta   and   (mask == null or mask[i * mask_i_stride + j * mask_j_stride] == 0).
  int64_t row0 = 0;
  int64_t lo_delta = 0, hi_delta = 0;  // clamped to +-2^62 by the caller
  const uint8_t* mask = nullptr;       // BOOL / INT8 / UINT8 bytes, already offset to the batch
  int64_t mask_i_stride = 0, mask_j_stride = 0;
  // Final output (partial_o == null): row (g, r) at out + g * out_n_stride + r * out_s_stride
  // [VD] in the operand dtype; lse (nullable) at lse + g * lse_n_stride + r * lse_s_stride.
  uint16_t* out = nullptr;
  int64_t out_n_stride = 0, out_s_stride = 0;
  float* lse = nullptr;
  int64_t lse_n_stride = 0, lse_s_stride = 0;
  // Partial output of a KV split (flash-decoding): unnormalised O [G*R, VD], running max and
  // sum [G*R] (row index g * R + r). Merged by flash_merge.
  float* partial_o = nullptr;
  float* partial_m = nullptr;
  float* partial_l = nullptr;
};

// Scratch geometry of one thread (bytes from flash_scratch_bytes, 64-byte aligned base).
struct FlashShape {
  int64_t M = 0;       // G * R
  int64_t R = 0;
  int64_t QD = 0, DR = 0, VD = 0;
  int64_t tile = 64;   // KV positions per block of the panel path (multiple of 16; the lane
                       // path uses lanes::kTile)
  bool fp16 = false;
  // Lane path, BF16: KV positions per dense copy chunk (0: none). The operator sets it when one
  // head's key rows lie far apart (a cache with many heads per slot): the chunk's K / rope K / V
  // rows are then copied into a contiguous per-thread buffer before the tiles read them.
  int64_t copy_rows = 0;
};
int64_t flash_scratch_bytes(const FlashShape& s);

namespace lanes {
struct Geo;
}
// The lane-major path of items with >= 16 query rows (flash_attn_lanes.h): runs the KV tiles of
// one item, or of a group of items over adjacent heads (false: the group does not qualify).
using FlashLanesFn = void (*)(const FlashItem& it, const lanes::Geo& geo, char* scratch);
using FlashLanesGroupFn = bool (*)(const FlashItem* items, int64_t n, const lanes::Geo& geo, char* const* scratches);

// The kernel tables of one ISA level the work items use. `lanes` is set where the lane-major
// kernel exists (AVX-512 BF16); items with fewer rows, and every item elsewhere, take the panel
// path (GEMMs + softmax rows).
struct FlashKernels {
  const GemmKernels* gemm = nullptr;
  const SoftmaxKernels* softmax = nullptr;
  const ConvertKernels* convert = nullptr;
  Transpose16Fn transpose16 = nullptr;
  FlashLanesFn lanes = nullptr;
  FlashLanesGroupFn lanes_group = nullptr;
};
FlashKernels flash_kernels(Isa isa);

// Runs one item on the calling thread with `scratch` (flash_scratch_bytes(shape) bytes).
void flash_attn_item(const FlashItem& it, const FlashShape& shape, const FlashKernels& k, void* scratch);

// Items of adjacent KV heads that run together on the lane path with a dense copy (the copy then
// reads one contiguous run of the heads' channels per position instead of each head's slice):
// at most this many, and the scratch bytes of a group of n.
int64_t flash_group_max_items(const FlashShape& s);
int64_t flash_group_scratch_bytes(const FlashShape& s, int64_t n);
// Runs n items (consecutive KV heads of one batch and query block) with `scratch`
// (flash_group_scratch_bytes(shape, n) bytes): together where the lane kernel's group applies,
// else one by one.
void flash_attn_group(const FlashItem* items, int64_t n, const FlashShape& shape, const FlashKernels& k, void* scratch);

// Merges `splits` partials (each [M, VD] O, [M] m, [M] l, consecutive for split 0..splits-1 with
// strides o_split_stride / ml_split_stride floats) into the final rows of `it` (out / lse).
void flash_merge(const FlashItem& it, int64_t M, int64_t splits, const float* o, const float* m, const float* l,
                 int64_t o_split_stride, int64_t ml_split_stride);

// Writes output rows as zeros and lse as +inf: rows (g, r) of `it` for g < G, r < R.
void flash_write_empty(const FlashItem& it);

}  // namespace mlaops::kernels
