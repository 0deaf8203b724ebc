// The runtime state the other api/ files consult (api/runtime/acl_runtime.cpp): whether the calling
// thread has a current device, and the live allocations of aclrtMalloc / aclrtMallocHost.
#pragma once

#include <cstddef>
#include <cstdint>

#include "acl/acl_base.h"

namespace mlaops::api {

// ACL_SUCCESS when the calling thread has a current device (aclrtSetDevice, aclrtCreateContext,
// aclrtSetCurrentContext); else ACL_ERROR_RT_CONTEXT_NULL with the message "<fn>: ACL-06 ..."
// (the calls that need one: docs/c-api.md, "Runtime").
aclError require_current_device(const char* fn);

// A live allocation of aclrtMalloc or aclrtMallocHost: its first byte, the size asked for, and
// its id (a process-wide count, never reused: a buffer allocated again at a freed one's address,
// by the caller or as a workspace, is another allocation).
struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  bool host = false;  // aclrtMallocHost
  uint64_t id = 0;
};

// The live allocation containing address p (O(log allocations), under the runtime's lock);
// false when p lies in none: memory that is not from aclrtMalloc / aclrtMallocHost, or freed.
bool find_allocation(uintptr_t p, Allocation* out);

}  // namespace mlaops::api
