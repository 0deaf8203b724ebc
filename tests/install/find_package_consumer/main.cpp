#include <cstdio>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "mlaops/runtime.h"

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS) return 1;
  if (aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  void* p = nullptr;
  if (aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
  const int64_t d[1] = {16};
  aclTensor* t = aclCreateTensor(d, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 1, p);
  if (t == nullptr || aclDestroyTensor(t) != ACLNN_SUCCESS) return 1;
  if (aclrtFree(p) != ACL_SUCCESS || aclFinalize() != ACL_SUCCESS) return 1;
  std::printf("find_package consumer: mlaops %s, isa %s\n", mlaops::version(), mlaops::isa_name(mlaops::active_isa()));
  return 0;
}
