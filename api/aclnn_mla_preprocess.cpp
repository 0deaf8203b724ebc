// C ABI of MlaPreprocess: aclnnMlaPreprocessGetWorkspaceSize / aclnnMlaPreprocess
// (aclnnop/aclnn_mla_preprocess.h). Converts the aclTensor arguments into executor slots and
// plans with the vendor's ranges (ops/mla_preprocess_plan.cpp); execute runs that plan on the
// slots as they are then bound (ops/mla_preprocess.cpp), which re-checks the pointer rules.
#include <memory>

#include "aclnnop/aclnn_mla_preprocess.h"
#include "api/executor.h"
#include "core/error.h"
#include "ops/mla_preprocess.h"

namespace mlaops::api {
namespace {

constexpr const char* kOp = "aclnnMlaPreprocess";

// Input slots in prototype order (the caches are in/out and count as inputs).
enum In {
  kInput, kGamma0, kBeta0, kQuantScale0, kQuantOffset0, kWdqkv, kDeScale0, kBias0, kGamma1, kBeta1, kQuantScale1,
  kQuantOffset1, kWuq, kDeScale1, kBias1, kGamma2, kCos, kSin, kWuk, kKvCache, kKvCacheRope, kSlotMapping,
  kCtkvScale, kQNopeScale, kNumIn
};
enum Out { kQOut, kKvCacheOut, kQRopeOut, kKrCacheOut, kNumOut };

// Required inputs / outputs (the others may be null: absent in a mode, see docs/ops/mla_preprocess.md).
constexpr bool kInRequired[kNumIn] = {true,  true,  true, false, false, true,  false, false,
                                      true,  true,  false, false, true, false, false, true,
                                      true,  true,  true,  true,  false, true, false, false};
constexpr bool kOutRequired[kNumOut] = {true, true, false, false};

const char* const kInNames[kNumIn] = {"input",  "gamma0",   "beta0",      "quantScale0", "quantOffset0", "wdqkv",
                                      "deScale0", "bias0",  "gamma1",     "beta1",       "quantScale1",  "quantOffset1",
                                      "wuq",    "deScale1", "bias1",      "gamma2",      "cos",          "sin",
                                      "wuk",    "kvCache",  "kvCacheRope", "slotMapping", "ctkvScale",   "qNopeScale"};
const char* const kOutNames[kNumOut] = {"qOut", "kvCacheOut", "qRopeOut", "krCacheOut"};

const TensorView* opt(const TensorSlot& s) { return s.present ? &s.view : nullptr; }

// The attributes as passed (phase 1), carried to phase 2.
struct Attrs {
  int64_t wdq_dim, q_rope_dim, k_rope_dim;
  double epsilon;
  int64_t q_rotary_coeff, k_rotary_coeff;
  bool transpose_wdq, transpose_wuq, transpose_wuk;
  int64_t cache_mode, quant_mode;
  bool do_rms_norm;
  int64_t wdkv_split_count;
};

// The params as seen through the executor's (re-bindable) slots.
MlaPreprocessParams params_from(const ExecutorState& st, const Attrs& a) {
  const auto& in = st.inputs;
  const auto& out = st.outputs;
  MlaPreprocessParams p;
  p.input = in[kInput].view;
  p.gamma0 = in[kGamma0].view;
  p.beta0 = in[kBeta0].view;
  p.quant_scale0 = opt(in[kQuantScale0]);
  p.quant_offset0 = opt(in[kQuantOffset0]);
  p.wdqkv = in[kWdqkv].view;
  p.de_scale0 = opt(in[kDeScale0]);
  p.bias0 = opt(in[kBias0]);
  p.gamma1 = in[kGamma1].view;
  p.beta1 = in[kBeta1].view;
  p.quant_scale1 = opt(in[kQuantScale1]);
  p.quant_offset1 = opt(in[kQuantOffset1]);
  p.wuq = in[kWuq].view;
  p.de_scale1 = opt(in[kDeScale1]);
  p.bias1 = opt(in[kBias1]);
  p.gamma2 = in[kGamma2].view;
  p.cos = in[kCos].view;
  p.sin = in[kSin].view;
  p.wuk = in[kWuk].view;
  p.kv_cache = in[kKvCache].view;
  p.kv_cache_rope = opt(in[kKvCacheRope]);
  p.slot_mapping = in[kSlotMapping].view;
  p.ctkv_scale = opt(in[kCtkvScale]);
  p.q_nope_scale = opt(in[kQNopeScale]);
  p.wdq_dim = a.wdq_dim;
  p.q_rope_dim = a.q_rope_dim;
  p.k_rope_dim = a.k_rope_dim;
  p.epsilon = a.epsilon;
  p.q_rotary_coeff = a.q_rotary_coeff;
  p.k_rotary_coeff = a.k_rotary_coeff;
  p.transpose_wdq = a.transpose_wdq;
  p.transpose_wuq = a.transpose_wuq;
  p.transpose_wuk = a.transpose_wuk;
  // cacheMode / quantMode are range-checked (as int64) before they are converted
  p.cache_mode = static_cast<MlaPreprocessCacheMode>(a.cache_mode);
  p.quant_mode = static_cast<MlaPreprocessQuantMode>(a.quant_mode);
  p.do_rms_norm = a.do_rms_norm;
  p.wdkv_split_count = a.wdkv_split_count;
  p.q_out = out[kQOut].view;
  p.kv_cache_out = out[kKvCacheOut].view;
  p.q_rope_out = opt(out[kQRopeOut]);
  p.kr_cache_out = opt(out[kKrCacheOut]);
  return p;
}

aclnnStatus get_workspace_size(const aclTensor* const* inputs, const aclTensor* const* outputs, const Attrs& a,
                               uint64_t* workspace_size, aclOpExecutor** executor) {
  clear_last_error();
  if (workspace_size == nullptr || executor == nullptr)
    return fail(kParamNullptr, "%s: workspaceSize / executor: MPP-01 out-pointer is null", kOp);
  // MPP-06 / MPP-07 on the raw int64 values (the enums are 32-bit)
  MLAOPS_TRY(mla_preprocess_check_modes(kOp, a.cache_mode, a.quant_mode));
  auto st = std::make_shared<ExecutorState>();
  st->op = kOp;
  st->inputs.resize(kNumIn);
  st->outputs.resize(kNumOut);
  for (int i = 0; i < kNumIn; ++i)
    MLAOPS_CHECK(!kInRequired[i] || inputs[i] != nullptr, kParamNullptr, "%s: %s: MPP-01 required tensor is null", kOp,
                 kInNames[i]);
  for (int i = 0; i < kNumOut; ++i)
    MLAOPS_CHECK(!kOutRequired[i] || outputs[i] != nullptr, kParamNullptr, "%s: %s: MPP-01 required tensor is null",
                 kOp, kOutNames[i]);
  for (int i = 0; i < kNumIn; ++i) MLAOPS_TRY(bind_slot(inputs[i], kOp, kInNames[i], kInRequired[i], &st->inputs[i]));
  for (int i = 0; i < kNumOut; ++i)
    MLAOPS_TRY(bind_slot(outputs[i], kOp, kOutNames[i], kOutRequired[i], &st->outputs[i]));
  const MlaPreprocessParams p = params_from(*st, a);
  MlaPreprocessCheckOptions o;
  o.op = kOp;
  o.vendor_ranges = true;
  auto plan = std::make_shared<OpPlan>();
  MLAOPS_TRY(mla_preprocess_make_plan(p, o, plan.get()));
  st->workspace_bytes = plan->workspace_size();
  // The slots may have been re-bound (aclSetInputTensorAddr): the run re-checks the pointer
  // rules (alignment, the in-place identity of the caches, aliasing) with the current addresses.
  st->run = [plan, a](const ExecutorState& s, void* ws, uint64_t size) {
    return mla_preprocess_run(*plan, params_from(s, a), ws, size);
  };
  st->params = [a](const ExecutorState& s) { return CallParams(params_from(s, a)); };
  *workspace_size = st->workspace_bytes;
  *executor = register_executor(std::move(st));
  return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace mlaops::api

extern "C" {

aclnnStatus aclnnMlaPreprocessGetWorkspaceSize(
    const aclTensor* input, const aclTensor* gamma0, const aclTensor* beta0, const aclTensor* quantScale0,
    const aclTensor* quantOffset0, const aclTensor* wdqkv, const aclTensor* deScale0, const aclTensor* bias0,
    const aclTensor* gamma1, const aclTensor* beta1, const aclTensor* quantScale1, const aclTensor* quantOffset1,
    const aclTensor* wuq, const aclTensor* deScale1, const aclTensor* bias1, const aclTensor* gamma2,
    const aclTensor* cos, const aclTensor* sin, const aclTensor* wuk, const aclTensor* kvCache,
    const aclTensor* kvCacheRope, const aclTensor* slotMapping, const aclTensor* ctkvScale,
    const aclTensor* qNopeScale, int64_t wdqDim, int64_t qRopeDim, int64_t kRopeDim, double epsilon,
    int64_t qRotaryCoeff, int64_t kRotaryCoeff, bool transposeWdq, bool transposeWuq, bool transposeWuk,
    int64_t cacheMode, int64_t quantMode, bool doRmsNorm, int64_t wdkvSplitCount, aclTensor* qOut,
    aclTensor* kvCacheOut, aclTensor* qRopeOut, aclTensor* krCacheOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  const aclTensor* in[] = {input,       gamma0,       beta0, quantScale0, quantOffset0, wdqkv,       deScale0,
                           bias0,       gamma1,       beta1, quantScale1, quantOffset1, wuq,         deScale1,
                           bias1,       gamma2,       cos,   sin,         wuk,          kvCache,     kvCacheRope,
                           slotMapping, ctkvScale,    qNopeScale};
  const aclTensor* out[] = {qOut, kvCacheOut, qRopeOut, krCacheOut};
  const mlaops::api::Attrs a{wdqDim,       qRopeDim,     kRopeDim,     epsilon,   qRotaryCoeff, kRotaryCoeff,
                             transposeWdq, transposeWuq, transposeWuk, cacheMode, quantMode,    doRmsNorm,
                             wdkvSplitCount};
  return mlaops::api::get_workspace_size(in, out, a, workspaceSize, executor);
}

aclnnStatus aclnnMlaPreprocess(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOp, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
