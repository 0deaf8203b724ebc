// The values a support-table row is tested against (ops/<op>_check.h rows; the MlaProlog and
// MlaPreprocess negative tests): every dtype and format the C API knows, and a view's dims.
#pragma once

#include <cstdint>
#include <vector>

#include "mlaops/dtype.h"
#include "mlaops/tensor_view.h"

namespace mlaops::testing {

inline std::vector<DType> every_dtype() {
  std::vector<DType> v;
  for (int32_t i = 0; i < 64; ++i)
    if (dtype_is_known(i)) v.push_back(static_cast<DType>(i));
  return v;
}

inline std::vector<Format> every_format() {
  std::vector<Format> v;
  for (int32_t i = 0; i < 64; ++i)
    if (format_is_known(i)) v.push_back(static_cast<Format>(i));
  return v;
}

inline std::vector<int64_t> dims_of(const TensorView& t) { return std::vector<int64_t>(t.dims, t.dims + t.rank); }

}  // namespace mlaops::testing
