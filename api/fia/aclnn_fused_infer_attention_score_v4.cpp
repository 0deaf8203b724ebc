// C ABI of FusedInferAttentionScoreV4 (aclnnop/aclnn_fused_infer_attention_score_v4.h): the
// arguments fill the V4 slots one to one; phase 1 is the family's shared one (api/fia/fia_entry.cpp:
// binding, host copies, ops/fia/fia_check.cpp, plan), phase 2 runs
// ops/fia/fia_run.cpp.
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "api/runtime/executor.h"
#include "api/fia/fia_entry.h"

namespace mlaops::api {
namespace {
constexpr const char* kOp = "aclnnFusedInferAttentionScoreV4";
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
  using namespace mlaops::api;  // NOLINT
  return guarded(kOp, __FILE__, __LINE__, [&]() -> aclnnStatus {
    FiaEntry e;
    e.op = kOp;
    const aclTensor* tensors[kFiaNumSlots] = {
        query, nullptr, nullptr, pseShiftOptional, attenMaskOptional, nullptr, nullptr, deqScale1Optional,
        quantScale1Optional, deqScale2Optional, quantScale2Optional, quantOffset2Optional, antiquantScaleOptional,
        antiquantOffsetOptional, blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
        keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
        valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional, nullptr, queryRopeOptional,
        keyRopeOptional, keyRopeAntiquantScaleOptional, dequantScaleQueryOptional, learnableSinkOptional};
    for (int i = 0; i < kFiaNumSlots; ++i) e.tensor[i] = tensors[i];
    e.key_list = key;
    e.value_list = value;
    e.asl_q = actualSeqLengthsOptional;
    e.asl_kv = actualSeqLengthsKvOptional;
    e.prefix_len = actualSharedPrefixLenOptional;
    e.num_heads = numHeads;
    e.scale = scaleValue;
    e.pre = preTokens;
    e.next = nextTokens;
    e.input_layout = inputLayout;
    e.num_kv_heads = numKeyValueHeads;
    e.sparse = sparseMode;
    e.inner = innerPrecise;
    e.block_size = blockSize;
    e.antiquant_mode = antiquantMode;
    e.lse_flag = softmaxLseFlag;
    e.key_aq_mode = keyAntiquantMode;
    e.value_aq_mode = valueAntiquantMode;
    e.query_quant_mode = queryQuantMode;
    e.attention_out = attentionOut;
    e.softmax_lse = softmaxLse;
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnFusedInferAttentionScoreV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOp, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
