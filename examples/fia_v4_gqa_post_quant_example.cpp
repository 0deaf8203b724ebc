/*
 * aclnnFusedInferAttentionScoreV4, written as the vendor writes its aclnn examples: aclInit ->
 * aclrtMalloc + aclrtMemcpy -> aclCreateTensor / aclCreateTensorList / aclCreateIntArray ->
 * GetWorkspaceSize -> aclnnFusedInferAttentionScoreV4 on a stream -> aclrtSynchronizeStream ->
 * read back -> destroy. GQA prefill with the post-quant INT8 output: FP16 query [B, N, S, D]
 * ("BNSD"), key / value [B, KV_N, KV_S, D] with 8 query heads over 2 KV heads, causal (sparse
 * mode 3 with the 2048 x 2048 mask), per-channel quantScale2 / quantOffset2 [1, N, 1, D] (FP32),
 * INT8 attentionOut; two requests of different lengths; device 1 (any id of the host's range).
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/fp16_t.h"
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
  int32_t deviceId = 1;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const int64_t B = 2, N = 8, KVN = 2, S = 32, KVS = 64, D = 128;
  std::vector<int64_t> actualSeqLengths = {32, 20}, actualSeqLengthsKv = {64, 40};
  std::vector<int64_t> queryShape = {B, N, S, D}, kvShape = {B, KVN, KVS, D}, maskShape = {2048, 2048};
  std::vector<int64_t> quantShape = {1, N, 1, D}, outShape = {B, N, S, D};

  auto fill = [](int64_t n, float scale, int salt) {
    std::vector<op::fp16_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = op::fp16_t(scale * std::sin(0.37f * i + salt));
    return v;
  };
  std::vector<op::fp16_t> queryHost = fill(GetShapeSize(queryShape), 1.0f, 1);
  std::vector<op::fp16_t> keyHost = fill(GetShapeSize(kvShape), 1.0f, 2);
  std::vector<op::fp16_t> valueHost = fill(GetShapeSize(kvShape), 1.0f, 3);
  std::vector<int8_t> maskHost(GetShapeSize(maskShape), 0);  // the vendor's causal template: 1 above the diagonal
  for (int64_t i = 0; i < 2048; ++i)
    for (int64_t j = i + 1; j < 2048; ++j) maskHost[static_cast<size_t>(i * 2048 + j)] = 1;
  // per-channel scale and offset: channel (n, d) of the output
  std::vector<float> quantScaleHost(GetShapeSize(quantShape)), quantOffsetHost(GetShapeSize(quantShape));
  for (int64_t c = 0; c < N * D; ++c) {
    quantScaleHost[static_cast<size_t>(c)] = 30.0f + static_cast<float>(c % 7) * 10.0f;
    quantOffsetHost[static_cast<size_t>(c)] = static_cast<float>(c % 5) - 2.0f;
  }
  std::vector<int8_t> outHost(GetShapeSize(outShape));

  void *queryAddr, *keyAddr, *valueAddr, *maskAddr, *scaleAddr, *offsetAddr, *outAddr;
  aclTensor *query, *key, *value, *mask, *quantScale2, *quantOffset2, *out;
  ret = CreateAclTensor(queryHost, queryShape, &queryAddr, aclDataType::ACL_FLOAT16, &query);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(keyHost, kvShape, &keyAddr, aclDataType::ACL_FLOAT16, &key);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(valueHost, kvShape, &valueAddr, aclDataType::ACL_FLOAT16, &value);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(maskHost, maskShape, &maskAddr, aclDataType::ACL_INT8, &mask);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(quantScaleHost, quantShape, &scaleAddr, aclDataType::ACL_FLOAT, &quantScale2);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(quantOffsetHost, quantShape, &offsetAddr, aclDataType::ACL_FLOAT, &quantOffset2);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(outHost, outShape, &outAddr, aclDataType::ACL_INT8, &out);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  aclTensor* keyTensors[] = {key};
  aclTensor* valueTensors[] = {value};
  aclTensorList* keyList = aclCreateTensorList(keyTensors, 1);
  aclTensorList* valueList = aclCreateTensorList(valueTensors, 1);
  aclIntArray* actualSeqLengthsArray = aclCreateIntArray(actualSeqLengths.data(), actualSeqLengths.size());
  aclIntArray* actualSeqLengthsKvArray = aclCreateIntArray(actualSeqLengthsKv.data(), actualSeqLengthsKv.size());

  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[] = "BNSD";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  ret = aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
      query, keyList, valueList, nullptr, mask, actualSeqLengthsArray, actualSeqLengthsKvArray, nullptr, nullptr,
      nullptr, quantScale2, quantOffset2, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, N, scaleValue, 2147483647,
      2147483647, layout, KVN, 3, 1, 0, 0, false, 0, 0, 0, out, nullptr, &workspaceSize, &executor);
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
  std::vector<int8_t> resultData(size);
  ret = aclrtMemcpy(resultData.data(), size, outAddr, size, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  int64_t saturated = 0, nonzero = 0;
  for (int64_t i = 0; i < size; i++) {
    saturated += resultData[i] == 127 || resultData[i] == -128;
    nonzero += resultData[i] != 0;
  }
  for (int64_t i = 0; i < 8; i++) LOG_PRINT("attentionOut[%ld] is: %d\n", static_cast<long>(i), resultData[i]);
  LOG_PRINT("attentionOut: %ld of %ld elements non-zero, %ld saturated\n", static_cast<long>(nonzero),
            static_cast<long>(size), static_cast<long>(saturated));

  aclDestroyTensorList(keyList);  // destroys the member tensors too
  aclDestroyTensorList(valueList);
  aclDestroyIntArray(actualSeqLengthsArray);
  aclDestroyIntArray(actualSeqLengthsKvArray);
  for (aclTensor* t : {query, mask, quantScale2, quantOffset2, out}) aclDestroyTensor(t);
  for (void* p : {queryAddr, keyAddr, valueAddr, maskAddr, scaleAddr, offsetAddr, outAddr}) aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return nonzero > 0 ? 0 : 1;
}
