// A reusable plan of one operator call (docs/architecture.md).
//
// Every operator runs in two phases. Phase 1 (`<op>_plan`) applies every rule that does not
// depend on tensor contents and records what phase 2 will do: the work items, KV splits, head
// groups, the kernel chosen for each kind of item (with the reason the others were skipped) and
// the workspace layout. Phase 2 (`<op>_run`) binds tensors of the same shapes, dtypes,
// attributes and host arrays, validates what can change between the phases (tensor contents
// such as block ids, the data pointers' alignment and overlaps) and runs the plan; it decides
// nothing. A plan can be run any number of times, e.g. once per layer of a decode step.
//
//   mlaops::OpPlan plan;
//   MLAOPS_TRY(mlaops::fused_infer_attention_score_v4_plan(params, &plan));
//   std::vector<char> ws(plan.workspace_size());
//   for (layer ...) { params.query = ...; mlaops::fused_infer_attention_score_v4_run(plan, params, ws.data(), ws.size()); }
//
// MLAOPS_VERBOSE=1 prints each plan's explain() to stderr when it is made.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mlaops/export.h"

namespace mlaops {

namespace detail {
struct PlanState;  // the operator's plan (ops/), behind this handle
}

class MLAOPS_API OpPlan {
 public:
  OpPlan() noexcept;
  explicit OpPlan(std::unique_ptr<detail::PlanState> state) noexcept;
  ~OpPlan();
  OpPlan(OpPlan&&) noexcept;
  OpPlan& operator=(OpPlan&&) noexcept;
  OpPlan(const OpPlan&) = delete;
  OpPlan& operator=(const OpPlan&) = delete;

  // False for a default-constructed plan (or one whose planning failed).
  bool valid() const noexcept { return state_ != nullptr; }
  // The operator the plan is for ("fused_infer_attention_score_v4", ...; "" when not valid).
  const char* op() const noexcept;
  // Workspace bytes phase 2 needs (0 when nothing is computed or the plan is not valid).
  uint64_t workspace_size() const noexcept;
  // What phase 2 will do, in words: the work, the kernel of each kind of item and why the
  // other rows of its family were skipped, the workspace layout.
  std::string explain() const;

  const detail::PlanState* state() const noexcept { return state_.get(); }

 private:
  std::unique_ptr<detail::PlanState> state_;
};

}  // namespace mlaops
