// Phase 2 of a two-phase aclnn call as a vendor program runs it, shared by the C-API call helpers
// (tests/ops/*/*_aclnn_call.h, fia_entry_call.h): a workspace of the size phase 1 returned, from
// aclrtMalloc (in a guard mode flush against a guard page: CallWorkspace, tests/support/guarded_alloc.h);
// the operator on `stream`; aclrtSynchronizeStream when on a stream; the workspace freed.
#pragma once

#include <cstdint>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "tests/support/guarded_alloc.h"

namespace mlaops::testing {

// `run` is the operator's phase 2, called as run(workspace, ws_size, executor, stream) (e.g.
// aclnnMlaProlog). Returns the first error.
template <class Run>
aclnnStatus aclnn_phase2(Run&& run, uint64_t ws_size, aclOpExecutor* executor, aclrtStream stream) {
  CallWorkspace workspace(ws_size);
  if (!workspace.ok()) return ACLNN_ERR_RUNTIME_ERROR;
  aclnnStatus s = run(workspace.get(), ws_size, executor, stream);
  if (s == ACLNN_SUCCESS && stream != nullptr) s = aclrtSynchronizeStream(stream);
  return s;
}

}  // namespace mlaops::testing
