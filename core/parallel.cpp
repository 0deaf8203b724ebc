// The parallel loops run on OpenMP. The tsan preset (MLAOPS_STD_THREADS, docs/reliability/concurrency.md)
// builds them on std::thread instead: libgomp is not built with ThreadSanitizer, so TSan cannot
// see its barriers and reports false races; std::thread create / join are visible to it. Both
// give the same split of the work and the same happens-before edges (fork before, join after).
#include "core/parallel.h"

#if MLAOPS_STD_THREADS
#include <thread>
#include <vector>
#else
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "mlaops/runtime.h"

namespace mlaops {
namespace {

std::atomic<int> g_threads_override{0};

int env_threads() {
  static const int value = [] {
    const char* env = std::getenv("MLAOPS_NUM_THREADS");
    if (env == nullptr) return 0;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || v <= 0 || v > 4096) return 0;
    return static_cast<int>(v);
  }();
  return value;
}

// An exception thrown in a parallel region (std::bad_alloc from a kernel's scratch vector) must not
// leave it (that terminates the process): the first one is kept and rethrown on the calling thread
// once the region is done (core/alloc.h).
class RegionError {
 public:
  template <class F>
  void run(F&& f) {
    try {
      f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

#if MLAOPS_STD_THREADS
thread_local bool t_in_parallel = false;

bool in_parallel() { return t_in_parallel; }
int default_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Runs body(thread_index) on t threads (the caller is thread 0) and returns when all are done.
template <class Body>
void run_team(int t, const Body& body) {
  auto member = [&body](int i) {
    t_in_parallel = true;
    body(i);
    t_in_parallel = false;
  };
  std::vector<std::thread> team;
  team.reserve(static_cast<size_t>(t - 1));
  for (int i = 1; i < t; ++i) {
    try {
      team.emplace_back(member, i);
    } catch (...) {  // no thread to be had: this member's share runs on the caller
      member(i);
    }
  }
  member(0);
  for (std::thread& th : team) th.join();
}
#else
bool in_parallel() { return omp_in_parallel() != 0; }
int default_threads() { return std::max(1, omp_get_max_threads()); }
#endif

}  // namespace

int num_threads() {
  const int o = g_threads_override.load(std::memory_order_relaxed);
  if (o > 0) return o;
  const int e = env_threads();
  if (e > 0) return e;
  return default_threads();
}

void set_num_threads(int n) { g_threads_override.store(n > 0 ? n : 0, std::memory_order_relaxed); }

void parallel_for(int64_t n, int64_t min_chunk, RangeFn fn) { parallel_for(n, min_chunk, num_threads(), fn); }

void parallel_for(int64_t n, int64_t min_chunk, int threads, RangeFn fn) {
  parallel_chunks(n, min_chunk, threads, [](void* f, int64_t b, int64_t e, int) { (*static_cast<RangeFn*>(f))(b, e); },
                  &fn);
}

void parallel_chunks(int64_t n, int64_t min_chunk, int threads, void (*fn)(void* ctx, int64_t b, int64_t e, int chunk),
                     void* ctx) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  int64_t chunks = std::min<int64_t>(std::max(1, threads), (n + min_chunk - 1) / min_chunk);
  if (chunks <= 1 || in_parallel()) {
    fn(ctx, 0, n, 0);
    return;
  }
  const int t = static_cast<int>(chunks);
  RegionError error;
#if MLAOPS_STD_THREADS
  run_team(t, [&](int i) {
    const int64_t b = n * i / t;
    const int64_t e = n * (i + 1) / t;
    if (b < e) error.run([&] { fn(ctx, b, e, i); });
  });
#else
#pragma omp parallel num_threads(t)
  {
    const int i = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t b = n * i / nt;
    const int64_t e = n * (i + 1) / nt;
    if (b < e) error.run([&] { fn(ctx, b, e, i); });
  }
#endif
  error.rethrow();
}

void parallel_items(int64_t n, int threads, void (*fn)(void*, int64_t, int), void* ctx) {
  if (n <= 0) return;
  const int t = static_cast<int>(std::min<int64_t>(std::max(1, threads), n));
  if (t <= 1 || in_parallel()) {
    for (int64_t i = 0; i < n; ++i) fn(ctx, i, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  RegionError error;
#if MLAOPS_STD_THREADS
  run_team(t, [&](int tid) {
    error.run([&] {
      for (int64_t i = next.fetch_add(1); i < n && !error.failed(); i = next.fetch_add(1)) fn(ctx, i, tid);
    });
  });
#else
#pragma omp parallel num_threads(t)
  {
    const int tid = omp_get_thread_num();
    error.run([&] {
      for (int64_t i = next.fetch_add(1); i < n && !error.failed(); i = next.fetch_add(1)) fn(ctx, i, tid);
    });
  }
#endif
  error.rethrow();
}

}  // namespace mlaops
