// FRACTAL_NZ <-> ND (docs/numerics.md).
//
// A logical matrix W [rows, cols] with element size b is stored as
//   storage [C1, R1, 16, c0],  c0 = 32 / b (16 for bf16/fp16, 32 for int8),
//   R1 = ceil(rows / 16), C1 = ceil(cols / c0), zero padding;
//   W[r][c] at ((c / c0) * R1 + r / 16) * 16 * c0 + (r % 16) * c0 + c % c0.
// An aclTensor in FRACTAL_NZ arrives either with the 4-D storage shape as its view (the aclnn
// examples) or with the 2-D logical view and the 4-D storage shape (torch_npu);
// resolve_nz() accepts both.
#pragma once

#include <cstdint>

#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

struct NzMatrix {
  int64_t rows = 0;   // logical rows (K for MlaProlog weights)
  int64_t cols = 0;   // logical cols
  int64_t r1 = 0;     // ceil(rows / 16)
  int64_t c1 = 0;     // ceil(cols / c0)
  int64_t c0 = 0;     // 32 / element size
  // Linear element index of W[r][c] in the storage.
  int64_t index(int64_t r, int64_t c) const {
    return ((c / c0) * r1 + r / 16) * (16 * c0) + (r % 16) * c0 + (c % c0);
  }
  int64_t storage_elems() const { return c1 * r1 * 16 * c0; }
};

// c0 for an element size in bytes (0 if the size does not divide 32).
int64_t nz_c0(int64_t elem_size);

// Logical matrix of an NZ tensor: a 4-D view [C1, R1, 16, c0] (rows = R1*16, cols = C1*c0), or a
// 2-D view [rows, cols] whose storage dims are the matching 4-D shape. `name` and `op` are used
// in the error message with the caller's `rule` id. The view must be contiguous; the caller checks
// that the storage's byte size fits int64.
Status resolve_nz(const TensorView& t, const char* op, const char* name, const char* rule, NzMatrix* out);

// Packs a row-major ND matrix into NZ storage (padding zeroed) and back.
void nd_to_nz(const void* src, void* dst, int64_t rows, int64_t cols, int64_t elem_size);
void nz_to_nd(const void* src, void* dst, int64_t rows, int64_t cols, int64_t elem_size);
// Storage shape [C1, R1, 16, c0] for an ND matrix.
void nz_storage_shape(int64_t rows, int64_t cols, int64_t elem_size, int64_t out[4]);

}  // namespace mlaops
