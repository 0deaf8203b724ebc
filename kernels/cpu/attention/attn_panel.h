// Flash attention (online softmax, fp32 state) over one work item of FusedInferAttentionScore:
// the G query heads that share one KV head, R consecutive query rows of one batch, and a range of
// KV positions. Inner products run on the bf16 panel GEMM (kernels/cpu/gemm/gemm.h) of the active
// ISA; FP16 operands are split exactly into bf16 hi + lo parts (x = hi + lo) so FP16 inputs keep
// their precision on the bf16 dot-product units (3 GEMM terms: hi*hi + hi*lo + lo*hi).
//
// Raw pointers and validated sizes only: the operator (ops/fia/fia_run.cpp)
// has checked every shape, length and block id before calling.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention/attn_item.h"
#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/gemm/gemm.h"
#include "kernels/cpu/attention/softmax.h"
#include "kernels/cpu/layout/transpose.h"

namespace mlaops::kernels {

// Scratch geometry of one thread (bytes from flash_scratch_bytes, 64-byte aligned base).
struct FlashShape {
  int64_t M = 0;       // G * R
  int64_t R = 0;
  int64_t QD = 0, DR = 0, VD = 0;
  int64_t tile = 64;   // KV positions per block of the panel path (multiple of 16; the lane
                       // path uses lanes::kTile)
  bool fp16 = false;
  bool bias = false;  // the items carry an additive bias (FlashItem::bias): the lane path's bias tile
  // Lane path, BF16: KV positions per dense copy chunk (0: none). The operator sets it when one
  // head's key rows lie far apart (a cache with many heads per slot): the chunk's K / rope K / V
  // rows are then copied into a contiguous per-thread buffer before the tiles read them.
  int64_t copy_rows = 0;
};
int64_t flash_scratch_bytes(const FlashShape& s);

namespace lanes {
struct Geo;
}
// The lane-major path of items with >= 16 query rows (attn_lanes.h): runs the KV tiles of
// one item, or of a group of items over adjacent heads (false: the group does not qualify).
using FlashLanesFn = void (*)(const FlashItem& it, const lanes::Geo& geo, char* scratch);
using FlashLanesGroupFn = bool (*)(const FlashItem* items, int64_t n, const lanes::Geo& geo, char* const* scratches);

// The panel path's kernels: the GEMM, softmax, convert and transpose rows of one ISA level.
struct FlashKernels {
  GemmFn gemm_bf16 = nullptr;  // the gemm_bf16 and gemm_f16 rows for its 16-column panels
  GemmFn gemm_f16 = nullptr;
  const SoftmaxKernels* softmax = nullptr;
  const ConvertKernels* convert = nullptr;
  Transpose16Fn transpose16 = nullptr;
};
FlashKernels flash_kernels(Isa isa);

// The panel path: one item on the calling thread with `scratch` (flash_scratch_bytes(shape) bytes).
void flash_attn_panel(const FlashItem& it, const FlashShape& shape, const FlashKernels& k, void* scratch);
// The lane path (it.G * it.R >= 16 rows): one item through the lane kernel `fn`.
void flash_attn_lanes(const FlashItem& it, const FlashShape& shape, FlashLanesFn fn, void* scratch);

// Items of adjacent KV heads that run together on the lane path with a dense copy (the copy then
// reads one contiguous run of the heads' channels per position instead of each head's slice):
// at most this many, and the scratch bytes of a group of n.
int64_t flash_group_max_items(const FlashShape& s);
int64_t flash_group_scratch_bytes(const FlashShape& s, int64_t n);
// Runs n items (consecutive KV heads of one batch and query block) together through the lane
// group kernel `fn` with `scratch` (flash_group_scratch_bytes(shape, n) bytes); false, having
// written nothing, when the group does not qualify.
bool flash_attn_lanes_group(const FlashItem* items, int64_t n, const FlashShape& shape, FlashLanesGroupFn fn,
                            void* scratch);

}  // namespace mlaops::kernels
