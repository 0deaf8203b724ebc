// Streams (acl_rt.h): aclrtCreateStream / aclrtDestroyStream / aclrtSynchronizeStream /
// aclrtSynchronizeDevice. Handles are never-reused ids, so a destroyed stream is an error code.
#include <atomic>
#include <cstdint>
#include <map>
#include <vector>

#include "acl/acl_rt.h"
#include "api/runtime/runtime.h"
#include "api/runtime/stream.h"
#include "core/error.h"

namespace mlaops::api {
namespace {

std::mutex g_mu;
std::map<uintptr_t, std::shared_ptr<Stream>>& streams() {
  static auto* m = new std::map<uintptr_t, std::shared_ptr<Stream>>();
  return *m;
}
std::atomic<uintptr_t> g_next_id{1};

uintptr_t key(aclrtStream h) { return reinterpret_cast<uintptr_t>(h); }

}  // namespace

Stream::Stream() : worker_([this] { loop(); }) {}

Stream::~Stream() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
    stop_ = true;
  }
  has_work_.notify_all();
  worker_.join();
}

void Stream::enqueue(Work work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  has_work_.notify_one();
}

int Stream::synchronize(std::string* message) {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  const int code = first_error_;
  if (message) *message = first_message_;
  first_error_ = 0;
  first_message_.clear();
  return code;
}

void Stream::loop() {
  for (;;) {
    Work work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      has_work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      work = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    clear_last_error();
    int code = 0;
    try {
      code = work();
    } catch (...) {
      code = ACL_ERROR_INTERNAL_ERROR;
      set_last_error("stream work threw an exception");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (code != 0 && first_error_ == 0) {
        first_error_ = code;
        first_message_ = last_error_string();
      }
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }
}

std::shared_ptr<Stream> find_stream(aclrtStream handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = streams().find(key(handle));
  return it == streams().end() ? nullptr : it->second;
}

int run_on_stream(aclrtStream stream, Work work, const char* fn) {
  if (stream == nullptr) return work();
  auto s = find_stream(stream);
  if (!s) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "%s: stream: ACL-15 not a live stream (destroyed, or never created)", fn);
  s->enqueue(std::move(work));
  return 0;
}

}  // namespace mlaops::api

using mlaops::api::Stream;

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream: ACL-04 out-pointer is null");
  if (aclError e = mlaops::api::require_current_device("aclrtCreateStream")) return e;  // *stream untouched
  std::shared_ptr<Stream> s;
  try {
    s = std::make_shared<Stream>();
  } catch (...) {
    return MLAOPS_FAIL_CODE(ACL_ERROR_RT_NO_STREAM_RESOURCE, "aclrtCreateStream: ACL-16 could not start the stream worker");
  }
  const uintptr_t id = mlaops::api::g_next_id.fetch_add(1) * 64 + 0x5000;  // never 0, never reused
  {
    std::lock_guard<std::mutex> lock(mlaops::api::g_mu);
    mlaops::api::streams()[id] = std::move(s);
  }
  *stream = reinterpret_cast<aclrtStream>(id);
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  if (stream == nullptr) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: ACL-04 stream is null");
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(mlaops::api::g_mu);
    auto it = mlaops::api::streams().find(mlaops::api::key(stream));
    if (it == mlaops::api::streams().end())
      return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: stream: ACL-15 not a live stream");
    s = std::move(it->second);
    mlaops::api::streams().erase(it);
  }
  s.reset();  // the last reference drains and joins (queued work still runs)
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  if (stream == nullptr) return ACL_SUCCESS;  // the null (synchronous) stream has nothing pending
  auto s = mlaops::api::find_stream(stream);
  if (!s) return MLAOPS_FAIL_CODE(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: stream: ACL-15 not a live stream");
  std::string msg;
  const int code = s->synchronize(&msg);
  if (code != 0) mlaops::set_last_error(msg);
  return code;
}

aclError aclrtSynchronizeDevice(void) {
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard<std::mutex> lock(mlaops::api::g_mu);
    for (auto& kv : mlaops::api::streams()) all.push_back(kv.second);
  }
  int first = 0;
  std::string first_msg;
  for (auto& s : all) {
    std::string msg;
    const int code = s->synchronize(&msg);
    if (code != 0 && first == 0) {
      first = code;
      first_msg = msg;
    }
  }
  if (first != 0) mlaops::set_last_error(first_msg);
  return first;
}

}  // extern "C"
