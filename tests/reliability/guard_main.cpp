// main() of the guard-page binaries (docs/reliability/guard_and_faults.md): runs the linked
// C-API suites twice, once with every tensor flush against a trailing PROT_NONE page, once flush
// against a leading one (tests/support/guarded_alloc.h); the workspace of each call too. A read or
// write past either end of any tensor or workspace is a SIGSEGV, so the test crashes instead of
// passing. With MLAOPS_GUARD_CPU_TIMES set, each test's CPU time (user + system, every thread;
// getrusage) is printed after it: the figures that size the guard binaries' filters
// (docs/reliability/guard_and_faults.md), which wall times on a shared machine cannot give.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>

#include "tests/support/guarded_alloc.h"
#include "tests/support/guard_heap.h"

namespace {

class GuardModes : public ::testing::EmptyTestEventListener {
 public:
  void OnTestIterationStart(const ::testing::UnitTest&, int iteration) override {
    using mlaops::testing::GuardMode;
    const GuardMode mode = iteration % 2 == 0 ? GuardMode::kTrailing : GuardMode::kLeading;
    mlaops::testing::set_guard_mode(mode);
    std::printf("[ guard    ] tensors flush against the %s guard page\n", mlaops::testing::guard_mode_name(mode));
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    std::printf("[ guard    ] %lld tensors and %lld workspaces placed in guarded regions; %lld tensors left "
                "unread (not inside a heap block: fake addresses, views past their buffer)\n",
                static_cast<long long>(mlaops::testing::guarded_tensor_count()),
                static_cast<long long>(mlaops::testing::guarded_workspace_count()),
                static_cast<long long>(mlaops::testing::unowned_tensor_count()));
  }
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

class CpuTimes : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo&) override { start_ = cpu_seconds(); }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    std::printf("[ cpu      ] %s.%s %.3f s\n", t.test_suite_name(), t.name(), cpu_seconds() - start_);
  }

 private:
  double start_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(repeat, 2);  // the two placements
  ::testing::UnitTest::GetInstance()->listeners().Append(new GuardModes);  // owned by gtest
  if (std::getenv("MLAOPS_GUARD_CPU_TIMES") != nullptr) ::testing::UnitTest::GetInstance()->listeners().Append(new CpuTimes);
  return RUN_ALL_TESTS();
}
