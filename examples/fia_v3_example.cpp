/*
 * aclnnFusedInferAttentionScoreV3, written as the vendor writes its aclnn examples: aclInit ->
 * aclrtMalloc + aclrtMemcpy -> aclCreateTensor / aclCreateTensorList / aclCreateIntArray ->
 * GetWorkspaceSize -> aclnnFusedInferAttentionScoreV3 on a stream -> aclrtSynchronizeStream -> read
 * back -> destroy. Decode in "BSND" over a paged KV cache: query [2, 1, 8, 64], key / value caches
 * [6 blocks, 16 slots, 2 * 64] (BnBsH), blockTable [2, 3], blockSize 16, KV lengths 40 and 5.
 * Device 3.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/bfloat16.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(message, ...)          \
  do {                                   \
    std::printf(message, ##__VA_ARGS__); \
  } while (0)

int64_t GetShapeSize(const std::vector<int64_t>& shape) {
  int64_t shapeSize = 1;
  for (auto i : shape) shapeSize *= i;
  return shapeSize;
}

int Init(int32_t deviceId, aclrtStream* stream) {
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
  return 0;
}

template <typename T>
int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, void** deviceAddr,
                    aclDataType dataType, aclTensor** tensor) {
  auto size = GetShapeSize(shape) * sizeof(T);
  auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                            shape.data(), shape.size(), *deviceAddr);
  return 0;
}

std::vector<op::bfloat16> Fill(int64_t n, float scale, int salt) {
  std::vector<op::bfloat16> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = op::bfloat16(scale * std::sin(0.37f * i + salt));
  return v;
}

int main() {
  int32_t deviceId = 3;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const int64_t B = 2, N = 8, KVN = 2, D = 64, BlockSize = 16, BlockNum = 6, MaxBlocks = 3;
  std::vector<int64_t> actualSeqLengthsKv = {40, 5};
  std::vector<int64_t> queryShape = {B, 1, N, D}, cacheShape = {BlockNum, BlockSize, KVN * D};
  std::vector<int64_t> blockTableShape = {B, MaxBlocks}, outShape = {B, 1, N, D};
  // request 0 uses blocks 4, 0, 2; request 1 uses block 5; unused entries are -1
  std::vector<int32_t> blockTableHost = {4, 0, 2, 5, -1, -1};

  std::vector<op::bfloat16> queryHost = Fill(GetShapeSize(queryShape), 1.0f, 1);
  std::vector<op::bfloat16> keyHost = Fill(GetShapeSize(cacheShape), 1.0f, 2);
  std::vector<op::bfloat16> valueHost = Fill(GetShapeSize(cacheShape), 1.0f, 3);
  std::vector<op::bfloat16> outHost(GetShapeSize(outShape));
  void *queryAddr, *keyAddr, *valueAddr, *blockTableAddr, *outAddr;
  aclTensor *query, *key, *value, *blockTable, *out;
  ret = CreateAclTensor(queryHost, queryShape, &queryAddr, aclDataType::ACL_BF16, &query);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(keyHost, cacheShape, &keyAddr, aclDataType::ACL_BF16, &key);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(valueHost, cacheShape, &valueAddr, aclDataType::ACL_BF16, &value);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(blockTableHost, blockTableShape, &blockTableAddr, aclDataType::ACL_INT32, &blockTable);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(outHost, outShape, &outAddr, aclDataType::ACL_BF16, &out);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  // key and value are tensor lists of one tensor; the lists own their tensors
  aclTensor* keyTensors[] = {key};
  aclTensor* valueTensors[] = {value};
  aclTensorList* keyList = aclCreateTensorList(keyTensors, 1);
  aclTensorList* valueList = aclCreateTensorList(valueTensors, 1);

  aclIntArray* actualSeqLengthsKvArray = aclCreateIntArray(actualSeqLengthsKv.data(), actualSeqLengthsKv.size());
  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[] = "BSND";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  ret = aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
      query, keyList, valueList, nullptr, nullptr, nullptr, actualSeqLengthsKvArray, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, blockTable, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, N, scaleValue, 2147483647, 2147483647, layout, KVN, 0, 0,
      BlockSize, 0, false, 0, 0, out, nullptr, &workspaceSize, &executor);

  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnFusedInferAttentionScoreV3GetWorkspaceSize failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg()); return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnFusedInferAttentionScoreV3(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFusedInferAttentionScoreV3 failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg()); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg()); return ret);

  auto size = GetShapeSize(outShape);
  std::vector<op::bfloat16> resultData(size);
  ret = aclrtMemcpy(resultData.data(), size * sizeof(op::bfloat16), outAddr, size * sizeof(op::bfloat16),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  bool finite = true;
  double sumsq = 0;
  for (int64_t i = 0; i < size; i++) {
    const float v = static_cast<float>(resultData[i]);
    finite = finite && std::isfinite(v);
    sumsq += static_cast<double>(v) * v;
  }
  for (int64_t i = 0; i < 4; i++)
    LOG_PRINT("attentionOut[%ld] is: %f\n", static_cast<long>(i), static_cast<float>(resultData[i]));
  LOG_PRINT("attentionOut rms: %f\n", std::sqrt(sumsq / size));

  aclDestroyTensorList(keyList);  // destroys the member tensors too
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengthsKvArray);
  for (aclTensor* t : {query, blockTable, out}) aclDestroyTensor(t);
  for (void* p : {queryAddr, keyAddr, valueAddr, blockTableAddr, outAddr}) aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return finite && sumsq > 0 ? 0 : 1;
}
