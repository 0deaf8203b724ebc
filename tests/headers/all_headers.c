/* Every C public header (acl/, aclnn/acl_meta.h, aclnn/aclnn_base.h, securec.h, aclnnop/) in
 * one C99 translation unit (the list is generated from globs by tests/headers/CMakeLists.txt),
 * compiled with -Wall -Wextra -Werror -pedantic, then calls through the shared library. */
#include "all_headers_c.inc"

int main(void) {
    char buf[8];
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    if (strcpy_s(buf, sizeof buf, "mlaops") != EOK) return 1;
    /* the neighbouring attention entry points are exported: a null query is 161001 */
    if (aclnnIncreFlashAttentionV4GetWorkspaceSize(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                                   NULL, NULL, NULL, NULL, 1, 1.0, NULL, 0, 0, 1, NULL, &ws,
                                                   &ex) != ACLNN_ERR_PARAM_NULLPTR)
        return 1;
    if (aclnnPromptFlashAttentionV3GetWorkspaceSize(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                                    NULL, 1, 1.0, 0, 0, NULL, 0, 0, 1, NULL, &ws,
                                                    &ex) != ACLNN_ERR_PARAM_NULLPTR)
        return 1;
    return aclDataTypeSize(ACL_FLOAT) == 4 ? 0 : 1;
}
