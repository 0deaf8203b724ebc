/*
 * mlaops drop-in for CANN's aclnnop/aclnn_fused_infer_attention_score.h: aclnnFusedInferAttentionScore
 * (V1), fused inference attention of Atlas A2. Behaviour and rules:
 * docs/ops/fused_infer_attention_score.md ("Earlier versions V1, V2, V3").
 *
 * Deprecated by the vendor (December 2026) in favour of aclnnFusedInferAttentionScoreV4: the first
 * call logs one WARNING. The call is V4's with the V2..V4 inputs null and the V2..V4 modes 0; unlike
 * V2..V4 an INT32 key / value is not read as packed INT4 but rejected (161002).
 *
 * Phase 1 validates every shape, dtype, format, attribute and host int array with the rules of
 * aclnnFusedInferAttentionScoreV4, writes nothing, and returns the workspace size and an executor;
 * phase 2 computes attentionOut (and softmaxLse when softmaxLseFlag is true).
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_H_
#define MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,
    const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2,
    const aclTensor *quantScale2, const aclTensor *quantOffset2, const aclTensor *antiquantScale,
    const aclTensor *antiquantOffset, const aclTensor *blockTable, const aclTensor *queryPaddingSize,
    const aclTensor *kvPaddingSize, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens,
    char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize,
    int64_t antiquantMode, bool softmaxLseFlag, const aclTensor *attentionOut, const aclTensor *softmaxLse,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScore(void *workspace, uint64_t workspaceSize,
                                                              aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_FUSED_INFER_ATTENTION_SCORE_H_ */
