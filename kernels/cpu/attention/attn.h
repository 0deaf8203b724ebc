// The attention family of the kernel registry (core/kernel_registry.h): the kernels that run
// FusedInferAttentionScore work items (kernels/cpu/attention/attn_item.h), best first:
//
//   attn_avx512_decode_i8  INT8 key / value read in place (per-channel antiquant), one query row
//                          per head (kernels/cpu/attention/attn_decode_avx512.cpp)
//   attn_avx512_decode     one query row per head, K / V rows read in place, the KV heads of a
//                          batch in lockstep (attn_decode_avx512.cpp)
//   attn_avx512_lanes      items of >= 16 query rows, the rows as zmm lanes (attn_lanes_avx512.cpp,
//                          attn_lanes.h)
//   attn_scalar_panel      every item (portable code): packed K^T panels and P x V on the GEMM,
//                          softmax and convert families' rows of the active level (attn_panel.cpp)
//
// The plan (ops/fia/fia_plan.cpp) describes each kind of item by an
// AttnShape and takes the first row that is allowed on this host and level and whose why_not()
// is null, recording the reasons of the rows it skipped. Every row supports the additive bias
// and the sink (the sink is applied by the combine step, attn_combine.h).
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"
#include "kernels/cpu/attention/attn_panel.h"
#include "kernels/cpu/attention/attn_decode.h"

namespace mlaops::kernels {

enum class AttnKind { kDecodeI8, kDecode, kLanes, kPanel };

// What the plan knows of a kind of work item (no pointers).
struct AttnShape {
  int64_t G = 1, R = 1, QD = 0, DR = 0, VD = 0;
  bool fp16 = false;
  bool kv_int8 = false;         // INT8 key / value rows read as they are
  bool channel_params = false;  // INT8: per-channel (or per-tensor / per-head) key and value parameters
  int64_t k_c0 = 0, v_c0 = 0;   // channels per contiguous chunk of the key / value rows (FlashKv::c0)
  bool explicit_mask = false;
  bool full_range = false;      // the mask rule keeps every position of the KV range for every row
  bool fp16_softmax = false;    // FlashItem::fp16_softmax (the panel and lane kinds run it)
};

struct AttnRow {
  AttnKind kind = AttnKind::kPanel;
  const char* (*why_not)(const AttnShape&) = nullptr;  // null result: the row runs this shape
  FlashDecodeFn decode = nullptr;
  FlashDecodeI8Fn decode_i8 = nullptr;
  FlashLanesFn lanes = nullptr;
  FlashLanesGroupFn lanes_group = nullptr;
};

const KernelTable<AttnRow>& attn_family();

// Runs n items (adjacent KV heads of one batch and query block, n > 1 only for the decode and
// lane kinds) on `row` with the thread's `scratch`: the one dispatch point of the attention
// kinds; the INT8 decode kind runs through the KV antiquant path (ops/fia/fia_antiquant.h) instead.
void attn_run(const AttnRow& row, const FlashKernels& panel, const FlashShape& shape, const FlashItem* items, int64_t n,
              void* scratch);

}  // namespace mlaops::kernels
