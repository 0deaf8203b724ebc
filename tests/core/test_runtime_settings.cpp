// CPU features, the active ISA (MLAOPS_ISA / set_isa) and the thread settings and parallel_for.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

#include "core/parallel.h"
#include "mlaops/runtime.h"
#include "tests/support/isa_list.h"

namespace mlaops {
namespace {

TEST(CpuFeatures, DetectedIsaIsConsistent) {
  const CpuFeatures& f = cpu_features();
  const Isa d = detected_isa();
  if (d == Isa::kAvx512) { EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx2); }
  if (d >= Isa::kAvx2) { EXPECT_TRUE(f.avx2 && f.fma && f.f16c); }
  if (f.avx512_bf16 || f.avx512_vnni) { EXPECT_TRUE(f.avx512f); }
  EXPECT_LE(static_cast<int>(active_isa()), static_cast<int>(d));
}

TEST(CpuFeatures, ForceAndResetIsa) {
  const std::vector<Isa> isas = test_isas();  // scalar .. detected, each once
  ASSERT_EQ(isas.size(), static_cast<size_t>(detected_isa()) + 1);
  for (size_t i = 0; i < isas.size(); ++i) {
    EXPECT_EQ(isas[i], static_cast<Isa>(i));
    EXPECT_TRUE(set_isa(isas[i]));
    EXPECT_EQ(active_isa(), isas[i]);
  }
  for (int above = static_cast<int>(detected_isa()) + 1; above <= static_cast<int>(Isa::kAvx512); ++above)
    EXPECT_FALSE(set_isa(static_cast<Isa>(above)));
  EXPECT_FALSE(set_isa(static_cast<Isa>(7)));
  reset_isa();
  Isa parsed;
  EXPECT_TRUE(parse_isa("avx512", &parsed));
  EXPECT_EQ(parsed, Isa::kAvx512);
  EXPECT_TRUE(parse_isa("scalar", &parsed));
  EXPECT_FALSE(parse_isa("AVX512", &parsed));
  EXPECT_FALSE(parse_isa("sse", &parsed));
  EXPECT_FALSE(parse_isa(nullptr, &parsed));
  EXPECT_STREQ(isa_name(Isa::kAvx2), "avx2");
  EXPECT_NE(version(), nullptr);
}

TEST(Parallel, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (int64_t n : {0, 1, 2, 7, 100, 1001}) {
      for (int64_t min_chunk : {1, 4, 1000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel_for(n, min_chunk, [&](int64_t b, int64_t e) {
          ASSERT_LE(0, b);
          ASSERT_LE(b, e);
          ASSERT_LE(e, n);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << " " << i;
      }
    }
  }
  set_num_threads(0);
}

TEST(Parallel, ThresholdRunsInlineAndThreadsAreUsed) {
  set_num_threads(2);
  EXPECT_EQ(num_threads(), 2);
  std::mutex mu;
  std::set<int> tids;
  int calls = 0;
  parallel_for(10, 100, [&](int64_t, int64_t) {  // below one chunk: inline, one call
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    tids.insert(omp_get_thread_num());
  });
  EXPECT_EQ(calls, 1);
  calls = 0;
  parallel_for(1000, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
  });
  EXPECT_EQ(calls, 2);  // one chunk per thread
  set_num_threads(1);
  calls = 0;
  parallel_for(1000, 1, [&](int64_t b, int64_t e) {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 1000);
  });
  EXPECT_EQ(calls, 1);
  set_num_threads(0);
  EXPECT_GE(num_threads(), 1);
}

TEST(Parallel, NestedCallsRunInline) {
  set_num_threads(2);
  std::atomic<int> inner_calls{0};
  parallel_for(2, 1, [&](int64_t, int64_t) {
    parallel_for(100, 1, [&](int64_t b, int64_t e) {
      EXPECT_EQ(e - b, 100);
      inner_calls++;
    });
  });
  EXPECT_EQ(inner_calls.load(), 2);
  set_num_threads(0);
}

TEST(Parallel, ItemsDynamicSchedule) {
  set_num_threads(2);
  std::vector<std::atomic<int>> hits(50);
  struct Ctx {
    std::vector<std::atomic<int>>* hits;
  } ctx{&hits};
  parallel_items(50, 2, [](void* c, int64_t item, int thread) {
    EXPECT_GE(thread, 0);
    EXPECT_LT(thread, 2);
    (*static_cast<Ctx*>(c)->hits)[static_cast<size_t>(item)]++;
  }, &ctx);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  set_num_threads(0);
}

}  // namespace
}  // namespace mlaops
