// C ABI of aclnnFusedInferAttentionScore (V1), V2 and V3 (aclnnop/aclnn_fused_infer_attention_score
// {,_v2,_v3}.h): each fills the V4 slots it has (V1 0..16, V2 0..23, V3 0..26, same order), leaves
// the later ones null and the later modes 0, and runs V4's phase 1 (api/fia/fia_entry.cpp). V1 does
// not read an INT32 key / value as packed INT4 (rejected as a dtype). All three are deprecated by
// the vendor in favour of V4 (one WARNING on the first call).
#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "api/runtime/executor.h"
#include "api/fia/fia_entry.h"

namespace mlaops::api {
namespace {

constexpr const char* kOpV1 = "aclnnFusedInferAttentionScore";
constexpr const char* kOpV2 = "aclnnFusedInferAttentionScoreV2";
constexpr const char* kOpV3 = "aclnnFusedInferAttentionScoreV3";
constexpr const char* kSuccessor = "aclnnFusedInferAttentionScoreV4";

// The V1 arguments (slots 0..16 and the V1 attributes), shared by the three versions.
void fill_v1(FiaEntry* e, const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
             const aclTensor* pse, const aclTensor* mask, const aclIntArray* asl, const aclIntArray* asl_kv,
             const aclTensor* deq1, const aclTensor* qs1, const aclTensor* deq2, const aclTensor* qs2,
             const aclTensor* qo2, const aclTensor* aq_scale, const aclTensor* aq_offset, const aclTensor* block_table,
             const aclTensor* q_pad, const aclTensor* kv_pad, int64_t numHeads, double scaleValue, int64_t preTokens,
             int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
             int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, const aclTensor* attentionOut,
             const aclTensor* softmaxLse) {
  e->tensor[kFiaQuery] = query;
  e->key_list = key;
  e->value_list = value;
  e->tensor[kFiaPse] = pse;
  e->tensor[kFiaMask] = mask;
  e->asl_q = asl;
  e->asl_kv = asl_kv;
  e->tensor[kFiaDeq1] = deq1;
  e->tensor[kFiaQs1] = qs1;
  e->tensor[kFiaDeq2] = deq2;
  e->tensor[kFiaQs2] = qs2;
  e->tensor[kFiaQo2] = qo2;
  e->tensor[kFiaAntiquantScale] = aq_scale;
  e->tensor[kFiaAntiquantOffset] = aq_offset;
  e->tensor[kFiaBlockTable] = block_table;
  e->tensor[kFiaQPad] = q_pad;
  e->tensor[kFiaKvPad] = kv_pad;
  e->num_heads = numHeads;
  e->scale = scaleValue;
  e->pre = preTokens;
  e->next = nextTokens;
  e->input_layout = inputLayout;
  e->num_kv_heads = numKeyValueHeads;
  e->sparse = sparseMode;
  e->inner = innerPrecise;
  e->block_size = blockSize;
  e->antiquant_mode = antiquantMode;
  e->lse_flag = softmaxLseFlag;
  e->attention_out = attentionOut;
  e->softmax_lse = softmaxLse;
}

// The V2 additions (slots 17..23 and the two KV antiquant modes).
void fill_v2(FiaEntry* e, const aclTensor* k_aq_scale, const aclTensor* k_aq_offset, const aclTensor* v_aq_scale,
             const aclTensor* v_aq_offset, const aclTensor* k_prefix, const aclTensor* v_prefix,
             const aclIntArray* prefix_len, int64_t keyAntiquantMode, int64_t valueAntiquantMode) {
  e->tensor[kFiaKAqScale] = k_aq_scale;
  e->tensor[kFiaKAqOffset] = k_aq_offset;
  e->tensor[kFiaVAqScale] = v_aq_scale;
  e->tensor[kFiaVAqOffset] = v_aq_offset;
  e->tensor[kFiaKPrefix] = k_prefix;
  e->tensor[kFiaVPrefix] = v_prefix;
  e->prefix_len = prefix_len;
  e->key_aq_mode = keyAntiquantMode;
  e->value_aq_mode = valueAntiquantMode;
}

}  // namespace
}  // namespace mlaops::api

extern "C" {

aclnnStatus aclnnFusedInferAttentionScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclIntArray* actualSeqLengthsKv,
    const aclTensor* deqScale1, const aclTensor* quantScale1, const aclTensor* deqScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blockTable, const aclTensor* queryPaddingSize, const aclTensor* kvPaddingSize, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    const aclTensor* attentionOut, const aclTensor* softmaxLse, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV1, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV1, kSuccessor);
    FiaEntry e;
    e.op = kOpV1;
    e.inputs = kFiaV1Inputs;
    e.int32_kv_is_int4 = false;
    fill_v1(&e, query, key, value, pseShift, attenMask, actualSeqLengths, actualSeqLengthsKv, deqScale1, quantScale1,
            deqScale2, quantScale2, quantOffset2, antiquantScale, antiquantOffset, blockTable, queryPaddingSize,
            kvPaddingSize, numHeads, scaleValue, preTokens, nextTokens, inputLayout, numKeyValueHeads, sparseMode,
            innerPrecise, blockSize, antiquantMode, softmaxLseFlag, attentionOut, softmaxLse);
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnFusedInferAttentionScore(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV1, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
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
    const aclIntArray* actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue, int64_t preTokens,
    int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, const aclTensor* attentionOut, const aclTensor* softmaxLse, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV2, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV2, kSuccessor);
    FiaEntry e;
    e.op = kOpV2;
    fill_v1(&e, query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
            actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional, quantScale2Optional,
            quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional, blockTableOptional,
            queryPaddingSizeOptional, kvPaddingSizeOptional, numHeads, scaleValue, preTokens, nextTokens, inputLayout,
            numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode, softmaxLseFlag, attentionOut,
            softmaxLse);
    fill_v2(&e, keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
            valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
            actualSharedPrefixLenOptional, keyAntiquantMode, valueAntiquantMode);
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnFusedInferAttentionScoreV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV2, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
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
    const aclTensor* keyRopeOptional, const aclTensor* keyRopeAntiquantScaleOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    int64_t keyAntiquantMode, int64_t valueAntiquantMode, const aclTensor* attentionOut, const aclTensor* softmaxLse,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV3, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV3, kSuccessor);
    FiaEntry e;
    e.op = kOpV3;
    fill_v1(&e, query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
            actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional, quantScale2Optional,
            quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional, blockTableOptional,
            queryPaddingSizeOptional, kvPaddingSizeOptional, numHeads, scaleValue, preTokens, nextTokens, inputLayout,
            numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode, softmaxLseFlag, attentionOut,
            softmaxLse);
    fill_v2(&e, keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
            valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
            actualSharedPrefixLenOptional, keyAntiquantMode, valueAntiquantMode);
    e.tensor[kFiaQRope] = queryRopeOptional;
    e.tensor[kFiaKRope] = keyRopeOptional;
    e.tensor[kFiaKRopeAqScale] = keyRopeAntiquantScaleOptional;
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnFusedInferAttentionScoreV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV3, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
