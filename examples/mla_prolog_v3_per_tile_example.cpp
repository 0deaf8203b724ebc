/*
 * aclnnMlaPrologV3WeightNz with per-token-per-tile KV quant (kvCacheQuantMode 3) into a TND cache,
 * written as the vendor writes its aclnn examples: aclInit -> aclrtSetDevice(4) -> aclrtMalloc + aclrtMemcpy ->
 * aclCreateTensor (FRACTAL_NZ weights with their 4-D storage shape as view and storage) ->
 * GetWorkspaceSize -> aclnnMlaPrologV3WeightNz on a stream -> aclrtSynchronizeStream -> read
 * back -> destroy. DeepSeek-V3 shapes, tokenX [T, He] with T = 8, N = 32; modes (1, 3, 0): int8
 * weightUqQr (partial quant) and per-tile KV quant with kNopeClipAlphaOptional 0.9,
 * ckvkrRepoMode 1 and quantScaleRepoMode 1: each kv row of 656 bytes holds the 512 int8 values,
 * the 64 bf16 rope values and the 4 fp32 tile scales; krCacheRef is an empty tensor. Cache mode
 * "TND": token t's row goes to row t of kvCacheRef [T, 1, 656], no cacheIndexOptional.
 * queryNormOut (int8 c^Q) with its per-token scale.
 */
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// The FRACTAL_NZ storage shape of a (k, n) weight: (n/c0, k/16, 16, c0), c0 = 16 for bf16, 32 for int8.
std::vector<int64_t> TransToNZShape(const std::vector<int64_t>& shapeND, int64_t c0) {
  return {shapeND[1] / c0, shapeND[0] / 16, 16, c0};
}

int main() {
  int32_t deviceId = 4;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const int64_t T = 8, He = 7168, Hcq = 1536, N = 32, D = 128, Dr = 64, Hckv = 512;
  std::vector<int64_t> tokenXShape = {T, He};
  std::vector<int64_t> weightDqShape = TransToNZShape({He, Hcq}, 16);
  std::vector<int64_t> weightUqQrShape = TransToNZShape({Hcq, N * (D + Dr)}, 32);  // int8
  std::vector<int64_t> weightUkShape = {N, D, Hckv};
  std::vector<int64_t> weightDkvKrShape = TransToNZShape({He, Hckv + Dr}, 16);
  std::vector<int64_t> gammaCqShape = {Hcq}, gammaCkvShape = {Hckv};
  std::vector<int64_t> ropeShape = {T, Dr};
  const int64_t Dtile = Hckv + 2 * Dr + 4 * (Hckv / 128);  // 656 bytes
  std::vector<int64_t> kvCacheShape = {T, 1, Dtile}, krCacheShape = {0};
  std::vector<int64_t> dequantScaleWUqQrShape = {1, N * (D + Dr)}, smoothShape = {1, Hcq};
  std::vector<int64_t> clipAlphaShape = {1};
  std::vector<int64_t> queryShape = {T, N, Hckv}, queryRopeShape = {T, N, Dr};
  std::vector<int64_t> queryNormShape = {T, Hcq}, queryNormScaleShape = {T, 1};

  // host data: small deterministic values (op::bfloat16 is the SDK's host bf16 type)
  auto fill = [](int64_t n, float scale, int salt) {
    std::vector<op::bfloat16> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = op::bfloat16(scale * std::sin(0.37f * i + salt));
    return v;
  };
  std::vector<op::bfloat16> tokenXHost = fill(GetShapeSize(tokenXShape), 1.0f, 1);
  std::vector<op::bfloat16> weightDqHost = fill(GetShapeSize(weightDqShape), 0.02f, 2);
  std::vector<int8_t> weightUqQrHost(GetShapeSize(weightUqQrShape));
  for (size_t i = 0; i < weightUqQrHost.size(); ++i) weightUqQrHost[i] = static_cast<int8_t>(static_cast<int>(i * 7 % 31) - 15);
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
  std::vector<float> dequantScaleWUqQrHost(N * (D + Dr), 0.002f);
  std::vector<float> smoothHost(Hcq);
  for (int64_t i = 0; i < Hcq; ++i) smoothHost[i] = 1.0f + 0.25f * std::sin(0.1f * i);
  // each 128-value tile is clipped to 0.9 of its max |value| and quantised with its own scale
  std::vector<float> clipAlphaHost(1, 0.9f);
  std::vector<int8_t> kvCacheHost(GetShapeSize(kvCacheShape)), krCacheHost(1);
  std::vector<op::bfloat16> queryHost(GetShapeSize(queryShape)), queryRopeHost(GetShapeSize(queryRopeShape));
  std::vector<int8_t> queryNormHost(GetShapeSize(queryNormShape));
  std::vector<float> queryNormScaleHost(GetShapeSize(queryNormScaleShape));

  void *tokenXAddr, *weightDqAddr, *weightUqQrAddr, *weightUkAddr, *weightDkvKrAddr, *gammaCqAddr, *gammaCkvAddr;
  void *sinAddr, *cosAddr, *kvCacheAddr, *krCacheAddr, *dequantScaleWUqQrAddr, *smoothAddr, *clipAlphaAddr;
  void *queryAddr, *queryRopeAddr, *queryNormAddr, *queryNormScaleAddr;
  aclTensor *tokenX, *weightDq, *weightUqQr, *weightUk, *weightDkvKr, *gammaCq, *gammaCkv, *sinT, *cosT;
  aclTensor *kvCache, *krCache, *dequantScaleWUqQr, *smooth, *clipAlpha;
  aclTensor *query, *queryRope, *queryNorm, *queryNormScale;
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
  ret = CreateAclTensor(kvCacheHost, kvCacheShape, &kvCacheAddr, aclDataType::ACL_INT8, &kvCache);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  // the empty krCacheRef: a (0) tensor over a small allocation (aclrtMalloc takes no size 0)
  ret = aclrtMalloc(&krCacheAddr, 64, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  {
    const int64_t stride = 1;
    krCache = aclCreateTensor(krCacheShape.data(), krCacheShape.size(), aclDataType::ACL_INT8, &stride, 0,
                              aclFormat::ACL_FORMAT_ND, krCacheShape.data(), krCacheShape.size(), krCacheAddr);
    CHECK_RET(krCache != nullptr, LOG_PRINT("aclCreateTensor failed\n"); return 1);
  }
  ret = CreateAclTensor(dequantScaleWUqQrHost, dequantScaleWUqQrShape, &dequantScaleWUqQrAddr,
                        aclDataType::ACL_FLOAT, &dequantScaleWUqQr);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(smoothHost, smoothShape, &smoothAddr, aclDataType::ACL_FLOAT, &smooth);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(clipAlphaHost, clipAlphaShape, &clipAlphaAddr, aclDataType::ACL_FLOAT, &clipAlpha);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryHost, queryShape, &queryAddr, aclDataType::ACL_BF16, &query);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryRopeHost, queryRopeShape, &queryRopeAddr, aclDataType::ACL_BF16, &queryRope);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryNormHost, queryNormShape, &queryNormAddr, aclDataType::ACL_INT8, &queryNorm);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(queryNormScaleHost, queryNormScaleShape, &queryNormScaleAddr, aclDataType::ACL_FLOAT,
                        &queryNormScale);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  char cacheMode[] = "TND";
  // modes (weightQuantMode, kvCacheQuantMode, queryQuantMode) = (1, 3, 0); ckvkrRepoMode 1,
  // quantScaleRepoMode 1, tileSize 128; qcQrScale 1, kcScale 1
  ret = aclnnMlaPrologV3WeightNzGetWorkspaceSize(
      tokenX, weightDq, weightUqQr, weightUk, weightDkvKr, gammaCq, gammaCkv, sinT, cosT, kvCache, krCache, nullptr,
      nullptr, nullptr, dequantScaleWUqQr, nullptr, nullptr, nullptr, smooth, nullptr, clipAlpha, 1e-5,
      1e-5, cacheMode, 1, 3, 0, 1, 1, 128, 1.0, 1.0, query, queryRope, nullptr, queryNorm, queryNormScale,
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

  auto size = GetShapeSize(queryShape);
  std::vector<op::bfloat16> resultData(size);
  ret = aclrtMemcpy(resultData.data(), size * sizeof(op::bfloat16), queryAddr, size * sizeof(op::bfloat16),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  double sumsq = 0;
  for (int64_t i = 0; i < size; i++) sumsq += static_cast<double>(resultData[i]) * static_cast<float>(resultData[i]);
  LOG_PRINT("query rms: %f\n", std::sqrt(sumsq / static_cast<double>(size)));
  // token 3's row: row 3 of the TND cache: int8 values, bf16 rope values, fp32 tile scales
  std::vector<int8_t> kvRow(Dtile);
  ret = aclrtMemcpy(kvRow.data(), Dtile, static_cast<char*>(kvCacheAddr) + 3 * Dtile, Dtile, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  int kvMaxAbs = 0;
  for (int64_t i = 0; i < Hckv; ++i) kvMaxAbs = std::max(kvMaxAbs, std::abs(static_cast<int>(kvRow[i])));
  float tileScales[4];
  std::memcpy(tileScales, kvRow.data() + Hckv + 2 * Dr, sizeof tileScales);
  uint16_t rope0Bits;  // the bf16 bits: the high half of a float
  std::memcpy(&rope0Bits, kvRow.data() + Hckv, 2);
  const uint32_t rope0Float = static_cast<uint32_t>(rope0Bits) << 16;
  float rope0;
  std::memcpy(&rope0, &rope0Float, 4);
  LOG_PRINT("kvCache row 3: [0] %d (dequantized %f), max |int8| %d, rope[0] %f, tile scales %g %g %g %g\n",
            static_cast<int>(kvRow[0]), kvRow[0] * tileScales[0], kvMaxAbs, rope0, tileScales[0],
            tileScales[1], tileScales[2], tileScales[3]);
  bool ok = std::isfinite(sumsq) && sumsq > 0 && kvMaxAbs > 0 && tileScales[0] > 0;
  std::vector<float> normScales(T);
  ret = aclrtMemcpy(normScales.data(), T * 4, queryNormScaleAddr, T * 4, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT("dequantScaleQNormOut[0] is: %g\n", normScales[0]);
  ok = ok && normScales[0] > 0;

  for (aclTensor* t : {tokenX, weightDq, weightUqQr, weightUk, weightDkvKr, gammaCq, gammaCkv, sinT, cosT, kvCache,
                       krCache, dequantScaleWUqQr, smooth, clipAlpha, query, queryRope, queryNorm,
                       queryNormScale})
    aclDestroyTensor(t);
  for (void* p : {tokenXAddr, weightDqAddr, weightUqQrAddr, weightUkAddr, weightDkvKrAddr, gammaCqAddr, gammaCkvAddr,
                  sinAddr, cosAddr, kvCacheAddr, krCacheAddr, dequantScaleWUqQrAddr, smoothAddr, clipAlphaAddr,
                  queryAddr, queryRopeAddr, queryNormAddr, queryNormScaleAddr})
    aclrtFree(p);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return ok ? 0 : 1;
}
