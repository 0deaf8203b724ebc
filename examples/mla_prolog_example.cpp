/*
 * aclnnMlaProlog (V1), written as the vendor writes its aclnn examples: aclInit -> aclrtSetDevice(3)
 * -> aclrtMalloc + aclrtMemcpy -> aclCreateTensor (FRACTAL_NZ weights with their 4-D storage shape
 * as view and storage) -> GetWorkspaceSize -> aclnnMlaProlog on a stream -> aclrtSynchronizeStream
 * -> read back -> destroy. DeepSeek-V3 shapes, T = 6 tokens (2-D tokenX), N = 32, the partial-quant
 * scenario (bf16 activations, INT8 weightUqQr with its per-channel dequant scale), PA_BSND cache of
 * 16 blocks x 128 slots.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/bfloat16.h"
#include "aclnnop/aclnn_mla_prolog.h"

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
                    aclDataType dataType, aclTensor** tensor, aclFormat format = aclFormat::ACL_FORMAT_ND) {
  auto size = GetShapeSize(shape) * sizeof(T);
  auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, format, shape.data(),
                            shape.size(), *deviceAddr);
  return 0;
}

// The FRACTAL_NZ storage shape of a (k, n) bf16 weight: (n/16, k/16, 16, 16).
std::vector<int64_t> TransToNZShape(const std::vector<int64_t>& shapeND) {
  return {shapeND[1] / 16, shapeND[0] / 16, 16, 16};
}

// The FRACTAL_NZ storage shape of a (k, n) int8 weight: (n/32, k/16, 16, 32).
std::vector<int64_t> TransToNZShapeInt8(const std::vector<int64_t>& shapeND) {
  return {shapeND[1] / 32, shapeND[0] / 16, 16, 32};
}

int main() {
  int32_t deviceId = 3;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const int64_t T = 6, He = 7168, Hcq = 1536, N = 32, D = 128, Dr = 64, Hckv = 512;
  const int64_t BlockNum = 16, BlockSize = 128;
  std::vector<int64_t> tokenXShape = {T, He};
  std::vector<int64_t> weightDqShape = TransToNZShape({He, Hcq});
  std::vector<int64_t> weightUqQrShape = TransToNZShapeInt8({Hcq, N * (D + Dr)});
  std::vector<int64_t> weightUkShape = {N, D, Hckv};
  std::vector<int64_t> weightDkvKrShape = TransToNZShape({He, Hckv + Dr});
  std::vector<int64_t> gammaCqShape = {Hcq}, gammaCkvShape = {Hckv};
  std::vector<int64_t> ropeShape = {T, Dr};
  std::vector<int64_t> cacheIndexShape = {T};
  std::vector<int64_t> kvCacheShape = {BlockNum, BlockSize, 1, Hckv}, krCacheShape = {BlockNum, BlockSize, 1, Dr};
  std::vector<int64_t> queryShape = {T, N, Hckv}, queryRopeShape = {T, N, Dr};
  std::vector<int64_t> dequantScaleWUqQrShape = {1, N * (D + Dr)};

  // host data: small deterministic values (op::bfloat16 is the SDK's host bf16 type)
  auto fill = [](int64_t n, float scale, int salt) {
    std::vector<op::bfloat16> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = op::bfloat16(scale * std::sin(0.37f * i + salt));
    return v;
  };
  std::vector<op::bfloat16> tokenXHost = fill(GetShapeSize(tokenXShape), 1.0f, 7);
  std::vector<op::bfloat16> weightDqHost = fill(GetShapeSize(weightDqShape), 0.02f, 2);
  std::vector<int8_t> weightUqQrHost(GetShapeSize(weightUqQrShape));
  uint32_t lcg = 12345u;  // a small linear congruential generator: int8 weights in [-127, 127]
  for (auto& w : weightUqQrHost) {
    lcg = lcg * 1664525u + 1013904223u;
    w = static_cast<int8_t>(static_cast<int>((lcg >> 24) % 255) - 127);
  }
  std::vector<op::bfloat16> weightUkHost = fill(GetShapeSize(weightUkShape), 0.05f, 4);
  std::vector<op::bfloat16> weightDkvKrHost = fill(GetShapeSize(weightDkvKrShape), 0.02f, 5);
  std::vector<op::bfloat16> gammaCqHost(Hcq, op::bfloat16(1.0f)), gammaCkvHost(Hckv, op::bfloat16(1.0f));
  std::vector<op::bfloat16> sinHost(T * Dr), cosHost(T * Dr);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < Dr; ++i) {
      const float theta = static_cast<float>(t) * std::pow(10000.0f, -2.0f * static_cast<float>(i % (Dr / 2)) / Dr);
      sinHost[t * Dr + i] = op::bfloat16(std::sin(theta));
      cosHost[t * Dr + i] = op::bfloat16(std::cos(theta));
    }
  std::vector<int64_t> cacheIndexHost(T);
  for (int64_t t = 0; t < T; ++t) cacheIndexHost[t] = t * 129;  // one slot per request
  std::vector<op::bfloat16> kvCacheHost(GetShapeSize(kvCacheShape)), krCacheHost(GetShapeSize(krCacheShape));
  std::vector<op::bfloat16> queryHost(GetShapeSize(queryShape)), queryRopeHost(GetShapeSize(queryRopeShape));
  std::vector<float> dequantScaleWUqQrHost(N * (D + Dr));
  for (size_t i = 0; i < dequantScaleWUqQrHost.size(); ++i) dequantScaleWUqQrHost[i] = 0.0004f + 0.0001f * (i % 7);

  void *tokenXAddr, *weightDqAddr, *weightUqQrAddr, *weightUkAddr, *weightDkvKrAddr, *gammaCqAddr, *gammaCkvAddr;
  void *sinAddr, *cosAddr, *cacheIndexAddr, *kvCacheAddr, *krCacheAddr, *queryAddr, *queryRopeAddr, *dqsAddr;
  aclTensor *tokenX, *weightDq, *weightUqQr, *weightUk, *weightDkvKr, *gammaCq, *gammaCkv, *sinT, *cosT;
  aclTensor *cacheIndex, *kvCache, *krCache, *query, *queryRope, *dequantScaleWUqQr;
  ret = CreateAclTensor(tokenXHost, tokenXShape, &tokenXAddr, aclDataType::ACL_BF16, &tokenX);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightDqHost, weightDqShape, &weightDqAddr, aclDataType::ACL_BF16, &weightDq,
                        aclFormat::ACL_FORMAT_FRACTAL_NZ);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightUqQrHost, weightUqQrShape, &weightUqQrAddr, aclDataType::ACL_INT8, &weightUqQr,
                        aclFormat::ACL_FORMAT_FRACTAL_NZ);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightUkHost, weightUkShape, &weightUkAddr, aclDataType::ACL_BF16, &weightUk);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightDkvKrHost, weightDkvKrShape, &weightDkvKrAddr, aclDataType::ACL_BF16, &weightDkvKr,
                        aclFormat::ACL_FORMAT_FRACTAL_NZ);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(gammaCqHost, gammaCqShape, &gammaCqAddr, aclDataType::ACL_BF16, &gammaCq);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(gammaCkvHost, gammaCkvShape, &gammaCkvAddr, aclDataType::ACL_BF16, &gammaCkv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(sinHost, ropeShape, &sinAddr, aclDataType::ACL_BF16, &sinT);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(cosHost, ropeShape, &cosAddr, aclDataType::ACL_BF16, &cosT);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(cacheIndexHost, cacheIndexShape, &cacheIndexAddr, aclDataType::ACL_INT64, &cacheIndex);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(kvCacheHost, kvCacheShape, &kvCacheAddr, aclDataType::ACL_BF16, &kvCache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(krCacheHost, krCacheShape, &krCacheAddr, aclDataType::ACL_BF16, &krCache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryHost, queryShape, &queryAddr, aclDataType::ACL_BF16, &query);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryRopeHost, queryRopeShape, &queryRopeAddr, aclDataType::ACL_BF16, &queryRope);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(dequantScaleWUqQrHost, dequantScaleWUqQrShape, &dqsAddr, aclDataType::ACL_FLOAT,
                        &dequantScaleWUqQr);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  char cacheMode[] = "PA_BSND";
  ret = aclnnMlaPrologGetWorkspaceSize(tokenX, weightDq, weightUqQr, weightUk, weightDkvKr, gammaCq, gammaCkv, sinT,
                                       cosT, cacheIndex, kvCache, krCache, nullptr, nullptr, dequantScaleWUqQr,
                                       nullptr, nullptr, nullptr, nullptr, 1e-5, 1e-5, cacheMode, query, queryRope,
                                       &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMlaPrologGetWorkspaceSize failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnMlaProlog(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMlaProlog failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg()); return ret);

  auto size = GetShapeSize(queryShape);
  std::vector<op::bfloat16> resultData(size);
  ret = aclrtMemcpy(resultData.data(), size * sizeof(op::bfloat16), queryAddr, size * sizeof(op::bfloat16),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  double sumsq = 0;
  for (int64_t i = 0; i < size; i++) sumsq += static_cast<double>(resultData[i]) * static_cast<float>(resultData[i]);
  for (int64_t i = 0; i < 4; i++) LOG_PRINT("query[%ld] is: %f\n", static_cast<long>(i), static_cast<float>(resultData[i]));
  LOG_PRINT("query rms: %f\n", std::sqrt(sumsq / static_cast<double>(size)));
  std::vector<op::bfloat16> kvRow(Hckv);
  ret = aclrtMemcpy(kvRow.data(), Hckv * 2, static_cast<char*>(kvCacheAddr) + 129 * Hckv * 2, Hckv * 2,
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT("kvCache slot 129 [0] is: %f\n", static_cast<float>(kvRow[0]));
  const bool finite = std::isfinite(sumsq) && sumsq > 0 && static_cast<float>(kvRow[0]) != 0.0f;

  for (aclTensor* t : {tokenX, weightDq, weightUqQr, weightUk, weightDkvKr, gammaCq, gammaCkv, sinT, cosT, cacheIndex,
                       kvCache, krCache, query, queryRope, dequantScaleWUqQr})
    aclDestroyTensor(t);
  for (void* p : {tokenXAddr, weightDqAddr, weightUqQrAddr, weightUkAddr, weightDkvKrAddr, gammaCqAddr, gammaCkvAddr,
                  sinAddr, cosAddr, cacheIndexAddr, kvCacheAddr, krCacheAddr, queryAddr, queryRopeAddr, dqsAddr})
    aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return finite ? 0 : 1;
}
