// The state behind mlaops::OpPlan (include/mlaops/plan.h): each operator derives its plan from
// PlanState; the signature records the call the plan was made for, so phase 2 can refuse
// tensors of other shapes, dtypes, attributes or host arrays.
#pragma once

#include <cstdint>
#include <string>

#include "core/signature.h"

namespace mlaops::detail {

struct PlanState {
  virtual ~PlanState() = default;
  const char* op = "";            // operator name
  uint64_t workspace_bytes = 0;
  CallSignature signature;        // what the plan was made for
  virtual std::string explain() const = 0;
};

}  // namespace mlaops::detail

namespace mlaops {

// Prints `plan`'s explanation to stderr when MLAOPS_VERBOSE is set to a non-empty value other
// than "0" (read once).
bool verbose_enabled();
void verbose_plan(const detail::PlanState& plan);

}  // namespace mlaops
