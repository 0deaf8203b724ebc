/*
 * mlaops drop-in for CANN's aclnn/acl_meta.h: the aclnn object API (tensors, scalars, arrays,
 * tensor lists), the aclnnStatus codes and the executor handle. Valid C99 and C++.
 *
 * Ownership (as in CANN): every aclCreate* object is owned by the caller and released with the
 * matching aclDestroy*. A tensor list owns the tensors put into it: aclDestroyTensorList also
 * destroys them (destroying such a tensor again is detected and returns an error, never a
 * double free). See docs/c-api.md.
 */
#ifndef MLAOPS_ACLNN_ACL_META_H_
#define MLAOPS_ACLNN_ACL_META_H_

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclTensorList aclTensorList;

typedef int32_t aclnnStatus;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_INFERSHAPE_ERROR 561001
#define ACLNN_ERR_INNER_TILING_ERROR 561002
#define ACLNN_ERR_INNER_FIND_KERNEL_ERROR 561003
#define ACLNN_ERR_INNER_CREATE_EXECUTOR 561101
#define ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR 561102
#define ACLNN_ERR_INNER_NULLPTR 561103
#define ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE 561104
#define ACLNN_ERR_INNER_KEY_CONFILICT 561105
#define ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND 561107
#define ACLNN_ERR_INNER_LOAD_JSON_FAILED 561108
#define ACLNN_ERR_INNER_JSON_VALUE_NOT_FOUND 561109
#define ACLNN_ERR_INNER_JSON_FORMAT_INVALID 561110
#define ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND 561111
#define ACLNN_ERR_INNER_OP_TYPE_NOT_FOUND 561112
#define ACLNN_ERR_INNER_OP_JSON_NOT_FOUND 561113
#define ACLNN_ERR_INNER_OP_JSON_KERNEL_NOT_FOUND 561114
#define ACLNN_ERR_INNER_BIN_NOT_FOUND 561115
#define ACLNN_ERR_INNER_SOC_VERSION_NOT_FOUND 561116
#define ACLNN_ERR_INNER_ATTR_NOT_FOUND 561117
#define ACLNN_ERR_INNER_ATTR_LEN_NOT_ENOUGH 561118
#define ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID 561119

/* ---- creation ----
 * aclCreateTensor: viewDims (viewDimsNum <= 8, each >= 0); stride in elements (NULL =
 * contiguous row-major); offset in elements (>= 0); storageDims (NULL with storageDimsNum 0 =
 * the view's extent). Returns NULL on inconsistent arguments: NULL dims with a non-zero count,
 * more than 8 dims, a negative dim, stride or offset, an unknown data type or format, a size
 * that overflows int64, or a view that reaches past the storage. tensorData may be NULL (the
 * operators reject NULL data with a non-zero extent). */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t *stride,
                                               int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData);
/* Copies the value (aclDataTypeSize(dataType) bytes). NULL for a NULL value or a type without a
 * whole-byte size. */
ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType);
/* The arrays copy their values; value may be NULL only when size is 0. */
ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
ACL_FUNC_VISIBILITY aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size);
ACL_FUNC_VISIBILITY aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size);
/* Copies the pointer array and takes ownership of the tensors (see above). Elements must be
 * live tensors; NULL elements are rejected (returns NULL). */
ACL_FUNC_VISIBILITY aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size);

/* ---- destruction: ACLNN_SUCCESS, or ACLNN_ERR_PARAM_NULLPTR for NULL, or
 * ACLNN_ERR_PARAM_INVALID for a handle that is not a live object of that kind ---- */
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalar(const aclScalar *scalar);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyFloatArray(const aclFloatArray *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyBoolArray(const aclBoolArray *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensorList(const aclTensorList *array);

/* ---- getters. Shape/stride getters allocate the returned array with new[]; the caller
 * releases it with delete[] (as in CANN). ---- */
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims,
                                                uint64_t *viewDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                                   uint64_t *storageDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                                  uint64_t *stridesNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format);
ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType);
ACL_FUNC_VISIBILITY aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFloatArraySize(const aclFloatArray *array, uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetBoolArraySize(const aclBoolArray *array, uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList, uint64_t *size);

#ifdef __cplusplus
}
#endif

#endif /* MLAOPS_ACLNN_ACL_META_H_ */
