// Python objects -> mlaops::TensorView (convert.h).
#include "convert.h"

#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "mlaops/dtype.h"

namespace mlaops::py {

int32_t acl_dtype_of(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return -1;
  const auto code = static_cast<C>(t.code);
  if (code == C::Int) {
    switch (t.bits) {
      case 8: return static_cast<int32_t>(DType::kInt8);
      case 16: return static_cast<int32_t>(DType::kInt16);
      case 32: return static_cast<int32_t>(DType::kInt32);
      case 64: return static_cast<int32_t>(DType::kInt64);
    }
  } else if (code == C::UInt) {
    switch (t.bits) {
      case 8: return static_cast<int32_t>(DType::kUInt8);
      case 16: return static_cast<int32_t>(DType::kUInt16);
      case 32: return static_cast<int32_t>(DType::kUInt32);
      case 64: return static_cast<int32_t>(DType::kUInt64);
    }
  } else if (code == C::Float) {
    switch (t.bits) {
      case 16: return static_cast<int32_t>(DType::kFloat16);
      case 32: return static_cast<int32_t>(DType::kFloat32);
      case 64: return static_cast<int32_t>(DType::kFloat64);
    }
  } else if (code == C::Bfloat && t.bits == 16) {
    return static_cast<int32_t>(DType::kBFloat16);
  } else if (code == C::Bool && t.bits == 8) {
    return static_cast<int32_t>(DType::kBool);
  }
  return -1;
}

TensorView Bound::view(nb::handle spec, const char* name) {
  if (!nb::isinstance<nb::tuple>(spec) || (nb::len(spec) != 3 && nb::len(spec) != 4))
    throw nb::type_error((std::string(name) + ": expected an (array, dtype, format[, logical dims]) tuple").c_str());
  nb::tuple t = nb::borrow<nb::tuple>(spec);
  Array a;
  if (!nb::try_cast<Array>(t[0], a))
    throw nb::type_error((std::string(name) +
                          ": expected a CPU tensor or array (torch.Tensor, numpy.ndarray or any "
                          "object with __dlpack__ on the CPU)")
                             .c_str());
  int32_t dtype = nb::cast<int32_t>(t[1]);
  if (dtype < 0) dtype = acl_dtype_of(a.dtype());
  if (dtype < 0) throw nb::type_error((std::string(name) + ": unsupported element type").c_str());
  if (a.ndim() > static_cast<size_t>(kMaxRank))
    throw nb::value_error((std::string(name) + ": rank above 8").c_str());
  TensorView v;
  v.data = a.data();
  v.dtype = static_cast<DType>(dtype);
  v.format = static_cast<Format>(nb::cast<int32_t>(t[2]));
  v.rank = static_cast<int>(a.ndim());
  for (int i = 0; i < v.rank; ++i) {
    v.dims[i] = static_cast<int64_t>(a.shape(static_cast<size_t>(i)));
    v.strides[i] = a.stride(static_cast<size_t>(i));
  }
  v.storage_rank = v.rank;
  for (int i = 0; i < v.rank; ++i) v.storage_dims[i] = v.dims[i];
  if (nb::len(spec) == 4) {  // an NZ tensor: the array is its storage, the view its logical shape
    const auto logical = nb::cast<std::vector<int64_t>>(t[3]);
    if (logical.size() > static_cast<size_t>(kMaxRank))
      throw nb::value_error((std::string(name) + ": rank above 8").c_str());
    v.rank = static_cast<int>(logical.size());
    int64_t step = 1;
    for (int i = v.rank - 1; i >= 0; --i) {
      v.dims[i] = logical[static_cast<size_t>(i)];
      v.strides[i] = step;
      step *= v.dims[i] > 0 ? v.dims[i] : 1;
    }
  }
  arrays_.push_back(a);
  return v;
}

const TensorView* Bound::optional(nb::handle spec, const char* name) {
  if (spec.is_none()) return nullptr;
  views_.push_back(view(spec, name));
  return &views_.back();
}

}  // namespace mlaops::py
