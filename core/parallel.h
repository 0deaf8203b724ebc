// The one internal parallel loop (OpenMP underneath; swap here, nowhere else).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace mlaops {

// A non-owning reference to a callable `void(int64_t begin, int64_t end)`.
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)  // NOLINT(google-explicit-constructor)
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(o))(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

// Splits [0, n) into at most num_threads() contiguous chunks of at least `min_chunk` items and
// runs fn(begin, end) on each, one chunk per thread (static schedule). Runs inline, on the
// calling thread, when one chunk covers everything, when one thread is configured, or when
// called from inside another parallel region. Returns after every chunk is done.
void parallel_for(int64_t n, int64_t min_chunk, RangeFn fn);
// The same with at most `threads` chunks (an operator's plan passes the count it planned for).
void parallel_for(int64_t n, int64_t min_chunk, int threads, RangeFn fn);
// The same with fn(ctx, begin, end, chunk): chunk < threads is the index of the chunk (0 when it
// runs inline), for per-thread buffers planned for `threads`.
void parallel_chunks(int64_t n, int64_t min_chunk, int threads, void (*fn)(void* ctx, int64_t b, int64_t e, int chunk),
                     void* ctx);

// Like parallel_for but hands out the n items one at a time (dynamic schedule) to `threads`
// workers (the plan's count: per-thread buffers are indexed by thread_index < threads);
// fn(item, thread_index).
void parallel_items(int64_t n, int threads, void (*fn)(void* ctx, int64_t item, int thread), void* ctx);

}  // namespace mlaops
