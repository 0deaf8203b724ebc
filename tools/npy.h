// NumPy .npy files (format versions 1.0, 2.0 and 3.0; little-endian; C order) for the mlaops
// command: read into an owning tensor, write from any TensorView.
//
// dtypes (descr <-> DType):
//   '<f8' FLOAT64, '<f4' FLOAT, '<f2' FLOAT16, '<i8' INT64, '<i4' INT32, '<i2' INT16, '<u8' UINT64,
//   '<u4' UINT32, '<u2' UINT16, '|i1' INT8, '|u1' UINT8, '|b1' BOOL (1-byte types are also read
//   with '<' or '=': NumPy itself writes '|').
//   bfloat16: NumPy has no bfloat16. An ml_dtypes bfloat16 array saved with np.save is written as
//   the 2-byte void type '|V2', so mlaops writes BF16 as '|V2' and reads '|V2', '<V2' and the
//   descr 'bfloat16' as BF16 (little-endian bf16 bit patterns). From Python:
//   np.load(f).view(ml_dtypes.bfloat16), or for a torch tensor
//   torch.from_numpy(np.load(f).view(np.int16)).view(torch.bfloat16).
// Big-endian data, Fortran order, other dtypes, rank > 8, and any malformed header or size
// (truncated data, trailing bytes) are rejected with a message naming the file and the problem.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/dtype.h"
#include "mlaops/tensor_view.h"

namespace mlaops::tools {

// An owning dense row-major tensor: 8-byte aligned storage plus a view onto it. Movable (the
// view stays valid: the vector's buffer moves with it), not copyable.
struct NpyArray {
  std::vector<uint64_t> storage;
  TensorView view;

  NpyArray() = default;
  NpyArray(NpyArray&&) = default;
  NpyArray& operator=(NpyArray&&) = default;
  NpyArray(const NpyArray&) = delete;
  NpyArray& operator=(const NpyArray&) = delete;

  int64_t nbytes() const { return view.numel() * dtype_size(view.dtype); }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(storage.data()); }
};

// The .npy descr of a dtype ("<f4", "|V2" for BF16, ...); empty if the dtype has none here.
std::string npy_descr(DType dtype);
// The DType of a descr; kUndefined if not supported.
DType npy_dtype(const std::string& descr);

// Parses a whole .npy image (`size` bytes). On failure returns false and sets *error; reads
// nothing outside [data, data + size).
bool npy_parse(const uint8_t* data, size_t size, NpyArray* out, std::string* error);
// Serialises a tensor (any strides; the logical row-major element order) as a version 1.0 file
// (2.0 if the header does not fit 65535 bytes). False (with *error) for dtypes without a descr.
bool npy_serialize(const TensorView& t, std::vector<uint8_t>* out, std::string* error);

// File wrappers; error messages start with the path.
bool npy_read(const std::string& path, NpyArray* out, std::string* error);
bool npy_write(const std::string& path, const TensorView& t, std::string* error);

}  // namespace mlaops::tools
