// Checked int64 size and index arithmetic (house rule 4: no unchecked size math).
#pragma once

#include <climits>
#include <cstdint>
#include <initializer_list>

#include "core/error.h"

namespace mlaops {

// Each returns false (and leaves *out unspecified) on int64 overflow.
inline bool mul_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool add_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool product_ok(std::initializer_list<int64_t> xs, int64_t* out) {
  int64_t p = 1;
  for (int64_t x : xs) {
    if (x < 0 || !mul_ok(p, x, &p)) return false;
  }
  *out = p;
  return true;
}

// Saturating int64 sum (attribute arithmetic such as preTokens + nextTokens: the result keeps its
// sign and order when the exact sum does not fit).
inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

// Status-returning forms for MLAOPS_TRY: `what` names the quantity in the error message.
inline Status checked_mul(std::initializer_list<int64_t> xs, int64_t* out, const char* what) {
  if (!product_ok(xs, out)) return fail(kParamInvalid, "%s: tensor too large (size overflows int64)", what);
  return kSuccess;
}
inline Status checked_add(int64_t a, int64_t b, int64_t* out, const char* what) {
  if (!add_ok(a, b, out)) return fail(kParamInvalid, "%s: size overflows int64", what);
  return kSuccess;
}

// Ceiling division and round-up for non-negative values (b > 0).
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace mlaops
