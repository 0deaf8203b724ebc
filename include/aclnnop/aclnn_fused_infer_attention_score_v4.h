/*
 * mlaops drop-in for CANN's aclnnop/aclnn_fused_infer_attention_score_v4.h: fused inference
 * attention (prefill, decode, MLA rope split, paged KV cache) of Atlas A2/A3.
 * Behaviour and rules: docs/ops/fused_infer_attention_score.md.
 *
 * The parameter order is the vendor's V4 order; learnableSinkOptional (new in V4) follows
 * dequantScaleQueryOptional, and queryQuantMode (new in V4) follows valueAntiquantMode.
 *
 * Phase 1 validates every shape, dtype, format, attribute and host int array (actual sequence
 * lengths), writes nothing, and returns the workspace size and an executor. Phase 2 checks the
 * block-table entries each batch uses against the cache before its first write (161002, nothing
 * written, if one is out of range), then computes attentionOut and, when softmaxLseFlag is true,
 * softmaxLse. Optional inputs of features outside this build (pse, quantisation, antiquant,
 * shared prefix, left padding, learnable sink, tree mask) are rejected with 161002.
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V4_H_
#define MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V4_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional,
    const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional,
    const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,
    const aclIntArray *actualSharedPrefixLenOptional, const aclTensor *queryRopeOptional,
    const aclTensor *keyRopeOptional, const aclTensor *keyRopeAntiquantScaleOptional,
    const aclTensor *dequantScaleQueryOptional, const aclTensor *learnableSinkOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    int64_t keyAntiquantMode, int64_t valueAntiquantMode, int64_t queryQuantMode, const aclTensor *attentionOut,
    const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV4(void *workspace, uint64_t workspaceSize,
                                                                aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V4_H_ */
