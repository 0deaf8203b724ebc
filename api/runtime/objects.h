// Definitions behind the opaque aclnn handles (acl_meta.h), the live-object registry that turns
// use of a destroyed handle into an error code, and the aclTensor -> TensorView conversion
// every operator's api/ shim uses.
//
// Handles are the objects' addresses (the operators' shims read them directly), so a destroyed
// object must not be freed at once: the allocator would hand its address to the next object of
// the same size, and a stale handle would name that object. A destroy therefore takes the object
// out of the registry and parks it in a quarantine: a FIFO of the last kQuarantineSize destroyed
// objects, kept allocated (their values released) so that no new object can get their address;
// the oldest is freed when a newer destroy pushes it out. Every object also has a generation
// (a process-wide counter at creation): a tensor list records its members' generations, so it
// never takes or destroys a tensor that merely reuses a member's address, however late.
// docs/c-api.md, "Object API", states the bound.
#pragma once

#include <cstddef>
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
  std::vector<uint64_t> generations;  // each member's generation when the list was created
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

// Destroyed objects kept allocated (not reachable) before they are freed: a stale handle is
// rejected until this many later destroys (of any kind, list members included) have happened.
inline constexpr size_t kQuarantineSize = 4096;

// Registers a new object with the next generation (never 0). Thread-safe, like every function
// below (one mutex).
void register_object(const void* p, ObjKind kind);
// Destroys a live object of `kind`: out of the registry at once, into the quarantine (its values
// released, its memory kept until evicted). false, and nothing changed, if it is not live as
// that kind.
bool destroy_object(const void* p, ObjKind kind);
// Destroys a live tensor list and, of its members, exactly those that are still the tensors it
// was created with (same address and generation); false, and nothing changed, if it is not live.
bool destroy_tensor_list(const aclTensorList* l);
// Removes a live object from the registry without destroying it (the tests use it to simulate
// an address the allocator handed to a new object); false if it is not live as that kind.
bool unregister_object(const void* p, ObjKind kind);
bool is_live(const void* p, ObjKind kind);
// The generation of the live object of `kind` at p; 0 if there is none.
uint64_t live_generation(const void* p, ObjKind kind);
// Member i of live list l is still the tensor the list was created with.
bool list_member_is_live(const aclTensorList* l, size_t i);
// Points the tensor at `addr` if it is live (aclSetInputTensorAddr & co); under the registry's
// lock, so that a concurrent destroy cannot free it in between.
void set_tensor_data_if_live(aclTensor* t, void* addr);
void set_list_member_data_if_live(aclTensorList* l, size_t i, void* addr);

// Converts a tensor argument of operator `op` into a view. nullptr -> kParamNullptr when
// `required`, else *present = false and kSuccess. A destroyed handle, an unsupported rank
// (> kMaxRank) or null data with a non-zero extent -> kParamInvalid. Messages name op and arg.
Status to_view(const aclTensor* t, const char* op, const char* name, bool required, TensorView* out,
               bool* present);
// Byte offset of the view start (offset * element size).
int64_t view_offset_bytes(const aclTensor* t);

}  // namespace mlaops::api
