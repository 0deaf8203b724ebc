// Every public header under include/ together in one C++20 translation unit (the list is
// generated from a glob by tests/headers/CMakeLists.txt), compiled with -Wall -Wextra -Werror
// -pedantic, then one call through the C API.
#include "all_headers_cxx.inc"

int main() {
  char buf[8];
  if (memcpy_s(buf, sizeof buf, "mlaops", 7) != EOK) return 1;
  const op::fp16_t h = 1.5f;
  const op::bfloat16 b = 2;
  return (aclDataTypeSize(ACL_FLOAT16) == 2 && static_cast<float>(h + b) == 3.5f) ? 0 : 1;
}
