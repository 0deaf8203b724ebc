// The kernel registry (core/kernel_registry.h) on tables of its own: selection order, host gates,
// the active-level cap, the kernel override (a named row runs above the active level, other
// families keep their choice, set_kernel_override rejects unknown names), use counts; and the
// shape of every family of this build (kernels/cpu/families.cpp).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/kernel_registry.h"
#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/runtime.h"
#include "tests/support/isa_list.h"

namespace mlaops {
namespace {

bool gate_never(const CpuFeatures&) { return false; }

using Table = KernelTable<int>;
const Table::Row kFakeRows[] = {
    {{"fake_avx512_absent", Isa::kAvx512, gate_never, "a feature no CPU has"}, 0},
    {{"fake_avx512", Isa::kAvx512, gate_always, ""}, 1},
    {{"fake_avx2", Isa::kAvx2, gate_always, ""}, 2},
    {{"fake_scalar", Isa::kScalar, gate_always, ""}, 3},
};
const Table::Row kOtherRows[] = {
    {{"other_avx2", Isa::kAvx2, gate_always, ""}, 20},
    {{"other_scalar", Isa::kScalar, gate_always, ""}, 30},
};

class KernelRegistry : public ::testing::Test {
 protected:
  void TearDown() override { set_kernel_override_unchecked(""); }
  const Table fake{"fake", kFakeRows};
  const Table other{"other", kOtherRows};
};

TEST_F(KernelRegistry, PicksTheFirstRowTheHostAndTheLevelAllow) {
  EXPECT_EQ(fake.select(Isa::kAvx512), 1);  // row 0: the host gate fails
  EXPECT_EQ(fake.select(Isa::kAvx2), 2);    // rows 0, 1: above the level
  EXPECT_EQ(fake.select(Isa::kScalar), 3);
  std::string why;
  EXPECT_FALSE(fake.allowed(0, Isa::kAvx512, &why));
  EXPECT_EQ(why, "needs a feature no CPU has");
  EXPECT_FALSE(fake.allowed(1, Isa::kAvx2, &why));
  EXPECT_EQ(why, "above the active level avx2");
  EXPECT_TRUE(fake.allowed(3, Isa::kScalar));
  EXPECT_EQ(fake.find("fake_avx2"), 2);
  EXPECT_EQ(fake.find("fake"), -1);
}

TEST_F(KernelRegistry, OverrideForcesNamedRowsOfTheirFamilyOnly) {
  set_kernel_override_unchecked("fake_avx512, other_nonesuch");
  EXPECT_EQ(fake.select(Isa::kScalar), 1);  // a named row runs above the active level
  EXPECT_EQ(other.select(Isa::kAvx2), 0);   // no row of `other` named: its choice stands
  std::string why;
  EXPECT_FALSE(fake.allowed(2, Isa::kAvx512, &why));
  EXPECT_EQ(why, "not named by the kernel override");

  set_kernel_override_unchecked("fake_scalar,fake_avx2");  // the best named row first
  EXPECT_EQ(fake.select(Isa::kAvx512), 2);
  EXPECT_EQ(kernel_override(), "fake_scalar,fake_avx2");

  set_kernel_override_unchecked("fake_avx512_absent");  // nothing runnable named: the portable row
  EXPECT_EQ(fake.select(Isa::kAvx512), 3);
  EXPECT_FALSE(fake.allowed(0, Isa::kAvx512, &why));
  EXPECT_EQ(why, "needs a feature no CPU has");

  set_kernel_override_unchecked("");
  EXPECT_EQ(fake.select(Isa::kAvx512), 1);
}

TEST_F(KernelRegistry, PickCountsUses) {
  EXPECT_EQ(fake.pick(Isa::kAvx2), 2);
  EXPECT_EQ(fake.pick(Isa::kAvx2), 2);
  EXPECT_EQ(fake.pick(Isa::kScalar), 3);
  EXPECT_EQ(fake.uses(2), 2u);
  EXPECT_EQ(fake.uses(3), 1u);
  EXPECT_EQ(fake.uses(1), 0u);
  EXPECT_EQ(fake.select(Isa::kAvx512), 1);  // select alone counts nothing
  EXPECT_EQ(fake.uses(1), 0u);
}

TEST_F(KernelRegistry, SetKernelOverrideTakesRunnableRowsOfThisBuildOnly) {
  ASSERT_TRUE(set_kernel_override("gemm_bf16_scalar"));
  EXPECT_EQ(kernel_override(), "gemm_bf16_scalar");
  EXPECT_FALSE(set_kernel_override("gemm_nonesuch"));
  EXPECT_FALSE(set_kernel_override("softmax_scalar,fake_scalar"));  // rows of no listed family
  EXPECT_EQ(kernel_override(), "gemm_bf16_scalar");                       // unchanged
  for (const KernelInfo& k : kernel_list())
    if (!k.runnable) {
      EXPECT_FALSE(set_kernel_override(k.name)) << k.name;
    }
  EXPECT_TRUE(set_kernel_override(""));
  EXPECT_EQ(kernel_override(), "");
  EXPECT_TRUE(set_kernel_override(nullptr));
}

uint64_t listed_uses(const char* row) {
  for (const KernelInfo& k : kernel_list())
    if (std::string(k.name) == row) return k.uses;
  ADD_FAILURE() << row << " is not listed";
  return 0;
}

TEST_F(KernelRegistry, KernelListShowsThePicksOfAFamily) {
  const uint64_t before = listed_uses("gemm_bf16_scalar");
  kernels::gemm_pick(kernels::gemm_bf16_family(), Isa::kScalar, {kernels::gemm_layout(16, 16)});
  kernels::gemm_pick(kernels::gemm_bf16_family(), Isa::kScalar, {kernels::gemm_layout(16, 16)});
  EXPECT_EQ(listed_uses("gemm_bf16_scalar"), before + 2);
}

// Every family of this build: 1..16 rows named <family>_<isa>[_<variant>] (names unique across
// families), levels best first, the last row portable (scalar level, runnable anywhere).
TEST(KernelFamilies, RowsAreNamedOrderedAndEndPortable) {
  int n = 0;
  const KernelFamily* const* fams = kernel_families(&n);
  ASSERT_GE(n, 6);
  std::set<std::string> names;
  for (int f = 0; f < n; ++f) {
    const KernelFamily& fam = *fams[f];
    SCOPED_TRACE(fam.name());
    ASSERT_GE(fam.size(), 1);
    for (int i = 0; i < fam.size(); ++i) {
      const KernelRowInfo& r = fam.info(i);
      const std::string name = r.name, prefix = std::string(fam.name()) + "_" + isa_name(r.isa);
      EXPECT_EQ(name.compare(0, prefix.size(), prefix), 0) << name;
      EXPECT_TRUE(names.insert(name).second) << name << " twice";
      if (i > 0) {
        EXPECT_LE(static_cast<int>(r.isa), static_cast<int>(fam.info(i - 1).isa)) << name;
      }
    }
    const KernelRowInfo& last = fam.info(fam.size() - 1);
    EXPECT_EQ(last.isa, Isa::kScalar);
    EXPECT_TRUE(last.runnable(CpuFeatures{})) << last.name;  // a CPU without any feature
  }
}

// Each level of this host picks, in every family, a row at or below it, and no better row is
// allowed there.
TEST(KernelFamilies, EachLevelPicksTheBestRowItAllows) {
  int n = 0;
  const KernelFamily* const* fams = kernel_families(&n);
  for (Isa isa : test_isas())
    for (int f = 0; f < n; ++f) {
      const KernelFamily& fam = *fams[f];
      const int i = fam.select(isa);
      EXPECT_LE(static_cast<int>(fam.info(i).isa), static_cast<int>(isa)) << fam.info(i).name;
      EXPECT_TRUE(fam.allowed(i, isa)) << fam.info(i).name;
      for (int better = 0; better < i; ++better) EXPECT_FALSE(fam.allowed(better, isa)) << fam.info(better).name;
    }
}

}  // namespace
}  // namespace mlaops
