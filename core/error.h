// Error reporting inside mlaops: every failure sets the thread-local message (read back with
// aclGetRecentErrMsg / mlaops::last_error_message) and returns a status code.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>

#include "mlaops/status.h"

namespace mlaops {

// Sets the thread-local message (printf-style) and returns `code`.
Status fail(Status code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Same, for callers that return an int code from another code space (aclError).
int fail_code(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void set_last_error(const std::string& message);
void clear_last_error();
std::string last_error_string();

}  // namespace mlaops

// Validation at the boundary: on a false condition, record the message and return the code.
#define MLAOPS_CHECK(cond, code, ...)                           \
  do {                                                          \
    if (!(cond)) return ::mlaops::fail((code), __VA_ARGS__);    \
  } while (0)

// Propagate a non-success Status.
#define MLAOPS_TRY(expr)                                        \
  do {                                                          \
    const ::mlaops::Status mlaops_try_status_ = (expr);         \
    if (mlaops_try_status_ != ::mlaops::kSuccess) return mlaops_try_status_; \
  } while (0)

// Kernels trust validated inputs and only assert (debug builds).
#define MLAOPS_DCHECK(cond) assert(cond)
