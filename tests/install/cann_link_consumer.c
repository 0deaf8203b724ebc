/* Built the way CANN build scripts build: cc ... -lascendcl -lnnopbase -lopapi. */
#include <stdio.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

int main(void) {
    int32_t dev = -1;
    if (aclInit(NULL) != ACL_SUCCESS) return 1;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtGetDevice(&dev) != ACL_SUCCESS || dev != 0) return 1;
    if (aclnnInit(NULL) != ACLNN_SUCCESS) return 1;
    if (aclrtResetDevice(0) != ACL_SUCCESS || aclFinalize() != ACL_SUCCESS) return 1;
    printf("CANN-style link consumer: ok\n");
    return 0;
}
