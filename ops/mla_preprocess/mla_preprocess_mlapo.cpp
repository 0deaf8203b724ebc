// The serving stacks' MLAPO op (mlaops/mlapo.h, docs/ops/mla_preprocess.md "The serving stacks'
// MLAPO op"): its params as MlaPreprocess's (mlapo_as_mla_preprocess), then MlaPreprocess's rules,
// plan and run with the options' `mlapo` form (stage 1 the quant alone, optional beta1 and cos /
// sin, MPP-20).
#include "core/error.h"
#include "ops/common/cpp_api.h"
#include "ops/mla_preprocess/mla_preprocess.h"

namespace mlaops {

Status mlapo_make_plan(const MlapoParams& p, const char* op, OpPlan* plan) {
  MlaPreprocessCheckOptions o;
  o.op = op;
  o.mlapo = true;
  return mla_preprocess_make_plan(mlapo_as_mla_preprocess(p), o, plan);
}

Status mlapo_plan(const MlapoParams& p, OpPlan* plan) {
  MLAOPS_CHECK(plan != nullptr, kParamNullptr, "mlapo: plan: out-pointer is null");
  return mlapo_make_plan(p, kMlapoOp, plan);
}

Status mlapo_run(const OpPlan& plan, const MlapoParams& params, void* workspace, uint64_t workspace_size) {
  const MlaPreprocessPlan* pl = nullptr;
  MLAOPS_TRY(check::plan_state(plan, kMlapoOp, &pl));
  return mla_preprocess_execute(*pl, mla_preprocess_unread_dropped(mlapo_as_mla_preprocess(params)), workspace, workspace_size);
}

Status mlapo_workspace_size(const MlapoParams& p, uint64_t* workspace_size) {
  MLAOPS_CHECK(workspace_size != nullptr, kParamNullptr, "mlapo: workspace_size: out-pointer is null");
  return cpp_api_workspace_size(p, workspace_size, mlapo_plan);
}

Status mlapo(const MlapoParams& p, void* workspace, uint64_t workspace_size) {
  return cpp_api_one_shot(p, workspace, workspace_size, mlapo_plan, mlapo_run);
}

}  // namespace mlaops
