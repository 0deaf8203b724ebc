// The ACL runtime on the CPU (acl_rt.h, acl_base.h): init/finalize, device and context,
// memory and copies, data-type sizes, the recent-error message.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "acl/acl.h"
#include "api/runtime/objects.h"
#include "api/runtime/runtime.h"
#include "api/runtime/stream.h"
#include "core/error.h"
#include "core/log.h"
#include "mlaops/dtype.h"
#include "mlaops/numeric.h"

namespace {


std::mutex g_mu;
bool g_initialized = false;

enum class MemKind { kDevice, kHost };
struct Alloc {
  size_t size;  // asked for
  MemKind kind;
  uint64_t id;  // api/runtime/runtime.h
};
// The live allocations by first byte (ordered: the executor looks up the one containing an
// address, api/runtime/runtime.h).
std::map<uintptr_t, Alloc>& allocations() {
  static auto* m = new std::map<uintptr_t, Alloc>();
  return *m;
}
uint64_t g_next_allocation = 1;  // under g_mu

thread_local int32_t t_device = -1;  // current device of this thread (-1: none)
std::atomic<uintptr_t> g_next_context{1};
std::unordered_map<uintptr_t, int32_t>& contexts() {
  static auto* m = new std::unordered_map<uintptr_t, int32_t>();
  return *m;
}
thread_local uintptr_t t_context = 0;

constexpr size_t kAlign = 64;

// Devices: ids 0 .. count-1 all name the host (docs/c-api.md, "Devices"); the count is
// MLAOPS_DEVICE_COUNT (1 .. 1024), 8 when unset or not a number in that range.
constexpr uint32_t kDefaultDeviceCount = 8;
constexpr uint32_t kMaxDeviceCount = 1024;

uint32_t device_count() {
  const char* s = std::getenv("MLAOPS_DEVICE_COUNT");
  if (s == nullptr || s[0] == '\0') return kDefaultDeviceCount;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (*end != '\0' || v < 1 || v > static_cast<long>(kMaxDeviceCount)) return kDefaultDeviceCount;
  return static_cast<uint32_t>(v);
}

aclError check_device(int32_t id, const char* fn) {
  const uint32_t count = device_count();
  if (id < 0 || static_cast<uint32_t>(id) >= count)
    return MLAOPS_FAIL_CODE(ACL_ERROR_RT_INVALID_DEVICEID,
                            "%s: deviceId: ACL-05 allowed [0, %u) (the device count, MLAOPS_DEVICE_COUNT; every id is the "
                            "host CPU), got %d",
                            fn, count, (int)id);
  return ACL_SUCCESS;
}

aclError alloc(void** p, size_t size, MemKind kind, const char* fn) {
  if (p == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: ACL-04 out-pointer is null", fn);
  if (size == 0) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: size: ACL-08 allowed > 0, got 0", fn);
  if (aclError e = mlaops::api::require_current_device(fn)) return e;
  if (size > SIZE_MAX - kAlign) return MLAOPS_FAIL_CODE(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: ACL-09 size %zu is too large", fn, size);
  const size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  void* mem = std::aligned_alloc(kAlign, rounded);
  if (mem == nullptr)
    return MLAOPS_FAIL_CODE(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: ACL-09 could not allocate %zu bytes", fn, size);
  std::lock_guard<std::mutex> lock(g_mu);
  allocations()[reinterpret_cast<uintptr_t>(mem)] = Alloc{size, kind, g_next_allocation++};
  *p = mem;
  return ACL_SUCCESS;
}

aclError release(void* p, MemKind kind, const char* fn) {
  if (p == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: ACL-04 pointer is null", fn);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = allocations().find(reinterpret_cast<uintptr_t>(p));
    if (it == allocations().end() || it->second.kind != kind)
      return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: ACL-10 pointer %p was not returned by %s (or was freed already)", fn, p,
                       kind == MemKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost");
    allocations().erase(it);
  }
  std::free(p);
  return ACL_SUCCESS;
}

aclError check_copy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind, const char* fn) {
  const int32_t k = mlaops::api::c_enum_value(kind);
  if (k < ACL_MEMCPY_HOST_TO_HOST || k > ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: kind: ACL-11 allowed 0..7 (aclrtMemcpyKind), got %d", fn, (int)k);
  if (count > destMax)
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: count: ACL-12 allowed <= destMax (%zu), got %zu", fn, destMax, count);
  if (count > 0 && (dst == nullptr || src == nullptr))
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: ACL-13 dst and src must be non-null for count %zu", fn, count);
  return ACL_SUCCESS;
}

aclError check_set(void* ptr, size_t maxCount, size_t count, const char* fn) {
  if (count > maxCount)
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: count: ACL-12 allowed <= maxCount (%zu), got %zu", fn, maxCount, count);
  if (count > 0 && ptr == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: ACL-13 devPtr is null for count %zu", fn, count);
  return ACL_SUCCESS;
}

}  // namespace

namespace mlaops::api {

aclError require_current_device(const char* fn) {
  if (t_device >= 0) return ACL_SUCCESS;
  return MLAOPS_FAIL_CODE(ACL_ERROR_RT_CONTEXT_NULL,
                          "%s: ACL-06 the calling thread has no current device; allowed after aclrtSetDevice (or with a "
                          "current context) on this thread, as CANN's runtime requires",
                          fn);
}

bool find_allocation(uintptr_t p, Allocation* out) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = allocations().upper_bound(p);  // the first allocation starting after p
  if (it == allocations().begin()) return false;
  --it;
  if (p - it->first >= it->second.size) return false;  // past its end
  *out = Allocation{it->first, it->second.size, it->second.kind == MemKind::kHost, it->second.id};
  return true;
}

}  // namespace mlaops::api

extern "C" {

aclError aclInit(const char* configPath) {
  if (configPath != nullptr && configPath[0] != '\0') {
    FILE* f = std::fopen(configPath, "rb");
    if (f == nullptr)
      return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_FILE, "aclInit: configPath: ACL-01 cannot open '%s'", configPath);
    std::fclose(f);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_initialized) return MLAOPS_FAIL_CODE(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: ACL-02 already initialized (call aclFinalize first)");
  g_initialized = true;
  mlaops::reload_log_settings();  // CANN reads its log variables when the process starts
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_initialized) return MLAOPS_FAIL_CODE(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: ACL-03 not initialized (aclInit not called, or finalized already)");
    g_initialized = false;
  }
  return aclrtSynchronizeDevice();
}

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  if (!majorVersion || !minorVersion || !patchVersion)
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion: ACL-04 null out-pointer");
  *majorVersion = MLAOPS_VERSION_MAJOR;
  *minorVersion = MLAOPS_VERSION_MINOR;
  *patchVersion = MLAOPS_VERSION_PATCH;
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  if (aclError e = check_device(deviceId, "aclrtSetDevice")) return e;
  t_device = deviceId;
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (aclError e = check_device(deviceId, "aclrtResetDevice")) return e;
  aclError e = aclrtSynchronizeDevice();
  t_device = -1;
  return e;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: ACL-04 deviceId is null");
  if (t_device < 0)
    return MLAOPS_FAIL_CODE(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice: ACL-06 no device is set on this thread (call aclrtSetDevice)");
  *deviceId = t_device;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: ACL-04 count is null");
  *count = device_count();
  return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  if (runMode == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: ACL-04 runMode is null");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  if (context == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: ACL-04 context is null");
  if (aclError e = check_device(deviceId, "aclrtCreateContext")) return e;
  const uintptr_t id = g_next_context.fetch_add(1) * 64 + 0xC000;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    contexts()[id] = deviceId;
  }
  t_context = id;
  t_device = deviceId;
  *context = reinterpret_cast<aclrtContext>(id);
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = contexts().find(reinterpret_cast<uintptr_t>(context));
  if (context == nullptr || it == contexts().end())
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: context: ACL-07 not a live context");
  contexts().erase(it);
  if (t_context == reinterpret_cast<uintptr_t>(context)) t_context = 0;
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = contexts().find(reinterpret_cast<uintptr_t>(context));
  if (context == nullptr || it == contexts().end())
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: context: ACL-07 not a live context");
  t_context = it->first;
  t_device = it->second;
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  if (context == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: ACL-04 context is null");
  if (t_context == 0) return MLAOPS_FAIL_CODE(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext: ACL-06 no current context");
  *context = reinterpret_cast<aclrtContext>(t_context);
  return ACL_SUCCESS;
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy /*policy: accepted, all memory is host memory*/) {
  return alloc(devPtr, size, MemKind::kDevice, "aclrtMalloc");
}
aclError aclrtMallocHost(void** hostPtr, size_t size) { return alloc(hostPtr, size, MemKind::kHost, "aclrtMallocHost"); }
aclError aclrtFree(void* devPtr) { return release(devPtr, MemKind::kDevice, "aclrtFree"); }
aclError aclrtFreeHost(void* hostPtr) { return release(hostPtr, MemKind::kHost, "aclrtFreeHost"); }

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  if (aclError e = check_copy(dst, destMax, src, count, kind, "aclrtMemcpy")) return e;
  if (count > 0) std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  if (aclError e = check_copy(dst, destMax, src, count, kind, "aclrtMemcpyAsync")) return e;
  return mlaops::api::run_on_stream(
      stream,
      [dst, src, count]() {
        if (count > 0) std::memmove(dst, src, count);
        return 0;
      },
      "aclrtMemcpyAsync");
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  if (aclError e = check_set(devPtr, maxCount, count, "aclrtMemset")) return e;
  if (count > 0) std::memset(devPtr, value, count);
  return ACL_SUCCESS;
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  if (aclError e = check_set(devPtr, maxCount, count, "aclrtMemsetAsync")) return e;
  return mlaops::api::run_on_stream(
      stream,
      [devPtr, value, count]() {
        if (count > 0) std::memset(devPtr, value, count);
        return 0;
      },
      "aclrtMemsetAsync");
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: ACL-04 null out-pointer");
  if (static_cast<int>(attr) < ACL_DDR_MEM || static_cast<int>(attr) > ACL_HBM_MEM_P2P_HUGE1G)
    return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: attr: ACL-14 allowed 0..11, got %d", (int)attr);
  const long page = sysconf(_SC_PAGESIZE);
  *free = static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<size_t>(page);
  *total = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(page);
  return ACL_SUCCESS;
}

size_t aclDataTypeSize(aclDataType dataType) {
  return static_cast<size_t>(mlaops::dtype_size(static_cast<mlaops::DType>(mlaops::api::c_enum_value(dataType))));
}

const char* aclGetRecentErrMsg(void) { return mlaops::last_error_message(); }

aclFloat16 aclFloatToFloat16(float value) { return mlaops::float_to_fp16(value); }
float aclFloat16ToFloat(aclFloat16 value) { return mlaops::fp16_to_float(value); }

}  // extern "C"
