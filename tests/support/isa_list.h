// The ISA levels every test iterates: mlaops::runnable_isas(), scalar first, up to the level this
// machine supports (only scalar off x86-64). Tests loop over this list instead of naming levels
// (docs/testing.md).
#pragma once

#include <vector>

#include "mlaops/runtime.h"

namespace mlaops {

inline std::vector<Isa> test_isas() { return runnable_isas(); }

}  // namespace mlaops
