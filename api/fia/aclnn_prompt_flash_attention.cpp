// C ABI of aclnnPromptFlashAttention (V1), V2 and V3 (aclnnop/aclnn_prompt_flash_attention
// {,_v2,_v3}.h), run as FusedInferAttentionScoreV4 (api/fia/fia_entry.cpp). The inner operator's 12
// inputs are V4's first 12 slots in the same order; key and value are single tensors (a
// one-element list for V4). Every V4-only input is null, blockSize 0, antiquantMode and the KV /
// query quant modes 0, no softmaxLse. Forced per version, as the vendor's wrappers do: V1 and V2
// ignore pseShift and run with innerPrecise 1; V1 also with sparseMode 0 and without
// actualSeqLengthsKv and the quantisation inputs. V1 and V2 are deprecated by the vendor in favour
// of V3 (one WARNING on the first call).
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "api/runtime/executor.h"
#include "api/fia/fia_entry.h"

namespace mlaops::api {
namespace {

constexpr const char* kOpV1 = "aclnnPromptFlashAttention";
constexpr const char* kOpV2 = "aclnnPromptFlashAttentionV2";
constexpr const char* kOpV3 = "aclnnPromptFlashAttentionV3";

// The inner operator's inputs (PromptFlashAttention's definition order).
const FiaEntryInput kPfaInputs[] = {
    {kFiaQuery, "query"},
    {kFiaKey, "key"},
    {kFiaValue, "value"},
    {kFiaPse, "pseShift"},
    {kFiaMask, "attenMask"},
    {kFiaAslQ, "actualSeqLengths"},
    {kFiaAslKv, "actualSeqLengthsKv"},
    {kFiaDeq1, "deqScale1"},
    {kFiaQs1, "quantScale1"},
    {kFiaDeq2, "deqScale2"},
    {kFiaQs2, "quantScale2"},
    {kFiaQo2, "quantOffset2"},
};

// The arguments every version has; V1's forced values.
FiaEntry pfa_entry(const char* op, const aclTensor* query, const aclTensor* key, const aclTensor* value,
                   const aclTensor* mask, const aclIntArray* asl, int64_t numHeads, double scaleValue,
                   int64_t preTokens, int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads,
                   const aclTensor* attentionOut) {
  FiaEntry e;
  e.op = op;
  e.family = FiaFamily::kPfa;
  e.inputs = kPfaInputs;
  e.num_inputs = sizeof(kPfaInputs) / sizeof(kPfaInputs[0]);
  e.int32_kv_is_int4 = false;
  e.tensor[kFiaQuery] = query;
  e.tensor[kFiaKey] = key;
  e.tensor[kFiaValue] = value;
  e.tensor[kFiaMask] = mask;
  e.asl_q = asl;
  e.num_heads = numHeads;
  e.scale = scaleValue;
  e.pre = preTokens;
  e.next = nextTokens;
  e.input_layout = inputLayout;
  e.num_kv_heads = numKeyValueHeads;
  e.sparse = 0;
  e.inner = 1;
  e.attention_out = attentionOut;
  return e;
}

// The V2 additions.
void set_v2(FiaEntry* e, const aclIntArray* asl_kv, const aclTensor* deq1, const aclTensor* qs1,
            const aclTensor* deq2, const aclTensor* qs2, const aclTensor* qo2, int64_t sparseMode) {
  e->asl_kv = asl_kv;
  e->tensor[kFiaDeq1] = deq1;
  e->tensor[kFiaQs1] = qs1;
  e->tensor[kFiaDeq2] = deq2;
  e->tensor[kFiaQs2] = qs2;
  e->tensor[kFiaQo2] = qo2;
  e->sparse = sparseMode;
}

}  // namespace
}  // namespace mlaops::api

extern "C" {

aclnnStatus aclnnPromptFlashAttentionGetWorkspaceSize(const aclTensor* query, const aclTensor* key,
                                                      const aclTensor* value, const aclTensor* pseShift,
                                                      const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
                                                      int64_t numHeads, double scaleValue, int64_t preTokens,
                                                      int64_t nextTokens, char* inputLayout, int64_t numKeyValueHeads,
                                                      const aclTensor* attentionOut, uint64_t* workspaceSize,
                                                      aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV1, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV1, kOpV3);
    (void)pseShift;  // ignored by V1 (the vendor's wrapper passes null)
    const FiaEntry e = pfa_entry(kOpV1, query, key, value, attenMask, actualSeqLengths, numHeads, scaleValue,
                                 preTokens, nextTokens, inputLayout, numKeyValueHeads, attentionOut);
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnPromptFlashAttention(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                      const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV1, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnPromptFlashAttentionV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclIntArray* actualSeqLengthsKv,
    const aclTensor* deqScale1, const aclTensor* quantScale1, const aclTensor* deqScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens,
    char* inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, const aclTensor* attentionOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV2, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV2, kOpV3);
    (void)pseShift;  // ignored by V2 (the vendor's wrapper passes null)
    FiaEntry e = pfa_entry(kOpV2, query, key, value, attenMask, actualSeqLengths, numHeads, scaleValue, preTokens,
                           nextTokens, inputLayout, numKeyValueHeads, attentionOut);
    set_v2(&e, actualSeqLengthsKv, deqScale1, quantScale1, deqScale2, quantScale2, quantOffset2, sparseMode);
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnPromptFlashAttentionV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                        const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV2, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnPromptFlashAttentionV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclIntArray* actualSeqLengthsKv,
    const aclTensor* deqScale1, const aclTensor* quantScale1, const aclTensor* deqScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens,
    char* inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV3, __FILE__, __LINE__, [&]() -> aclnnStatus {
    FiaEntry e = pfa_entry(kOpV3, query, key, value, attenMask, actualSeqLengths, numHeads, scaleValue, preTokens,
                           nextTokens, inputLayout, numKeyValueHeads, attentionOut);
    set_v2(&e, actualSeqLengthsKv, deqScale1, quantScale1, deqScale2, quantScale2, quantOffset2, sparseMode);
    e.tensor[kFiaPse] = pseShift;
    e.inner = innerPrecise;
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnPromptFlashAttentionV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                        const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV3, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
