// C ABI of FusedInferAttentionScoreV4 (aclnnop/aclnn_fused_infer_attention_score_v4.h): converts
// the aclTensor / aclTensorList / aclIntArray arguments into executor slots and host copies,
// validates with the vendor's ranges (ops/fused_infer_attention_score_v4_check.cpp) and runs
// ops/fused_infer_attention_score_v4.cpp in phase 2.
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "api/executor.h"
#include "api/objects.h"
#include "core/error.h"
#include "ops/check_util.h"
#include "ops/fused_infer_attention_score_v4.h"

namespace mlaops::api {
namespace {

constexpr const char* kOp = "aclnnFusedInferAttentionScoreV4";
constexpr size_t kLayoutMax = 32;  // longest accepted value is 9 characters

// Input slots in prototype order (the three int arrays keep their positions as unbound slots).
enum In {
  kQuery, kKey, kValue, kPse, kMask, kAslQ, kAslKv, kDeq1, kQs1, kDeq2, kQs2, kQo2, kAqScale, kAqOffset, kBlockTable,
  kQPad, kKvPad, kKAqScale, kKAqOffset, kVAqScale, kVAqOffset, kKPrefix, kVPrefix, kPrefixLen, kQRope, kKRope,
  kKRopeAqScale, kDqsQuery, kSink, kNumIn
};
enum Out { kAttnOut, kLse, kNumOut };

const char* const kInNames[kNumIn] = {
    "query", "key", "value", "pseShiftOptional", "attenMaskOptional", "actualSeqLengthsOptional",
    "actualSeqLengthsKvOptional", "deqScale1Optional", "quantScale1Optional", "deqScale2Optional",
    "quantScale2Optional", "quantOffset2Optional", "antiquantScaleOptional", "antiquantOffsetOptional",
    "blockTableOptional", "queryPaddingSizeOptional", "kvPaddingSizeOptional", "keyAntiquantScaleOptional",
    "keyAntiquantOffsetOptional", "valueAntiquantScaleOptional", "valueAntiquantOffsetOptional",
    "keySharedPrefixOptional", "valueSharedPrefixOptional", "actualSharedPrefixLenOptional", "queryRopeOptional",
    "keyRopeOptional", "keyRopeAntiquantScaleOptional", "dequantScaleQueryOptional", "learnableSinkOptional"};

// Host-side copies taken in phase 1 (int arrays, layout string) and the scalar attributes.
struct Host {
  bool has_asl_q = false, has_asl_kv = false, has_prefix = false;
  std::vector<int64_t> asl_q, asl_kv, prefix;
  std::string layout;
  int64_t num_heads = 0, pre = 0, next = 0, num_kv_heads = 0, sparse = 0, inner = 0, block_size = 0;
  int64_t antiquant_mode = 0, key_aq_mode = 0, value_aq_mode = 0, query_quant_mode = 0;
  double scale = 1.0;
  bool lse_flag = false;
};

const TensorView* opt(const TensorSlot& s) { return s.present ? &s.view : nullptr; }

FiaParams params_from(const ExecutorState& st, const Host& h) {
  const auto& in = st.inputs;
  FiaParams p;
  p.query = in[kQuery].view;
  p.key = in[kKey].list;
  p.value = in[kValue].list;
  p.pse_shift = opt(in[kPse]);
  p.atten_mask = opt(in[kMask]);
  p.actual_seq_lengths = h.has_asl_q ? &h.asl_q : nullptr;
  p.actual_seq_lengths_kv = h.has_asl_kv ? &h.asl_kv : nullptr;
  p.deq_scale1 = opt(in[kDeq1]);
  p.quant_scale1 = opt(in[kQs1]);
  p.deq_scale2 = opt(in[kDeq2]);
  p.quant_scale2 = opt(in[kQs2]);
  p.quant_offset2 = opt(in[kQo2]);
  p.antiquant_scale = opt(in[kAqScale]);
  p.antiquant_offset = opt(in[kAqOffset]);
  p.block_table = opt(in[kBlockTable]);
  p.query_padding_size = opt(in[kQPad]);
  p.kv_padding_size = opt(in[kKvPad]);
  p.key_antiquant_scale = opt(in[kKAqScale]);
  p.key_antiquant_offset = opt(in[kKAqOffset]);
  p.value_antiquant_scale = opt(in[kVAqScale]);
  p.value_antiquant_offset = opt(in[kVAqOffset]);
  p.key_shared_prefix = opt(in[kKPrefix]);
  p.value_shared_prefix = opt(in[kVPrefix]);
  p.actual_shared_prefix_len = h.has_prefix ? &h.prefix : nullptr;
  p.query_rope = opt(in[kQRope]);
  p.key_rope = opt(in[kKRope]);
  p.key_rope_antiquant_scale = opt(in[kKRopeAqScale]);
  p.dequant_scale_query = opt(in[kDqsQuery]);
  p.learnable_sink = opt(in[kSink]);
  p.num_heads = h.num_heads;
  p.scale_value = h.scale;
  p.pre_tokens = h.pre;
  p.next_tokens = h.next;
  p.input_layout = h.layout;
  p.num_key_value_heads = h.num_kv_heads;
  p.sparse_mode = h.sparse;
  p.inner_precise = h.inner;
  p.block_size = h.block_size;
  p.antiquant_mode = h.antiquant_mode;
  p.softmax_lse_flag = h.lse_flag;
  p.key_antiquant_mode = h.key_aq_mode;
  p.value_antiquant_mode = h.value_aq_mode;
  p.query_quant_mode = h.query_quant_mode;
  p.attention_out = st.outputs[kAttnOut].view;
  p.softmax_lse = opt(st.outputs[kLse]);
  return p;
}

Status copy_int_array(const aclIntArray* a, const char* name, bool* has, std::vector<int64_t>* out) {
  *has = a != nullptr;
  if (a == nullptr) return kSuccess;
  MLAOPS_CHECK(is_live(a, ObjKind::kIntArray), kParamInvalid,
               "%s: %s: FIA-01 not a live aclIntArray (destroyed, or never created by aclCreateIntArray)", kOp, name);
  *out = a->values;
  return kSuccess;
}

}  // namespace
}  // namespace mlaops::api

extern "C" {

aclnnStatus aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShiftOptional,
    const aclTensor* attenMaskOptional, const aclIntArray* actualSeqLengthsOptional,
    const aclIntArray* actualSeqLengthsKvOptional, const aclTensor* deqScale1Optional,
    const aclTensor* quantScale1Optional, const aclTensor* deqScale2Optional, const aclTensor* quantScale2Optional,
    const aclTensor* quantOffset2Optional, const aclTensor* antiquantScaleOptional,
    const aclTensor* antiquantOffsetOptional, const aclTensor* blockTableOptional,
    const aclTensor* queryPaddingSizeOptional, const aclTensor* kvPaddingSizeOptional,
    const aclTensor* keyAntiquantScaleOptional, const aclTensor* keyAntiquantOffsetOptional,
    const aclTensor* valueAntiquantScaleOptional, const aclTensor* valueAntiquantOffsetOptional,
    const aclTensor* keySharedPrefixOptional, const aclTensor* valueSharedPrefixOptional,
    const aclIntArray* actualSharedPrefixLenOptional, const aclTensor* queryRopeOptional,
    const aclTensor* keyRopeOptional, const aclTensor* keyRopeAntiquantScaleOptional,
    const aclTensor* dequantScaleQueryOptional, const aclTensor* learnableSinkOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    int64_t keyAntiquantMode, int64_t valueAntiquantMode, int64_t queryQuantMode, const aclTensor* attentionOut,
    const aclTensor* softmaxLse, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops;       // NOLINT
  using namespace mlaops::api;  // NOLINT
  clear_last_error();
  if (workspaceSize == nullptr || executor == nullptr)
    return fail(kParamNullptr, "%s: workspaceSize / executor: FIA-01 out-pointer is null", kOp);
  const aclTensor* tensors[kNumIn] = {
      query, nullptr, nullptr, pseShiftOptional, attenMaskOptional, nullptr, nullptr, deqScale1Optional,
      quantScale1Optional, deqScale2Optional, quantScale2Optional, quantOffset2Optional, antiquantScaleOptional,
      antiquantOffsetOptional, blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
      keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
      valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional, nullptr, queryRopeOptional,
      keyRopeOptional, keyRopeAntiquantScaleOptional, dequantScaleQueryOptional, learnableSinkOptional};
  // FIA-01 required arguments (named with the rule before the generic binding).
  const struct {
    const void* ptr;
    const char* name;
  } required[] = {{query, "query"}, {key, "key"}, {value, "value"}, {attentionOut, "attentionOut"}};
  for (const auto& r : required)
    if (r.ptr == nullptr) return fail(kParamNullptr, "%s: %s: FIA-01 required argument is null", kOp, r.name);
  auto st = std::make_shared<ExecutorState>();
  st->op = kOp;
  st->inputs.resize(kNumIn);
  st->outputs.resize(kNumOut);
  for (int i = 0; i < kNumIn; ++i) {
    if (i == kKey || i == kValue || i == kAslQ || i == kAslKv || i == kPrefixLen) continue;
    MLAOPS_TRY(bind_slot(tensors[i], kOp, kInNames[i], i == kQuery, &st->inputs[static_cast<size_t>(i)]));
  }
  MLAOPS_TRY(bind_list_slot(key, kOp, "key", true, &st->inputs[kKey]));
  MLAOPS_TRY(bind_list_slot(value, kOp, "value", true, &st->inputs[kValue]));
  MLAOPS_TRY(bind_slot(attentionOut, kOp, "attentionOut", true, &st->outputs[kAttnOut]));
  // softmaxLseFlag false: the argument is ignored (the vendor substitutes a placeholder).
  if (softmaxLseFlag) {
    if (softmaxLse == nullptr)
      return fail(kParamNullptr, "%s: softmaxLse: FIA-01 required when softmaxLseFlag is true; allowed a tensor, got null",
                  kOp);
    MLAOPS_TRY(bind_slot(softmaxLse, kOp, "softmaxLse", true, &st->outputs[kLse]));
  }
  auto host = std::make_shared<Host>();
  MLAOPS_TRY(copy_int_array(actualSeqLengthsOptional, "actualSeqLengthsOptional", &host->has_asl_q, &host->asl_q));
  MLAOPS_TRY(copy_int_array(actualSeqLengthsKvOptional, "actualSeqLengthsKvOptional", &host->has_asl_kv,
                            &host->asl_kv));
  MLAOPS_TRY(copy_int_array(actualSharedPrefixLenOptional, "actualSharedPrefixLenOptional", &host->has_prefix,
                            &host->prefix));
  if (inputLayout == nullptr)
    return fail(kParamInvalid, "%s: inputLayout: FIA-05 value; allowed a layout string such as \"BSH\", got null", kOp);
  bool truncated = false;
  host->layout = check::bounded_string(inputLayout, kLayoutMax, &truncated);
  if (truncated)
    return fail(kParamInvalid,
                "%s: inputLayout: FIA-05 value; allowed a NUL-terminated layout string of at most %zu characters, got "
                "\"%.32s...\" (unterminated or too long)",
                kOp, kLayoutMax - 1, host->layout.c_str());
  host->num_heads = numHeads;
  host->scale = scaleValue;
  host->pre = preTokens;
  host->next = nextTokens;
  host->num_kv_heads = numKeyValueHeads;
  host->sparse = sparseMode;
  host->inner = innerPrecise;
  host->block_size = blockSize;
  host->antiquant_mode = antiquantMode;
  host->lse_flag = softmaxLseFlag;
  host->key_aq_mode = keyAntiquantMode;
  host->value_aq_mode = valueAntiquantMode;
  host->query_quant_mode = queryQuantMode;

  const FiaParams p = params_from(*st, *host);
  FiaCheckOptions o;
  o.op = kOp;
  o.vendor_ranges = true;
  FiaCall call;
  MLAOPS_TRY(fia_check(p, o, &call));
  MLAOPS_TRY(fia_check_pointers(p, call, kOp));
  auto plan = std::make_shared<FiaPlan>();
  MLAOPS_TRY(fia_plan(call, kOp, plan.get()));
  st->workspace_bytes = static_cast<uint64_t>(plan->workspace_bytes);
  st->run = [plan, host](const ExecutorState& s, void* ws, uint64_t size) {
    return fia_run(params_from(s, *host), *plan, ws, size, s.op.c_str());
  };
  st->params = [host](const ExecutorState& s) { return CallParams(params_from(s, *host)); };
  *workspaceSize = st->workspace_bytes;
  *executor = register_executor(std::move(st));
  return ACLNN_SUCCESS;
}

aclnnStatus aclnnFusedInferAttentionScoreV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOp, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
