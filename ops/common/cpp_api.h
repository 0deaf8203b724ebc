// The wrappers every operator's C++ API builds on its two phases (include/mlaops/plan.h;
// docs/architecture.md): `<op>_workspace_size` plans the call and reports the plan's workspace
// bytes, the one-shot `<op>` plans and runs once. Each operator passes its own plan and run
// functions (templates, so the calls stay direct).
#pragma once

#include <cstdint>

#include "core/error.h"
#include "mlaops/plan.h"

namespace mlaops {

// `*workspace_size` (checked non-null by the caller, whose message names its rule) = the workspace
// bytes of the plan `plan_fn(p, &plan)` makes.
template <class Params, class PlanFn>
Status cpp_api_workspace_size(const Params& p, uint64_t* workspace_size, PlanFn plan_fn) {
  OpPlan plan;
  MLAOPS_TRY(plan_fn(p, &plan));
  *workspace_size = plan.workspace_size();
  return kSuccess;
}

// Plans `p` (`plan_fn(p, &plan)`) and runs the plan once (`run_fn(plan, p, workspace,
// workspace_size)`).
template <class Params, class PlanFn, class RunFn>
Status cpp_api_one_shot(const Params& p, void* workspace, uint64_t workspace_size, PlanFn plan_fn, RunFn run_fn) {
  OpPlan plan;
  MLAOPS_TRY(plan_fn(p, &plan));
  return run_fn(plan, p, workspace, workspace_size);
}

}  // namespace mlaops
