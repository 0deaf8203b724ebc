// The aclOpExecutor behind every two-phase aclnn call: phase 1 (GetWorkspaceSize) builds an
// ExecutorState holding the validated, bound arguments and a run function and registers it;
// phase 2 (execute) checks the handle and the workspace and runs it, now or on a stream.
//
// Handles are never-reused ids (never dereferenced), so a consumed, destroyed or forged
// executor is detected by lookup and answered with an error code, never a use-after-free.
// An executor runs one call at a time: a run, or an address rebinding, that finds the same
// executor running on another thread fails with 161002 and touches nothing
// (docs/reliability/concurrency.md).
//
// Device memory: a bound tensor whose bytes lay in an allocation of aclrtMalloc / aclrtMallocHost
// at binding time (phase 1, or an address rebinding) must find that allocation still live when
// the run starts (the same allocation: a buffer allocated at its address since, such as this
// call's workspace, is another one); otherwise the run fails with 161002 (ACL-66) and writes
// nothing. Other memory (host malloc, the stack, numpy) is not tracked and is not checked.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <variant>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "api/runtime/runtime.h"
#include "core/alloc.h"
#include "core/error.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops::api {

// Where a bound tensor's bytes lay when it was bound (see the top): the part of them inside an
// allocation of aclrtMalloc / aclrtMallocHost (for the message), and that allocation; tracked =
// false for memory of any other origin (and for empty tensors).
struct DeviceRange {
  bool tracked = false;
  uintptr_t lo = 0, hi = 0;
  Allocation alloc;
};

// One tensor-typed argument of the operator prototype (an "IR" input or output).
struct TensorSlot {
  bool present = false;
  bool is_list = false;
  const char* name = "";              // the parameter, for messages (a literal or a static table's entry)
  TensorView view;                    // single tensor
  int64_t offset_bytes = 0;           // re-applied when the address is re-bound
  DeviceRange memory;                 // single tensor
  std::vector<TensorView> list;       // tensor-list elements
  std::vector<int64_t> list_offset_bytes;
  std::vector<DeviceRange> list_memory;
};

// The inner operator's C++ parameters of one call (for the run observer).
using CallParams = std::variant<std::monostate, FiaParams, MlaPrologParams, MlaPreprocessParams>;

struct ExecutorState {
  std::string op;                     // the aclnn entry point, e.g. "aclnnMlaPrologV2WeightNz"
  uint64_t workspace_bytes = 0;
  std::vector<TensorSlot> inputs;     // prototype order, optional ones included
  std::vector<TensorSlot> outputs;
  // Runs the operator on the bound slots: validates tensor contents (read-only pre-pass)
  // before its first write, returns a Status with the message set.
  std::function<Status(const ExecutorState&, void* workspace, uint64_t workspace_size)> run;
  // The inner operator's parameters bound to the current slots, as `run` builds them (every
  // entry point sets it; the run observer uses it).
  std::function<CallParams(const ExecutorState&)> params;
  // Held while the executor runs or its addresses are rebound (one at a time; see the top).
  mutable std::atomic<bool> busy{false};
};

// Sees every phase-2 run of every entry point: before() just before the operator runs, after()
// with its status. For tests and checking harnesses (the examples' float64 check); one at a time,
// nullptr to remove. Calls come from the thread that runs the work (the stream's, when queued).
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void before(const std::string& op, const CallParams& params) = 0;
  virtual void after(const std::string& op, const CallParams& params, int status) = 0;
};
void set_run_observer(RunObserver* observer);

// Registers a state built by phase 1; the handle goes to the caller.
aclOpExecutor* register_executor(std::shared_ptr<ExecutorState> state);

// Phase 2, shared by every operator: `op` must match the executor's operator.
aclnnStatus execute(const char* op, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                    aclrtStream stream);

// Fills a slot from a tensor / tensor-list argument (nullptr = absent optional). `name` must
// outlive the executor (a string literal or a static table's entry). A list's member that is no
// longer the tensor the list was created with fails with ACL-43.
Status bind_slot(const aclTensor* t, const char* op, const char* name, bool required, TensorSlot* slot);
Status bind_list_slot(const aclTensorList* l, const char* op, const char* name, bool required, TensorSlot* slot);

// Where the bytes of view v lie (DeviceRange above): O(log allocations).
DeviceRange locate(const TensorView& v);
// ACL-66 for every bound tensor (see the top): kSuccess, or 161002 naming the first tensor whose
// allocation is gone. Every run calls it before the operator; O(tensors x log allocations).
Status check_bound_memory(const ExecutorState& state);

// The boundary of every C entry point (docs/c-api.md, "Logging"): returns `status` and, when it
// is not success, logs the recent error message at ERROR level (module OP) with the entry point's
// file and line; success is logged at DEBUG level.
aclnnStatus log_result(const char* fn, const char* file, int line, aclnnStatus status);

// Runs the body of a phase-1 entry point: clears the recent error first, logs the outcome. A
// failed host allocation (std::bad_alloc) returns out_of_memory() (core/alloc.h).
//   return guarded(kOp, __FILE__, __LINE__, [&]() -> aclnnStatus { ... });
template <class Body>
aclnnStatus guarded(const char* fn, const char* file, int line, Body&& body) {
  ApiCallScope scope;
  clear_last_error();
  aclnnStatus status;
  try {
    status = body();
  } catch (const std::bad_alloc&) {
    status = out_of_memory(fn);
  }
  return log_result(fn, file, line, status);
}

// Logs "<op>: deprecated ..." once per process at WARNING level, as CANN does on the first call of
// an entry point its header marks deprecated.
void warn_deprecated_once(const char* op, const char* successor);

// Number of live executors (tests: consumed executors are released, nothing leaks).
size_t live_executor_count();

}  // namespace mlaops::api
