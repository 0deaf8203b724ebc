// aclTensor handles for the host tensors of the operator tests (RAII), built exactly as a vendor
// program builds them: view dims, strides in elements, format, storage dims, data.
#pragma once

#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "mlaops/tensor_view.h"
#include "tests/support/guarded_alloc.h"

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

// An operator's N tensor arguments in prototype order, as (view, passed) pairs a test may edit,
// found by their parameter names (Derived::name(i)): the base of MlaPrologArgs and
// MlaPreprocessArgs.
template <class Derived, int N>
struct NamedTensorArgs {
  static constexpr int kCount = N;
  TensorView v[N];
  bool passed[N] = {};

  int index(const std::string& n) const {
    for (int i = 0; i < N; ++i)
      if (n == Derived::name(i)) return i;
    return -1;
  }
  TensorView& operator[](const std::string& n) { return v[index(n)]; }

  // Argument i is h[i]'s view, passed where h[i] is present.
  template <class Host>
  void set_from(const Host* const (&h)[N]) {
    for (int i = 0; i < N; ++i) {
      v[i] = h[i]->view;
      passed[i] = h[i]->present();
    }
  }

  // An aclTensor per argument (a null handle where not passed). In a guard mode
  // (tests/support/guarded_alloc.h) the passed views are first placed in guarded regions.
  std::vector<AclTensor> guarded_tensors() {
    TensorView* views[N];
    for (int i = 0; i < N; ++i) views[i] = passed[i] ? &v[i] : nullptr;
    guard_views(views, N);
    std::vector<AclTensor> t;
    t.reserve(N);
    for (int i = 0; i < N; ++i) t.emplace_back(v[i], passed[i]);
    return t;
  }
};

}  // namespace mlaops::testing
