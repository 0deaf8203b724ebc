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
// Same, for the acl runtime functions (aclError codes): also logs the message at ERROR level
// (module ASCENDCL, docs/c-api.md "Logging") with the caller's file and line.
int fail_code_at(const char* file, int line, int code, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
void set_last_error(const std::string& message);
void clear_last_error();
std::string last_error_string();

}  // namespace mlaops

// Validation at the boundary: on a false condition, record the message and return the code.
#define MLAOPS_CHECK(cond, code, ...)                           \
  do {                                                          \
    if (!(cond)) return ::mlaops::fail((code), __VA_ARGS__);    \
  } while (0)

#define MLAOPS_FAIL_CODE(code, ...) ::mlaops::fail_code_at(__FILE__, __LINE__, (code), __VA_ARGS__)

// Propagate a non-success Status.
#define MLAOPS_TRY(expr)                                        \
  do {                                                          \
    const ::mlaops::Status mlaops_try_status_ = (expr);         \
    if (mlaops_try_status_ != ::mlaops::kSuccess) return mlaops_try_status_; \
  } while (0)

// Kernels trust validated inputs and only assert (debug builds).
#define MLAOPS_DCHECK(cond) assert(cond)
