// C ABI of MlaPreprocess: aclnnMlaPreprocessGetWorkspaceSize / aclnnMlaPreprocess
// (aclnnop/aclnn_mla_preprocess.h) and aclnnMlaPreprocessV2GetWorkspaceSize / aclnnMlaPreprocessV2
// (aclnnop/aclnn_mla_preprocess_v2.h, one more output: qDownOut). Both go through one function:
// it converts the aclTensor arguments into executor slots and plans with the vendor's ranges
// (ops/mla_preprocess/mla_preprocess_plan.cpp); execute runs that plan on the slots as they are then bound
// (ops/mla_preprocess/mla_preprocess_run.cpp), which re-checks the pointer rules.
//
// As CANN treats the call (docs/ops/mla_preprocess.md, "The aclnn layer"): every tensor of the
// prototype is required (161001 for null) except the few the documentation lets callers leave
// out when the mode does not read them; tensors a mode does not read are ignored; the epsilon
// attribute is ignored (every RmsNorm uses 1e-6, the vendor kernel's constant).
#include <memory>
#include <string>

#include "aclnnop/aclnn_mla_preprocess.h"
#include "aclnnop/aclnn_mla_preprocess_v2.h"
#include "api/runtime/executor.h"
#include "core/error.h"
#include "core/log.h"
#include "ops/mla_preprocess/mla_preprocess.h"

namespace mlaops::api {
namespace {

constexpr const char* kOp = "aclnnMlaPreprocess";
constexpr const char* kOpV2 = "aclnnMlaPreprocessV2";

// The vendor kernel's RmsNorm epsilon (the attribute is stored by the tiling but never read).
constexpr double kKernelEpsilon = 1e-6;

// Input slots in prototype order (the input caches are inputs; the cache outputs are outputs).
enum In {
  kInput, kGamma0, kBeta0, kQuantScale0, kQuantOffset0, kWdqkv, kDeScale0, kBias0, kGamma1, kBeta1, kQuantScale1,
  kQuantOffset1, kWuq, kDeScale1, kBias1, kGamma2, kCos, kSin, kWuk, kKvCache, kKvCacheRope, kSlotMapping,
  kCtkvScale, kQNopeScale, kNumIn
};
enum Out { kQOut, kKvCacheOut, kQRopeOut, kKrCacheOut, kQDownOut, kNumOutV2 };
constexpr int kNumOutV1 = kQDownOut;

const char* const kInNames[kNumIn] = {"input",  "gamma0",   "beta0",      "quantScale0", "quantOffset0", "wdqkv",
                                      "deScale0", "bias0",  "gamma1",     "beta1",       "quantScale1",  "quantOffset1",
                                      "wuq",    "deScale1", "bias1",      "gamma2",      "cos",          "sin",
                                      "wuk",    "kvCache",  "kvCacheRope", "slotMapping", "ctkvScale",   "qNopeScale"};
const char* const kOutNames[kNumOutV2] = {"qOut", "kvCacheOut", "qRopeOut", "krCacheOut", "qDownOut"};

const TensorView* opt(const TensorSlot& s) { return s.present ? &s.view : nullptr; }

// The row of kAclnnNullable for a parameter, or null: a tensor that may be null when its feature is off.
const mla_preprocess_table::PresenceRow* nullable(const char* name) {
  for (const auto& r : mla_preprocess_table::kAclnnNullable)
    if (std::string(r.param) == name) return &r;
  return nullptr;
}

// The attributes as passed (phase 1), carried to phase 2.
struct Attrs {
  int64_t wdq_dim, q_rope_dim, k_rope_dim;
  double epsilon;  // ignored (kKernelEpsilon)
  int64_t q_rotary_coeff, k_rotary_coeff;
  bool transpose_wdq, transpose_wuq, transpose_wuk;
  int64_t cache_mode, quant_mode;
  bool do_rms_norm;
  int64_t wdkv_split_count;
  bool v2 = false;
  bool q_down_out_flag = false;  // V2
};

// The params as seen through the executor's (re-bindable) slots, every slot as bound (the ops
// layer drops the ones the modes do not read).
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
  p.epsilon = kKernelEpsilon;
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
  p.q_down_out = a.v2 && a.q_down_out_flag ? opt(out[kQDownOut]) : nullptr;  // flag false: not written
  return p;
}

aclnnStatus get_workspace_size(const aclTensor* const* inputs, const aclTensor* const* outputs, const Attrs& a,
                               uint64_t* workspace_size, aclOpExecutor** executor) {
  const char* op = a.v2 ? kOpV2 : kOp;
  const int num_out = a.v2 ? kNumOutV2 : kNumOutV1;
  if (workspace_size == nullptr || executor == nullptr)
    return fail(kParamNullptr, "%s: workspaceSize / executor: MPP-01 out-pointer is null", op);
  // MPP-06 / MPP-07 on the raw int64 values (the enums are 32-bit)
  MLAOPS_TRY(mla_preprocess_check_modes(op, a.cache_mode, a.quant_mode));
  // MPP-01: the op definition's REQUIRED tensors (the nullable ones once the modes are known)
  for (int i = 0; i < kNumIn; ++i)
    MLAOPS_CHECK(inputs[i] != nullptr || nullable(kInNames[i]) != nullptr, kParamNullptr,
                 "%s: %s: MPP-01 required tensor is null", op, kInNames[i]);
  for (int i = 0; i < num_out; ++i)
    MLAOPS_CHECK(outputs[i] != nullptr || nullable(kOutNames[i]) != nullptr, kParamNullptr,
                 "%s: %s: MPP-01 required tensor is null", op, kOutNames[i]);
  auto st = std::make_shared<ExecutorState>();
  st->op = op;
  st->inputs.resize(kNumIn);
  st->outputs.resize(static_cast<size_t>(num_out));
  for (int i = 0; i < kNumIn; ++i) MLAOPS_TRY(bind_slot(inputs[i], op, kInNames[i], false, &st->inputs[i]));
  for (int i = 0; i < num_out; ++i) MLAOPS_TRY(bind_slot(outputs[i], op, kOutNames[i], false, &st->outputs[i]));
  const MlaPreprocessParams p = params_from(*st, a);
  for (const auto& r : mla_preprocess_table::kAclnnNullable) {
    const bool given = [&] {
      for (int i = 0; i < kNumIn; ++i)
        if (std::string(kInNames[i]) == r.param) return st->inputs[i].present;
      for (int i = 0; i < num_out; ++i)
        if (std::string(kOutNames[i]) == r.param) return st->outputs[i].present;
      return true;
    }();
    MLAOPS_CHECK(given || !mla_preprocess_feature_on(p, r.needs), kParamNullptr,
                 "%s: %s: MPP-01 required tensor is null (cacheMode %lld, quantMode %lld, wdqkv %s); it may be null "
                 "only where the modes do not read it",
                 op, r.param, (long long)a.cache_mode, (long long)a.quant_mode, dtype_name(p.wdqkv.dtype));
  }
  if (a.epsilon != kKernelEpsilon)
    MLAOPS_LOG(LogLevel::kInfo, kLogOp, "%s: epsilon %g is ignored: every RmsNorm uses %g, as the vendor kernel does",
               op, a.epsilon, kKernelEpsilon);
  if (p.kv_cache_out.data != p.kv_cache.data ||
      (mla_preprocess_has_rope_outputs(p.cache_mode) && p.kv_cache_rope != nullptr && p.kr_cache_out != nullptr &&
       p.kr_cache_out->data != p.kv_cache_rope->data))
    MLAOPS_LOG(LogLevel::kWarning, kLogOp,
               "%s: kvCacheOut / krCacheOut are not kvCache / kvCacheRope: the new rows go to the outputs only (placed "
               "by the input caches' geometry), the input caches stay unchanged and nothing is copied from them",
               op);
  MlaPreprocessCheckOptions o;
  o.op = op;
  o.vendor_ranges = true;
  o.v2 = a.v2;
  auto plan = std::make_shared<OpPlan>();
  MLAOPS_TRY(mla_preprocess_make_plan(p, o, plan.get()));
  st->workspace_bytes = plan->workspace_size();
  // The slots may have been re-bound (aclSetInputTensorAddr): the run re-checks the pointer
  // rules (alignment, aliasing) and that every row written fits the cache outputs.
  st->run = [plan, a](const ExecutorState& s, void* ws, uint64_t size) {
    return mla_preprocess_run(*plan, params_from(s, a), ws, size);
  };
  st->params = [a](const ExecutorState& s) {
    return CallParams(mla_preprocess_unread_dropped(params_from(s, a)));
  };
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
  using namespace mlaops::api;  // NOLINT(google-build-using-namespace)
  return guarded(kOp, __FILE__, __LINE__, [&]() -> aclnnStatus {
    const aclTensor* in[] = {input,       gamma0,       beta0, quantScale0, quantOffset0, wdqkv,       deScale0,
                             bias0,       gamma1,       beta1, quantScale1, quantOffset1, wuq,         deScale1,
                             bias1,       gamma2,       cos,   sin,         wuk,          kvCache,     kvCacheRope,
                             slotMapping, ctkvScale,    qNopeScale};
    const aclTensor* out[] = {qOut, kvCacheOut, qRopeOut, krCacheOut};
    const Attrs a{wdqDim,       qRopeDim,     kRopeDim,     epsilon,   qRotaryCoeff, kRotaryCoeff, transposeWdq,
                  transposeWuq, transposeWuk, cacheMode,    quantMode, doRmsNorm,    wdkvSplitCount};
    return get_workspace_size(in, out, a, workspaceSize, executor);
  });
}

aclnnStatus aclnnMlaPreprocess(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOp, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMlaPreprocessV2GetWorkspaceSize(
    const aclTensor* input, const aclTensor* gamma0, const aclTensor* beta0, const aclTensor* quantScale0,
    const aclTensor* quantOffset0, const aclTensor* wdqkv, const aclTensor* deScale0, const aclTensor* bias0,
    const aclTensor* gamma1, const aclTensor* beta1, const aclTensor* quantScale1, const aclTensor* quantOffset1,
    const aclTensor* wuq, const aclTensor* deScale1, const aclTensor* bias1, const aclTensor* gamma2,
    const aclTensor* cos, const aclTensor* sin, const aclTensor* wuk, const aclTensor* kvCache,
    const aclTensor* kvCacheRope, const aclTensor* slotMapping, const aclTensor* ctkvScale,
    const aclTensor* qNopeScale, int64_t wdqDim, int64_t qRopeDim, int64_t kRopeDim, double epsilon,
    int64_t qRotaryCoeff, int64_t kRotaryCoeff, bool transposeWdq, bool transposeWuq, bool transposeWuk,
    int64_t cacheMode, int64_t quantMode, bool doRmsNorm, int64_t wdkvSplitCount, bool qDownOutFlag,
    const aclTensor* qOut, const aclTensor* kvCacheOut, const aclTensor* qRopeOut, const aclTensor* krCacheOut,
    const aclTensor* qDownOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT(google-build-using-namespace)
  return guarded(kOpV2, __FILE__, __LINE__, [&]() -> aclnnStatus {
    const aclTensor* in[] = {input,       gamma0,       beta0, quantScale0, quantOffset0, wdqkv,       deScale0,
                             bias0,       gamma1,       beta1, quantScale1, quantOffset1, wuq,         deScale1,
                             bias1,       gamma2,       cos,   sin,         wuk,          kvCache,     kvCacheRope,
                             slotMapping, ctkvScale,    qNopeScale};
    const aclTensor* out[] = {qOut, kvCacheOut, qRopeOut, krCacheOut, qDownOut};
    const Attrs a{wdqDim,       qRopeDim,     kRopeDim,     epsilon,   qRotaryCoeff, kRotaryCoeff, transposeWdq,
                  transposeWuq, transposeWuk, cacheMode,    quantMode, doRmsNorm,    wdkvSplitCount,
                  true,         qDownOutFlag};
    return get_workspace_size(in, out, a, workspaceSize, executor);
  });
}

aclnnStatus aclnnMlaPreprocessV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV2, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
