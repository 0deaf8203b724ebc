// aclTensor handles for the host tensors of the operator tests (RAII), built exactly as a vendor
// program builds them: view dims, strides in elements, format, storage dims, data.
#pragma once

#include <vector>

#include "aclnn/acl_meta.h"
#include "mlaops/tensor_view.h"

namespace mlaops::testing {

class AclTensor {
 public:
  AclTensor() = default;
  // A tensor for `v` (its dims, strides, format and storage dims); nullptr handle if !present.
  explicit AclTensor(const TensorView& v, bool present = true) {
    if (!present) return;
    std::vector<int64_t> storage(v.storage_dims, v.storage_dims + v.storage_rank);
    if (storage.empty()) storage.assign(v.dims, v.dims + v.rank);
    t_ = aclCreateTensor(v.dims, static_cast<uint64_t>(v.rank), static_cast<aclDataType>(v.dtype), v.strides, 0,
                         static_cast<aclFormat>(v.format), storage.data(), storage.size(), v.data);
  }
  AclTensor(const AclTensor&) = delete;
  AclTensor& operator=(const AclTensor&) = delete;
  AclTensor(AclTensor&& o) noexcept : t_(o.t_) { o.t_ = nullptr; }
  AclTensor& operator=(AclTensor&& o) noexcept {
    reset();
    t_ = o.t_;
    o.t_ = nullptr;
    return *this;
  }
  ~AclTensor() { reset(); }
  void reset() {
    if (t_) aclDestroyTensor(t_);
    t_ = nullptr;
  }
  aclTensor* get() const { return t_; }
  operator aclTensor*() const { return t_; }  // NOLINT(google-explicit-constructor)

 private:
  aclTensor* t_ = nullptr;
};

}  // namespace mlaops::testing
