/*
 * mlaops drop-in for CANN's aclnn/aclnn_base.h: what every aclnnop/aclnn_*.h includes.
 *
 * Executors (two-phase pattern): aclnnXxxGetWorkspaceSize validates and plans, writes nothing,
 * and returns an executor; aclnnXxx(workspace, workspaceSize, executor, stream) runs it. An
 * executor is consumed by its execute call unless aclSetAclOpExecutorRepeatable was called on
 * it, in which case the caller owns it, may execute it any number of times, and releases it
 * with aclDestroyAclOpExecutor. An executor that is never executed (an abandoned phase 1) is
 * the caller's as well: it holds its arguments and plan until aclDestroyAclOpExecutor frees it.
 * Using a consumed or destroyed executor returns ACLNN_ERR_PARAM_INVALID (never a
 * use-after-free). See docs/c-api.md.
 */
#ifndef MLAOPS_ACLNN_ACLNN_BASE_H_
#define MLAOPS_ACLNN_ACLNN_BASE_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Optional global set-up of the op library (nothing is needed on the CPU; both succeed). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
/* Releases an executor (ACLNN_ERR_INNER_NULLPTR for NULL, ACLNN_ERR_PARAM_INVALID for one that
 * is not live). Work already queued on a stream with it still completes. */
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

/* Rebind the data address of an executor's tensor argument (for repeatable executors reused
 * with new buffers, e.g. under graph capture). index counts the operator's tensor inputs
 * (respectively outputs) in prototype order, optional ones included; the in/out caches of an
 * operator count as inputs. aclSetDynamicInputTensorAddr addresses element relativeIndex of the
 * tensor-list input at irIndex. tensor, if not NULL, is updated too. */
ACL_FUNC_VISIBILITY aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index,
                                                      aclTensor *tensor, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index,
                                                       aclTensor *tensor, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetDynamicInputTensorAddr(aclOpExecutor *executor,
                                                             size_t irIndex,
                                                             const size_t relativeIndex,
                                                             aclTensorList *tensors, void *addr);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNN_ACLNN_BASE_H_ */
