/*
 * mlaops drop-in for CANN's aclnnop/aclnn_prompt_flash_attention.h: aclnnPromptFlashAttention (V1),
 * prefill attention of Atlas A2/A3, run as aclnnFusedInferAttentionScoreV4.
 * Behaviour and rules: docs/ops/prompt_flash_attention.md.
 *
 * Deprecated by the vendor (December 2026) in favour of aclnnPromptFlashAttentionV3: the first call
 * logs one WARNING. V1 ignores pseShift (as the vendor's wrapper does) and runs with
 * sparseMode 0, innerPrecise 1, no KV lengths, no quantisation.
 *
 * key and value are single tensors (no tensor list, no paged cache, no KV antiquant). Phase 1
 * validates the call with the rules of aclnnFusedInferAttentionScoreV4 plus PFA's own (inputLayout
 * required: null is 161001; layouts BSH / BSND / BNSD / BNSD_BSND / TND / NTD), writes nothing, and
 * returns the workspace size and an executor; an empty attentionOut is a successful call with
 * workspace 0 that does nothing. Phase 2 computes attentionOut.
 */
#ifndef MLAOPS_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_H_
#define MLAOPS_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, int64_t numHeads, double scaleValue,
    int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttention(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNNOP_ACLNN_PROMPT_FLASH_ATTENTION_H_ */
