// Definitions behind the opaque aclnn handles (acl_meta.h), the live-object registry that turns
// use of a destroyed handle into an error code, and the aclTensor -> TensorView conversion
// every operator's api/ shim uses.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnn/acl_meta.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

struct aclTensor {
  std::vector<int64_t> view_dims;
  std::vector<int64_t> strides;       // elements
  std::vector<int64_t> storage_dims;
  int64_t offset = 0;                 // elements
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_ND;
  void* data = nullptr;
};

struct aclScalar {
  aclDataType dtype = ACL_DT_UNDEFINED;
  alignas(16) unsigned char value[16] = {};
};

struct aclIntArray {
  std::vector<int64_t> values;
};
struct aclFloatArray {
  std::vector<float> values;
};
struct aclBoolArray {
  std::vector<bool> values;
};
struct aclTensorList {
  std::vector<aclTensor*> tensors;
};

namespace mlaops::api {

// The int a C caller passed for an enum parameter (aclDataType, aclFormat, aclrtMemcpyKind). C lets
// a caller pass any int; reading a value outside the enum's range through the C++ enum type is
// undefined (UBSan's enum check), so the bytes are copied and validated as an int.
template <class E>
inline int32_t c_enum_value(const E& e) {
  static_assert(sizeof(E) == sizeof(int32_t), "a C enum parameter");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

enum class ObjKind { kTensor, kScalar, kIntArray, kFloatArray, kBoolArray, kTensorList };

void register_object(const void* p, ObjKind kind);
// Removes a live object; false if it was not live (as that kind).
bool unregister_object(const void* p, ObjKind kind);
bool is_live(const void* p, ObjKind kind);

// Converts a tensor argument of operator `op` into a view. nullptr -> kParamNullptr when
// `required`, else *present = false and kSuccess. A destroyed handle, an unsupported rank
// (> kMaxRank) or null data with a non-zero extent -> kParamInvalid. Messages name op and arg.
Status to_view(const aclTensor* t, const char* op, const char* name, bool required, TensorView* out,
               bool* present);
// Byte offset of the view start (offset * element size).
int64_t view_offset_bytes(const aclTensor* t);

}  // namespace mlaops::api
