// MLAOPS_PROFILE=1: the MLA operators print the time of each phase of a call, and of the sub-steps
// of their parallel head step summed over threads, to stderr (docs/performance.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>

namespace mlaops {

using ProfileClock = std::chrono::steady_clock;

// Whether MLAOPS_PROFILE is set (read once per process).
inline bool profile_enabled() {
  static const bool on = std::getenv("MLAOPS_PROFILE") != nullptr;
  return on;
}

// Adds the nanoseconds since t to counter ns[i] and restarts t; nothing when ns is null (the call
// is not profiled).
inline void profile_lap(std::atomic<int64_t>* ns, int i, ProfileClock::time_point& t) {
  if (ns == nullptr) return;
  const auto now = ProfileClock::now();
  ns[i].fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(now - t).count(), std::memory_order_relaxed);
  t = now;
}

}  // namespace mlaops
