// Tensor-list KV of FusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md
// "Tensor-list KV"): key and value are lists of B tensors, element b holding batch b alone with
// its own sequence extent S_b: BSH (1, S_b, KV_N * D), BSND (1, S_b, KV_N, D), BNSD
// (1, KV_N, S_b, D); N and D equal across the list, key and value element b the same S_b.
// actualSeqLengthsKv (when given) is read per batch against S_b (default S_b). A list of one
// tensor is the ordinary contiguous call.
//
// Run: only the addressing changes. The KV rows of batch b are read from element b (its own data
// pointer) with the layout's position stride and the head stride of that element (BNSD: S_b x
// the position stride); every kernel gets the same raw rows as for a contiguous cache. The call
// is planned as the padded contiguous call (B, max S_b) with actualSeqLengthsKv = the per-batch
// lengths, so the work items, splits and kernels are those of that call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

struct FiaCall;
struct FiaCheckOptions;
struct FiaKvStrides;

struct FiaTensorList {
  bool on = false;
  std::vector<int64_t> s;  // S_b of element b
  bool head_by_s = false;  // BNSD: the head stride of element b is S_b x the position stride
};

// More than one tensor in key or value: the call is a tensor-list call.
inline bool fia_tensor_list_requested(const FiaParams& p) { return p.key.size() > 1 || p.value.size() > 1; }

// Existence group: every element given (FIA-01, 161001), key and value lists of the same length
// (FIA-51).
Status fia_tensor_list_check_existence(const FiaParams& p, const char* op);

// The key / value rules of a tensor-list call, in place of the contiguous ones (check_kv): the
// exclusions (FIA-50), element shapes, dtypes and formats (FIA-51, FIA-04), B <= 256 (FIA-51),
// the per-batch lengths (FIA-11 against S_b). Fills c->k, c->v (strides of the padded call),
// c->kv_s = max S_b, c->act_kv, c->kv_start, c->tl and *kd (the key head dim).
Status fia_tensor_list_check_kv(const FiaParams& p, const FiaCheckOptions& o, int64_t query_batch, FiaCall* c, int64_t* kd);

// The pointer rules for every element (FIA-17 data and density; FIA-18 no overlap with the
// outputs), checked when planning and again when a plan runs on new tensors.
Status fia_tensor_list_check_pointers(const FiaParams& p, const FiaCall& c, const char* op);

// "key[1]": the name of element i of a tensor list in messages.
std::string fia_tensor_list_elem_name(const char* list, size_t i);

// The tensor batch b reads key (value) rows from: element b of a list, else the one tensor.
inline const TensorView& fia_kv_of(const std::vector<TensorView>& list, const FiaTensorList& tl, int64_t b) {
  return list[tl.on ? static_cast<size_t>(b) : 0];
}

// The head stride of batch b's element (elements): the call's, or S_b x the position stride.
inline int64_t fia_tensor_list_head_stride(const FiaTensorList& tl, int64_t h_stride, int64_t slot_stride, int64_t b) {
  return tl.on && tl.head_by_s ? tl.s[static_cast<size_t>(b)] * slot_stride : h_stride;
}

}  // namespace mlaops
