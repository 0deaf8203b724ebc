/*
 * mlaops drop-in for CANN's aclnnop/aclnn_prompt_flash_attention_v2.h: aclnnPromptFlashAttentionV2,
 * prefill attention of Atlas A2/A3, run as aclnnFusedInferAttentionScoreV4.
 * Behaviour and rules: docs/ops/prompt_flash_attention.md.
 *
 * Deprecated by the vendor (December 2026) in favour of aclnnPromptFlashAttentionV3: the first call
 * logs one WARNING. V2 adds actualSeqLengthsKv, sparseMode and the quantisation inputs
 * (not supported yet by this build: 161002 when given); it ignores pseShift (as the vendor's
 * wrapper does) and runs with innerPrecise 1.
 *
 * key and value are single tensors (no tensor list, no paged cache, no KV antiquant). Phase 1
 * validates the call with the rules of aclnnFusedInferAttentionScoreV4 plus PFA's own (inputLayout
 * required: null is 161001; layouts BSH / BSND / BNSD / BNSD_BSND / TND / NTD), writes nothing, and
 * returns the workspace size and an executor; an empty attentionOut is a successful call with
 * workspace 0 that does nothing. Phase 2 computes attentionOut.
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_V2_H_
#define MLAOPS_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,
    const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2,
    const aclTensor *quantScale2, const aclTensor *quantOffset2, int64_t numHeads, double scaleValue,
    int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionV2(void *workspace, uint64_t workspaceSize,
                                                            aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_V2_H_ */
