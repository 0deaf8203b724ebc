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
// Use: a call helper opens a GuardScope for the whole two-phase call; its phase 1 passes the
// views to guard_views() before creating the aclTensors; a hook that edits the test's buffers
// between the phases is followed by guard_refresh(). Outside a guard mode all three do nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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

 private:
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

// The bytes from v.data to one past the last byte the view (its dims and strides) or its storage
// dims reach; -1 when it cannot be placed (negative strides, unknown dtype).
int64_t view_extent_bytes(const TensorView& v);

// The guarded regions of one call; when destroyed, writes back to the originals the bytes the call
// changed (only those: a test that edits a view's dtype may describe more bytes than it owns, and
// a rejected call changes none).
class GuardScope {
 public:
  GuardScope();
  ~GuardScope();
  GuardScope(const GuardScope&) = delete;
  GuardScope& operator=(const GuardScope&) = delete;

  void place(TensorView* const* views, size_t n);
  void refresh();  // originals -> regions (after a hook edited the originals)
  size_t regions() const { return groups_.size(); }

 private:
  struct Group {
    char* orig;
    size_t bytes;
    std::unique_ptr<GuardedBuffer> buf;
    std::vector<char> initial;  // the region's bytes when placed (or refreshed)
  };
  bool inside(const void* p) const;
  std::vector<Group> groups_;
  GuardScope* prev_ = nullptr;
};

// The innermost GuardScope of this thread, or null.
GuardScope* current_guard_scope();

// Moves the views into guarded regions of the current scope (no-op without a scope or when the
// mode is kOff). Null pointers and views already inside a region of the scope are left alone.
void guard_views(TensorView* const* views, size_t n);
inline void guard_views(std::initializer_list<TensorView*> views) { guard_views(views.begin(), views.size()); }
void guard_refresh();

// Number of tensors placed in guarded regions since the process started (the tests' figures).
int64_t guarded_tensor_count();

}  // namespace mlaops::testing
