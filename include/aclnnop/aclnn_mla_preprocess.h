/*
 * mlaops drop-in for CANN's aclnnop/aclnn_mla_preprocess.h: the MLA preprocess of a W8A8
 * DeepSeek layer (RmsNormQuant, the int8 down projection [kv | q], RmsNormQuant of cq, the int8
 * up projection, absorbed W_UK, half-rotation RoPE, RmsNorm of ckv, paged KV-cache scatter).
 * Behaviour and rules: docs/ops/mla_preprocess.md.
 *
 * Phase 1 validates every shape, dtype, format and attribute, writes nothing, and returns the
 * workspace size and an executor. Phase 2 checks every slotMapping value before its first write
 * (161002, nothing written, if one is out of range; -1 skips the token's cache writes), then
 * computes qOut (and qRopeOut in cacheMode 1..3) and writes the new cache rows into kvCacheOut /
 * krCacheOut at the slots, placed by kvCache's / kvCacheRope's geometry (pass the caches
 * themselves for the in-place update). The epsilon attribute is ignored: every RmsNorm uses 1e-6,
 * as the vendor kernel does.
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_MLA_PREPROCESS_H_
#define MLAOPS_ACLNNOP_ACLNN_MLA_PREPROCESS_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPreprocessGetWorkspaceSize(
    const aclTensor *input, const aclTensor *gamma0, const aclTensor *beta0, const aclTensor *quantScale0,
    const aclTensor *quantOffset0, const aclTensor *wdqkv, const aclTensor *deScale0, const aclTensor *bias0,
    const aclTensor *gamma1, const aclTensor *beta1, const aclTensor *quantScale1, const aclTensor *quantOffset1,
    const aclTensor *wuq, const aclTensor *deScale1, const aclTensor *bias1, const aclTensor *gamma2,
    const aclTensor *cos, const aclTensor *sin, const aclTensor *wuk, const aclTensor *kvCache,
    const aclTensor *kvCacheRope, const aclTensor *slotMapping, const aclTensor *ctkvScale,
    const aclTensor *qNopeScale, int64_t wdqDim, int64_t qRopeDim, int64_t kRopeDim, double epsilon,
    int64_t qRotaryCoeff, int64_t kRotaryCoeff, bool transposeWdq, bool transposeWuq, bool transposeWuk,
    int64_t cacheMode, int64_t quantMode, bool doRmsNorm, int64_t wdkvSplitCount, aclTensor *qOut,
    aclTensor *kvCacheOut, aclTensor *qRopeOut, aclTensor *krCacheOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPreprocess(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_MLA_PREPROCESS_H_ */
