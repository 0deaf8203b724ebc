/*
 * mlaops drop-in for CANN's aclnnop/aclnn_mla_prolog.h: MlaProlog V1, the same operator as
 * aclnnMlaPrologV2WeightNz without the dequantScaleQNope output (so the full-quant scenario
 * with an int8 KV cache cannot be expressed and is rejected). Behaviour and rules:
 * docs/ops/mla_prolog.md.
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_H_
#define MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaPrologGetWorkspaceSize(
    const aclTensor *tokenX, const aclTensor *weightDq, const aclTensor *weightUqQr, const aclTensor *weightUk,
    const aclTensor *weightDkvKr, const aclTensor *rmsnormGammaCq, const aclTensor *rmsnormGammaCkv,
    const aclTensor *ropeSin, const aclTensor *ropeCos, const aclTensor *cacheIndex, aclTensor *kvCacheRef,
    aclTensor *krCacheRef, const aclTensor *dequantScaleXOptional, const aclTensor *dequantScaleWDqOptional,
    const aclTensor *dequantScaleWUqQrOptional, const aclTensor *dequantScaleWDkvKrOptional,
    const aclTensor *quantScaleCkvOptional, const aclTensor *quantScaleCkrOptional,
    const aclTensor *smoothScalesCqOptional, double rmsnormEpsilonCq, double rmsnormEpsilonCkv,
    char *cacheModeOptional, const aclTensor *queryOut, const aclTensor *queryRopeOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMlaProlog(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                               const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_MLA_PROLOG_H_ */
