// main() of the guard-page binaries (docs/reliability/guard_and_faults.md): runs the linked
// C-API suites twice, once with every tensor flush against a trailing PROT_NONE page, once flush
// against a leading one (tests/support/guarded_alloc.h); the workspace of each call too. A read or
// write past either end of any tensor or workspace is a SIGSEGV, so the test crashes instead of
// passing.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/guarded_alloc.h"

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
    std::printf("[ guard    ] %lld tensors and %lld workspaces placed in guarded regions\n",
                static_cast<long long>(mlaops::testing::guarded_tensor_count()),
                static_cast<long long>(mlaops::testing::guarded_workspace_count()));
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(repeat, 2);  // the two placements
  ::testing::UnitTest::GetInstance()->listeners().Append(new GuardModes);  // owned by gtest
  return RUN_ALL_TESTS();
}
