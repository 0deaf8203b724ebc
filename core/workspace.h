// Workspace handling: a plan lays out the scratch buffers it needs (WorkspaceLayout, checked
// arithmetic, 64-byte aligned), phase 1 reports layout.total(), and at run time the caller's
// workspace is carved the same way (WorkspaceArena).
#pragma once

#include <climits>
#include <cstdint>

#include "core/checked_math.h"

namespace mlaops {

inline constexpr int64_t kWorkspaceAlign = 64;

class WorkspaceLayout {
 public:
  // `op` and `rule` (a literal naming the rule id and the site, e.g. "FIA-17 workspace overflows
  // int64 (the sum of its parts)") word the failure of add().
  WorkspaceLayout(const char* op, const char* rule) : op_(op), rule_(rule) {}
  // Reserves `bytes` (>= 0) and writes its offset; fails (nothing reserved) when the aligned sum
  // of the parts overflows int64.
  Status add(int64_t bytes, int64_t* offset) {
    const int64_t start = round_up(total_, kWorkspaceAlign);
    int64_t end;
    if (bytes < 0 || start < total_ || !add_ok(start, bytes, &end) || end > INT64_MAX - kWorkspaceAlign)
      return fail(kParamInvalid, "%s: workspace: %s; allowed <= 2^63 - 1 bytes in all, got %lld bytes of earlier parts + %lld",
                  op_, rule_, (long long)total_, (long long)bytes);
    *offset = start;
    total_ = end;
    return kSuccess;
  }
  int64_t total() const { return total_ == 0 ? 0 : round_up(total_, kWorkspaceAlign); }

 private:
  const char* op_;
  const char* rule_;
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
