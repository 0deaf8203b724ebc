// Guard-page placement of the operator tests' tensors (docs/reliability/guard_and_faults.md).
//
// In a guard mode, every tensor a C-API call helper passes (tests/ops/*_aclnn_call.h,
// fia_entry_call.h) is copied into its own mmap'd region with a PROT_NONE page on each side,
// placed flush against one of them:
//   kTrailing: the tensor's last byte is the byte before the trailing guard page;
//   kLeading:  the tensor's first byte is the byte after the leading guard page.
// Any read or write past either end faults at once. Tensors whose bytes overlap (aliasing tests,
// MLA's value = key) share one region, at the same relative offsets. When the helper's call is
// done, every region is copied back to the test's own buffers, so the helpers' checks (reference
// comparison, canaries) see what the library wrote.
//
// During phase 1 the regions are read-only (a GetWorkspaceSize that wrote a tensor byte would
// fault); CallWorkspace, made before phase 2, makes them writable, records their bytes for the
// write-back, and places the workspace itself in a region flush against a guard page too. A call
// rejected in phase 1 writes nothing back.
//
// Use: a call helper opens a GuardScope for the whole two-phase call; its phase 1 passes the
// views to guard_views() before creating the aclTensors; a hook that edits the test's buffers
// between the phases is followed by guard_refresh(); the workspace of phase 2 is a CallWorkspace.
// Outside a guard mode the guard functions do nothing and CallWorkspace is aclrtMalloc's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "mlaops/tensor_view.h"

namespace mlaops::testing {

enum class GuardMode { kOff, kTrailing, kLeading };
GuardMode guard_mode();
void set_guard_mode(GuardMode mode);
const char* guard_mode_name(GuardMode mode);

// `bytes` of read-write memory between two PROT_NONE pages, flush against one of them. The start
// address is congruent to `residue` modulo `align` (a power of two; so a misaligned tensor of an
// alignment test stays misaligned): flush when the data is aligned, else within align - 1 bytes.
class GuardedBuffer {
 public:
  GuardedBuffer(size_t bytes, GuardMode mode, size_t align = 1, size_t residue = 0);  // kTrailing or kLeading
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  char* data() const { return data_; }
  size_t size() const { return bytes_; }
  void set_writable(bool writable);  // the pages between the guard pages

 private:
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

// The bytes from v.data to one past the last byte the view (its dims and strides) or its storage
// dims reach (sub-byte dtypes such as INT4: rounded up to whole bytes); -1 when it cannot be
// placed (negative strides, unknown dtype).
int64_t view_extent_bytes(const TensorView& v);

// The guarded regions of one call; when destroyed after execute(), writes back to the originals the
// bytes phase 2 changed (only those: a test that edits a view's dtype may describe more bytes than
// it owns). Without execute() (rejected in phase 1) the regions stayed read-only: nothing to write.
class GuardScope {
 public:
  GuardScope();
  ~GuardScope();
  GuardScope(const GuardScope&) = delete;
  GuardScope& operator=(const GuardScope&) = delete;

  void place(TensorView* const* views, size_t n);
  void refresh();  // originals -> regions (after a hook edited the originals)
  // Phase 2 is next: the regions become writable and their bytes are recorded; returns a
  // workspace of `bytes` flush against a guard page (null for 0), owned by the scope.
  void* execute(size_t bytes);
  size_t regions() const { return groups_.size(); }

 private:
  struct Group {
    char* orig;
    size_t bytes;
    std::unique_ptr<GuardedBuffer> buf;
    std::vector<char> initial;  // the region's bytes when phase 2 began
    GuardMode mode;             // the placement (a finished call's regions are kept for reuse)
    size_t align, residue;
  };
  bool inside(const void* p) const;
  std::vector<Group> groups_;
  std::vector<std::unique_ptr<GuardedBuffer>> workspaces_;
  bool executing_ = false;
  GuardScope* prev_ = nullptr;
};

// The innermost GuardScope of this thread, or null.
GuardScope* current_guard_scope();

// Moves the views into guarded regions of the current scope (no-op without a scope or when the
// mode is kOff). Null pointers and views already inside a region of the scope are left alone.
void guard_views(TensorView* const* views, size_t n);
inline void guard_views(std::initializer_list<TensorView*> views) { guard_views(views.begin(), views.size()); }
void guard_refresh();

// Number of tensors / workspaces placed in guarded regions since the process started (the
// tests' figures).
int64_t guarded_tensor_count();
int64_t guarded_workspace_count();

// The workspace of a call's phase 2, made after a successful phase 1. In a guard mode (a scope
// open): GuardScope::execute's region, flush against the trailing or leading guard page like the
// tensors (the library's workspace sizes are multiples of 64, so the trailing placement is flush
// too), so a workspace access out of bounds faults. Otherwise aclrtMalloc's, freed here.
class CallWorkspace {
 public:
  explicit CallWorkspace(uint64_t bytes) {
    GuardScope* scope = current_guard_scope();
    if (scope != nullptr && guard_mode() != GuardMode::kOff) {
      guarded_ = true;
      ptr_ = scope->execute(static_cast<size_t>(bytes));
    } else if (bytes > 0 && aclrtMalloc(&ptr_, static_cast<size_t>(bytes), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      ptr_ = nullptr;
      ok_ = false;
    }
  }
  ~CallWorkspace() {
    if (ptr_ != nullptr && !guarded_) aclrtFree(ptr_);
  }
  CallWorkspace(const CallWorkspace&) = delete;
  CallWorkspace& operator=(const CallWorkspace&) = delete;
  bool ok() const { return ok_; }
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  bool guarded_ = false;
  bool ok_ = true;
};

}  // namespace mlaops::testing
