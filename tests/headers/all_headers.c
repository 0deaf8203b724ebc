/* Every C public header (acl/, aclnn/acl_meta.h, aclnn/aclnn_base.h, securec.h, aclnnop/) in
 * one C99 translation unit (the list is generated from globs by tests/headers/CMakeLists.txt),
 * compiled with -Wall -Wextra -Werror -pedantic, then one call through the shared library. */
#include "all_headers_c.inc"

int main(void) {
    char buf[8];
    if (strcpy_s(buf, sizeof buf, "mlaops") != EOK) return 1;
    return aclDataTypeSize(ACL_FLOAT) == 4 ? 0 : 1;
}
