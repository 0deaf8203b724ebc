/* The C API from C99: the vendor headers compile as C, and a vendor-style flow runs. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

static int failures = 0;
#define CHECK(cond)                                                  \
    do {                                                             \
        if (!(cond)) {                                               \
            printf("FAILED line %d: %s\n", __LINE__, #cond);         \
            ++failures;                                              \
        }                                                            \
    } while (0)

int main(void) {
    int32_t deviceId = 0;
    aclrtContext context = NULL;
    aclrtStream stream = NULL;
    float host[6] = {1, 2, 3, 4, 5, 6};
    float back[6] = {0};
    void *dev = NULL;
    int64_t shape[2] = {2, 3};
    aclTensor *t;
    aclDataType dt;
    aclFormat fmt;
    int64_t offset = -1;
    int64_t ints[3] = {1, 2, 3};
    bool bools[2] = {true, false};
    float floats[1] = {0.5f};
    uint64_t n = 0;
    const aclTensor *items[1];
    aclTensorList *list;
    aclIntArray *ia;
    aclBoolArray *ba;
    aclFloatArray *fa;
    aclScalar *sc;
    aclTensor *stale, *fresh;
    int i, aliased = 0;

    CHECK(aclInit(NULL) == ACL_SUCCESS);
    CHECK(aclrtSetDevice(deviceId) == ACL_SUCCESS);
    CHECK(aclrtCreateContext(&context, deviceId) == ACL_SUCCESS);
    CHECK(aclrtSetCurrentContext(context) == ACL_SUCCESS);
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS);

    CHECK(aclrtMalloc(&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    CHECK(aclrtMemcpy(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS);
    /* a C caller may pass any int for an enum: unknown values are rejected, not read as the enum
       (the library's C++ enum types do not hold them; found by tests/fuzz, fuzz_fia_v4) */
    CHECK(aclCreateTensor(shape, 2, (aclDataType)99, NULL, 0, ACL_FORMAT_ND, shape, 2, dev) == NULL);
    CHECK(aclCreateTensor(shape, 2, ACL_FLOAT, NULL, 0, (aclFormat)1000, shape, 2, dev) == NULL);
    CHECK(aclDataTypeSize((aclDataType)99) == 0);
    t = aclCreateTensor(shape, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 2, dev);
    CHECK(t != NULL);
    CHECK(aclGetDataType(t, &dt) == ACLNN_SUCCESS && dt == ACL_FLOAT);
    CHECK(aclGetFormat(t, &fmt) == ACLNN_SUCCESS && fmt == ACL_FORMAT_ND);
    CHECK(aclGetViewOffset(t, &offset) == ACLNN_SUCCESS && offset == 0);
    items[0] = t;
    list = aclCreateTensorList(items, 1);
    CHECK(list != NULL);
    CHECK(aclGetTensorListSize(list, &n) == ACLNN_SUCCESS && n == 1);
    ia = aclCreateIntArray(ints, 3);
    ba = aclCreateBoolArray(bools, 2);
    fa = aclCreateFloatArray(floats, 1);
    sc = aclCreateScalar(floats, ACL_FLOAT);
    CHECK(ia != NULL && ba != NULL && fa != NULL && sc != NULL);
    CHECK(aclGetIntArraySize(ia, &n) == ACLNN_SUCCESS && n == 3);
    CHECK(aclDestroyIntArray(ia) == ACLNN_SUCCESS);
    CHECK(aclDestroyBoolArray(ba) == ACLNN_SUCCESS);
    CHECK(aclDestroyFloatArray(fa) == ACLNN_SUCCESS);
    CHECK(aclDestroyScalar(sc) == ACLNN_SUCCESS);
    CHECK(aclDestroyTensorList(list) == ACLNN_SUCCESS); /* destroys t too */
    CHECK(aclDestroyTensor(t) == ACLNN_ERR_PARAM_INVALID);

    CHECK(aclrtMemcpyAsync(back, sizeof back, dev, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST, stream) == ACL_SUCCESS);
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
    CHECK(memcmp(back, host, sizeof host) == 0);

    /* an error leaves a message naming the function and the values */
    CHECK(aclrtMemcpy(back, 4, host, 8, ACL_MEMCPY_HOST_TO_HOST) == ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMemcpy(back, 4, host, 4, (aclrtMemcpyKind)1000) == ACL_ERROR_INVALID_PARAM);
    CHECK(strstr(aclGetRecentErrMsg(), "aclrtMemcpy") != NULL);
    CHECK(aclDataTypeSize(ACL_BF16) == 2);
    CHECK(aclFloat16ToFloat(aclFloatToFloat16(0.5f)) == 0.5f);

    /* use after destroy (docs/c-api.md, "Object API"): the next tensor never gets a destroyed
       one's address while it is in the quarantine, so the stale handle stays an error and a
       second destroy leaves the new tensor alone */
    for (i = 0; i < 50; ++i) {
        stale = aclCreateTensor(shape, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 2, dev);
        CHECK(aclDestroyTensor(stale) == ACLNN_SUCCESS);
        fresh = aclCreateTensor(shape, 2, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 2, dev);
        aliased += fresh == stale;
        CHECK(aclGetFormat(stale, &fmt) == ACLNN_ERR_PARAM_INVALID);
        CHECK(aclDestroyTensor(stale) == ACLNN_ERR_PARAM_INVALID);
        CHECK(aclGetFormat(fresh, &fmt) == ACLNN_SUCCESS);
        CHECK(aclDestroyTensor(fresh) == ACLNN_SUCCESS);
    }
    CHECK(aliased == 0);

    CHECK(aclrtFree(dev) == ACL_SUCCESS);
    CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS);
    CHECK(aclrtDestroyContext(context) == ACL_SUCCESS);
    CHECK(aclrtResetDevice(deviceId) == ACL_SUCCESS);
    /* no current device any more: memory and streams fail as on CANN (107002), nothing written */
    dev = (void *)host;
    CHECK(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(dev == (void *)host);
    CHECK(aclrtCreateStream(&stream) == ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(aclFinalize() == ACL_SUCCESS);
    printf("c_api_test: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
