// The guard harness itself (tests/support/guarded_alloc.h), run by the guard-page binary
// guard_harness under both placements: a tensor is copied into a guarded region only when its
// bytes lie inside a heap block the test allocated; a fake address, a view reaching past its
// buffer or a buffer outside the heap is left where it is and never read
// (docs/reliability/guard_and_faults.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/support/guarded_alloc.h"
#include "tests/support/guard_heap.h"

namespace mlaops::testing {
namespace {

bool placed(const TensorView& v, const void* orig) { return v.data != orig; }

TEST(GuardHarness, HeapBlocksAreRecorded) {
  std::vector<float> buf(64);
  EXPECT_TRUE(heap_block_holds(buf.data(), 64 * sizeof(float)));
  EXPECT_TRUE(heap_block_holds(buf.data() + 16, 48 * sizeof(float)));
  EXPECT_FALSE(heap_block_holds(buf.data(), 65 * sizeof(float)));
  EXPECT_FALSE(heap_block_holds(buf.data() + 1, 64 * sizeof(float)));
  EXPECT_FALSE(heap_block_holds(reinterpret_cast<void*>(uintptr_t{1} << 44), 2));
  float on_stack[4] = {};
  EXPECT_FALSE(heap_block_holds(on_stack, sizeof(on_stack)));
  auto block = std::make_unique<char[]>(100);
  const void* p = block.get();
  EXPECT_TRUE(heap_block_holds(p, 100));
  block.reset();
  EXPECT_FALSE(heap_block_holds(p, 100));
}

TEST(GuardHarness, TensorsInsideAHeapBlockAreCopiedAndWrittenBack) {
  ASSERT_NE(guard_mode(), GuardMode::kOff);
  std::vector<float> buf(64);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
  const int64_t before = guarded_tensor_count();
  {
    GuardScope scope;
    TensorView whole = make_view(buf.data(), DType::kFloat32, {64});
    TensorView tail = make_view(buf.data() + 16, DType::kFloat32, {48});  // overlaps: the same region
    guard_views({&whole, &tail});
    ASSERT_TRUE(placed(whole, buf.data()));
    EXPECT_EQ(static_cast<float*>(tail.data), static_cast<float*>(whole.data) + 16);
    EXPECT_EQ(scope.regions(), 1u);
    EXPECT_EQ(guarded_tensor_count() - before, 2);
    EXPECT_EQ(static_cast<float*>(whole.data)[63], 63.0f);
    scope.execute(0);  // phase 2: writable; the scope writes changed bytes back when it ends
    static_cast<float*>(tail.data)[0] = -1.0f;
  }
  EXPECT_EQ(buf[16], -1.0f);
}

TEST(GuardHarness, NothingOutsideAHeapBlockIsRead) {
  ASSERT_NE(guard_mode(), GuardMode::kOff);
  std::vector<float> buf(64);
  float on_stack[4] = {};
  void* fake = reinterpret_cast<void*>(uintptr_t{1} << 44);  // a phase-1-only description's address
  const int64_t placed_before = guarded_tensor_count();
  const int64_t unowned_before = unowned_tensor_count();
  GuardScope scope;
  TensorView past = make_view(buf.data(), DType::kFloat32, {65});  // one element past the block
  TensorView wider = make_view(buf.data(), DType::kFloat64, {64});  // dtype edited: twice the bytes
  TensorView described = make_view(fake, DType::kBFloat16, {1, 17, 7168});
  TensorView stack = make_view(on_stack, DType::kFloat32, {4});
  guard_views({&past});
  guard_views({&wider});
  guard_views({&described});
  guard_views({&stack});
  EXPECT_FALSE(placed(past, buf.data()));
  EXPECT_FALSE(placed(wider, buf.data()));
  EXPECT_FALSE(placed(described, fake));
  EXPECT_FALSE(placed(stack, on_stack));
  EXPECT_EQ(scope.regions(), 0u);
  EXPECT_EQ(guarded_tensor_count(), placed_before);
  EXPECT_EQ(unowned_tensor_count() - unowned_before, 4);
}

}  // namespace
}  // namespace mlaops::testing
