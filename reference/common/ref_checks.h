// Checks and loaders shared by the float64 references: each takes the reference's name for its
// messages. The references validate defensively (they may be handed anything by a test) so that
// they never read or write out of bounds. Built on the references' own helpers (ref_util.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/error.h"
#include "mlaops/tensor_view.h"
#include "reference/common/ref_util.h"

namespace mlaops::ref {

// Rank in [0, kMaxRank], dims non-negative, numel (and bytes) fit int64, data non-null when
// the tensor is not empty.
inline Status check_view(const char* op, const TensorView& t, const char* name, int64_t* numel) {
  MLAOPS_CHECK(t.rank >= 0 && t.rank <= kMaxRank, kParamInvalid, "%s: %s: rank must be in [0, %d]; got %d", op, name,
               kMaxRank, t.rank);
  MLAOPS_CHECK(numel_of(t, numel), kParamInvalid,
               "%s: %s: dims must be non-negative and the size must fit int64", op, name);
  MLAOPS_CHECK(*numel == 0 || t.data != nullptr, kParamNullptr, "%s: %s: data is null for a non-empty tensor", op,
               name);
  return kSuccess;
}

// A token-major tensor: its leading dims multiply to T, its trailing dims equal `tail`.
inline Status check_token_major(const char* op, const TensorView& t, const char* name, int64_t T,
                                std::initializer_list<int64_t> tail) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(op, t, name, &numel));
  const int n_tail = static_cast<int>(tail.size());
  MLAOPS_CHECK(t.rank >= n_tail + 1, kParamInvalid, "%s: %s: needs at least %d dims; got %d", op, name, n_tail + 1,
               t.rank);
  int i = t.rank - n_tail;
  for (int64_t want : tail) {
    MLAOPS_CHECK(t.dims[i] == want, kParamInvalid, "%s: %s: dim %d must be %lld; got %lld", op, name, i,
                 (long long)want, (long long)t.dims[i]);
    ++i;
  }
  int64_t lead = 1;
  bool lead_ok = true;
  for (int k = 0; k < t.rank - n_tail; ++k) lead_ok = lead_ok && mul_ok(lead, t.dims[k], &lead);
  MLAOPS_CHECK(lead_ok && lead == T, kParamInvalid, "%s: %s: leading dims must multiply to T = %lld; got %lld", op,
               name, (long long)T, (long long)lead);
  return kSuccess;
}

// A vector read by linear index: exactly n elements ([n], [1, n], ...).
inline Status check_vector(const char* op, const TensorView& t, const char* name, int64_t n) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(op, t, name, &numel));
  MLAOPS_CHECK(numel == n, kParamInvalid, "%s: %s: must hold %lld elements; got %lld", op, name, (long long)n,
               (long long)numel);
  return kSuccess;
}

// n elements in linear (row-major logical) order as float64.
inline std::vector<double> load_vector(const TensorView& t, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = load(t, linear_offset(t, i));
  return v;
}

}  // namespace mlaops::ref
