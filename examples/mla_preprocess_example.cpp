/*
 * aclnnMlaPreprocess, written as the vendor writes its aclnn examples (the aclnn doc example):
 * aclInit -> aclrtMalloc + aclrtMemcpy -> aclCreateTensor (wdqkv / wuq transposed, FRACTAL_NZ,
 * given with their 2-D logical shape as view and the 4-D NZ shape as storage) -> GetWorkspaceSize
 * -> aclnnMlaPreprocess on a stream -> aclrtSynchronizeStream -> read back -> destroy.
 * tokenNum 8, hiddenSize 7168, headNum 32, blockNum 192, blockSize 128, cacheMode 1 (KROPE_CTKV),
 * quantMode 0 (PER_TENSOR_QUANT_ASYMM), fp16 input, int8 weights, ND wuk {32, 128, 512}.
 * Every tensor the op definition declares is passed (ctkvScale / qNopeScale too, which cacheMode 1
 * does not read, as the vendor's example does). Returns non-zero if an output is not finite.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/fp16_t.h"
#include "aclnnop/aclnn_mla_preprocess.h"

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

// storageShape empty: the view shape is the storage shape.
template <typename T>
int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, void** deviceAddr,
                    aclDataType dataType, aclTensor** tensor, aclFormat format = aclFormat::ACL_FORMAT_ND,
                    std::vector<int64_t> storageShape = {}) {
  if (storageShape.empty()) storageShape = shape;
  auto size = GetShapeSize(storageShape) * sizeof(T);
  auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, format, storageShape.data(),
                            storageShape.size(), *deviceAddr);
  return 0;
}

// The FRACTAL_NZ storage shape of a transposed (rows = output channels, cols = K) int8 weight:
// (cols/32, rows/16, 16, 32).
std::vector<int64_t> TransToNZShapeInt8(const std::vector<int64_t>& shapeND) {
  return {shapeND[1] / 32, shapeND[0] / 16, 16, 32};
}

int main() {
  int32_t deviceId = 5;  // as the vendor's example
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const int64_t tokenNum = 8, hiddenSize = 7168, headNum = 32, blockNum = 192, blockSize = 128;
  const int64_t N1 = 2112, N2 = headNum * 192, Hcq = 1536, Hckv = 512, Dr = 64;
  std::vector<int64_t> inputShape = {tokenNum, hiddenSize};
  std::vector<int64_t> wdqkvShape = {N1, hiddenSize}, wuqShape = {N2, Hcq};
  std::vector<int64_t> wukShape = {headNum, 128, Hckv};
  std::vector<int64_t> ropeShape = {tokenNum, Dr};
  std::vector<int64_t> kvCacheShape = {blockNum, blockSize, 1, Hckv}, kvCacheRopeShape = {blockNum, blockSize, 1, Dr};
  std::vector<int64_t> qOutShape = {tokenNum, headNum, Hckv}, qRopeOutShape = {tokenNum, headNum, Dr};

  // host data: small deterministic values (op::fp16_t is the SDK's host fp16 type)
  auto fill = [](int64_t n, float scale, int salt) {
    std::vector<op::fp16_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = op::fp16_t(scale * std::sin(0.37f * i + salt));
    return v;
  };
  auto fillInt8 = [](int64_t n, int salt) {
    std::vector<int8_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int8_t>((i * 7 + salt) % 3 - 1);
    return v;
  };
  auto fillDeScale = [](int64_t n) {  // fp16 input: INT64 holding the fp32 bits in its low 32 bits
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float f = 0.0004f + 0.0001f * static_cast<float>(i % 5);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      v[static_cast<size_t>(i)] = static_cast<int64_t>(bits);
    }
    return v;
  };
  std::vector<op::fp16_t> inputHost = fill(GetShapeSize(inputShape), 1.0f, 1);
  std::vector<op::fp16_t> gamma0Host(hiddenSize, op::fp16_t(1.0f)), beta0Host(hiddenSize, op::fp16_t(0.0f));
  std::vector<op::fp16_t> quantScale0Host(1, op::fp16_t(0.5f)), quantScale1Host(1, op::fp16_t(0.5f));
  std::vector<int8_t> quantOffset0Host(1, 0), quantOffset1Host(1, 0);
  std::vector<int8_t> wdqkvHost = fillInt8(GetShapeSize(wdqkvShape), 1), wuqHost = fillInt8(GetShapeSize(wuqShape), 2);
  std::vector<int64_t> deScale0Host = fillDeScale(N1), deScale1Host = fillDeScale(N2);
  std::vector<int32_t> bias0Host(N1, 1), bias1Host(N2, -1);
  std::vector<op::fp16_t> gamma1Host(Hcq, op::fp16_t(1.0f)), beta1Host(Hcq, op::fp16_t(0.0f));
  std::vector<op::fp16_t> gamma2Host(Hckv, op::fp16_t(1.0f));
  std::vector<op::fp16_t> wukHost = fill(GetShapeSize(wukShape), 0.05f, 4);
  std::vector<op::fp16_t> sinHost(tokenNum * Dr), cosHost(tokenNum * Dr);
  for (int64_t t = 0; t < tokenNum; ++t)
    for (int64_t i = 0; i < Dr; ++i) {  // half-rotation tables: the two halves repeat
      const float theta = static_cast<float>(t) * std::pow(10000.0f, -2.0f * static_cast<float>(i % (Dr / 2)) / Dr);
      sinHost[t * Dr + i] = op::fp16_t(std::sin(theta));
      cosHost[t * Dr + i] = op::fp16_t(std::cos(theta));
    }
  std::vector<op::fp16_t> kvCacheHost(GetShapeSize(kvCacheShape)), kvCacheRopeHost(GetShapeSize(kvCacheRopeShape));
  std::vector<int32_t> slotMappingHost(tokenNum);
  for (int64_t t = 0; t < tokenNum; ++t) slotMappingHost[t] = static_cast<int32_t>(t * 129);
  std::vector<op::fp16_t> qOutHost(GetShapeSize(qOutShape)), qRopeOutHost(GetShapeSize(qRopeOutShape));
  std::vector<op::fp16_t> ctkvScaleHost(1, op::fp16_t(1.0f)), qNopeScaleHost(headNum, op::fp16_t(1.0f));

  void *inputAddr, *gamma0Addr, *beta0Addr, *qs0Addr, *qo0Addr, *wdqkvAddr, *ds0Addr, *bias0Addr, *gamma1Addr;
  void *beta1Addr, *qs1Addr, *qo1Addr, *wuqAddr, *ds1Addr, *bias1Addr, *gamma2Addr, *cosAddr, *sinAddr, *wukAddr;
  void *kvCacheAddr, *kvCacheRopeAddr, *slotMappingAddr, *ctkvScaleAddr, *qNopeScaleAddr, *qOutAddr, *qRopeOutAddr;
  aclTensor *input, *gamma0, *beta0, *quantScale0, *quantOffset0, *wdqkv, *deScale0, *bias0, *gamma1, *beta1;
  aclTensor *quantScale1, *quantOffset1, *wuq, *deScale1, *bias1, *gamma2, *cosT, *sinT, *wuk, *kvCache;
  aclTensor *kvCacheRope, *slotMapping, *ctkvScale, *qNopeScale, *qOut, *qRopeOut;
  const aclDataType F16 = aclDataType::ACL_FLOAT16;
  ret = CreateAclTensor(inputHost, inputShape, &inputAddr, F16, &input);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(gamma0Host, {hiddenSize}, &gamma0Addr, F16, &gamma0);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(beta0Host, {hiddenSize}, &beta0Addr, F16, &beta0);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(quantScale0Host, {1}, &qs0Addr, F16, &quantScale0);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(quantOffset0Host, {1}, &qo0Addr, aclDataType::ACL_INT8, &quantOffset0);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(wdqkvHost, wdqkvShape, &wdqkvAddr, aclDataType::ACL_INT8, &wdqkv,
                        aclFormat::ACL_FORMAT_FRACTAL_NZ, TransToNZShapeInt8(wdqkvShape));
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(deScale0Host, {N1}, &ds0Addr, aclDataType::ACL_INT64, &deScale0);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(bias0Host, {N1}, &bias0Addr, aclDataType::ACL_INT32, &bias0);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(gamma1Host, {Hcq}, &gamma1Addr, F16, &gamma1);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(beta1Host, {Hcq}, &beta1Addr, F16, &beta1);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(quantScale1Host, {1}, &qs1Addr, F16, &quantScale1);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(quantOffset1Host, {1}, &qo1Addr, aclDataType::ACL_INT8, &quantOffset1);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(wuqHost, wuqShape, &wuqAddr, aclDataType::ACL_INT8, &wuq, aclFormat::ACL_FORMAT_FRACTAL_NZ,
                        TransToNZShapeInt8(wuqShape));
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(deScale1Host, {N2}, &ds1Addr, aclDataType::ACL_INT64, &deScale1);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(bias1Host, {N2}, &bias1Addr, aclDataType::ACL_INT32, &bias1);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(gamma2Host, {Hckv}, &gamma2Addr, F16, &gamma2);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(cosHost, ropeShape, &cosAddr, F16, &cosT);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(sinHost, ropeShape, &sinAddr, F16, &sinT);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(wukHost, wukShape, &wukAddr, F16, &wuk);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(kvCacheHost, kvCacheShape, &kvCacheAddr, F16, &kvCache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(kvCacheRopeHost, kvCacheRopeShape, &kvCacheRopeAddr, F16, &kvCacheRope);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(slotMappingHost, {tokenNum}, &slotMappingAddr, aclDataType::ACL_INT32, &slotMapping);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(ctkvScaleHost, {1}, &ctkvScaleAddr, F16, &ctkvScale);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(qNopeScaleHost, {headNum}, &qNopeScaleAddr, F16, &qNopeScale);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(qOutHost, qOutShape, &qOutAddr, F16, &qOut);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(qRopeOutHost, qRopeOutShape, &qRopeOutAddr, F16, &qRopeOut);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // The caches are updated in place: kvCacheOut / krCacheOut are the kvCache / kvCacheRope tensors.
  // wdqDim 128, qRopeDim 0, kRopeDim 0 as in the doc example (reserved, ignored); epsilon is
  // ignored too (every RmsNorm uses 1e-6).
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  ret = aclnnMlaPreprocessGetWorkspaceSize(
      input, gamma0, beta0, quantScale0, quantOffset0, wdqkv, deScale0, bias0, gamma1, beta1, quantScale1,
      quantOffset1, wuq, deScale1, bias1, gamma2, cosT, sinT, wuk, kvCache, kvCacheRope, slotMapping, ctkvScale,
      qNopeScale, 128, 0, 0, 1e-5, 2, 2, true, true, true, 1, 0, true, 1, qOut, kvCache, qRopeOut, kvCacheRope, &workspaceSize,
      &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMlaPreprocessGetWorkspaceSize failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnMlaPreprocess(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMlaPreprocess failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg());
            return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg()); return ret);

  // read back qOut, qRopeOut and the cache rows of the 8 slots; all must be finite
  bool finite = true;
  auto readBack = [&](void* addr, int64_t count, int64_t byteOffset, const char* name) {
    std::vector<op::fp16_t> v(static_cast<size_t>(count));
    auto r = aclrtMemcpy(v.data(), count * 2, static_cast<char*>(addr) + byteOffset, count * 2,
                         ACL_MEMCPY_DEVICE_TO_HOST);
    if (r != ACL_SUCCESS) {
      finite = false;
      return;
    }
    double sumsq = 0;
    for (const auto& x : v) sumsq += static_cast<double>(static_cast<float>(x)) * static_cast<float>(x);
    finite = finite && std::isfinite(sumsq) && sumsq > 0;
    LOG_PRINT("%s[0] is: %f, rms %f\n", name, static_cast<float>(v[0]), std::sqrt(sumsq / static_cast<double>(count)));
  };
  readBack(qOutAddr, GetShapeSize(qOutShape), 0, "qOut");
  readBack(qRopeOutAddr, GetShapeSize(qRopeOutShape), 0, "qRopeOut");
  for (int64_t t = 0; t < tokenNum; ++t) {
    readBack(kvCacheAddr, Hckv, slotMappingHost[t] * Hckv * 2, "kvCache row");
    readBack(kvCacheRopeAddr, Dr, slotMappingHost[t] * Dr * 2, "kvCacheRope row");
  }

  for (aclTensor* t : {input, gamma0, beta0, quantScale0, quantOffset0, wdqkv, deScale0, bias0, gamma1, beta1,
                       quantScale1, quantOffset1, wuq, deScale1, bias1, gamma2, cosT, sinT, wuk, kvCache, kvCacheRope,
                       slotMapping, ctkvScale, qNopeScale, qOut, qRopeOut})
    aclDestroyTensor(t);
  for (void* p : {inputAddr, gamma0Addr, beta0Addr, qs0Addr, qo0Addr, wdqkvAddr, ds0Addr, bias0Addr, gamma1Addr,
                  beta1Addr, qs1Addr, qo1Addr, wuqAddr, ds1Addr, bias1Addr, gamma2Addr, cosAddr, sinAddr, wukAddr,
                  kvCacheAddr, kvCacheRopeAddr, slotMappingAddr, ctkvScaleAddr, qNopeScaleAddr, qOutAddr, qRopeOutAddr})
    aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("outputs %s\n", finite ? "finite" : "NOT finite");
  return finite ? 0 : 1;
}
