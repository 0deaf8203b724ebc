// Status codes of the mlaops C++ API (the aclnnStatus values) and the thread-local last error.
#pragma once

#include <cstdint>

#include "mlaops/export.h"

namespace mlaops {

enum Status : int32_t {
  kSuccess = 0,
  kParamNullptr = 161001,   // a required pointer or handle is null
  kParamInvalid = 161002,   // a shape, dtype, attribute or content rule is violated
  kRuntimeError = 361001,   // runtime or allocation failure
  kInner = 561000,          // internal error
  kInnerNullptr = 561103,   // internal null pointer (e.g. executor destroy of NULL)
};

// Message of the most recent error on this thread ("" if none). Format:
// "<function>: <parameter>: <rule>; allowed <allowed>, got <actual>".
MLAOPS_API const char* last_error_message();

}  // namespace mlaops
