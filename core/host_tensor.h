// An owning host tensor (bytes + a TensorView onto them) for the tools, the tests and the
// benchmarks: never used inside the operators.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/element_access.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// An owning buffer plus a view onto it. Moves keep the view valid (the vector's buffer moves);
// copies are explicit (clone()). A default-constructed HostTensor is "absent".
struct HostTensor {
  std::vector<uint8_t> bytes;
  TensorView view;

  HostTensor() = default;
  HostTensor(HostTensor&&) = default;
  HostTensor& operator=(HostTensor&&) = default;
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  bool present() const { return view.rank > 0 || !bytes.empty(); }
  int64_t numel() const { return view.numel(); }
  // Element i in row-major logical order (through the view's strides).
  double get(int64_t i) const { return load_f64(view, linear_to_offset(view, i)); }
  void set(int64_t i, double v) { store_f64(view, linear_to_offset(view, i), v); }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = get(i);
    return v;
  }
  void fill_bytes(uint8_t b) { std::fill(bytes.begin(), bytes.end(), b); }
  HostTensor clone() const {
    HostTensor h;
    h.bytes = bytes;
    h.view = view;
    h.view.data = h.bytes.empty() ? nullptr : static_cast<void*>(h.bytes.data());
    return h;
  }
};

// A zero-filled contiguous tensor. The buffer is at least 1 byte, so even an empty tensor has
// a non-null data pointer (and a canary byte that must never change).
inline HostTensor make_tensor(DType dtype, const std::vector<int64_t>& dims, Format format = Format::kND) {
  HostTensor h;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  h.bytes.assign(static_cast<size_t>(std::max<int64_t>(n * dtype_size(dtype), 1)), 0);
  h.view = make_view(h.bytes.data(), dtype, dims.data(), static_cast<int>(dims.size()), format);
  return h;
}

// A tensor holding `values` (row-major), stored with the dtype's rounding (integer dtypes:
// the values are rounded to nearest first).
inline HostTensor from_values(DType dtype, const std::vector<int64_t>& dims, const std::vector<double>& values) {
  HostTensor h = make_tensor(dtype, dims);
  const bool integer = dtype == DType::kInt8 || dtype == DType::kInt32 || dtype == DType::kInt64;
  const int64_t n = h.numel();
  for (int64_t i = 0; i < n; ++i) {  // make_tensor is row-major and contiguous: element i at offset i
    const double v = values[static_cast<size_t>(i)];
    store_f64(h.view, i, integer ? std::nearbyint(v) : v);
  }
  return h;
}

}  // namespace mlaops
