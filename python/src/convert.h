// Python objects -> mlaops::TensorView for the extension module (docs/python.md).
//
// A tensor argument arrives from the Python layer (python/mlaops/_ops.py) as a tuple
// (array, acl_dtype, acl_format): `array` is anything nanobind's ndarray accepts (a torch tensor
// or numpy array, through DLPack or the buffer protocol, zero-copy), `acl_dtype` is -1 (take the
// array's own dtype) or an aclDataType value (numpy bf16 arrives as a uint16 view with 27),
// `acl_format` is an aclFormat value (29 for FRACTAL_NZ weights, else 2). An NZ tensor of
// torch_npu's kind arrives as (storage, acl_dtype, 29, logical dims): the view takes the logical
// dims with row-major strides and the array's shape as its storage dims, as torch_npu passes it
// to aclCreateTensor.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "mlaops/tensor_view.h"

namespace mlaops::py {

namespace nb = nanobind;
using Array = nb::ndarray<nb::device::cpu>;

// Keeps the arrays (and the views that optional pointers point at) alive for one call.
class Bound {
 public:
  // The view of one (array, acl_dtype, acl_format) tuple; raises TypeError / ValueError.
  TensorView view(nb::handle spec, const char* name);
  // nullptr for None, else a pointer to a view that lives as long as this object.
  const TensorView* optional(nb::handle spec, const char* name);

 private:
  std::vector<Array> arrays_;
  std::deque<TensorView> views_;
};

// The aclDataType of a DLPack dtype, or -1 when mlaops has none.
int32_t acl_dtype_of(nb::dlpack::dtype t);

}  // namespace mlaops::py
