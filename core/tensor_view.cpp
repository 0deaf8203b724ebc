// dtype/format tables and TensorView helpers of include/mlaops/{dtype,tensor_view}.h.
#include <cstdio>
#include <cstring>

#include "core/checked_math.h"
#include "mlaops/dtype.h"
#include "mlaops/runtime.h"
#include "mlaops/tensor_view.h"

namespace mlaops {
namespace {

struct DTypeRow {
  DType t;
  int64_t size;
  const char* name;
};
constexpr DTypeRow kDTypes[] = {
    {DType::kFloat32, 4, "FLOAT"},       {DType::kFloat16, 2, "FLOAT16"},       {DType::kInt8, 1, "INT8"},
    {DType::kInt32, 4, "INT32"},         {DType::kUInt8, 1, "UINT8"},           {DType::kInt16, 2, "INT16"},
    {DType::kUInt16, 2, "UINT16"},       {DType::kUInt32, 4, "UINT32"},         {DType::kInt64, 8, "INT64"},
    {DType::kUInt64, 8, "UINT64"},       {DType::kFloat64, 8, "DOUBLE"},        {DType::kBool, 1, "BOOL"},
    {DType::kString, 0, "STRING"},       {DType::kComplex64, 8, "COMPLEX64"},   {DType::kComplex128, 16, "COMPLEX128"},
    {DType::kBFloat16, 2, "BF16"},       {DType::kInt4, 0, "INT4"},             {DType::kUInt1, 0, "UINT1"},
    {DType::kComplex32, 4, "COMPLEX32"}, {DType::kHiFloat8, 1, "HIFLOAT8"},     {DType::kFloat8E5M2, 1, "FLOAT8_E5M2"},
    {DType::kFloat8E4M3FN, 1, "FLOAT8_E4M3FN"}, {DType::kFloat8E8M0, 1, "FLOAT8_E8M0"},
    {DType::kFloat6E3M2, 0, "FLOAT6_E3M2"}, {DType::kFloat6E2M3, 0, "FLOAT6_E2M3"},
    {DType::kFloat4E2M1, 0, "FLOAT4_E2M1"}, {DType::kFloat4E1M2, 0, "FLOAT4_E1M2"},
};

struct FormatRow {
  Format f;
  const char* name;
};
constexpr FormatRow kFormats[] = {
    {Format::kNCHW, "NCHW"},         {Format::kNHWC, "NHWC"},
    {Format::kND, "ND"},             {Format::kNC1HWC0, "NC1HWC0"},
    {Format::kFractalZ, "FRACTAL_Z"}, {Format::kNC1HWC0_C04, "NC1HWC0_C04"},
    {Format::kHWCN, "HWCN"},         {Format::kNDHWC, "NDHWC"},
    {Format::kFractalNZ, "FRACTAL_NZ"}, {Format::kNCDHW, "NCDHW"},
    {Format::kNDC1HWC0, "NDC1HWC0"}, {Format::kFractalZ3D, "FRACTAL_Z_3D"},
    {Format::kNC, "NC"},             {Format::kNCL, "NCL"},
    {Format::kFractalNZ_C0_16, "FRACTAL_NZ_C0_16"}, {Format::kFractalNZ_C0_32, "FRACTAL_NZ_C0_32"},
    {Format::kFractalNZ_C0_2, "FRACTAL_NZ_C0_2"},   {Format::kFractalNZ_C0_4, "FRACTAL_NZ_C0_4"},
    {Format::kFractalNZ_C0_8, "FRACTAL_NZ_C0_8"},
};

}  // namespace

const char* version() { return MLAOPS_VERSION_STRING; }

int64_t dtype_size(DType t) {
  for (const auto& r : kDTypes)
    if (r.t == t) return r.size;
  return 0;
}
bool dtype_is_known(int32_t value) {
  for (const auto& r : kDTypes)
    if (static_cast<int32_t>(r.t) == value) return true;
  return false;
}
bool format_is_known(int32_t value) {
  for (const auto& r : kFormats)
    if (static_cast<int32_t>(r.f) == value) return true;
  return false;
}
const char* dtype_name(DType t) {
  for (const auto& r : kDTypes)
    if (r.t == t) return r.name;
  return "UNDEFINED";
}
const char* format_name(Format f) {
  for (const auto& r : kFormats)
    if (r.f == f) return r.name;
  return "UNDEFINED";
}

TensorView make_view(void* data, DType dtype, const int64_t* dims, int rank, Format format) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.format = format;
  v.rank = rank;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    v.dims[i] = dims[i];
    v.strides[i] = stride;
    // wraps (unsigned) for shapes whose size overflows int64: the checks reject those by their
    // checked size (checked_nbytes) and never use such a stride
    stride = static_cast<int64_t>(static_cast<uint64_t>(stride) * static_cast<uint64_t>(dims[i] > 0 ? dims[i] : 1));
  }
  v.storage_rank = rank;
  for (int i = 0; i < rank; ++i) v.storage_dims[i] = dims[i];
  return v;
}

TensorView make_view(void* data, DType dtype, std::initializer_list<int64_t> dims, Format format) {
  return make_view(data, dtype, dims.begin(), static_cast<int>(dims.size()), format);
}

bool checked_numel(const TensorView& t, int64_t* out) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i)
    if (t.dims[i] < 0 || !mul_ok(n, t.dims[i], &n)) return false;
  *out = n;
  return true;
}

bool checked_nbytes(const TensorView& t, int64_t* out) {
  int64_t n;
  return checked_numel(t, &n) && mul_ok(n, dtype_size(t.dtype), out);
}

const char* shape_string(const TensorView& t, char* buf, int size) {
  if (size <= 0) return buf;
  int pos = std::snprintf(buf, static_cast<size_t>(size), "[");
  for (int i = 0; i < t.rank && pos < size; ++i)
    pos += std::snprintf(buf + pos, static_cast<size_t>(size - pos), i ? ", %lld" : "%lld", (long long)t.dims[i]);
  if (pos < size) std::snprintf(buf + pos, static_cast<size_t>(size - pos), "]");
  buf[size - 1] = '\0';
  return buf;
}

}  // namespace mlaops
