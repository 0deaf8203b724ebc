// The serving stacks' MLAPO op (mlaops/mlapo.h, docs/ops/mla_preprocess.md "The serving stacks'
// MLAPO op"): its params as MlaPreprocess's, then MlaPreprocess's rules, plan and run with the
// options' `mlapo` form (stage 1 the quant alone, optional beta1 and cos / sin, MPP-20).
#include "core/error.h"
#include "ops/mla_preprocess.h"

namespace mlaops {
namespace {

TensorView or_absent(const TensorView* t) { return t != nullptr ? *t : TensorView{}; }

}  // namespace

MlaPreprocessParams mlapo_params(const MlapoParams& m) {
  MlaPreprocessParams p;
  p.input = m.input;  // gamma0 / beta0: absent (no first-stage RmsNorm)
  p.quant_scale0 = m.quant_scale0;
  p.quant_offset0 = m.quant_offset0;
  p.wdqkv = m.wdqkv;
  p.de_scale0 = m.de_scale0;
  p.bias0 = m.bias0;
  p.gamma1 = m.gamma1;
  p.beta1 = or_absent(m.beta1);
  p.quant_scale1 = m.quant_scale1;
  p.quant_offset1 = m.quant_offset1;
  p.wuq = m.wuq;
  p.de_scale1 = m.de_scale1;
  p.bias1 = m.bias1;
  p.gamma2 = m.gamma2;
  p.cos = or_absent(m.cos);
  p.sin = or_absent(m.sin);
  p.wuk = m.wuk;
  p.kv_cache = m.kv_cache;
  p.kv_cache_rope = m.kv_cache_rope;
  p.slot_mapping = m.slot_mapping;
  p.ctkv_scale = m.ctkv_scale;
  p.q_nope_scale = m.q_nope_scale;
  p.epsilon = 1e-6;  // the kernel's constant
  p.cache_mode = m.cache_mode;
  p.quant_mode = m.quant_mode;
  p.do_rms_norm = m.wdqkv.dtype == DType::kInt8;  // the quantised path follows the weights
  p.q_out = m.q_out;
  p.kv_cache_out = m.kv_cache_out;
  p.q_rope_out = m.q_rope_out;
  p.kr_cache_out = m.kr_cache_out;
  p.q_down_out = m.q_down_out;
  return p;
}

Status mlapo_make_plan(const MlapoParams& p, const char* op, OpPlan* plan) {
  MlaPreprocessCheckOptions o;
  o.op = op;
  o.mlapo = true;
  return mla_preprocess_make_plan(mlapo_params(p), o, plan);
}

Status mlapo_plan(const MlapoParams& p, OpPlan* plan) {
  MLAOPS_CHECK(plan != nullptr, kParamNullptr, "mlapo: plan: out-pointer is null");
  return mlapo_make_plan(p, kMlapoOp, plan);
}

Status mlapo_run(const OpPlan& plan, const MlapoParams& params, void* workspace, uint64_t workspace_size) {
  const MlaPreprocessPlan* pl = nullptr;
  MLAOPS_TRY(check::plan_state(plan, kMlapoOp, &pl));
  return mla_preprocess_execute(*pl, mla_preprocess_unread_dropped(mlapo_params(params)), workspace, workspace_size);
}

Status mlapo_workspace_size(const MlapoParams& p, uint64_t* workspace_size) {
  MLAOPS_CHECK(workspace_size != nullptr, kParamNullptr, "mlapo: workspace_size: out-pointer is null");
  OpPlan plan;
  MLAOPS_TRY(mlapo_plan(p, &plan));
  *workspace_size = plan.workspace_size();
  return kSuccess;
}

Status mlapo(const MlapoParams& p, void* workspace, uint64_t workspace_size) {
  OpPlan plan;
  MLAOPS_TRY(mlapo_plan(p, &plan));
  return mlapo_run(plan, p, workspace, workspace_size);
}

}  // namespace mlaops
