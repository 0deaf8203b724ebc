// The ACL runtime on the CPU: init/finalize, devices, contexts, memory, copies, streams.
#include <gtest/gtest.h>

#include <cstdlib>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"

#if defined(__SANITIZE_ADDRESS__)
#define MLAOPS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MLAOPS_TEST_ASAN 1
#endif
#endif
#ifdef MLAOPS_TEST_ASAN
// AclRuntimeRules.MemoryRules asks aclrtMalloc for 2^64 - 64 bytes: the allocator must return null
// (ACL-09 "could not allocate") rather than end the process.
extern "C" __attribute__((visibility("default"))) const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}
#endif

namespace {

std::string msg() { return aclGetRecentErrMsg(); }

// A rejected runtime call (docs/c-api.md, "Rules"): its status, and a message naming the function
// and the check site's words, which start with the rule id.
void expect_rule(aclError got, aclError code, const char* fn, const char* site) {
  EXPECT_EQ(got, code) << site;
  EXPECT_NE(msg().find(fn), std::string::npos) << site << ": " << msg();
  EXPECT_NE(msg().find(site), std::string::npos) << site << ": " << msg();
}

// Memory and streams need a current device on the calling thread (ACL-06), as in CANN.
void use_device() { ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS); }

TEST(AclRuntime, InitFinalizeCodes) {
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_NE(msg().find("aclFinalize"), std::string::npos);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_NE(msg().find("aclInit"), std::string::npos);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_EQ(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(msg().find("/nonexistent/acl.json"), std::string::npos);
  EXPECT_EQ(aclInit(""), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  int32_t a, b, c;
  EXPECT_EQ(aclrtGetVersion(&a, &b, &c), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetVersion(nullptr, &b, &c), ACL_ERROR_INVALID_PARAM);
}

TEST(AclRuntime, DevicesAndContexts) {
  int32_t dev = 7;
  std::thread([&] { EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL); }).join();
  EXPECT_EQ(aclrtSetDevice(8), ACL_ERROR_RT_INVALID_DEVICEID);  // default count 8
  EXPECT_NE(msg().find("deviceId: ACL-05 allowed [0, 8)"), std::string::npos);
  EXPECT_EQ(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
  ASSERT_EQ(aclrtSetDevice(5), ACL_SUCCESS);  // any id below the count is the host
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 5);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
  uint32_t count = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 8u);
  EXPECT_EQ(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM);
  aclrtRunMode mode;
  EXPECT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_HOST);
  EXPECT_EQ(aclrtGetRunMode(nullptr), ACL_ERROR_INVALID_PARAM);

  aclrtContext ctx = nullptr, cur = nullptr;
  EXPECT_EQ(aclrtCreateContext(&ctx, 8), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetCurrentContext(ctx), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, ctx);
  EXPECT_EQ(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(ctx), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSetCurrentContext(ctx), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtResetDevice(8), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
}

TEST(AclRuntime, MallocFreeAligned) {
  use_device();
  void* p = nullptr;
  for (auto policy : {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY,
                      ACL_MEM_MALLOC_HUGE_FIRST_P2P, ACL_MEM_TYPE_HIGH_BAND_WIDTH}) {
    ASSERT_EQ(aclrtMalloc(&p, 100, policy), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 1, 100);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(msg().find("size"), std::string::npos);
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  int local = 0;
  EXPECT_EQ(aclrtFree(&local), ACL_ERROR_INVALID_PARAM);  // never from aclrtMalloc: error, not UB
  ASSERT_EQ(aclrtMalloc(&p, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(p), ACL_ERROR_INVALID_PARAM);   // wrong kind
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM);       // double free detected
  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 33), ACL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(h) % 64, 0u);
  EXPECT_EQ(aclrtFree(h), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtMallocHost(nullptr, 4), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMallocHost(&h, 0), ACL_ERROR_INVALID_PARAM);
  size_t free_b = 0, total_b = 0;
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b), ACL_SUCCESS);
  EXPECT_GT(total_b, 0u);
  EXPECT_LE(free_b, total_b);
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &total_b), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(99), &free_b, &total_b), ACL_ERROR_INVALID_PARAM);
}

TEST(AclRuntime, MemcpyEveryKindAndErrors) {
  std::vector<char> src(64), dst(64, 0);
  for (int i = 0; i < 64; ++i) src[i] = static_cast<char>(i);
  for (int kind = ACL_MEMCPY_HOST_TO_HOST; kind <= ACL_MEMCPY_INTER_DEVICE_TO_DEVICE; ++kind) {
    std::fill(dst.begin(), dst.end(), 0);
    ASSERT_EQ(aclrtMemcpy(dst.data(), 64, src.data(), 64, static_cast<aclrtMemcpyKind>(kind)), ACL_SUCCESS) << kind;
    EXPECT_EQ(dst, src);
  }
  std::fill(dst.begin(), dst.end(), 0);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 16, src.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(msg().find("destMax"), std::string::npos);
  EXPECT_EQ(dst[0], 0);  // nothing written on error
  EXPECT_EQ(aclrtMemcpy(nullptr, 16, src.data(), 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 16, nullptr, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 16, src.data(), 8, static_cast<aclrtMemcpyKind>(9)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 16, src.data(), 0, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  // overlapping copies behave as memmove
  ASSERT_EQ(aclrtMemcpy(src.data() + 1, 63, src.data(), 8, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(src[1], 0);
  EXPECT_EQ(src[8], 7);

  EXPECT_EQ(aclrtMemset(dst.data(), 64, 0x5a, 64), ACL_SUCCESS);
  EXPECT_EQ(static_cast<unsigned char>(dst[63]), 0x5a);
  EXPECT_EQ(aclrtMemset(dst.data(), 8, 0, 9), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(static_cast<unsigned char>(dst[0]), 0x5a);
  EXPECT_EQ(aclrtMemset(nullptr, 8, 0, 8), ACL_ERROR_INVALID_PARAM);
}

TEST(AclRuntime, StreamsRunInOrderAsynchronously) {
  use_device();
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
  std::vector<char> a(1 << 20, 1), b(1 << 20, 0), c(1 << 20, 0);
  // a -> b -> c in order: c ends up equal to a only if the queue keeps order
  ASSERT_EQ(aclrtMemcpyAsync(b.data(), b.size(), a.data(), a.size(), ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(a.data(), a.size(), 2, a.size(), s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(c.data(), c.size(), b.data(), b.size(), ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(c[12345], 1);
  EXPECT_EQ(a[12345], 2);
  // argument errors are reported by the enqueueing call, nothing queued
  EXPECT_EQ(aclrtMemcpyAsync(b.data(), 4, a.data(), 8, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemsetAsync(nullptr, 4, 0, 4, s), ACL_ERROR_INVALID_PARAM);
  // the null stream runs synchronously
  ASSERT_EQ(aclrtMemsetAsync(a.data(), a.size(), 3, a.size(), nullptr), ACL_SUCCESS);
  EXPECT_EQ(a[0], 3);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  // a destroyed stream is an error code, not a use-after-free
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemsetAsync(a.data(), 4, 0, 4, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeStream(reinterpret_cast<aclrtStream>(0x1234)), ACL_ERROR_INVALID_PARAM);
}

TEST(AclRuntime, DestroyStreamDrainsQueuedWork) {
  use_device();
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  std::vector<char> a(1 << 22, 0);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(aclrtMemsetAsync(a.data(), a.size(), i + 1, a.size(), s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(a.back(), 8);
}

TEST(AclRuntime, DataTypeSizesAndHalf) {
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT32), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_UINT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E4M3FN), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT4), 0u);
  EXPECT_EQ(aclDataTypeSize(ACL_STRING), 0u);
  EXPECT_EQ(aclDataTypeSize(ACL_DT_UNDEFINED), 0u);
  EXPECT_EQ(aclDataTypeSize(static_cast<aclDataType>(5)), 0u);
  EXPECT_EQ(aclFloatToFloat16(1.0f), 0x3c00);
  EXPECT_EQ(aclFloat16ToFloat(0xc000), -2.0f);
}

TEST(AclRuntime, DeviceCountFromTheEnvironment) {
  uint32_t count = 0;
  setenv("MLAOPS_DEVICE_COUNT", "16", 1);
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 16u);
  EXPECT_EQ(aclrtSetDevice(15), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetDevice(16), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_NE(msg().find("ACL-05 allowed [0, 16)"), std::string::npos) << msg();
  for (const char* bad : {"0", "-3", "abc", "2000", ""}) {  // not 1..1024: the default 8
    setenv("MLAOPS_DEVICE_COUNT", bad, 1);
    EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
    EXPECT_EQ(count, 8u) << bad;
  }
  setenv("MLAOPS_DEVICE_COUNT", "1", 1);
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
  unsetenv("MLAOPS_DEVICE_COUNT");
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
}

TEST(AclRuntime, ErrorMessagesAreThreadLocal) {
  EXPECT_EQ(aclrtSetDevice(9), ACL_ERROR_RT_INVALID_DEVICEID);
  const std::string mine = msg();
  std::string other;
  std::thread([&] {
    other = aclGetRecentErrMsg();  // nothing failed on this thread yet
    void* p;
    EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_EQ(msg(), mine);
  EXPECT_NE(mine.find("aclrtSetDevice: deviceId: ACL-05 allowed [0, 8)"), std::string::npos);
  EXPECT_NE(mine.find("got 9"), std::string::npos);
}

// The rules of the runtime calls (ACL-01 .. ACL-16, docs/c-api.md "Rules"), each check site by
// the words of its message; out-values and buffers stay untouched.
TEST(AclRuntimeRules, InitAndFinalize) {
  (void)aclFinalize();  // from here on not initialized, whatever ran before in this process
  expect_rule(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "ACL-03 not initialized");
  expect_rule(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE, "aclInit", "configPath: ACL-01 cannot open '");
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  expect_rule(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "ACL-02 already initialized");
  expect_rule(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE, "aclInit", "ACL-01 cannot open");
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  expect_rule(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "ACL-03 not initialized");
}

TEST(AclRuntimeRules, NullPointerArguments) {
  int32_t a = -5, b = -5, c = -5;
  expect_rule(aclrtGetVersion(nullptr, &b, &c), ACL_ERROR_INVALID_PARAM, "aclrtGetVersion", "ACL-04 null out-pointer");
  expect_rule(aclrtGetVersion(&a, &b, nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetVersion", "ACL-04 null out-pointer");
  EXPECT_EQ(a, -5);
  EXPECT_EQ(b, -5);
  expect_rule(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "ACL-04 deviceId is null");
  expect_rule(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "ACL-04 count is null");
  expect_rule(aclrtGetRunMode(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "ACL-04 runMode is null");
  expect_rule(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM, "aclrtCreateContext", "ACL-04 context is null");
  expect_rule(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext", "ACL-04 context is null");
  size_t free_b = 7, total_b = 7;
  expect_rule(aclrtGetMemInfo(ACL_DDR_MEM, nullptr, &total_b), ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo",
              "ACL-04 null out-pointer");
  expect_rule(aclrtGetMemInfo(ACL_DDR_MEM, &free_b, nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo",
              "ACL-04 null out-pointer");
  EXPECT_EQ(free_b, 7u);
  EXPECT_EQ(total_b, 7u);
  expect_rule(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMalloc",
              "ACL-04 out-pointer is null");
  expect_rule(aclrtMallocHost(nullptr, 16), ACL_ERROR_INVALID_PARAM, "aclrtMallocHost", "ACL-04 out-pointer is null");
  expect_rule(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtFree", "ACL-04 pointer is null");
  expect_rule(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtFreeHost", "ACL-04 pointer is null");
  expect_rule(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream: ACL-04 out-pointer is null");
  expect_rule(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream", "ACL-04 stream is null");
}

TEST(AclRuntimeRules, DevicesAndContexts) {
  expect_rule(aclrtSetDevice(8), ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice", "deviceId: ACL-05 allowed [0, 8)");
  expect_rule(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice", "ACL-05 allowed [0, 8)");
  expect_rule(aclrtResetDevice(8), ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice", "ACL-05 allowed [0, 8)");
  aclrtContext ctx = reinterpret_cast<aclrtContext>(0x77);
  expect_rule(aclrtCreateContext(&ctx, 99), ACL_ERROR_RT_INVALID_DEVICEID, "aclrtCreateContext", "ACL-05 allowed [0, 8)");
  EXPECT_EQ(ctx, reinterpret_cast<aclrtContext>(0x77));
  std::thread([] {  // a new thread has no device and no context
    int32_t dev = 3;
    expect_rule(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice", "ACL-06 no device is set");
    EXPECT_EQ(dev, 3);
    aclrtContext cur = reinterpret_cast<aclrtContext>(0x88);
    expect_rule(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext",
                "ACL-06 no current context");
    EXPECT_EQ(cur, reinterpret_cast<aclrtContext>(0x88));
  }).join();
  std::thread([] {
    aclrtContext c = nullptr;
    ASSERT_EQ(aclrtCreateContext(&c, 1), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyContext(c), ACL_SUCCESS);
    expect_rule(aclrtDestroyContext(c), ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext", "context: ACL-07 not a live context");
    expect_rule(aclrtSetCurrentContext(c), ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext", "ACL-07 not a live context");
    expect_rule(aclrtDestroyContext(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext", "ACL-07 not a live context");
    expect_rule(aclrtSetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext",
                "ACL-07 not a live context");
    aclrtContext cur = reinterpret_cast<aclrtContext>(0x99);
    expect_rule(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext",
                "ACL-06 no current context");  // the failed SetCurrentContext left none current
    EXPECT_EQ(cur, reinterpret_cast<aclrtContext>(0x99));
  }).join();
}

TEST(AclRuntimeRules, MemoryRules) {
  use_device();
  void* const sentinel = reinterpret_cast<void*>(0x40);
  void* p = sentinel;
  expect_rule(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMalloc", "size: ACL-08 allowed > 0, got 0");
  expect_rule(aclrtMallocHost(&p, 0), ACL_ERROR_INVALID_PARAM, "aclrtMallocHost", "ACL-08 allowed > 0, got 0");
  expect_rule(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMalloc", "ACL-09 size");
  EXPECT_NE(msg().find("is too large"), std::string::npos) << msg();
  expect_rule(aclrtMalloc(&p, SIZE_MAX - 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMalloc",
              "ACL-09 could not allocate");
  expect_rule(aclrtMallocHost(&p, SIZE_MAX - 64), ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocHost",
              "ACL-09 could not allocate");
  EXPECT_EQ(p, sentinel);
  int local = 0;
  expect_rule(aclrtFree(&local), ACL_ERROR_INVALID_PARAM, "aclrtFree", "ACL-10 pointer");
  EXPECT_NE(msg().find("was not returned by aclrtMalloc"), std::string::npos) << msg();
  ASSERT_EQ(aclrtMalloc(&p, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  expect_rule(aclrtFreeHost(p), ACL_ERROR_INVALID_PARAM, "aclrtFreeHost", "ACL-10 pointer");  // wrong kind
  EXPECT_NE(msg().find("was not returned by aclrtMallocHost"), std::string::npos) << msg();
  ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
  expect_rule(aclrtFree(p), ACL_ERROR_INVALID_PARAM, "aclrtFree", "ACL-10 pointer");  // double free
  size_t free_b = 7, total_b = 7;
  expect_rule(aclrtGetMemInfo(static_cast<aclrtMemAttr>(12), &free_b, &total_b), ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo",
              "attr: ACL-14 allowed 0..11, got 12");
  expect_rule(aclrtGetMemInfo(static_cast<aclrtMemAttr>(-1), &free_b, &total_b), ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo",
              "ACL-14 allowed 0..11, got -1");
  EXPECT_EQ(free_b, 7u);
  EXPECT_EQ(total_b, 7u);
}

TEST(AclRuntimeRules, CopyAndSetRules) {
  use_device();
  std::vector<char> src(64, 9), dst(64, 0);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  expect_rule(aclrtMemcpy(dst.data(), 64, src.data(), 8, static_cast<aclrtMemcpyKind>(8)), ACL_ERROR_INVALID_PARAM,
              "aclrtMemcpy", "kind: ACL-11 allowed 0..7");
  expect_rule(aclrtMemcpy(dst.data(), 64, src.data(), 8, static_cast<aclrtMemcpyKind>(-1)), ACL_ERROR_INVALID_PARAM,
              "aclrtMemcpy", "ACL-11 allowed 0..7");
  expect_rule(aclrtMemcpyAsync(dst.data(), 64, src.data(), 8, static_cast<aclrtMemcpyKind>(8), s), ACL_ERROR_INVALID_PARAM,
              "aclrtMemcpyAsync", "ACL-11 allowed 0..7");
  expect_rule(aclrtMemcpy(dst.data(), 16, src.data(), 17, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
              "aclrtMemcpy", "count: ACL-12 allowed <= destMax (16), got 17");
  expect_rule(aclrtMemcpyAsync(dst.data(), 16, src.data(), 17, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM,
              "aclrtMemcpyAsync", "ACL-12 allowed <= destMax");
  expect_rule(aclrtMemset(dst.data(), 8, 1, 9), ACL_ERROR_INVALID_PARAM, "aclrtMemset",
              "count: ACL-12 allowed <= maxCount (8), got 9");
  expect_rule(aclrtMemsetAsync(dst.data(), 8, 1, 9, s), ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync",
              "ACL-12 allowed <= maxCount");
  expect_rule(aclrtMemcpy(nullptr, 16, src.data(), 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "aclrtMemcpy",
              "ACL-13 dst and src must be non-null");
  expect_rule(aclrtMemcpy(dst.data(), 16, nullptr, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "aclrtMemcpy",
              "ACL-13 dst and src must be non-null for count 8");
  expect_rule(aclrtMemcpyAsync(dst.data(), 16, nullptr, 8, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM,
              "aclrtMemcpyAsync", "ACL-13 dst and src must be non-null");
  expect_rule(aclrtMemset(nullptr, 8, 0, 8), ACL_ERROR_INVALID_PARAM, "aclrtMemset", "ACL-13 devPtr is null for count 8");
  expect_rule(aclrtMemsetAsync(nullptr, 8, 0, 8, s), ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync", "ACL-13 devPtr is null");
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // nothing was queued
  for (char v : dst) ASSERT_EQ(v, 0);
}

TEST(AclRuntimeRules, DeadStreams) {
  use_device();
  std::vector<char> dst(16, 0), src(16, 5);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  expect_rule(aclrtMemsetAsync(dst.data(), 16, 1, 16, s), ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync",
              "stream: ACL-15 not a live stream (destroyed, or never created)");
  expect_rule(aclrtMemcpyAsync(dst.data(), 16, src.data(), 16, ACL_MEMCPY_HOST_TO_HOST, s), ACL_ERROR_INVALID_PARAM,
              "aclrtMemcpyAsync", "ACL-15 not a live stream (destroyed");
  for (char v : dst) ASSERT_EQ(v, 0);
  expect_rule(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream", "stream: ACL-15 not a live stream");
  expect_rule(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream", "ACL-15 not a live stream");
  expect_rule(aclrtSynchronizeStream(reinterpret_cast<aclrtStream>(0x1234)), ACL_ERROR_INVALID_PARAM,
              "aclrtSynchronizeStream", "ACL-15 not a live stream");
}

// What needs a current device, as in CANN (docs/c-api.md, "Runtime"): aclrtMalloc, aclrtMallocHost
// and aclrtCreateStream on a thread with no device fail with ACL_ERROR_RT_CONTEXT_NULL (ACL-06)
// and write nothing; aclrtSetDevice (or a context) makes them work, aclrtResetDevice ends that.
// aclrtSetDevice itself, the copies, the object API and the operators need no aclInit.
TEST(AclRuntimeRules, MemoryAndStreamsNeedACurrentDevice) {
  std::thread([] {
    void* const sentinel = reinterpret_cast<void*>(0x40);
    void* p = sentinel;
    const char* site = "ACL-06 the calling thread has no current device";
    expect_rule(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL, "aclrtMalloc", site);
    EXPECT_EQ(p, sentinel);
    expect_rule(aclrtMallocHost(&p, 64), ACL_ERROR_RT_CONTEXT_NULL, "aclrtMallocHost", site);
    EXPECT_EQ(p, sentinel);
    aclrtStream s = reinterpret_cast<aclrtStream>(0x50);
    expect_rule(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL, "aclrtCreateStream", site);
    EXPECT_EQ(s, reinterpret_cast<aclrtStream>(0x50));
    // the argument checks come first, as in CANN
    expect_rule(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMalloc", "ACL-08");
    // copies need none (CANN's documentation states no code for them)
    char a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {};
    EXPECT_EQ(aclrtMemcpy(b, 8, a, 8, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);  // no aclInit in this process: accepted, as CANN's
    ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    ASSERT_EQ(aclrtResetDevice(2), ACL_SUCCESS);  // no current device again
    void* q = sentinel;
    expect_rule(aclrtMalloc(&q, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL, "aclrtMalloc", site);
    EXPECT_EQ(q, sentinel);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);  // freeing needs no device
  }).join();
  std::thread([] {  // a context makes its device current
    aclrtContext c = nullptr;
    ASSERT_EQ(aclrtCreateContext(&c, 1), ACL_SUCCESS);
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyContext(c), ACL_SUCCESS);
  }).join();
}

// aclInit / aclFinalize around streams and memory: a stream made before aclFinalize stays live
// after it (CANN's aclFinalize releases neither streams nor devices); aclInit twice is
// ACL_ERROR_REPEAT_INITIALIZE, aclFinalize twice ACL_ERROR_REPEAT_FINALIZE.
TEST(AclRuntimeRules, StreamsAndMemoryAcrossFinalize) {
  use_device();
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  expect_rule(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "ACL-02 already initialized");
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  expect_rule(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "ACL-03 not initialized");
  EXPECT_EQ(aclrtMemsetAsync(p, 64, 7, 64, s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(static_cast<unsigned char*>(p)[63], 7);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
}

}  // namespace
