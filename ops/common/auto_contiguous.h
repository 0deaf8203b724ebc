// Strided inputs read as their logical tensors (docs/c-api.md, "Strided inputs"), and index
// tensors read once (docs/c-api.md, "Index tensors").
//
// The vendor's op definitions mark the inputs of FusedInferAttentionScore, IncreFlashAttention,
// PromptFlashAttention's main inputs, MlaProlog and MlaPreprocess AutoContiguous: the framework
// takes any strided view for them (a slice, a transpose, zero strides from expand, a storage
// offset) and computes as on a contiguous copy. mlaops does the same, in the operator's own
// workspace:
//   phase 1  stage_plan: a dense buffer at the front of the workspace for every input view that
//            is not row-major dense; each view is turned into its dense shape (same data), so the
//            operator's rules and plan see the logical tensor;
//   phase 2  stage_run: before the operator reads anything, each such input is copied into its
//            buffer and the operator runs on the copy.
// A dense input is read in place (no copy, no workspace). Results are bit-identical to the call
// with contiguous tensors, since the operator sees the same values in the same layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// One input argument an operator reads as its logical view: the operator's own copy of the view
// (it is modified in place) and the parameter's name for messages ("query", "key[1]").
// `snapshot`: an index-like input (block table, slot mapping, cache index, padding sizes) that is
// copied even when dense, so that the operator checks and uses one copy of its values whatever the
// caller writes to the tensor while the call runs (docs/c-api.md "Index tensors").
struct StageSlot {
  std::string name;
  TensorView* view = nullptr;
  bool snapshot = false;
};

// An optional input of an operator's parameters (a pointer member; null: absent), its name, and
// whether it is an index tensor (StageSlot::snapshot).
struct OptionalInput {
  const TensorView** field = nullptr;
  const char* name = "";
  bool snapshot = false;
};

// Appends a slot for each given optional input: its view is copied into *store and the field
// repointed at the copy, so the caller's views are never changed. *store must have the capacity
// for every input of the call reserved beforehand (the slots point into it).
void add_optional_slots(std::span<const OptionalInput> inputs, std::vector<TensorView>* store,
                        std::vector<StageSlot>* slots);

// Where the non-dense inputs go in the workspace (bytes from its start).
struct StagePlan {
  struct Entry {
    size_t slot = 0;          // index in the operator's slot list
    int64_t offset = 0, bytes = 0;
    std::string name, shape, strides;  // for explain()
  };
  std::vector<Entry> entries;
  int64_t bytes = 0;  // in front of the operator's own workspace; a multiple of 64
  // "strided inputs copied to dense buffers: query [4, 16, 128] strides [...] -> bytes [0, 16384); ..."
  std::string explain() const;
};

// Phase 1. Plans a dense copy of every non-empty slot that is not row-major dense, or is a
// snapshot, and makes those views dense (strides recomputed, data pointer kept); dense and empty
// views, and FRACTAL_NZ tensors (read as their storage, under the operator's own rules), are left
// as they are. Fails
// with kParamInvalid and `rule` in the message (nothing planned) for a view that cannot be read
// as a logical tensor: a negative stride, a sub-byte element type, or a total that overflows int64.
Status stage_plan(const char* op, const char* rule, std::span<const StageSlot> slots, StagePlan* plan);

// Phase 2, before the operator's first read of any input: copies each planned slot into
// workspace + its offset and points the slot's view at the copy (dense strides). `slots` must
// list the same inputs as in phase 1. Fails with kParamInvalid (nothing copied) when a slot that
// is not dense has no buffer in the plan (its strides differ from the planned call), or when the
// workspace is shorter than plan.bytes or null.
Status stage_run(const char* op, const char* rule, std::span<const StageSlot> slots, const StagePlan& plan,
                 void* workspace, uint64_t workspace_size);

// The view's strides made row-major dense (dims, dtype, format and data unchanged).
void make_dense(TensorView* v);

}  // namespace mlaops
