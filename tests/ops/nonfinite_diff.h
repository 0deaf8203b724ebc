// The elements a poisoned run changed against a clean run of the same case (the non-finite data
// tests, docs/numerics.md "Non-finite and extreme values").
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_tensor.h"

namespace mlaops::testing {

// How many elements of `bad` differ from `clean` (NaN equals NaN), and how many of those are not
// finite.
struct Diff {
  int64_t n = 0, nonfinite = 0;
};
inline Diff diff(const HostTensor& bad, const HostTensor& clean) {
  Diff d;
  for (int64_t i = 0; i < clean.numel(); ++i) {
    const double a = bad.get(i), b = clean.get(i);
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    ++d.n;
    d.nonfinite += !std::isfinite(a);
  }
  return d;
}

}  // namespace mlaops::testing
