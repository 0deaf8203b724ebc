// The 16 x 16 transpose of flash attention's K packing: every ISA equals the definition.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/cpu/layout/transpose.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

TEST(Transpose16, EveryIsaMatchesTheDefinition) {
  std::mt19937 rng(9);
  std::vector<uint16_t> pool(16 * 40);
  for (auto& x : pool) x = static_cast<uint16_t>(rng());
  for (Isa isa : test_isas()) {
    const Transpose16Fn t = transpose16_kernel(isa);
    for (int trial = 0; trial < 50; ++trial) {
      const uint16_t* src[16];
      for (int k = 0; k < 16; ++k) src[k] = pool.data() + rng() % (pool.size() - 16);  // any address
      std::vector<uint16_t> dst(256 + 8, 0xABCD);
      t(src, dst.data());
      for (int c = 0; c < 16; ++c)
        for (int k = 0; k < 16; ++k) ASSERT_EQ(dst[c * 16 + k], src[k][c]) << "isa " << isa_name(isa);
      for (int i = 256; i < 264; ++i) ASSERT_EQ(dst[i], 0xABCD);  // nothing past the block
    }
  }
}

}  // namespace
}  // namespace mlaops::kernels
