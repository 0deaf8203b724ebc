// Shared validation helpers of the ops/*_check.cpp files. Every failure returns kParamInvalid
// (kParamNullptr for a missing required tensor) with a message
//   "<op>: <param>: <rule id> <rule>; allowed <allowed>, got <actual>"
// so tests can match the rule id and users see both values.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops::check {

// "[2, 3, 4]"
std::string shape_str(const TensorView& t);
std::string dims_str(std::initializer_list<int64_t> dims);
std::string dtype_set_str(std::initializer_list<DType> set);

Status dtype_in(const char* op, const char* name, const char* rule, const TensorView& t,
                std::initializer_list<DType> allowed);
Status rank_in(const char* op, const char* name, const char* rule, const TensorView& t,
               std::initializer_list<int> allowed);
Status format_in(const char* op, const char* name, const char* rule, const TensorView& t,
                 std::initializer_list<Format> allowed);
// Exact shape; both shapes are printed.
Status shape_eq(const char* op, const char* name, const char* rule, const TensorView& t,
                std::initializer_list<int64_t> expected);
// Row-major dense and element-aligned data pointer; product of dims fits int64 bytes.
Status dense(const char* op, const char* name, const char* rule, const TensorView& t);
// An optional tensor that the current mode forbids / requires.
Status absent(const char* op, const char* name, const char* rule, const TensorView* t, const char* why);
Status present(const char* op, const char* name, const char* rule, const TensorView* t, const char* why);
// Integer value in a set or range.
Status value_in(const char* op, const char* name, const char* rule, int64_t v, std::initializer_list<int64_t> allowed);
Status value_range(const char* op, const char* name, const char* rule, int64_t v, int64_t lo, int64_t hi);

// Outputs must not overlap each other or any input (except the exact in/out identities the
// operator allows, which are simply not listed as outputs). Each entry: name, view.
struct Region {
  const char* name;
  const TensorView* view;
};
Status no_overlap(const char* op, const char* rule, const std::vector<Region>& outputs,
                  const std::vector<Region>& inputs);

// Reads a C string attribute with a length bound (never past max_len bytes).
std::string bounded_string(const char* s, size_t max_len, bool* truncated);

}  // namespace mlaops::check
