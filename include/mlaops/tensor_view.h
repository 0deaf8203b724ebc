// Non-owning tensor view of the mlaops C++ API: what every operator, plan and reference takes.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "mlaops/dtype.h"
#include "mlaops/export.h"

namespace mlaops {

inline constexpr int kMaxRank = 8;

// A typed, strided window onto memory the caller owns. `data` points at the view's first
// element (the aclTensor offset is already applied); strides are in elements. For FRACTAL_NZ
// tensors `storage_dims` holds the 4-D physical shape (see core/fractal_nz.h); for other
// formats it is the allocation's shape and may be empty.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kUndefined;
  Format format = Format::kND;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int storage_rank = 0;
  int64_t storage_dims[kMaxRank] = {};

  // dims[i]; a negative i counts from the end (-1 = last).
  int64_t dim(int i) const { return dims[i < 0 ? rank + i : i]; }
  // Product of the dims (the caller has validated that it fits in int64).
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  bool empty() const { return numel() == 0; }
  // Row-major dense (size-1 and size-0 dims may have any stride).
  bool is_contiguous() const {
    int64_t expect = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (dims[i] != 1 && strides[i] != expect) return false;
      expect = static_cast<int64_t>(static_cast<uint64_t>(expect) * static_cast<uint64_t>(dims[i]));  // wraps, no UB
    }
    return true;
  }
  template <class T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

// A contiguous row-major view of `data` with the given dims.
MLAOPS_API TensorView make_view(void* data, DType dtype, std::initializer_list<int64_t> dims,
                                Format format = Format::kND);
MLAOPS_API TensorView make_view(void* data, DType dtype, const int64_t* dims, int rank,
                                Format format = Format::kND);

// Writes the product of the dims to *out; false if a dim is negative or the product (or its
// byte size) overflows int64.
MLAOPS_API bool checked_numel(const TensorView& t, int64_t* out);
MLAOPS_API bool checked_nbytes(const TensorView& t, int64_t* out);
// "[a, b, c]" into buf (always NUL-terminated); returns buf.
MLAOPS_API const char* shape_string(const TensorView& t, char* buf, int size);

}  // namespace mlaops
