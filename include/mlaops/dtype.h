// Element types and tensor formats of the mlaops C++ API. The numeric values equal CANN's
// aclDataType / aclFormat, so conversion across the C API is a cast.
#pragma once

#include <cstdint>

#include "mlaops/export.h"

namespace mlaops {

enum class DType : int32_t {
  kUndefined = -1,
  kFloat32 = 0,
  kFloat16 = 1,
  kInt8 = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt16 = 6,
  kUInt16 = 7,
  kUInt32 = 8,
  kInt64 = 9,
  kUInt64 = 10,
  kFloat64 = 11,
  kBool = 12,
  kString = 13,
  kComplex64 = 16,
  kComplex128 = 17,
  kBFloat16 = 27,
  kInt4 = 29,
  kUInt1 = 30,
  kComplex32 = 33,
  kHiFloat8 = 34,
  kFloat8E5M2 = 35,
  kFloat8E4M3FN = 36,
  kFloat8E8M0 = 37,
  kFloat6E3M2 = 38,
  kFloat6E2M3 = 39,
  kFloat4E2M1 = 40,
  kFloat4E1M2 = 41,
};

enum class Format : int32_t {
  kUndefined = -1,
  kNCHW = 0,
  kNHWC = 1,
  kND = 2,
  kNC1HWC0 = 3,
  kFractalZ = 4,
  kNC1HWC0_C04 = 12,
  kHWCN = 16,
  kNDHWC = 27,
  kFractalNZ = 29,
  kNCDHW = 30,
  kNDC1HWC0 = 32,
  kFractalZ3D = 33,
  kNC = 35,
  kNCL = 47,
  kFractalNZ_C0_16 = 50,
  kFractalNZ_C0_32 = 51,
  kFractalNZ_C0_2 = 52,
  kFractalNZ_C0_4 = 53,
  kFractalNZ_C0_8 = 54,
};

// Bytes per element; 0 for undefined, string and sub-byte types.
MLAOPS_API int64_t dtype_size(DType t);
// True for every value the enum lists.
MLAOPS_API bool dtype_is_known(int32_t value);
MLAOPS_API bool format_is_known(int32_t value);
// The vendor's name, e.g. "BF16", "FLOAT16", "INT8"; "UNKNOWN(<n>)" style names are not
// produced: unknown values give "UNDEFINED".
MLAOPS_API const char* dtype_name(DType t);
MLAOPS_API const char* format_name(Format f);

}  // namespace mlaops
