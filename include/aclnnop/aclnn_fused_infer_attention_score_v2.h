/*
 * mlaops drop-in for CANN's aclnnop/aclnn_fused_infer_attention_score_v2.h:
 * aclnnFusedInferAttentionScoreV2, fused inference attention of Atlas A2/A3. Behaviour and rules:
 * docs/ops/fused_infer_attention_score.md ("Earlier versions V1, V2, V3").
 *
 * Deprecated by the vendor (December 2026) in favour of aclnnFusedInferAttentionScoreV4: the first
 * call logs one WARNING. The call is V4's with queryRope, keyRope, keyRopeAntiquantScale,
 * dequantScaleQuery and learnableSink null and queryQuantMode 0.
 *
 * Phase 1 validates every shape, dtype, format, attribute and host int array with the rules of
 * aclnnFusedInferAttentionScoreV4, writes nothing, and returns the workspace size and an executor;
 * phase 2 computes attentionOut (and softmaxLse when softmaxLseFlag is true).
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V2_H_
#define MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
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
    const aclIntArray *actualSharedPrefixLenOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    int64_t keyAntiquantMode, int64_t valueAntiquantMode, const aclTensor *attentionOut,
    const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV2(void *workspace, uint64_t workspaceSize,
                                                                aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_V2_H_ */
