// Host allocation failures inside the C API's own calls (docs/c-api.md, "Rules"): ACL-16 (the
// stream worker cannot start) and ACL-34 (a getter's array cannot be allocated). This binary
// replaces the global operator new so that the next allocation of the calling thread fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

namespace {

thread_local bool t_fail_next = false;  // the next operator new of this thread fails

bool fail_now() {
  if (!t_fail_next) return false;
  t_fail_next = false;
  return true;
}

void* allocate(std::size_t n) { return std::malloc(n == 0 ? 1 : n); }

// Not inlined into the operator delete replacements (GCC would pair new with free and warn).
__attribute__((noinline)) void release(void* p) { std::free(p); }

}  // namespace

void* operator new(std::size_t n) {
  void* p = fail_now() ? nullptr : allocate(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) {
  void* p = fail_now() ? nullptr : allocate(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return fail_now() ? nullptr : allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return fail_now() ? nullptr : allocate(n); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }

namespace {

std::string msg() { return aclGetRecentErrMsg(); }

TEST(AclApiFaults, StreamWorkerCannotStart) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);  // streams need a current device (ACL-06)
  aclrtStream s = reinterpret_cast<aclrtStream>(0x5a);
  t_fail_next = true;
  const aclError e = aclrtCreateStream(&s);
  t_fail_next = false;
  EXPECT_EQ(e, ACL_ERROR_RT_NO_STREAM_RESOURCE);
  EXPECT_NE(msg().find("aclrtCreateStream: ACL-16 could not start the stream worker"), std::string::npos) << msg();
  EXPECT_EQ(s, reinterpret_cast<aclrtStream>(0x5a));  // nothing written
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);       // the next one starts
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST(AclApiFaults, GetterArrayOutOfMemory) {
  std::vector<float> data(6);
  const int64_t dims[2] = {2, 3};
  aclTensor* t = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, data.data());
  ASSERT_NE(t, nullptr);
  using Getter = aclnnStatus (*)(const aclTensor*, int64_t**, uint64_t*);
  for (Getter g : {Getter{aclGetViewShape}, Getter{aclGetStorageShape}, Getter{aclGetViewStrides}}) {
    int64_t* arr = reinterpret_cast<int64_t*>(0x10);
    uint64_t n = 77;
    t_fail_next = true;
    const aclnnStatus st = g(t, &arr, &n);
    t_fail_next = false;
    EXPECT_EQ(st, ACLNN_ERR_RUNTIME_ERROR);
    EXPECT_NE(msg().find("ACL-34 out of memory"), std::string::npos) << msg();
    EXPECT_EQ(arr, reinterpret_cast<int64_t*>(0x10));  // nothing written
    EXPECT_EQ(n, 77u);
    ASSERT_EQ(g(t, &arr, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 2u);
    delete[] arr;
  }
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

}  // namespace
