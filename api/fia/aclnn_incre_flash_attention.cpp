// C ABI of aclnnIncreFlashAttention (V1), V2, V3 and V4 (aclnnop/aclnn_incre_flash_attention
// {,_v2,_v3,_v4}.h), run as FusedInferAttentionScoreV4 (api/fia/fia_entry.cpp). The four versions fill
// one inner operator's 15 inputs (the executor's input order); the mapping onto V4:
// actualSeqLengths are the KV lengths (V4's actualSeqLengthsKv; V4's query lengths stay null),
// dequantScale1/2 -> deqScale1/2, blocktable -> blockTable, the antiquant pair with antiquantMode
// 0, sparseMode 0, preTokens = nextTokens = INT32_MAX, no softmaxLse. Forced per version, as the
// vendor's wrappers do: V1 and V2 ignore pseShift and run with innerPrecise 1, blockSize 0 and no
// antiquant or block table; V1 also without the quantisation inputs; V1..V3 without kvPaddingSize.
// V1..V3 are deprecated by the vendor in favour of V4 (one WARNING on the first call).
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "api/runtime/executor.h"
#include "api/fia/fia_entry.h"

namespace mlaops::api {
namespace {

constexpr const char* kOpV1 = "aclnnIncreFlashAttention";
constexpr const char* kOpV2 = "aclnnIncreFlashAttentionV2";
constexpr const char* kOpV3 = "aclnnIncreFlashAttentionV3";
constexpr const char* kOpV4 = "aclnnIncreFlashAttentionV4";

// The inner operator's inputs (IncreFlashAttention's definition order).
const FiaEntryInput kIfaInputs[] = {
    {kFiaQuery, "query"},
    {kFiaKey, "key"},
    {kFiaValue, "value"},
    {kFiaPse, "pseShift"},
    {kFiaMask, "attenMask"},
    {kFiaAslKv, "actualSeqLengths"},
    {kFiaDeq1, "dequantScale1"},
    {kFiaQs1, "quantScale1"},
    {kFiaDeq2, "dequantScale2"},
    {kFiaQs2, "quantScale2"},
    {kFiaQo2, "quantOffset2"},
    {kFiaAntiquantScale, "antiquantScale"},
    {kFiaAntiquantOffset, "antiquantOffset"},
    {kFiaBlockTable, "blocktable"},
    {kFiaKvPad, "kvPaddingSize"},
};

// The arguments every version has; V1's forced values.
FiaEntry ifa_entry(const char* op, const aclTensor* query, const aclTensorList* key, const aclTensorList* value,
                   const aclTensor* mask, const aclIntArray* asl, int64_t numHeads, double scaleValue,
                   char* inputLayout, int64_t numKeyValueHeads, const aclTensor* attentionOut) {
  FiaEntry e;
  e.op = op;
  e.family = FiaFamily::kIfa;
  e.inputs = kIfaInputs;
  e.num_inputs = sizeof(kIfaInputs) / sizeof(kIfaInputs[0]);
  e.int32_kv_is_int4 = false;
  e.tensor[kFiaQuery] = query;
  e.key_list = key;
  e.value_list = value;
  e.tensor[kFiaMask] = mask;
  e.asl_kv = asl;
  e.num_heads = numHeads;
  e.scale = scaleValue;
  e.input_layout = inputLayout;
  e.num_kv_heads = numKeyValueHeads;
  e.inner = 1;
  e.block_size = 0;
  e.attention_out = attentionOut;
  return e;
}

void set_quant(FiaEntry* e, const aclTensor* deq1, const aclTensor* qs1, const aclTensor* deq2, const aclTensor* qs2,
               const aclTensor* qo2) {
  e->tensor[kFiaDeq1] = deq1;
  e->tensor[kFiaQs1] = qs1;
  e->tensor[kFiaDeq2] = deq2;
  e->tensor[kFiaQs2] = qs2;
  e->tensor[kFiaQo2] = qo2;
}

// V3 and V4: pseShift, antiquant, paging and innerPrecise are passed on.
void set_v3(FiaEntry* e, const aclTensor* pse, const aclTensor* aq_scale, const aclTensor* aq_offset,
            const aclTensor* block_table, int64_t blockSize, int64_t innerPrecise) {
  e->tensor[kFiaPse] = pse;
  e->tensor[kFiaAntiquantScale] = aq_scale;
  e->tensor[kFiaAntiquantOffset] = aq_offset;
  e->tensor[kFiaBlockTable] = block_table;
  e->block_size = blockSize;
  e->inner = innerPrecise;
  e->int32_kv_is_int4 = true;
}

}  // namespace
}  // namespace mlaops::api

extern "C" {

aclnnStatus aclnnIncreFlashAttentionGetWorkspaceSize(const aclTensor* query, const aclTensorList* key,
                                                     const aclTensorList* value, const aclTensor* pseShift,
                                                     const aclTensor* attenMask, const aclIntArray* actualSeqLengths,
                                                     int64_t numHeads, double scaleValue, char* inputLayout,
                                                     int64_t numKeyValueHeads, const aclTensor* attentionOut,
                                                     uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV1, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV1, kOpV4);
    (void)pseShift;  // ignored by V1 (the vendor's wrapper passes null)
    const FiaEntry e = ifa_entry(kOpV1, query, key, value, attenMask, actualSeqLengths, numHeads, scaleValue,
                                 inputLayout, numKeyValueHeads, attentionOut);
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnIncreFlashAttention(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV1, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV2GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV2, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV2, kOpV4);
    (void)pseShift;  // ignored by V2 (the vendor's wrapper passes null)
    FiaEntry e = ifa_entry(kOpV2, query, key, value, attenMask, actualSeqLengths, numHeads, scaleValue, inputLayout,
                           numKeyValueHeads, attentionOut);
    set_quant(&e, dequantScale1, quantScale1, dequantScale2, quantScale2, quantOffset2);
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnIncreFlashAttentionV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV2, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV3GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    int64_t blockSize, int64_t innerPrecise, const aclTensor* attentionOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV3, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV3, kOpV4);
    FiaEntry e = ifa_entry(kOpV3, query, key, value, attenMask, actualSeqLengths, numHeads, scaleValue, inputLayout,
                           numKeyValueHeads, attentionOut);
    set_quant(&e, dequantScale1, quantScale1, dequantScale2, quantScale2, quantOffset2);
    set_v3(&e, pseShift, antiquantScale, antiquantOffset, blocktable, blockSize, innerPrecise);
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnIncreFlashAttentionV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV3, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, const aclTensor* kvPaddingSize, int64_t numHeads, double scaleValue,
    char* inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT
  return guarded(kOpV4, __FILE__, __LINE__, [&]() -> aclnnStatus {
    FiaEntry e = ifa_entry(kOpV4, query, key, value, attenMask, actualSeqLengths, numHeads, scaleValue, inputLayout,
                           numKeyValueHeads, attentionOut);
    set_quant(&e, dequantScale1, quantScale1, dequantScale2, quantScale2, quantOffset2);
    set_v3(&e, pseShift, antiquantScale, antiquantOffset, blocktable, blockSize, innerPrecise);
    e.tensor[kFiaKvPad] = kvPaddingSize;
    return fia_entry_workspace_size(e, workspaceSize, executor);
  });
}

aclnnStatus aclnnIncreFlashAttentionV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV4, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
