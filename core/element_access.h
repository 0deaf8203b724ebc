// Element-wise typed access to a TensorView, for the float64 reference, the tests and the
// slow paths (never in kernels): read any element as double, write a double with the dtype's
// rounding rule (mlaops/numeric.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "mlaops/numeric.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// Element offset of a multi-index (idx has t.rank entries).
inline int64_t elem_offset(const TensorView& t, const int64_t* idx) {
  int64_t off = 0;
  for (int i = 0; i < t.rank; ++i) off += idx[i] * t.strides[i];
  return off;
}

// Element offset of the i-th element in row-major logical order.
inline int64_t linear_to_offset(const TensorView& t, int64_t linear) {
  int64_t off = 0;
  for (int i = t.rank - 1; i >= 0; --i) {
    const int64_t d = t.dims[i] > 0 ? t.dims[i] : 1;
    off += (linear % d) * t.strides[i];
    linear /= d;
  }
  return off;
}

// Element `off` of a dense buffer of `dtype` (the TensorView forms below read t.data / t.dtype).
inline double load_f64(const void* data, DType dtype, int64_t off) {
  const char* p = static_cast<const char*>(data);
  switch (dtype) {
    case DType::kFloat32: { float v; std::memcpy(&v, p + off * 4, 4); return v; }
    case DType::kFloat64: { double v; std::memcpy(&v, p + off * 8, 8); return v; }
    case DType::kFloat16: { uint16_t v; std::memcpy(&v, p + off * 2, 2); return fp16_to_float(v); }
    case DType::kBFloat16: { uint16_t v; std::memcpy(&v, p + off * 2, 2); return bf16_to_float(v); }
    case DType::kInt8: return static_cast<int8_t>(p[off]);
    case DType::kUInt8: return static_cast<uint8_t>(p[off]);
    case DType::kBool: return p[off] != 0 ? 1.0 : 0.0;
    case DType::kInt16: { int16_t v; std::memcpy(&v, p + off * 2, 2); return v; }
    case DType::kUInt16: { uint16_t v; std::memcpy(&v, p + off * 2, 2); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p + off * 4, 4); return v; }
    case DType::kUInt32: { uint32_t v; std::memcpy(&v, p + off * 4, 4); return v; }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p + off * 8, 8); return static_cast<double>(v); }
    case DType::kUInt64: { uint64_t v; std::memcpy(&v, p + off * 8, 8); return static_cast<double>(v); }
    default: return 0.0;
  }
}
inline double load_f64(const TensorView& t, int64_t off) { return load_f64(t.data, t.dtype, off); }

// Integer read (exact for 64-bit types).
inline int64_t load_i64(const TensorView& t, int64_t off) {
  const char* p = static_cast<const char*>(t.data);
  switch (t.dtype) {
    case DType::kInt64: { int64_t v; std::memcpy(&v, p + off * 8, 8); return v; }
    case DType::kUInt64: { uint64_t v; std::memcpy(&v, p + off * 8, 8); return static_cast<int64_t>(v); }
    default: return static_cast<int64_t>(load_f64(t, off));
  }
}

// Writes v: float types round to nearest even from the double; integer types take v as an
// already rounded value and saturate (NaN -> 0).
inline void store_f64(void* data, DType dtype, int64_t off, double v) {
  char* p = static_cast<char*>(data);
  switch (dtype) {
    case DType::kFloat32: { float f = static_cast<float>(v); std::memcpy(p + off * 4, &f, 4); return; }
    case DType::kFloat64: std::memcpy(p + off * 8, &v, 8); return;
    case DType::kFloat16: { uint16_t h = double_to_fp16(v); std::memcpy(p + off * 2, &h, 2); return; }
    case DType::kBFloat16: { uint16_t h = double_to_bf16(v); std::memcpy(p + off * 2, &h, 2); return; }
    case DType::kInt8: p[off] = static_cast<char>(saturate_int8(v)); return;
    case DType::kUInt8: p[off] = static_cast<char>(v != v ? 0 : v < 0 ? 0 : v > 255 ? 255 : static_cast<int>(v)); return;
    case DType::kBool: p[off] = v != 0.0; return;
    case DType::kInt32: {
      int32_t i = v != v ? 0 : v < -2147483648.0 ? INT32_MIN : v > 2147483647.0 ? INT32_MAX : static_cast<int32_t>(v);
      std::memcpy(p + off * 4, &i, 4);
      return;
    }
    case DType::kInt64: { int64_t i = static_cast<int64_t>(v); std::memcpy(p + off * 8, &i, 8); return; }
    default: return;
  }
}
inline void store_f64(const TensorView& t, int64_t off, double v) { store_f64(t.data, t.dtype, off, v); }

}  // namespace mlaops
