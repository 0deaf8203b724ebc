// Executor registry, phase-2 dispatch and the executor functions of aclnn_base.h.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "api/runtime/executor.h"
#include "api/runtime/objects.h"
#include "api/runtime/stream.h"
#include "core/error.h"
#include "core/log.h"
#include "mlaops/dtype.h"

namespace mlaops::api {
namespace {

struct Entry {
  std::shared_ptr<ExecutorState> state;
  bool repeatable = false;
};

std::mutex g_mu;
std::map<uintptr_t, Entry>& registry() {
  static auto* m = new std::map<uintptr_t, Entry>();
  return *m;
}
std::atomic<uintptr_t> g_next{1};
std::atomic<RunObserver*> g_observer{nullptr};

const char* kBusy = "ACL-57 in use by another thread (a run or an address rebinding of this executor is in progress; an "
                    "executor runs one call at a time)";

// Holds an executor's busy flag for a scope; ok() is false when another thread holds it. The
// acquire / release pair orders one holder's writes (outputs, rebound slots) before the next's.
class BusyGuard {
 public:
  explicit BusyGuard(const ExecutorState& s)
      : flag_(s.busy), ok_(!flag_.exchange(true, std::memory_order_acquire)) {}
  ~BusyGuard() {
    if (ok_) flag_.store(false, std::memory_order_release);
  }
  BusyGuard(const BusyGuard&) = delete;
  BusyGuard& operator=(const BusyGuard&) = delete;
  bool ok() const { return ok_; }

 private:
  std::atomic<bool>& flag_;
  bool ok_;
};

// ACL-66: every bound tensor whose bytes lay in an aclrtMalloc / aclrtMallocHost allocation when
// it was bound still lies in that allocation, live (executor.h). One lookup per tracked tensor.
Status check_memory(const char* op, const char* name, size_t index, bool is_list, const DeviceRange& m) {
  if (!m.tracked) return kSuccess;
  Allocation now;
  if (find_allocation(m.lo, &now) && now.id == m.alloc.id) return kSuccess;
  char elem[32] = "";
  if (is_list) std::snprintf(elem, sizeof elem, "[%zu]", index);
  return fail(kParamInvalid,
              "%s: %s%s: ACL-66 the tensor's memory was freed after it was bound; its bytes [%#zx, %#zx) lay in the "
              "%s allocation [%#zx, %#zx) (%zu bytes) at GetWorkspaceSize (or the last address rebinding), which "
              "is no longer live (an allocation made at that address since is another buffer); nothing was written",
              op, name, elem, static_cast<size_t>(m.lo), static_cast<size_t>(m.hi),
              m.alloc.host ? "aclrtMallocHost" : "aclrtMalloc", static_cast<size_t>(m.alloc.base),
              static_cast<size_t>(m.alloc.base + m.alloc.size), m.alloc.size);
}

}  // namespace

Status check_bound_memory(const ExecutorState& state) {
  for (const std::vector<TensorSlot>* slots : {&state.inputs, &state.outputs}) {
    for (const TensorSlot& s : *slots) {
      if (!s.present) continue;
      MLAOPS_TRY(check_memory(state.op.c_str(), s.name, 0, false, s.memory));
      for (size_t i = 0; i < s.list_memory.size(); ++i)
        MLAOPS_TRY(check_memory(state.op.c_str(), s.name, i, true, s.list_memory[i]));
    }
  }
  return kSuccess;
}

namespace {

int run_state(const ExecutorState& state, void* workspace, uint64_t workspace_size) {
  BusyGuard busy(state);
  if (!busy.ok()) return fail(kParamInvalid, "%s: executor: %s", state.op.c_str(), kBusy);
  MLAOPS_TRY(check_bound_memory(state));
  RunObserver* obs = g_observer.load(std::memory_order_acquire);
  if (obs == nullptr || !state.params) return state.run(state, workspace, workspace_size);
  const CallParams params = state.params(state);
  obs->before(state.op, params);
  const int code = state.run(state, workspace, workspace_size);
  obs->after(state.op, params, code);
  return code;
}

uintptr_t key(const aclOpExecutor* e) { return reinterpret_cast<uintptr_t>(e); }

const char* kNotLive = "ACL-52 not a live executor (consumed by an earlier execute call, destroyed, or never created)";

}  // namespace

void set_run_observer(RunObserver* observer) { g_observer.store(observer, std::memory_order_release); }

aclOpExecutor* register_executor(std::shared_ptr<ExecutorState> state) {
  const uintptr_t id = g_next.fetch_add(1) * 64 + 0xE000;
  std::lock_guard<std::mutex> lock(g_mu);
  registry()[id] = Entry{std::move(state), false};
  return reinterpret_cast<aclOpExecutor*>(id);
}

size_t live_executor_count() {
  std::lock_guard<std::mutex> lock(g_mu);
  return registry().size();
}

aclnnStatus log_result(const char* fn, const char* file, int line, aclnnStatus status) {
  if (status != ACLNN_SUCCESS) {
    if (log_enabled(LogLevel::kError, kLogOp))
      log_line(LogLevel::kError, kLogOp, file, line, "%s failed, status %d: %s", fn, static_cast<int>(status),
               last_error_message());
  } else if (log_enabled(LogLevel::kDebug, kLogOp)) {
    log_line(LogLevel::kDebug, kLogOp, file, line, "%s: success", fn);
  }
  return status;
}

void warn_deprecated_once(const char* op, const char* successor) {
  static std::mutex mu;
  static auto* warned = new std::set<std::string>();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!warned->insert(op).second) return;
  }
  MLAOPS_LOG(LogLevel::kWarning, kLogOp, "%s is deprecated by the vendor (its header says so); use %s", op, successor);
}

namespace {

aclnnStatus execute_impl(const char* op, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                         aclrtStream stream) {
  if (executor == nullptr) return fail(kParamNullptr, "%s: ACL-50 executor is null", op);
  std::shared_ptr<ExecutorState> state;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = registry().find(key(executor));
    if (it == registry().end()) return fail(kParamInvalid, "%s: executor: %s", op, kNotLive);
    if (it->second.state->op != op)
      return fail(kParamInvalid, "%s: executor: ACL-53 created by %s, not by %sGetWorkspaceSize", op,
                  it->second.state->op.c_str(), op);
    state = it->second.state;
    if (!it->second.repeatable) registry().erase(it);  // consumed by this call, whatever its outcome
  }
  if (state->workspace_bytes > 0 && workspace == nullptr)
    return fail(kParamNullptr, "%s: workspace: ACL-54 null, but the executor needs %llu bytes", op,
                (unsigned long long)state->workspace_bytes);
  if (workspace_size < state->workspace_bytes)
    return fail(kParamInvalid, "%s: workspaceSize: ACL-55 allowed >= %llu (from GetWorkspaceSize), got %llu", op,
                (unsigned long long)state->workspace_bytes, (unsigned long long)workspace_size);
  if (stream != nullptr && !find_stream(stream))
    return fail(kParamInvalid, "%s: stream: ACL-56 not a live stream (destroyed, or never created)", op);
  const bool queued = stream != nullptr;
  Work work = [state, workspace, workspace_size, queued]() -> int {
    int code;
    try {
      code = run_state(*state, workspace, workspace_size);
    } catch (const std::bad_alloc&) {  // a queued run has no execute() around it (core/alloc.h)
      code = out_of_memory(state->op.c_str());
    }
    // A queued run fails on the stream's thread: logged there (a synchronous one by execute).
    if (queued && code != 0) log_result(state->op.c_str(), __FILE__, __LINE__, code);
    return code;
  };
  return run_on_stream(stream, std::move(work), op);
}

}  // namespace

aclnnStatus execute(const char* op, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                    aclrtStream stream) {
  ApiCallScope scope;
  clear_last_error();
  aclnnStatus status;
  try {
    status = execute_impl(op, workspace, workspace_size, executor, stream);
  } catch (const std::bad_alloc&) {  // core/alloc.h
    status = out_of_memory(op);
  }
  return log_result(op, __FILE__, __LINE__, status);
}

DeviceRange locate(const TensorView& v) {
  DeviceRange r;
  if (v.data == nullptr) return r;
  // The elements the view reaches (the storage for FRACTAL_NZ, read whole), from its first one.
  int64_t elements = 1;
  for (int i = 0; i < v.rank; ++i) {
    if (v.dims[i] == 0) return r;  // empty: nothing is read or written
    elements += (v.dims[i] - 1) * v.strides[i];
  }
  if (v.format != Format::kND && v.storage_rank > 0) {
    int64_t storage = 1;
    for (int i = 0; i < v.storage_rank; ++i) storage *= v.storage_dims[i];
    elements = std::max(elements, storage);
  }
  // bytes (aclCreateTensor checked that they fit int64); the sub-byte types round up
  const int64_t each = dtype_size(v.dtype);
  const int64_t bytes = each > 0                     ? elements * each
                        : v.dtype == DType::kInt4 ? elements / 2 + elements % 2
                                                   : elements / 8 + (elements % 8 != 0 ? 1 : 0);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(v.data);
  const uintptr_t hi = lo + static_cast<uintptr_t>(bytes);
  if (!find_allocation(lo, &r.alloc)) return r;
  r.tracked = true;
  r.lo = lo;
  r.hi = std::min(hi, r.alloc.base + r.alloc.size);  // what lies outside was never from the allocation
  return r;
}

Status bind_slot(const aclTensor* t, const char* op, const char* name, bool required, TensorSlot* slot) {
  *slot = TensorSlot();
  slot->name = name;
  bool present = false;
  MLAOPS_TRY(to_view(t, op, name, required, &slot->view, &present));
  slot->present = present;
  if (present) {
    slot->offset_bytes = view_offset_bytes(t);
    slot->memory = locate(slot->view);
  }
  return kSuccess;
}

Status bind_list_slot(const aclTensorList* l, const char* op, const char* name, bool required, TensorSlot* slot) {
  *slot = TensorSlot();
  slot->is_list = true;
  slot->name = name;
  if (l == nullptr) {
    if (required) return fail(kParamNullptr, "%s: %s: ACL-40 required tensor list is null", op, name);
    return kSuccess;
  }
  MLAOPS_CHECK(is_live(l, ObjKind::kTensorList), kParamInvalid, "%s: %s: ACL-41 not a live aclTensorList", op, name);
  for (size_t i = 0; i < l->tensors.size(); ++i) {
    MLAOPS_CHECK(list_member_is_live(l, i), kParamInvalid,
                 "%s: %s[%zu]: ACL-43 not a live member of the tensor list (the tensor it was created with was "
                 "destroyed; its address may now hold another tensor)",
                 op, name, i);
    TensorView v;
    bool present = false;
    char elem[96];
    std::snprintf(elem, sizeof elem, "%s[%zu]", name, i);
    MLAOPS_TRY(to_view(l->tensors[i], op, elem, true, &v, &present));
    slot->list.push_back(v);
    slot->list_offset_bytes.push_back(view_offset_bytes(l->tensors[i]));
    slot->list_memory.push_back(locate(v));
  }
  slot->present = true;
  return kSuccess;
}

}  // namespace mlaops::api

using namespace mlaops::api;  // NOLINT

namespace {

// Looks up a live executor for the address-rebinding calls; kSuccess or an error with message.
mlaops::Status find_state(aclOpExecutor* executor, const char* fn, std::shared_ptr<ExecutorState>* out) {
  if (executor == nullptr) return mlaops::fail(mlaops::kParamNullptr, "%s: ACL-50 executor is null", fn);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = registry().find(key(executor));
  if (it == registry().end()) return mlaops::fail(mlaops::kParamInvalid, "%s: executor: %s", fn, kNotLive);
  *out = it->second.state;
  return mlaops::kSuccess;
}

aclnnStatus set_addr(std::vector<TensorSlot>& slots, size_t index, aclTensor* tensor, void* addr, const char* fn,
                     const char* what) {
  if (index >= slots.size())
    return mlaops::fail(mlaops::kParamInvalid, "%s: index: ACL-58 allowed < %zu (%s of this operator), got %zu", fn,
                        slots.size(), what, index);
  TensorSlot& s = slots[index];
  if (s.is_list)
    return mlaops::fail(mlaops::kParamInvalid, "%s: ACL-59 index %zu is a tensor list; use aclSetDynamicInputTensorAddr", fn,
                        index);
  if (!s.present)
    return mlaops::fail(mlaops::kParamInvalid, "%s: ACL-60 index %zu is an optional tensor that was not passed", fn, index);
  if (addr == nullptr && s.view.numel() > 0)
    return mlaops::fail(mlaops::kParamNullptr, "%s: ACL-61 addr is null for a tensor with %lld elements", fn,
                        (long long)s.view.numel());
  s.view.data = addr ? static_cast<char*>(addr) + s.offset_bytes : nullptr;
  s.memory = locate(s.view);
  if (tensor != nullptr) set_tensor_data_if_live(tensor, addr);
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclnnStatus aclnnInit(const char* /*configPath*/) { return ACLNN_SUCCESS; }
aclnnStatus aclnnFinalize(void) { return ACLNN_SUCCESS; }

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  return guarded("aclSetAclOpExecutorRepeatable", __FILE__, __LINE__, [&]() -> aclnnStatus {
    if (executor == nullptr) return mlaops::fail(mlaops::kParamNullptr, "aclSetAclOpExecutorRepeatable: ACL-50 executor is null");
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = registry().find(key(executor));
    if (it == registry().end())
      return mlaops::fail(mlaops::kParamInvalid, "aclSetAclOpExecutorRepeatable: executor: %s", kNotLive);
    it->second.repeatable = true;
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  return guarded("aclDestroyAclOpExecutor", __FILE__, __LINE__, [&]() -> aclnnStatus {
    if (executor == nullptr) return mlaops::fail(mlaops::kInnerNullptr, "aclDestroyAclOpExecutor: ACL-51 executor is null");
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = registry().find(key(executor));
    if (it == registry().end())
      return mlaops::fail(mlaops::kParamInvalid, "aclDestroyAclOpExecutor: executor: %s", kNotLive);
    registry().erase(it);  // queued work holds its own reference
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclSetInputTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return guarded("aclSetInputTensorAddr", __FILE__, __LINE__, [&]() -> aclnnStatus {
    std::shared_ptr<ExecutorState> st;
    const char* fn = "aclSetInputTensorAddr";
    if (mlaops::Status s = find_state(executor, fn, &st); s != mlaops::kSuccess) return s;
    BusyGuard busy(*st);
    if (!busy.ok()) return mlaops::fail(mlaops::kParamInvalid, "%s: executor: %s", fn, kBusy);
    return set_addr(st->inputs, index, tensor, addr, fn, "tensor inputs");
  });
}

aclnnStatus aclSetOutputTensorAddr(aclOpExecutor* executor, const size_t index, aclTensor* tensor, void* addr) {
  return guarded("aclSetOutputTensorAddr", __FILE__, __LINE__, [&]() -> aclnnStatus {
    std::shared_ptr<ExecutorState> st;
    const char* fn = "aclSetOutputTensorAddr";
    if (mlaops::Status s = find_state(executor, fn, &st); s != mlaops::kSuccess) return s;
    BusyGuard busy(*st);
    if (!busy.ok()) return mlaops::fail(mlaops::kParamInvalid, "%s: executor: %s", fn, kBusy);
    return set_addr(st->outputs, index, tensor, addr, fn, "tensor outputs");
  });
}

aclnnStatus aclSetDynamicInputTensorAddr(aclOpExecutor* executor, size_t irIndex, const size_t relativeIndex,
                                         aclTensorList* tensors, void* addr) {
  return guarded("aclSetDynamicInputTensorAddr", __FILE__, __LINE__, [&]() -> aclnnStatus {
    std::shared_ptr<ExecutorState> st;
    const char* fn = "aclSetDynamicInputTensorAddr";
    if (mlaops::Status s = find_state(executor, fn, &st); s != mlaops::kSuccess) return s;
    BusyGuard busy(*st);
    if (!busy.ok()) return mlaops::fail(mlaops::kParamInvalid, "%s: executor: %s", fn, kBusy);
    if (irIndex >= st->inputs.size())
      return mlaops::fail(mlaops::kParamInvalid, "%s: irIndex: ACL-62 allowed < %zu, got %zu", fn, st->inputs.size(), irIndex);
    TensorSlot& s = st->inputs[irIndex];
    if (!s.is_list || !s.present)
      return mlaops::fail(mlaops::kParamInvalid, "%s: ACL-63 input %zu is not a tensor list that was passed", fn, irIndex);
    if (relativeIndex >= s.list.size())
      return mlaops::fail(mlaops::kParamInvalid, "%s: relativeIndex: ACL-64 allowed < %zu, got %zu", fn, s.list.size(),
                          relativeIndex);
    if (addr == nullptr && s.list[relativeIndex].numel() > 0)
      return mlaops::fail(mlaops::kParamNullptr, "%s: ACL-61 addr is null for a non-empty tensor", fn);
    s.list[relativeIndex].data = addr ? static_cast<char*>(addr) + s.list_offset_bytes[relativeIndex] : nullptr;
    s.list_memory[relativeIndex] = locate(s.list[relativeIndex]);
    if (tensors != nullptr) set_list_member_data_if_live(tensors, relativeIndex, addr);
    return ACLNN_SUCCESS;
  });
}

}  // extern "C"
