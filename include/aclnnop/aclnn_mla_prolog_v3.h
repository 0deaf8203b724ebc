/*
 * mlaops drop-in for CANN's aclnnop/aclnn_mla_prolog_v3.h: the plain aclnnMlaPrologV3 entry point,
 * which existed in one vendor release only and whose functions did not compute anything there.
 * mlaops exports it with the vendor's behaviour: both functions log "not supported" at ERROR level,
 * set the message read by aclGetRecentErrMsg, write nothing (no workspace size, no executor) and
 * return ACLNN_ERR_INNER (561000). Use aclnnMlaPrologV3WeightNz (aclnn_mla_prolog_v3_weight_nz.h).
 * docs/ops/mla_prolog.md ("The plain aclnnMlaPrologV3").
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V3_H_
#define MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V3_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPrologV3GetWorkspaceSize(
    const aclTensor *tokenX, const aclTensor *weightDq, const aclTensor *weightUqQr, const aclTensor *weightUk,
    const aclTensor *weightDkvKr, const aclTensor *rmsnormGammaCq, const aclTensor *rmsnormGammaCkv,
    const aclTensor *ropeSin, const aclTensor *ropeCos, aclTensor *kvCacheRef, aclTensor *krCacheRef,
    const aclTensor *cacheIndexOptional, const aclTensor *dequantScaleXOptional,
    const aclTensor *dequantScaleWDqOptional, const aclTensor *dequantScaleWUqQrOptional,
    const aclTensor *dequantScaleWDkvKrOptional, const aclTensor *quantScaleCkvOptional,
    const aclTensor *quantScaleCkrOptional, const aclTensor *smoothScalesCqOptional,
    const aclTensor *actualSeqLenOptional, const aclTensor *kNopeClipAlphaOptional, double rmsnormEpsilonCq,
    double rmsnormEpsilonCkv, char *cacheModeOptional, bool queryNormFlag, int64_t weightQuantMode,
    int64_t kvCacheQuantMode, int64_t queryQuantMode, int64_t ckvkrRepoMode, int64_t quantScaleRepoMode,
    int64_t tileSize, double qcQrScale, double kcScale, const aclTensor *queryOut, const aclTensor *queryRopeOut,
    const aclTensor *dequantScaleQNopeOut, const aclTensor *queryNormOut, const aclTensor *dequantScaleQNormOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPrologV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                 const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V3_H_ */
