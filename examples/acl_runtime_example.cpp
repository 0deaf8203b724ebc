/*
 * The skeleton every aclnn example follows, on mlaops: aclInit -> device/context/stream ->
 * aclrtMalloc + aclrtMemcpy -> aclCreateTensor -> (two-phase operator call) ->
 * aclrtSynchronizeStream -> copy back -> destroy. The operator examples beside this file fill in
 * the two-phase call; here a device-to-device copy on the stream stands in for it.
 */
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(message, ...)         \
  do {                                  \
    std::printf(message, ##__VA_ARGS__); \
  } while (0)

int64_t GetShapeSize(const std::vector<int64_t>& shape) {
  int64_t shapeSize = 1;
  for (auto i : shape) shapeSize *= i;
  return shapeSize;
}

int Init(int32_t deviceId, aclrtContext* context, aclrtStream* stream) {
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateContext(context, deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateContext failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetCurrentContext(*context);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetCurrentContext failed. ERROR: %d\n", ret); return ret);
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
  aclrtContext context;
  aclrtStream stream;
  auto ret = Init(deviceId, &context, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  std::vector<int64_t> shape = {4, 8};
  std::vector<float> hostIn(GetShapeSize(shape));
  for (size_t i = 0; i < hostIn.size(); ++i) hostIn[i] = static_cast<float>(i);
  void* inDeviceAddr = nullptr;
  void* outDeviceAddr = nullptr;
  aclTensor* in = nullptr;
  aclTensor* out = nullptr;
  ret = CreateAclTensor(hostIn, shape, &inDeviceAddr, aclDataType::ACL_FLOAT, &in);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  std::vector<float> hostOut(hostIn.size(), 0.0f);
  ret = CreateAclTensor(hostOut, shape, &outDeviceAddr, aclDataType::ACL_FLOAT, &out);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // (an operator's two-phase call goes here: aclnnXxxGetWorkspaceSize, aclrtMalloc(workspace), aclnnXxx)
  size_t bytes = hostIn.size() * sizeof(float);
  ret = aclrtMemcpyAsync(outDeviceAddr, bytes, inDeviceAddr, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpyAsync failed. ERROR: %d\n", ret); return ret);

  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

  ret = aclrtMemcpy(hostOut.data(), bytes, outDeviceAddr, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  for (size_t i = 0; i < 4; i++) LOG_PRINT("result[%zu] is: %f\n", i, hostOut[i]);
  if (hostOut != hostIn) {
    LOG_PRINT("mismatch\n");
    return 1;
  }

  aclDestroyTensor(in);
  aclDestroyTensor(out);
  aclrtFree(inDeviceAddr);
  aclrtFree(outDeviceAddr);
  aclrtDestroyStream(stream);
  aclrtDestroyContext(context);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return 0;
}
