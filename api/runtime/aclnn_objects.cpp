// The aclnn object API (acl_meta.h): creation, destruction, getters.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

#include "api/runtime/objects.h"
#include "core/alloc.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "mlaops/dtype.h"

namespace mlaops::api {
namespace {

// The registry (api/runtime/objects.h): the live objects by address, with kind and generation, and the
// quarantine, a ring of the last kQuarantineSize destroyed objects (oldest first freed).
struct Registry {
  struct Entry {
    ObjKind kind;
    uint64_t generation;
  };
  struct Held {
    void* p;
    ObjKind kind;
  };
  std::mutex mu;
  std::unordered_map<const void*, Entry> live;
  uint64_t next_generation = 1;
  Held ring[kQuarantineSize] = {};
  size_t ring_next = 0;  // the slot the next destroy takes (holding the oldest once full)
};

Registry& registry() {
  // Built in static storage (no allocation: a getter or destroy never fails for memory) and never
  // destroyed (usable at exit).
  alignas(Registry) static unsigned char storage[sizeof(Registry)];
  static Registry* const r = new (storage) Registry();
  return *r;
}

void free_object(void* p, ObjKind kind) {
  switch (kind) {
    case ObjKind::kTensor: delete static_cast<aclTensor*>(p); break;
    case ObjKind::kScalar: delete static_cast<aclScalar*>(p); break;
    case ObjKind::kIntArray: delete static_cast<aclIntArray*>(p); break;
    case ObjKind::kFloatArray: delete static_cast<aclFloatArray*>(p); break;
    case ObjKind::kBoolArray: delete static_cast<aclBoolArray*>(p); break;
    case ObjKind::kTensorList: delete static_cast<aclTensorList*>(p); break;
  }
}

// Releases an object's values, keeping its (fixed-size) shell: the quarantine then holds at
// most kQuarantineSize shells, whatever the objects held.
template <class V>
void release(V* v) {
  V().swap(*v);
}
void release_values(void* p, ObjKind kind) {
  switch (kind) {
    case ObjKind::kTensor: {
      auto* t = static_cast<aclTensor*>(p);
      release(&t->view_dims);
      release(&t->strides);
      release(&t->storage_dims);
      t->data = nullptr;
      break;
    }
    case ObjKind::kScalar: break;
    case ObjKind::kIntArray: release(&static_cast<aclIntArray*>(p)->values); break;
    case ObjKind::kFloatArray: release(&static_cast<aclFloatArray*>(p)->values); break;
    case ObjKind::kBoolArray: release(&static_cast<aclBoolArray*>(p)->values); break;
    case ObjKind::kTensorList: {
      auto* l = static_cast<aclTensorList*>(p);
      release(&l->tensors);
      release(&l->generations);
      break;
    }
  }
}

// With r.mu held: takes the live object at `it` out of the registry into the quarantine, and
// frees the object the quarantine pushes out (no allocation: the ring is fixed).
void quarantine_locked(Registry& r, std::unordered_map<const void*, Registry::Entry>::iterator it) {
  void* p = const_cast<void*>(it->first);
  const ObjKind kind = it->second.kind;
  r.live.erase(it);
  release_values(p, kind);
  Registry::Held& slot = r.ring[r.ring_next];
  if (slot.p != nullptr) free_object(slot.p, slot.kind);
  slot = Registry::Held{p, kind};
  r.ring_next = (r.ring_next + 1) % kQuarantineSize;
}

}  // namespace

void register_object(const void* p, ObjKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live[p] = Registry::Entry{kind, r.next_generation++};
}

bool destroy_object(const void* p, ObjKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(p);
  if (it == r.live.end() || it->second.kind != kind) return false;
  quarantine_locked(r, it);
  return true;
}

bool destroy_tensor_list(const aclTensorList* l) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(l);
  if (it == r.live.end() || it->second.kind != ObjKind::kTensorList) return false;
  // The members first (quarantine_locked releases the list's vectors).
  for (size_t i = 0; i < l->tensors.size(); ++i) {
    auto m = r.live.find(l->tensors[i]);
    if (m != r.live.end() && m->second.kind == ObjKind::kTensor && m->second.generation == l->generations[i])
      quarantine_locked(r, m);  // a member listed twice is found dead the second time
  }
  quarantine_locked(r, r.live.find(l));
  return true;
}

bool unregister_object(const void* p, ObjKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(p);
  if (it == r.live.end() || it->second.kind != kind) return false;
  r.live.erase(it);
  return true;
}

uint64_t live_generation(const void* p, ObjKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(p);
  return it != r.live.end() && it->second.kind == kind ? it->second.generation : 0;
}

bool is_live(const void* p, ObjKind kind) { return live_generation(p, kind) != 0; }

bool list_member_is_live(const aclTensorList* l, size_t i) {
  return i < l->tensors.size() && live_generation(l->tensors[i], ObjKind::kTensor) == l->generations[i];
}

void set_tensor_data_if_live(aclTensor* t, void* addr) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(t);
  if (it != r.live.end() && it->second.kind == ObjKind::kTensor) t->data = addr;
}

void set_list_member_data_if_live(aclTensorList* l, size_t i, void* addr) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(l);
  if (it == r.live.end() || it->second.kind != ObjKind::kTensorList || i >= l->tensors.size()) return;
  auto m = r.live.find(l->tensors[i]);
  if (m != r.live.end() && m->second.kind == ObjKind::kTensor && m->second.generation == l->generations[i])
    l->tensors[i]->data = addr;
}

int64_t view_offset_bytes(const aclTensor* t) { return t->offset * dtype_size(static_cast<DType>(t->dtype)); }

Status to_view(const aclTensor* t, const char* op, const char* name, bool required, TensorView* out, bool* present) {
  if (present) *present = false;
  if (t == nullptr) {
    if (required) return fail(kParamNullptr, "%s: %s: ACL-40 required tensor is null", op, name);
    return kSuccess;
  }
  MLAOPS_CHECK(is_live(t, ObjKind::kTensor), kParamInvalid,
               "%s: %s: ACL-41 not a live aclTensor (destroyed, or never created by aclCreateTensor)", op, name);
  TensorView v;
  v.dtype = static_cast<DType>(t->dtype);
  v.format = static_cast<Format>(t->format);
  v.rank = static_cast<int>(t->view_dims.size());
  for (int i = 0; i < v.rank; ++i) {
    v.dims[i] = t->view_dims[i];
    v.strides[i] = t->strides[i];
  }
  v.storage_rank = static_cast<int>(t->storage_dims.size());
  for (int i = 0; i < v.storage_rank; ++i) v.storage_dims[i] = t->storage_dims[i];
  int64_t n;
  checked_numel(v, &n);  // validated by aclCreateTensor
  if (n > 0) {
    MLAOPS_CHECK(t->data != nullptr, kParamInvalid, "%s: %s: ACL-42 tensor data is null but the tensor has %lld elements",
                 op, name, (long long)n);
    v.data = static_cast<char*>(t->data) + view_offset_bytes(t);
  } else {
    v.data = t->data ? static_cast<char*>(t->data) + view_offset_bytes(t) : nullptr;
  }
  *out = v;
  if (present) *present = true;
  return kSuccess;
}

}  // namespace mlaops::api

using mlaops::api::ObjKind;
using mlaops::api::register_object;

namespace {

// max linear element index + 1 reached by the view; false on overflow.
bool view_extent(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t offset,
                 int64_t* extent) {
  int64_t last = offset;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) {
      *extent = 0;
      return true;
    }
    int64_t step;
    if (!mlaops::mul_ok(dims[i] - 1, strides[i], &step) || !mlaops::add_ok(last, step, &last)) return false;
  }
  return mlaops::add_ok(last, 1, extent);
}

template <class T>
aclnnStatus destroy_obj(const T* p, ObjKind kind, const char* fn) {
  if (p == nullptr) return mlaops::fail(mlaops::kParamNullptr, "%s: ACL-32 argument is null", fn);
  if (!mlaops::api::destroy_object(p, kind))
    return mlaops::fail(mlaops::kParamInvalid, "%s: ACL-33 not a live object (already destroyed, or never created)", fn);
  return ACLNN_SUCCESS;
}

template <class T>
aclnnStatus get_array(const std::vector<int64_t>& src, int64_t** out, uint64_t* num) {
  int64_t* a = new (std::nothrow) int64_t[src.empty() ? 1 : src.size()];
  if (a == nullptr) return mlaops::fail(mlaops::kRuntimeError, "ACL-34 out of memory");  // *out, *num untouched
  std::copy(src.begin(), src.end(), a);
  *out = a;
  *num = src.size();
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) try {
  using mlaops::fail;
  const char* fn = "aclCreateTensor";
  if (viewDimsNum > static_cast<uint64_t>(mlaops::kMaxRank) || storageDimsNum > static_cast<uint64_t>(mlaops::kMaxRank)) {
    fail(mlaops::kParamInvalid, "%s: viewDimsNum/storageDimsNum: ACL-20 allowed <= %d, got %llu/%llu", fn, mlaops::kMaxRank,
         (unsigned long long)viewDimsNum, (unsigned long long)storageDimsNum);
    return nullptr;
  }
  if ((viewDims == nullptr && viewDimsNum > 0) || (storageDims == nullptr && storageDimsNum > 0)) {
    fail(mlaops::kParamNullptr, "%s: ACL-21 viewDims/storageDims is null with a non-zero count", fn);
    return nullptr;
  }
  const int32_t dtype_value = mlaops::api::c_enum_value(dataType), format_value = mlaops::api::c_enum_value(format);
  if (!mlaops::dtype_is_known(dtype_value) || dtype_value == ACL_DT_UNDEFINED) {
    fail(mlaops::kParamInvalid, "%s: dataType: ACL-22 not a known aclDataType; got %d", fn, (int)dtype_value);
    return nullptr;
  }
  if (!mlaops::format_is_known(format_value)) {
    fail(mlaops::kParamInvalid, "%s: format: ACL-23 not a known aclFormat; got %d", fn, (int)format_value);
    return nullptr;
  }
  if (offset < 0) {
    fail(mlaops::kParamInvalid, "%s: offset: ACL-24 allowed >= 0, got %lld", fn, (long long)offset);
    return nullptr;
  }
  std::unique_ptr<aclTensor> owner(new (std::nothrow) aclTensor());  // freed on every early return
  aclTensor* t = owner.get();
  if (t == nullptr) return nullptr;
  t->view_dims.assign(viewDims, viewDims + viewDimsNum);
  t->dtype = dataType;
  t->format = format;
  t->offset = offset;
  t->data = tensorData;
  int64_t numel = 1;
  for (int64_t d : t->view_dims) {
    if (d < 0 || !mlaops::mul_ok(numel, d, &numel)) {
      fail(mlaops::kParamInvalid, "%s: viewDims: ACL-26 each dim must be >= 0 and the product must fit int64", fn);
      return nullptr;
    }
  }
  if (stride != nullptr) {
    t->strides.assign(stride, stride + viewDimsNum);
    for (int64_t s : t->strides) {
      if (s < 0) {
        fail(mlaops::kParamInvalid, "%s: stride: ACL-25 allowed >= 0, got %lld", fn, (long long)s);
        return nullptr;
      }
    }
  } else {
    t->strides.assign(viewDimsNum, 1);
    int64_t s = 1;
    for (int64_t i = static_cast<int64_t>(viewDimsNum) - 1; i >= 0; --i) {
      t->strides[i] = s;
      s *= std::max<int64_t>(1, t->view_dims[i]);
    }
  }
  int64_t extent;
  const int64_t es = mlaops::dtype_size(static_cast<mlaops::DType>(dataType));
  int64_t bytes;
  if (!view_extent(t->view_dims, t->strides, offset, &extent) || !mlaops::mul_ok(extent, es > 0 ? es : 1, &bytes)) {
    fail(mlaops::kParamInvalid, "%s: ACL-28 view extent overflows int64", fn);
    return nullptr;
  }
  if (storageDimsNum > 0) {
    t->storage_dims.assign(storageDims, storageDims + storageDimsNum);
    int64_t storage = 1;
    for (int64_t d : t->storage_dims) {
      if (d < 0 || !mlaops::mul_ok(storage, d, &storage)) {
        fail(mlaops::kParamInvalid, "%s: storageDims: ACL-27 each dim must be >= 0 and the product must fit int64", fn);
        return nullptr;
      }
    }
    if (extent > storage) {
      fail(mlaops::kParamInvalid,
           "%s: ACL-29 the view (offset %lld, extent %lld elements) reaches past the storage (%lld elements)", fn,
           (long long)offset, (long long)extent, (long long)storage);
      return nullptr;
    }
  } else if (stride == nullptr && offset == 0) {
    t->storage_dims = t->view_dims;
  } else {
    t->storage_dims.assign(1, extent);
  }
  register_object(t, ObjKind::kTensor);
  return owner.release();
} catch (const std::bad_alloc&) {  // null, with the message (core/alloc.h); the owners free the rest
  mlaops::out_of_memory("aclCreateTensor");
  return nullptr;
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) try {
  const int64_t es = mlaops::dtype_size(static_cast<mlaops::DType>(mlaops::api::c_enum_value(dataType)));
  if (value == nullptr || es <= 0 || es > 16) {
    mlaops::fail(mlaops::kParamInvalid, "aclCreateScalar: ACL-30 value must be non-null and dataType a whole-byte type");
    return nullptr;
  }
  std::unique_ptr<aclScalar> owner(new (std::nothrow) aclScalar());
  aclScalar* s = owner.get();
  if (s == nullptr) return nullptr;
  s->dtype = dataType;
  std::memcpy(s->value, value, static_cast<size_t>(es));
  register_object(s, ObjKind::kScalar);
  return owner.release();
} catch (const std::bad_alloc&) {  // null, with the message (core/alloc.h); the owners free the rest
  mlaops::out_of_memory("aclCreateScalar");
  return nullptr;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) try {
  if (value == nullptr && size > 0) {
    mlaops::fail(mlaops::kParamNullptr, "aclCreateIntArray: ACL-21 value is null with size %llu", (unsigned long long)size);
    return nullptr;
  }
  std::unique_ptr<aclIntArray> owner(new (std::nothrow) aclIntArray());
  aclIntArray* a = owner.get();
  if (a == nullptr) return nullptr;
  if (size > 0) a->values.assign(value, value + size);
  register_object(a, ObjKind::kIntArray);
  return owner.release();
} catch (const std::bad_alloc&) {  // null, with the message (core/alloc.h); the owners free the rest
  mlaops::out_of_memory("aclCreateIntArray");
  return nullptr;
}

aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) try {
  if (value == nullptr && size > 0) {
    mlaops::fail(mlaops::kParamNullptr, "aclCreateFloatArray: ACL-21 value is null with size %llu", (unsigned long long)size);
    return nullptr;
  }
  std::unique_ptr<aclFloatArray> owner(new (std::nothrow) aclFloatArray());
  aclFloatArray* a = owner.get();
  if (a == nullptr) return nullptr;
  if (size > 0) a->values.assign(value, value + size);
  register_object(a, ObjKind::kFloatArray);
  return owner.release();
} catch (const std::bad_alloc&) {  // null, with the message (core/alloc.h); the owners free the rest
  mlaops::out_of_memory("aclCreateFloatArray");
  return nullptr;
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) try {
  if (value == nullptr && size > 0) {
    mlaops::fail(mlaops::kParamNullptr, "aclCreateBoolArray: ACL-21 value is null with size %llu", (unsigned long long)size);
    return nullptr;
  }
  std::unique_ptr<aclBoolArray> owner(new (std::nothrow) aclBoolArray());
  aclBoolArray* a = owner.get();
  if (a == nullptr) return nullptr;
  if (size > 0) a->values.assign(value, value + size);
  register_object(a, ObjKind::kBoolArray);
  return owner.release();
} catch (const std::bad_alloc&) {  // null, with the message (core/alloc.h); the owners free the rest
  mlaops::out_of_memory("aclCreateBoolArray");
  return nullptr;
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) try {
  if (value == nullptr && size > 0) {
    mlaops::fail(mlaops::kParamNullptr, "aclCreateTensorList: ACL-21 value is null with size %llu", (unsigned long long)size);
    return nullptr;
  }
  std::vector<uint64_t> generations;  // each member as it is now (api/runtime/objects.h)
  for (uint64_t i = 0; i < size; ++i) {
    generations.push_back(value[i] == nullptr ? 0 : mlaops::api::live_generation(value[i], ObjKind::kTensor));
    if (generations.back() == 0) {
      mlaops::fail(mlaops::kParamInvalid, "aclCreateTensorList: ACL-31 value[%llu] is not a live aclTensor",
                   (unsigned long long)i);
      return nullptr;
    }
  }
  std::unique_ptr<aclTensorList> owner(new (std::nothrow) aclTensorList());
  aclTensorList* l = owner.get();
  if (l == nullptr) return nullptr;
  for (uint64_t i = 0; i < size; ++i) l->tensors.push_back(const_cast<aclTensor*>(value[i]));
  l->generations = std::move(generations);
  register_object(l, ObjKind::kTensorList);
  return owner.release();
} catch (const std::bad_alloc&) {  // null, with the message (core/alloc.h); the owners free the rest
  mlaops::out_of_memory("aclCreateTensorList");
  return nullptr;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) { return destroy_obj(tensor, ObjKind::kTensor, "aclDestroyTensor"); }
aclnnStatus aclDestroyScalar(const aclScalar* scalar) { return destroy_obj(scalar, ObjKind::kScalar, "aclDestroyScalar"); }
aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return destroy_obj(array, ObjKind::kIntArray, "aclDestroyIntArray");
}
aclnnStatus aclDestroyFloatArray(const aclFloatArray* array) {
  return destroy_obj(array, ObjKind::kFloatArray, "aclDestroyFloatArray");
}
aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  return destroy_obj(array, ObjKind::kBoolArray, "aclDestroyBoolArray");
}
aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  if (array == nullptr) return mlaops::fail(mlaops::kParamNullptr, "aclDestroyTensorList: ACL-32 argument is null");
  // Destroys the members that are still the list's own: not those the caller destroyed already,
  // nor a new tensor that got such a member's address (api/runtime/objects.h).
  if (!mlaops::api::destroy_tensor_list(array))
    return mlaops::fail(mlaops::kParamInvalid, "aclDestroyTensorList: ACL-33 not a live object (already destroyed, or never created)");
  return ACLNN_SUCCESS;
}

#define MLAOPS_CHECK_GETTER(obj, kind, out, fn)                                                        \
  do {                                                                                                 \
    if ((obj) == nullptr || (out) == nullptr) return mlaops::fail(mlaops::kParamNullptr, "%s: ACL-32 null argument", fn); \
    if (!mlaops::api::is_live((obj), (kind)))                                                          \
      return mlaops::fail(mlaops::kParamInvalid, "%s: ACL-33 not a live object", fn);                         \
  } while (0)

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  MLAOPS_CHECK_GETTER(tensor, ObjKind::kTensor, viewDims, "aclGetViewShape");
  if (viewDimsNum == nullptr) return mlaops::fail(mlaops::kParamNullptr, "aclGetViewShape: ACL-32 viewDimsNum is null");
  return get_array<int64_t>(tensor->view_dims, viewDims, viewDimsNum);
}
aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
  MLAOPS_CHECK_GETTER(tensor, ObjKind::kTensor, storageDims, "aclGetStorageShape");
  if (storageDimsNum == nullptr) return mlaops::fail(mlaops::kParamNullptr, "aclGetStorageShape: ACL-32 storageDimsNum is null");
  return get_array<int64_t>(tensor->storage_dims, storageDims, storageDimsNum);
}
aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
  MLAOPS_CHECK_GETTER(tensor, ObjKind::kTensor, stridesValue, "aclGetViewStrides");
  if (stridesNum == nullptr) return mlaops::fail(mlaops::kParamNullptr, "aclGetViewStrides: ACL-32 stridesNum is null");
  return get_array<int64_t>(tensor->strides, stridesValue, stridesNum);
}
aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  MLAOPS_CHECK_GETTER(tensor, ObjKind::kTensor, offset, "aclGetViewOffset");
  *offset = tensor->offset;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  MLAOPS_CHECK_GETTER(tensor, ObjKind::kTensor, format, "aclGetFormat");
  *format = tensor->format;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  MLAOPS_CHECK_GETTER(tensor, ObjKind::kTensor, dataType, "aclGetDataType");
  *dataType = tensor->dtype;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  MLAOPS_CHECK_GETTER(array, ObjKind::kIntArray, size, "aclGetIntArraySize");
  *size = array->values.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size) {
  MLAOPS_CHECK_GETTER(array, ObjKind::kFloatArray, size, "aclGetFloatArraySize");
  *size = array->values.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
  MLAOPS_CHECK_GETTER(array, ObjKind::kBoolArray, size, "aclGetBoolArraySize");
  *size = array->values.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size) {
  MLAOPS_CHECK_GETTER(tensorList, ObjKind::kTensorList, size, "aclGetTensorListSize");
  *size = tensorList->tensors.size();
  return ACLNN_SUCCESS;
}

}  // extern "C"
