/*
 * mlaops drop-in for CANN's aclnnop/aclnn_mla_prolog_v3_weight_nz.h: the DeepSeek MLA prologue
 * of aclnnMlaPrologV2WeightNz plus explicit quant modes, the qcQrScale / kcScale factors and the
 * queryNormOut output. Behaviour, supported modes and rules: docs/ops/mla_prolog.md ("V3").
 *
 * Phase 1 validates every shape, dtype, format and attribute, writes nothing, and returns the
 * workspace size and an executor. The mode checks the vendor's wrapper makes return -1
 * (ge::GRAPH_FAILED as an int32), every other rule 161001 / 161002. Phase 2 checks every
 * cacheIndex value before its first write, then computes the outputs and scatters the kv / kr
 * rows into kvCacheRef / krCacheRef (negative cacheIndex: row skipped).
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V3_WEIGHT_NZ_H_
#define MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V3_WEIGHT_NZ_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPrologV3WeightNzGetWorkspaceSize(
    const aclTensor *tokenX, const aclTensor *weightDq, const aclTensor *weightUqQr, const aclTensor *weightUk,
    const aclTensor *weightDkvKr, const aclTensor *rmsnormGammaCq, const aclTensor *rmsnormGammaCkv,
    const aclTensor *ropeSin, const aclTensor *ropeCos, aclTensor *kvCacheRef, aclTensor *krCacheRef,
    const aclTensor *cacheIndexOptional, const aclTensor *dequantScaleXOptional,
    const aclTensor *dequantScaleWDqOptional, const aclTensor *dequantScaleWUqQrOptional,
    const aclTensor *dequantScaleWDkvKrOptional, const aclTensor *quantScaleCkvOptional,
    const aclTensor *quantScaleCkrOptional, const aclTensor *smoothScalesCqOptional,
    const aclTensor *actualSeqLenOptional, const aclTensor *kNopeClipAlphaOptional, double rmsnormEpsilonCq,
    double rmsnormEpsilonCkv, char *cacheModeOptional, int64_t weightQuantMode, int64_t kvCacheQuantMode,
    int64_t queryQuantMode, int64_t ckvkrRepoMode, int64_t quantScaleRepoMode, int64_t tileSize, double qcQrScale,
    double kcScale, const aclTensor *queryOut, const aclTensor *queryRopeOut,
    const aclTensor *dequantScaleQNopeOutOptional, const aclTensor *queryNormOutOptional,
    const aclTensor *dequantScaleQNormOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPrologV3WeightNz(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V3_WEIGHT_NZ_H_ */
