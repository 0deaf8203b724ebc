#include "core/fractal_nz.h"

#include <algorithm>
#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"

namespace mlaops {

int64_t nz_c0(int64_t elem_size) {
  if (elem_size <= 0 || 32 % elem_size != 0) return 0;
  return 32 / elem_size;
}

void nz_storage_shape(int64_t rows, int64_t cols, int64_t elem_size, int64_t out[4]) {
  const int64_t c0 = nz_c0(elem_size);
  out[0] = ceil_div(cols, c0);
  out[1] = ceil_div(rows, 16);
  out[2] = 16;
  out[3] = c0;
}

Status resolve_nz(const TensorView& t, const char* op, const char* name, const char* rule, NzMatrix* out) {
  const int64_t es = dtype_size(t.dtype);
  const int64_t c0 = nz_c0(es);
  MLAOPS_CHECK(c0 > 0, kParamInvalid, "%s: %s: %s FRACTAL_NZ needs an element size dividing 32 bytes; got %s",
               op, name, rule, dtype_name(t.dtype));
  const int64_t* s4 = nullptr;
  if (t.rank == 4) {
    s4 = t.dims;
  } else if (t.rank == 2) {
    MLAOPS_CHECK(t.storage_rank == 4, kParamInvalid,
                 "%s: %s: %s a 2-D FRACTAL_NZ view needs 4-D storage dims [C1, R1, 16, c0]; got %d storage dims",
                 op, name, rule, t.storage_rank);
    s4 = t.storage_dims;
  } else {
    return fail(kParamInvalid, "%s: %s: %s FRACTAL_NZ tensor must have 2 (logical) or 4 (storage) dims; got %d",
                op, name, rule, t.rank);
  }
  MLAOPS_CHECK(s4[2] == 16 && s4[3] == c0, kParamInvalid,
               "%s: %s: %s FRACTAL_NZ storage must be [C1, R1, 16, %lld] for %s; got [%lld, %lld, %lld, %lld]", op,
               name, rule, (long long)c0, dtype_name(t.dtype), (long long)s4[0], (long long)s4[1], (long long)s4[2],
               (long long)s4[3]);
  NzMatrix m;
  m.c0 = c0;
  m.c1 = s4[0];
  m.r1 = s4[1];
  if (t.rank == 4) {
    m.rows = m.r1 * 16;
    m.cols = m.c1 * c0;
  } else {
    m.rows = t.dims[0];
    m.cols = t.dims[1];
    MLAOPS_CHECK(ceil_div(m.rows, 16) == m.r1 && ceil_div(m.cols, c0) == m.c1, kParamInvalid,
                 "%s: %s: %s logical shape [%lld, %lld] does not match FRACTAL_NZ storage [%lld, %lld, 16, %lld]", op,
                 name, rule, (long long)m.rows, (long long)m.cols, (long long)m.c1, (long long)m.r1, (long long)c0);
  }
  out[0] = m;
  return kSuccess;
}

void nd_to_nz(const void* src, void* dst, int64_t rows, int64_t cols, int64_t elem_size) {
  NzMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.c0 = nz_c0(elem_size);
  m.r1 = ceil_div(rows, 16);
  m.c1 = ceil_div(cols, m.c0);
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (rows % 16 != 0 || cols % m.c0 != 0) std::memset(d, 0, static_cast<size_t>(m.storage_elems() * elem_size));
  // Row r's columns [c, c + c0) are contiguous in both layouts (32 bytes), and a column block's
  // rows are contiguous in NZ: two column blocks at a time, every row's 64 source bytes (one line
  // when aligned) go to the two blocks, each written in address order. (Row by row, the 32-byte
  // pieces of one row land a column block apart, often a multiple of 4 KiB: the same cache set.)
  const int64_t runs = cols / m.c0, whole = runs * m.c0;  // runs of exactly 32 bytes, then the partial one
  const int64_t panel = m.r1 * 16 * 32;                    // bytes from one column block to the next
  const int64_t rb = cols * elem_size;                     // source row bytes
  constexpr int64_t kAhead = 8;                            // source rows prefetched ahead
  int64_t k = 0;
  for (; k + 2 <= runs; k += 2) {
    char* d0 = d + k * panel;
    char* d1 = d0 + panel;
    const char* s0 = s + k * 32;
    for (int64_t r = 0; r < rows; ++r) {
      if (r + kAhead < rows) __builtin_prefetch(s0 + (r + kAhead) * rb);
      std::memcpy(d0 + r * 32, s0 + r * rb, 32);
      std::memcpy(d1 + r * 32, s0 + r * rb + 32, 32);
    }
  }
  for (; k < runs; ++k)
    for (int64_t r = 0; r < rows; ++r) std::memcpy(d + k * panel + r * 32, s + k * 32 + r * rb, 32);
  if (whole < cols)
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(d + runs * panel + r * 32, s + whole * elem_size + r * rb, static_cast<size_t>((cols - whole) * elem_size));
}

void nz_to_nd(const void* src, void* dst, int64_t rows, int64_t cols, int64_t elem_size) {
  NzMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.c0 = nz_c0(elem_size);
  m.r1 = ceil_div(rows, 16);
  m.c1 = ceil_div(cols, m.c0);
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(d + (r * cols + c) * elem_size, s + m.index(r, c) * elem_size, static_cast<size_t>(elem_size));
}

}  // namespace mlaops
