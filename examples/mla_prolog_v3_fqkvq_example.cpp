/*
 * aclnnMlaPrologV3WeightNz, full quant with per-tensor KV quant, written as the vendor writes its
 * aclnn examples: aclInit -> aclrtSetDevice(0) -> aclrtMalloc + aclrtMemcpy -> aclCreateTensor
 * (FRACTAL_NZ int8 weights with their 4-D storage shape as view and storage) -> GetWorkspaceSize ->
 * aclnnMlaPrologV3WeightNz on a stream -> aclrtSynchronizeStream -> read back -> destroy.
 * DeepSeek-V3 shapes, tokenX [B, S, He] = [8, 1, 7168] int8, N = 32; modes (weightQuantMode,
 * kvCacheQuantMode, queryQuantMode) = (2, 1, 1): int8 tokenX and weights with their dequant
 * scales, smoothScalesCqOptional [1, 1536], an int8 kvCacheRef quantized per tensor with
 * quantScaleCkvOptional of shape (1) (the shape V3 takes for kvCacheQuantMode 1), a bf16
 * krCacheRef, an int8 queryOut with dequantScaleQNopeOutOptional [B*S, N, 1]. PA_BSND cache of 16
 * blocks x 128 slots; no queryNormOut.
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/bfloat16.h"
#include "aclnnop/aclnn_mla_prolog_v3_weight_nz.h"

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

// Copies hostData to a new device buffer and describes it as an aclTensor of `shape` (dense).
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

// The FRACTAL_NZ storage shape of an int8 (k, n) weight: (n/32, k/16, 16, 32).
std::vector<int64_t> TransToNZShapeInt8(const std::vector<int64_t>& shapeND) {
  return {shapeND[1] / 32, shapeND[0] / 16, 16, 32};
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const int64_t B = 8, S = 1, He = 7168, Hcq = 1536, N = 32, D = 128, Dr = 64, Hckv = 512;
  const int64_t BlockNum = 16, BlockSize = 128;
  std::vector<int64_t> tokenXShape = {B, S, He};
  std::vector<int64_t> weightDqShape = TransToNZShapeInt8({He, Hcq});
  std::vector<int64_t> weightUqQrShape = TransToNZShapeInt8({Hcq, N * (D + Dr)});
  std::vector<int64_t> weightUkShape = {N, D, Hckv};
  std::vector<int64_t> weightDkvKrShape = TransToNZShapeInt8({He, Hckv + Dr});
  std::vector<int64_t> gammaCqShape = {Hcq}, gammaCkvShape = {Hckv};
  std::vector<int64_t> ropeShape = {B, S, Dr};
  std::vector<int64_t> cacheIndexShape = {B, S};
  std::vector<int64_t> kvCacheShape = {BlockNum, BlockSize, 1, Hckv}, krCacheShape = {BlockNum, BlockSize, 1, Dr};
  std::vector<int64_t> dequantScaleXShape = {B * S, 1};
  std::vector<int64_t> dequantScaleWDqShape = {1, Hcq};
  std::vector<int64_t> dequantScaleWUqQrShape = {1, N * (D + Dr)};
  std::vector<int64_t> dequantScaleWDkvKrShape = {1, Hckv + Dr};
  std::vector<int64_t> quantScaleCkvShape = {1};  // per tensor
  std::vector<int64_t> smoothScalesCqShape = {1, Hcq};
  std::vector<int64_t> queryShape = {B, S, N, Hckv}, queryRopeShape = {B, S, N, Dr};
  std::vector<int64_t> dequantScaleQNopeShape = {B * S, N, 1};

  // host data: small deterministic values; int8 activations and weights in [-100, 100]
  auto int8Fill = [](int64_t n, int salt) {
    std::vector<int8_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = static_cast<int8_t>(std::lround(100.0 * std::sin(0.61 * i + 0.17 * i * (i % 7) + salt)));
    return v;
  };
  auto floatFill = [](int64_t n, float base, float spread, int salt) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = base + spread * std::sin(0.23f * i + salt);
    return v;
  };
  std::vector<int8_t> tokenXHost = int8Fill(GetShapeSize(tokenXShape), 1);
  std::vector<int8_t> weightDqHost = int8Fill(GetShapeSize(weightDqShape), 2);
  std::vector<int8_t> weightUqQrHost = int8Fill(GetShapeSize(weightUqQrShape), 3);
  std::vector<op::bfloat16> weightUkHost(GetShapeSize(weightUkShape));
  for (size_t i = 0; i < weightUkHost.size(); ++i) weightUkHost[i] = op::bfloat16(0.05f * std::sin(0.37f * i + 4));
  std::vector<int8_t> weightDkvKrHost = int8Fill(GetShapeSize(weightDkvKrShape), 5);
  std::vector<op::bfloat16> gammaCqHost(Hcq, op::bfloat16(1.0f)), gammaCkvHost(Hckv, op::bfloat16(1.0f));
  std::vector<op::bfloat16> sinHost(B * S * Dr), cosHost(B * S * Dr);
  for (int64_t t = 0; t < B * S; ++t)
    for (int64_t i = 0; i < Dr; ++i) {
      const float theta = static_cast<float>(t + 5) * std::pow(10000.0f, -2.0f * static_cast<float>(i % (Dr / 2)) / Dr);
      sinHost[t * Dr + i] = op::bfloat16(std::sin(theta));
      cosHost[t * Dr + i] = op::bfloat16(std::cos(theta));
    }
  std::vector<int64_t> cacheIndexHost(B * S);
  for (int64_t t = 0; t < B * S; ++t) cacheIndexHost[t] = t * 2 * BlockSize + 3;  // slot 3 of block 2t
  std::vector<float> dequantScaleXHost = floatFill(B * S, 0.01f, 0.004f, 6);
  std::vector<float> dequantScaleWDqHost = floatFill(Hcq, 0.01f, 0.004f, 7);
  std::vector<float> dequantScaleWUqQrHost = floatFill(N * (D + Dr), 0.002f, 0.0005f, 8);
  std::vector<float> dequantScaleWDkvKrHost = floatFill(Hckv + Dr, 0.01f, 0.004f, 9);
  std::vector<float> quantScaleCkvHost = {25.0f};  // int8 kv = rint(normalised kv * 25)
  std::vector<float> smoothScalesCqHost = floatFill(Hcq, 1.0f, 0.25f, 10);
  std::vector<int8_t> kvCacheHost(GetShapeSize(kvCacheShape));
  std::vector<op::bfloat16> krCacheHost(GetShapeSize(krCacheShape));
  std::vector<int8_t> queryHost(GetShapeSize(queryShape));
  std::vector<op::bfloat16> queryRopeHost(GetShapeSize(queryRopeShape));
  std::vector<float> dequantScaleQNopeHost(GetShapeSize(dequantScaleQNopeShape));

  void *tokenXAddr, *weightDqAddr, *weightUqQrAddr, *weightUkAddr, *weightDkvKrAddr, *gammaCqAddr, *gammaCkvAddr;
  void *sinAddr, *cosAddr, *cacheIndexAddr, *kvCacheAddr, *krCacheAddr, *dequantScaleXAddr, *dequantScaleWDqAddr;
  void *dequantScaleWUqQrAddr, *dequantScaleWDkvKrAddr, *quantScaleCkvAddr, *smoothScalesCqAddr;
  void *queryAddr, *queryRopeAddr, *dequantScaleQNopeAddr;
  aclTensor *tokenX, *weightDq, *weightUqQr, *weightUk, *weightDkvKr, *gammaCq, *gammaCkv, *sinT, *cosT;
  aclTensor *cacheIndex, *kvCache, *krCache, *dequantScaleX, *dequantScaleWDq, *dequantScaleWUqQr;
  aclTensor *dequantScaleWDkvKr, *quantScaleCkv, *smoothScalesCq, *query, *queryRope, *dequantScaleQNope;
  ret = CreateAclTensor(tokenXHost, tokenXShape, &tokenXAddr, aclDataType::ACL_INT8, &tokenX);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightDqHost, weightDqShape, &weightDqAddr, aclDataType::ACL_INT8, &weightDq,
                        aclFormat::ACL_FORMAT_FRACTAL_NZ);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightUqQrHost, weightUqQrShape, &weightUqQrAddr, aclDataType::ACL_INT8, &weightUqQr,
                        aclFormat::ACL_FORMAT_FRACTAL_NZ);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightUkHost, weightUkShape, &weightUkAddr, aclDataType::ACL_BF16, &weightUk);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(weightDkvKrHost, weightDkvKrShape, &weightDkvKrAddr, aclDataType::ACL_INT8, &weightDkvKr,
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
  ret = CreateAclTensor(kvCacheHost, kvCacheShape, &kvCacheAddr, aclDataType::ACL_INT8, &kvCache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(krCacheHost, krCacheShape, &krCacheAddr, aclDataType::ACL_BF16, &krCache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(dequantScaleXHost, dequantScaleXShape, &dequantScaleXAddr, aclDataType::ACL_FLOAT,
                        &dequantScaleX);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(dequantScaleWDqHost, dequantScaleWDqShape, &dequantScaleWDqAddr, aclDataType::ACL_FLOAT,
                        &dequantScaleWDq);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(dequantScaleWUqQrHost, dequantScaleWUqQrShape, &dequantScaleWUqQrAddr, aclDataType::ACL_FLOAT,
                        &dequantScaleWUqQr);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(dequantScaleWDkvKrHost, dequantScaleWDkvKrShape, &dequantScaleWDkvKrAddr,
                        aclDataType::ACL_FLOAT, &dequantScaleWDkvKr);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(quantScaleCkvHost, quantScaleCkvShape, &quantScaleCkvAddr, aclDataType::ACL_FLOAT,
                        &quantScaleCkv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(smoothScalesCqHost, smoothScalesCqShape, &smoothScalesCqAddr, aclDataType::ACL_FLOAT,
                        &smoothScalesCq);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryHost, queryShape, &queryAddr, aclDataType::ACL_INT8, &query);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryRopeHost, queryRopeShape, &queryRopeAddr, aclDataType::ACL_BF16, &queryRope);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(dequantScaleQNopeHost, dequantScaleQNopeShape, &dequantScaleQNopeAddr, aclDataType::ACL_FLOAT,
                        &dequantScaleQNope);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  char cacheMode[] = "PA_BSND";
  int64_t weightQuantMode = 2, kvCacheQuantMode = 1, queryQuantMode = 1;
  int64_t ckvkrRepoMode = 0, quantScaleRepoMode = 0, tileSize = 128;
  double qcQrScale = 1.0, kcScale = 1.0;
  // no quantScaleCkr (per-tensor KV quant keeps krCache bf16), no actualSeqLen, no kNopeClipAlpha,
  // no queryNormOut / dequantScaleQNormOut
  ret = aclnnMlaPrologV3WeightNzGetWorkspaceSize(
      tokenX, weightDq, weightUqQr, weightUk, weightDkvKr, gammaCq, gammaCkv, sinT, cosT, kvCache, krCache, cacheIndex,
      dequantScaleX, dequantScaleWDq, dequantScaleWUqQr, dequantScaleWDkvKr, quantScaleCkv, nullptr, smoothScalesCq,
      nullptr, nullptr, 1e-5, 1e-5, cacheMode, weightQuantMode, kvCacheQuantMode, queryQuantMode, ckvkrRepoMode,
      quantScaleRepoMode, tileSize, qcQrScale, kcScale, query, queryRope, dequantScaleQNope, nullptr, nullptr,
      &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMlaPrologV3WeightNzGetWorkspaceSize failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnMlaPrologV3WeightNz(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMlaPrologV3WeightNz failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n%s\n", ret, aclGetRecentErrMsg()); return ret);

  // the int8 query and its per (token, head) dequant scale: query * scale is the bf16 query
  std::vector<int8_t> queryResult(GetShapeSize(queryShape));
  ret = aclrtMemcpy(queryResult.data(), queryResult.size(), queryAddr, queryResult.size(), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  std::vector<float> scaleResult(GetShapeSize(dequantScaleQNopeShape));
  ret = aclrtMemcpy(scaleResult.data(), scaleResult.size() * sizeof(float), dequantScaleQNopeAddr,
                    scaleResult.size() * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  int queryMaxAbs = 0;
  for (int8_t v : queryResult) queryMaxAbs = std::max(queryMaxAbs, std::abs(static_cast<int>(v)));
  LOG_PRINT("query[0] is: %d (dequantized %f), max |int8| %d; dequantScaleQNope[0] is: %g\n",
            static_cast<int>(queryResult[0]), queryResult[0] * scaleResult[0], queryMaxAbs, scaleResult[0]);
  bool ok = queryMaxAbs >= 126;  // each (token, head) row's largest value maps to 127
  for (float s : scaleResult) ok = ok && std::isfinite(s) && s > 0;
  // token 1's kv row: slot 3 of block 2
  std::vector<int8_t> kvRow(Hckv);
  const int64_t slot = cacheIndexHost[1];
  ret = aclrtMemcpy(kvRow.data(), Hckv, static_cast<char*>(kvCacheAddr) + slot * Hckv, Hckv, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  int kvMaxAbs = 0;
  for (int8_t v : kvRow) kvMaxAbs = std::max(kvMaxAbs, std::abs(static_cast<int>(v)));
  LOG_PRINT("kvCache slot %lld: [0] %d (dequantized %f), max |int8| %d\n", static_cast<long long>(slot),
            static_cast<int>(kvRow[0]), kvRow[0] / quantScaleCkvHost[0], kvMaxAbs);
  ok = ok && kvMaxAbs > 0;

  for (aclTensor* t : {tokenX, weightDq, weightUqQr, weightUk, weightDkvKr, gammaCq, gammaCkv, sinT, cosT, cacheIndex,
                       kvCache, krCache, dequantScaleX, dequantScaleWDq, dequantScaleWUqQr, dequantScaleWDkvKr,
                       quantScaleCkv, smoothScalesCq, query, queryRope, dequantScaleQNope})
    aclDestroyTensor(t);
  for (void* p : {tokenXAddr, weightDqAddr, weightUqQrAddr, weightUkAddr, weightDkvKrAddr, gammaCqAddr, gammaCkvAddr,
                  sinAddr, cosAddr, cacheIndexAddr, kvCacheAddr, krCacheAddr, dequantScaleXAddr, dequantScaleWDqAddr,
                  dequantScaleWUqQrAddr, dequantScaleWDkvKrAddr, quantScaleCkvAddr, smoothScalesCqAddr, queryAddr,
                  queryRopeAddr, dequantScaleQNopeAddr})
    aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return ok ? 0 : 1;
}
