/*
 * mlaops drop-in for CANN's aclnnop/aclnn_mla_prolog_v2_weight_nz.h: the DeepSeek MLA prologue
 * (RmsNorm'd low-rank query and key paths, absorbed W_UK, RoPE, paged KV-cache scatter).
 * Behaviour and rules: docs/ops/mla_prolog.md.
 *
 * Phase 1 validates every shape, dtype, format and attribute, writes nothing, and returns the
 * workspace size and an executor. Phase 2 checks every cacheIndex value against the cache
 * before its first write (161002, nothing written, if one is out of range), then computes
 * queryOut, queryRopeOut, dequantScaleQNopeOutOptional (full quant + KV-cache quant) and
 * scatters the kv / kr rows into kvCacheRef / krCacheRef (negative cacheIndex: row skipped).
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V2_WEIGHT_NZ_H_
#define MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V2_WEIGHT_NZ_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPrologV2WeightNzGetWorkspaceSize(
    const aclTensor *tokenX, const aclTensor *weightDq, const aclTensor *weightUqQr, const aclTensor *weightUk,
    const aclTensor *weightDkvKr, const aclTensor *rmsnormGammaCq, const aclTensor *rmsnormGammaCkv,
    const aclTensor *ropeSin, const aclTensor *ropeCos, const aclTensor *cacheIndex, aclTensor *kvCacheRef,
    aclTensor *krCacheRef, const aclTensor *dequantScaleXOptional, const aclTensor *dequantScaleWDqOptional,
    const aclTensor *dequantScaleWUqQrOptional, const aclTensor *dequantScaleWDkvKrOptional,
    const aclTensor *quantScaleCkvOptional, const aclTensor *quantScaleCkrOptional,
    const aclTensor *smoothScalesCqOptional, double rmsnormEpsilonCq, double rmsnormEpsilonCkv,
    char *cacheModeOptional, const aclTensor *queryOut, const aclTensor *queryRopeOut,
    const aclTensor *dequantScaleQNopeOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPrologV2WeightNz(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_V2_WEIGHT_NZ_H_ */
