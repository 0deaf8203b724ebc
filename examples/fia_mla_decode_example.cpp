/*
 * aclnnFusedInferAttentionScoreV4, written as the vendor writes its aclnn examples: aclInit ->
 * aclrtMalloc + aclrtMemcpy -> aclCreateTensor / aclCreateTensorList / aclCreateIntArray ->
 * GetWorkspaceSize -> aclnnFusedInferAttentionScoreV4 on a stream -> aclrtSynchronizeStream ->
 * read back -> destroy. DeepSeek MLA decode (the vllm-ascend call): query [B, N, 1, 512] and
 * queryRope [B, N, 1, 64] in "BNSD_NBSD", the latent cache passed as both key and value
 * [blockNum, 1, blockSize, 512] (BnNBsD) with keyRope [blockNum, 1, blockSize, 64], blockSize 128,
 * N = 32 heads, one KV head, two requests of different lengths, output [N, B, 1, 512].
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/bfloat16.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"

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

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const int64_t B = 2, N = 32, D = 512, Dr = 64, BlockSize = 128, BlockNum = 8, MaxBlocks = 4;
  std::vector<int64_t> actualSeqLengthsKv = {300, 77};  // two requests of different lengths
  std::vector<int64_t> queryShape = {B, N, 1, D}, queryRopeShape = {B, N, 1, Dr};
  std::vector<int64_t> cacheShape = {BlockNum, 1, BlockSize, D}, ropeCacheShape = {BlockNum, 1, BlockSize, Dr};
  std::vector<int64_t> blockTableShape = {B, MaxBlocks};
  std::vector<int64_t> outShape = {N, B, 1, D}, lseShape = {B, N, 1, 1};

  auto fill = [](int64_t n, float scale, int salt) {
    std::vector<op::bfloat16> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = op::bfloat16(scale * std::sin(0.37f * i + salt));
    return v;
  };
  std::vector<op::bfloat16> queryHost = fill(GetShapeSize(queryShape), 1.0f, 1);
  std::vector<op::bfloat16> queryRopeHost = fill(GetShapeSize(queryRopeShape), 1.0f, 2);
  std::vector<op::bfloat16> cacheHost = fill(GetShapeSize(cacheShape), 1.0f, 3);
  std::vector<op::bfloat16> ropeCacheHost = fill(GetShapeSize(ropeCacheShape), 1.0f, 4);
  // request 0 uses blocks 5, 2, 7; request 1 uses block 0; unused entries are -1
  std::vector<int32_t> blockTableHost = {5, 2, 7, -1, 0, -1, -1, -1};
  std::vector<op::bfloat16> outHost(GetShapeSize(outShape));
  std::vector<float> lseHost(GetShapeSize(lseShape));

  void *queryAddr, *queryRopeAddr, *cacheAddr, *ropeCacheAddr, *blockTableAddr, *outAddr, *lseAddr;
  aclTensor *query, *queryRope, *cache, *valueCache, *ropeCache, *blockTable, *out, *lse;
  ret = CreateAclTensor(queryHost, queryShape, &queryAddr, aclDataType::ACL_BF16, &query);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryRopeHost, queryRopeShape, &queryRopeAddr, aclDataType::ACL_BF16, &queryRope);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(cacheHost, cacheShape, &cacheAddr, aclDataType::ACL_BF16, &cache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(ropeCacheHost, ropeCacheShape, &ropeCacheAddr, aclDataType::ACL_BF16, &ropeCache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(blockTableHost, blockTableShape, &blockTableAddr, aclDataType::ACL_INT32, &blockTable);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(outHost, outShape, &outAddr, aclDataType::ACL_BF16, &out);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(lseHost, lseShape, &lseAddr, aclDataType::ACL_FLOAT, &lse);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  // the latent cache is both key and value (value = key latent); the lists own their tensors
  std::vector<int64_t> cacheStrides = {D * BlockSize, D * BlockSize, D, 1};
  valueCache = aclCreateTensor(cacheShape.data(), cacheShape.size(), aclDataType::ACL_BF16, cacheStrides.data(), 0,
                               aclFormat::ACL_FORMAT_ND, cacheShape.data(), cacheShape.size(), cacheAddr);
  aclTensor* keyTensors[] = {cache};
  aclTensor* valueTensors[] = {valueCache};
  aclTensorList* keyList = aclCreateTensorList(keyTensors, 1);
  aclTensorList* valueList = aclCreateTensorList(valueTensors, 1);
  aclIntArray* actualSeqLengthsKvArray = aclCreateIntArray(actualSeqLengthsKv.data(), actualSeqLengthsKv.size());

  const double scaleValue = 1.0 / std::sqrt(128.0 + 64.0);  // DeepSeek softmax scale (qk_nope 128 + rope 64)
  char layout[] = "BNSD_NBSD";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  ret = aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
      query, keyList, valueList, nullptr, nullptr, nullptr, actualSeqLengthsKvArray, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, blockTable, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, queryRope, ropeCache, nullptr, nullptr, nullptr, N, scaleValue, 2147483647, 0, layout, 1, 0, 0,
      BlockSize, 0, true, 0, 0, 0, out, lse, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnFusedInferAttentionScoreV4GetWorkspaceSize failed. ERROR: %d\n%s\n", ret,
                      aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnFusedInferAttentionScoreV4(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFusedInferAttentionScoreV4 failed. ERROR: %d\n%s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg()); return ret);

  auto size = GetShapeSize(outShape);
  std::vector<op::bfloat16> resultData(size);
  ret = aclrtMemcpy(resultData.data(), size * sizeof(op::bfloat16), outAddr, size * sizeof(op::bfloat16),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  std::vector<float> lseData(GetShapeSize(lseShape));
  ret = aclrtMemcpy(lseData.data(), lseData.size() * sizeof(float), lseAddr, lseData.size() * sizeof(float),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  bool finite = true;
  double sumsq = 0;
  for (int64_t i = 0; i < size; i++) {
    const float v = static_cast<float>(resultData[i]);
    finite = finite && std::isfinite(v);
    sumsq += static_cast<double>(v) * v;
  }
  for (float v : lseData) finite = finite && std::isfinite(v);
  for (int64_t i = 0; i < 4; i++)
    LOG_PRINT("attentionOut[%ld] is: %f\n", static_cast<long>(i), static_cast<float>(resultData[i]));
  LOG_PRINT("attentionOut rms: %f, softmaxLse[0] = %f, softmaxLse[%d] = %f\n", std::sqrt(sumsq / size), lseData[0],
            static_cast<int>(N), lseData[N]);
  finite = finite && sumsq > 0;

  aclDestroyTensorList(keyList);  // destroys the member tensors too
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengthsKvArray);
  for (aclTensor* t : {query, queryRope, ropeCache, blockTable, out, lse}) aclDestroyTensor(t);
  for (void* p : {queryAddr, queryRopeAddr, cacheAddr, ropeCacheAddr, blockTableAddr, outAddr, lseAddr}) aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return finite ? 0 : 1;
}
