// Workspace handling: a plan lays out the scratch buffers it needs (WorkspaceLayout, checked
// arithmetic, 64-byte aligned), phase 1 reports layout.total(), and at run time the caller's
// workspace is carved the same way (WorkspaceArena).
#pragma once

#include <cstdint>

#include "core/checked_math.h"

namespace mlaops {

inline constexpr int64_t kWorkspaceAlign = 64;

class WorkspaceLayout {
 public:
  // Reserves `bytes` (>= 0) and writes its offset; fails on overflow.
  Status add(int64_t bytes, int64_t* offset, const char* what) {
    if (bytes < 0) return fail(kParamInvalid, "%s: negative workspace request (%lld)", what, (long long)bytes);
    int64_t start = round_up(total_, kWorkspaceAlign);
    int64_t end;
    if (start < total_ || !add_ok(start, bytes, &end)) return fail(kParamInvalid, "%s: workspace size overflows int64", what);
    *offset = start;
    total_ = end;
    return kSuccess;
  }
  int64_t total() const { return total_ == 0 ? 0 : round_up(total_, kWorkspaceAlign); }

 private:
  int64_t total_ = 0;
};

// The caller's workspace seen through a layout's offsets.
class WorkspaceArena {
 public:
  WorkspaceArena(void* base, uint64_t size) : base_(static_cast<char*>(base)), size_(size) {}
  template <class T>
  T* at(int64_t offset) const {
    MLAOPS_DCHECK(offset >= 0 && static_cast<uint64_t>(offset) <= size_);
    return reinterpret_cast<T*>(base_ + offset);
  }
  uint64_t size() const { return size_; }

 private:
  char* base_;
  uint64_t size_;
};

}  // namespace mlaops
