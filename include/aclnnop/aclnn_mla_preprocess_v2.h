/*
 * mlaops drop-in for CANN's aclnnop/aclnn_mla_preprocess_v2.h: aclnnMlaPreprocess with one more
 * output, qDownOut = RmsNorm(cq) * gamma1 + beta1 in the input dtype ([tokenNum, qLoraDim]),
 * written when qDownOutFlag is true. qDownOut must be a tensor even when the flag is false
 * (161001 for null). Everything else is aclnnMlaPreprocess (aclnnop/aclnn_mla_preprocess.h).
 * Behaviour and rules: docs/ops/mla_preprocess.md.
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_MLA_PREPROCESS_V2_H_
#define MLAOPS_ACLNNOP_ACLNN_MLA_PREPROCESS_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPreprocessV2GetWorkspaceSize(
    const aclTensor *input, const aclTensor *gamma0, const aclTensor *beta0, const aclTensor *quantScale0,
    const aclTensor *quantOffset0, const aclTensor *wdqkv, const aclTensor *deScale0, const aclTensor *bias0,
    const aclTensor *gamma1, const aclTensor *beta1, const aclTensor *quantScale1, const aclTensor *quantOffset1,
    const aclTensor *wuq, const aclTensor *deScale1, const aclTensor *bias1, const aclTensor *gamma2,
    const aclTensor *cos, const aclTensor *sin, const aclTensor *wuk, const aclTensor *kvCache,
    const aclTensor *kvCacheRope, const aclTensor *slotMapping, const aclTensor *ctkvScale,
    const aclTensor *qNopeScale, int64_t wdqDim, int64_t qRopeDim, int64_t kRopeDim, double epsilon,
    int64_t qRotaryCoeff, int64_t kRotaryCoeff, bool transposeWdq, bool transposeWuq, bool transposeWuk,
    int64_t cacheMode, int64_t quantMode, bool doRmsNorm, int64_t wdkvSplitCount, bool qDownOutFlag,
    const aclTensor *qOut, const aclTensor *kvCacheOut, const aclTensor *qRopeOut, const aclTensor *krCacheOut,
    const aclTensor *qDownOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPreprocessV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_MLA_PREPROCESS_V2_H_ */
