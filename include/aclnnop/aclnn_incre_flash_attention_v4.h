/*
 * mlaops drop-in for CANN's aclnnop/aclnn_incre_flash_attention_v4.h: aclnnIncreFlashAttentionV4,
 * incremental (decode) attention of Atlas A2/A3, run as aclnnFusedInferAttentionScoreV4.
 * Behaviour and rules: docs/ops/incre_flash_attention.md.
 *
 * V4 adds kvPaddingSize (KV left padding; not supported yet by this build: 161002 when given) to V3.
 *
 * Phase 1 validates the call with the rules of aclnnFusedInferAttentionScoreV4 plus IFA's own
 * (query sequence length 1, layouts BSH / BSND / BNSD, a null inputLayout is "BSH"), writes nothing,
 * and returns the workspace size and an executor; phase 2 computes attentionOut.
 * actualSeqLengths are the KV lengths per batch.
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_INCRE_FLASH_ATTENTION_V4_H_
#define MLAOPS_ACLNNOP_ACLNN_INCRE_FLASH_ATTENTION_V4_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclTensor *dequantScale1,
    const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset,
    const aclTensor *blocktable, const aclTensor *kvPaddingSize, int64_t numHeads, double scaleValue,
    char *inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionV4(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_INCRE_FLASH_ATTENTION_V4_H_ */
