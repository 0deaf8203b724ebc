// The CPU stream: an in-order work queue served by one worker thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "acl/acl_base.h"

namespace mlaops::api {

// A unit of queued work returns 0 on success or an error code (aclError or aclnnStatus) after
// setting the thread-local message.
using Work = std::function<int()>;

class Stream {
 public:
  Stream();
  ~Stream();  // drains the queue, then joins the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void enqueue(Work work);
  // Waits until all work enqueued so far has run; returns the first error since the last
  // synchronize (and its message), then clears it.
  int synchronize(std::string* message);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable has_work_;
  std::condition_variable idle_;
  std::deque<Work> queue_;
  bool busy_ = false;
  bool stop_ = false;
  int first_error_ = 0;
  std::string first_message_;
  std::thread worker_;
};

// Looks up a live stream; nullptr for a handle that is not (or no longer) a stream.
std::shared_ptr<Stream> find_stream(aclrtStream handle);

// Runs `work` now on the calling thread (stream == nullptr) or enqueues it. Returns the work's
// code (synchronous), 0 (enqueued), or ACL_ERROR_INVALID_PARAM for a handle that is not a live
// stream (message set, `fn` names the caller).
int run_on_stream(aclrtStream stream, Work work, const char* fn);

}  // namespace mlaops::api
