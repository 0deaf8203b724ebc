// Host allocation failure at the C API boundary (docs/reliability/guard_and_faults.md).
//
// The library allocates with operator new only (std::vector, std::string, std::function,
// make_shared / make_unique; aclCreate* use the nothrow form and return null). A failure inside an
// entry point throws std::bad_alloc, which guarded() and execute() (api/runtime/executor.h) turn into
// out_of_memory(): the call returns kRuntimeError (361001) with a message, and every object it
// had made is released by its owner on the way out (RAII), before any output byte is written.
#pragma once

#include "mlaops/status.h"

namespace mlaops {

// The number of C entry points running on this thread (0: none). Tests count and fail the
// allocations made while it is > 0 (fault injection: tests/reliability/).
int api_call_depth();

class ApiCallScope {
 public:
  ApiCallScope();
  ~ApiCallScope();
  ApiCallScope(const ApiCallScope&) = delete;
  ApiCallScope& operator=(const ApiCallScope&) = delete;
};

// Sets the message "<fn>: out of memory: a host allocation failed" and returns kRuntimeError.
Status out_of_memory(const char* fn);

}  // namespace mlaops
