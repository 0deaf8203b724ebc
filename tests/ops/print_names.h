// gtest prints the operators' enums by name (test parameters, failure messages), not as bytes.
// PrintTo in the enums' namespace is found by argument-dependent lookup.
#pragma once

#include <ostream>

#include "mlaops/dtype.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"

namespace mlaops {

inline void PrintTo(DType t, std::ostream* os) { *os << dtype_name(t); }
inline void PrintTo(MlaPrologScenario s, std::ostream* os) { *os << mla_prolog_scenario_name(s); }
inline void PrintTo(MlaPrologCacheMode m, std::ostream* os) { *os << mla_prolog_cache_mode_name(m); }
inline void PrintTo(MlaPreprocessCacheMode m, std::ostream* os) { *os << mla_preprocess_cache_mode_name(m); }
inline void PrintTo(MlaPreprocessQuantMode m, std::ostream* os) { *os << mla_preprocess_quant_mode_name(m); }

}  // namespace mlaops
