#include "core/alloc.h"

#include "core/error.h"

namespace mlaops {
namespace {

thread_local int t_depth = 0;

}  // namespace

int api_call_depth() { return t_depth; }
ApiCallScope::ApiCallScope() { ++t_depth; }
ApiCallScope::~ApiCallScope() { --t_depth; }

Status out_of_memory(const char* fn) {
  return fail(kRuntimeError, "%s: out of memory: a host allocation failed (nothing was written)", fn);
}

}  // namespace mlaops
