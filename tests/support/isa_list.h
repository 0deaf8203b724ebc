// The ISA levels every test iterates: mlaops::runnable_isas(), scalar first, up to the level this
// machine supports (only scalar off x86-64). Tests loop over this list instead of naming levels
// (docs/testing.md).
#pragma once

#include <type_traits>

#include <vector>

#include "mlaops/runtime.h"

namespace mlaops {

inline std::vector<Isa> test_isas() { return runnable_isas(); }

// Runs f() (or f(isa, threads), for messages) under every level of test_isas(), each with 1 and 2
// threads; then the defaults again (the detected level, the default thread count).
template <class F>
void for_each_isa_and_threads(F&& f) {
  for (Isa isa : test_isas()) {
    set_isa(isa);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      if constexpr (std::is_invocable_v<F&, Isa, int>) {
        f(isa, threads);
      } else {
        f();
      }
    }
  }
  reset_isa();
  set_num_threads(0);
}

}  // namespace mlaops
