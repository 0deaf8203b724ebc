// C ABI of MlaProlog: aclnnMlaPrologV2WeightNz* (aclnnop/aclnn_mla_prolog_v2_weight_nz.h) and
// the V1 aclnnMlaProlog* (aclnnop/aclnn_mla_prolog.h). Converts the aclTensor arguments into
// executor slots and plans with the vendor's shape ranges (ops/mla_prolog_plan.cpp); execute
// runs that plan on the slots as they are then bound (ops/mla_prolog.cpp).
#include <memory>
#include <string>

#include "aclnnop/aclnn_mla_prolog.h"
#include "aclnnop/aclnn_mla_prolog_v2_weight_nz.h"
#include "api/executor.h"
#include "core/error.h"
#include "ops/check_util.h"
#include "ops/mla_prolog.h"

namespace mlaops::api {
namespace {

constexpr const char* kOpV2 = "aclnnMlaPrologV2WeightNz";
constexpr const char* kOpV1 = "aclnnMlaProlog";

// Input slots in prototype order (the caches are in/out and count as inputs).
enum In {
  kTokenX, kWeightDq, kWeightUqQr, kWeightUk, kWeightDkvKr, kGammaCq, kGammaCkv, kRopeSin, kRopeCos, kCacheIndex,
  kKvCache, kKrCache, kDqsX, kDqsWDq, kDqsWUqQr, kDqsWDkvKr, kQsCkv, kQsCkr, kSmooth, kNumIn
};
enum Out { kQueryOut, kQueryRopeOut, kDqsQNopeOut, kNumOut };

const TensorView* opt(const TensorSlot& s) { return s.present ? &s.view : nullptr; }

// The params as seen through the executor's (re-bindable) slots.
MlaPrologParams params_from(const ExecutorState& st, double eps_cq, double eps_ckv, MlaPrologCacheMode mode) {
  const auto& in = st.inputs;
  MlaPrologParams p;
  p.token_x = in[kTokenX].view;
  p.weight_dq = in[kWeightDq].view;
  p.weight_uq_qr = in[kWeightUqQr].view;
  p.weight_uk = in[kWeightUk].view;
  p.weight_dkv_kr = in[kWeightDkvKr].view;
  p.rmsnorm_gamma_cq = in[kGammaCq].view;
  p.rmsnorm_gamma_ckv = in[kGammaCkv].view;
  p.rope_sin = in[kRopeSin].view;
  p.rope_cos = in[kRopeCos].view;
  p.cache_index = in[kCacheIndex].view;
  p.kv_cache = in[kKvCache].view;
  p.kr_cache = in[kKrCache].view;
  p.dequant_scale_x = opt(in[kDqsX]);
  p.dequant_scale_w_dq = opt(in[kDqsWDq]);
  p.dequant_scale_w_uq_qr = opt(in[kDqsWUqQr]);
  p.dequant_scale_w_dkv_kr = opt(in[kDqsWDkvKr]);
  p.quant_scale_ckv = opt(in[kQsCkv]);
  p.quant_scale_ckr = opt(in[kQsCkr]);
  p.smooth_scales_cq = opt(in[kSmooth]);
  p.rmsnorm_epsilon_cq = eps_cq;
  p.rmsnorm_epsilon_ckv = eps_ckv;
  p.cache_mode = mode;
  p.query_out = st.outputs[kQueryOut].view;
  p.query_rope_out = st.outputs[kQueryRopeOut].view;
  p.dequant_scale_q_nope_out = st.outputs.size() > kDqsQNopeOut ? opt(st.outputs[kDqsQNopeOut]) : nullptr;
  return p;
}

Status parse_cache_mode(const char* op, const char* s, MlaPrologCacheMode* mode) {
  if (s == nullptr) {
    *mode = MlaPrologCacheMode::kPaBsnd;
    return kSuccess;
  }
  bool truncated = false;
  const std::string v = check::bounded_string(s, 16, &truncated);
  for (const auto& row : mla_prolog_table::kCacheModes)
    if (!truncated && v == row.value) {
      *mode = row.mode;
      return kSuccess;
    }
  return fail(kParamInvalid, "%s: cacheModeOptional: MP-06 value; allowed {\"PA_BSND\", \"PA_NZ\"} or null, got \"%s%s\"",
              op, v.c_str(), truncated ? "..." : "");
}

aclnnStatus get_workspace_size(const char* op, bool v2, const aclTensor* const* inputs, const char* const* names,
                               const aclTensor* const* outputs, const char* const* out_names, int num_out,
                               double eps_cq, double eps_ckv, char* cache_mode, uint64_t* workspace_size,
                               aclOpExecutor** executor) {
  clear_last_error();
  if (workspace_size == nullptr || executor == nullptr)
    return fail(kParamNullptr, "%s: workspaceSize / executor: MP-01 out-pointer is null", op);
  auto st = std::make_shared<ExecutorState>();
  st->op = op;
  st->inputs.resize(kNumIn);
  st->outputs.resize(static_cast<size_t>(num_out));
  for (int i = 0; i < kNumIn; ++i) MLAOPS_TRY(bind_slot(inputs[i], op, names[i], i < kDqsX, &st->inputs[i]));
  for (int i = 0; i < num_out; ++i) MLAOPS_TRY(bind_slot(outputs[i], op, out_names[i], i < kDqsQNopeOut, &st->outputs[i]));
  MlaPrologCacheMode mode = MlaPrologCacheMode::kPaBsnd;
  MLAOPS_TRY(parse_cache_mode(op, cache_mode, &mode));
  const MlaPrologParams p = params_from(*st, eps_cq, eps_ckv, mode);
  MlaPrologCheckOptions o;
  o.op = op;
  o.v2 = v2;
  o.vendor_ranges = true;
  auto plan = std::make_shared<OpPlan>();
  MLAOPS_TRY(mla_prolog_make_plan(p, o, plan.get()));
  st->workspace_bytes = plan->workspace_size();
  st->run = [plan, eps_cq, eps_ckv, mode](const ExecutorState& s, void* ws, uint64_t size) {
    return mla_prolog_run(*plan, params_from(s, eps_cq, eps_ckv, mode), ws, size);
  };
  st->params = [eps_cq, eps_ckv, mode](const ExecutorState& s) {
    return CallParams(params_from(s, eps_cq, eps_ckv, mode));
  };
  *workspace_size = st->workspace_bytes;
  *executor = register_executor(std::move(st));
  return ACLNN_SUCCESS;
}

const char* const kInNames[kNumIn] = {
    "tokenX",         "weightDq",         "weightUqQr",   "weightUk",       "weightDkvKr",
    "rmsnormGammaCq", "rmsnormGammaCkv",  "ropeSin",      "ropeCos",        "cacheIndex",
    "kvCacheRef",     "krCacheRef",       "dequantScaleXOptional", "dequantScaleWDqOptional",
    "dequantScaleWUqQrOptional", "dequantScaleWDkvKrOptional", "quantScaleCkvOptional",
    "quantScaleCkrOptional", "smoothScalesCqOptional"};
const char* const kOutNames[kNumOut] = {"queryOut", "queryRopeOut", "dequantScaleQNopeOutOptional"};

}  // namespace
}  // namespace mlaops::api

extern "C" {

aclnnStatus aclnnMlaPrologV2WeightNzGetWorkspaceSize(
    const aclTensor* tokenX, const aclTensor* weightDq, const aclTensor* weightUqQr, const aclTensor* weightUk,
    const aclTensor* weightDkvKr, const aclTensor* rmsnormGammaCq, const aclTensor* rmsnormGammaCkv,
    const aclTensor* ropeSin, const aclTensor* ropeCos, const aclTensor* cacheIndex, aclTensor* kvCacheRef,
    aclTensor* krCacheRef, const aclTensor* dequantScaleXOptional, const aclTensor* dequantScaleWDqOptional,
    const aclTensor* dequantScaleWUqQrOptional, const aclTensor* dequantScaleWDkvKrOptional,
    const aclTensor* quantScaleCkvOptional, const aclTensor* quantScaleCkrOptional,
    const aclTensor* smoothScalesCqOptional, double rmsnormEpsilonCq, double rmsnormEpsilonCkv, char* cacheModeOptional,
    const aclTensor* queryOut, const aclTensor* queryRopeOut, const aclTensor* dequantScaleQNopeOutOptional,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const aclTensor* in[] = {tokenX,       weightDq,   weightUqQr,           weightUk,
                           weightDkvKr,  rmsnormGammaCq, rmsnormGammaCkv,  ropeSin,
                           ropeCos,      cacheIndex, kvCacheRef,           krCacheRef,
                           dequantScaleXOptional, dequantScaleWDqOptional, dequantScaleWUqQrOptional,
                           dequantScaleWDkvKrOptional, quantScaleCkvOptional, quantScaleCkrOptional,
                           smoothScalesCqOptional};
  const aclTensor* out[] = {queryOut, queryRopeOut, dequantScaleQNopeOutOptional};
  return mlaops::api::get_workspace_size(mlaops::api::kOpV2, true, in, mlaops::api::kInNames, out,
                                         mlaops::api::kOutNames, 3, rmsnormEpsilonCq, rmsnormEpsilonCkv,
                                         cacheModeOptional, workspaceSize, executor);
}

aclnnStatus aclnnMlaPrologV2WeightNz(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV2, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMlaPrologGetWorkspaceSize(
    const aclTensor* tokenX, const aclTensor* weightDq, const aclTensor* weightUqQr, const aclTensor* weightUk,
    const aclTensor* weightDkvKr, const aclTensor* rmsnormGammaCq, const aclTensor* rmsnormGammaCkv,
    const aclTensor* ropeSin, const aclTensor* ropeCos, const aclTensor* cacheIndex, aclTensor* kvCacheRef,
    aclTensor* krCacheRef, const aclTensor* dequantScaleXOptional, const aclTensor* dequantScaleWDqOptional,
    const aclTensor* dequantScaleWUqQrOptional, const aclTensor* dequantScaleWDkvKrOptional,
    const aclTensor* quantScaleCkvOptional, const aclTensor* quantScaleCkrOptional,
    const aclTensor* smoothScalesCqOptional, double rmsnormEpsilonCq, double rmsnormEpsilonCkv, char* cacheModeOptional,
    const aclTensor* queryOut, const aclTensor* queryRopeOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  const aclTensor* in[] = {tokenX,       weightDq,   weightUqQr,           weightUk,
                           weightDkvKr,  rmsnormGammaCq, rmsnormGammaCkv,  ropeSin,
                           ropeCos,      cacheIndex, kvCacheRef,           krCacheRef,
                           dequantScaleXOptional, dequantScaleWDqOptional, dequantScaleWUqQrOptional,
                           dequantScaleWDkvKrOptional, quantScaleCkvOptional, quantScaleCkrOptional,
                           smoothScalesCqOptional};
  const aclTensor* out[] = {queryOut, queryRopeOut};
  return mlaops::api::get_workspace_size(mlaops::api::kOpV1, false, in, mlaops::api::kInNames, out,
                                         mlaops::api::kOutNames, 2, rmsnormEpsilonCq, rmsnormEpsilonCkv,
                                         cacheModeOptional, workspaceSize, executor);
}

aclnnStatus aclnnMlaProlog(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV1, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
