// Online-softmax row kernels under each ISA: masked scale + max exactly as the scalar code, and
// the polynomial exp within 3e-7 relative of std::exp, masked positions exactly 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/attention/softmax.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

TEST(SoftmaxKernels, EveryIsaMatchesTheScalarRules) {
  const SoftmaxKernels& ref = softmax_scalar;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-30.0f, 30.0f);
  for (Isa isa : test_isas()) {
    const SoftmaxKernels& k = softmax_kernels(isa);
    SCOPED_TRACE(isa_name(isa));
    for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 33, 64, 100}) {
      for (int density : {0, 1, 2, 10}) {  // 0: nothing valid
        std::vector<float> s(static_cast<size_t>(n) + 1), s2;
        std::vector<uint8_t> valid(static_cast<size_t>(n) + 8, 0);
        for (int64_t c = 0; c < n; ++c) {
          s[static_cast<size_t>(c)] = u(rng);
          valid[static_cast<size_t>(c)] = density > 0 && (rng() % density != 0 || density == 1) ? 1 : 0;
          if (!valid[static_cast<size_t>(c)] && c % 3 == 0) s[static_cast<size_t>(c)] = -std::numeric_limits<float>::infinity();
        }
        s2 = s;
        const float m1 = ref.scale_max(s.data(), valid.data(), n, 0.125f);
        const float m2 = k.scale_max(s2.data(), valid.data(), n, 0.125f);
        ASSERT_EQ(m1, m2) << "n=" << n;
        for (int64_t c = 0; c < n; ++c) {
          if (valid[static_cast<size_t>(c)]) {
            ASSERT_EQ(s[static_cast<size_t>(c)], s2[static_cast<size_t>(c)]);
          }
        }
        if (m1 == -std::numeric_limits<float>::infinity()) continue;
        std::vector<float> e1(static_cast<size_t>(n) + 1, 7.0f), e2(static_cast<size_t>(n) + 1, 7.0f);
        const float sum1 = ref.exp_sum(s.data(), valid.data(), n, m1, e1.data());
        const float sum2 = k.exp_sum(s.data(), valid.data(), n, m1, e2.data());
        EXPECT_NEAR(sum2, sum1, 1e-6 * sum1) << "n=" << n;
        for (int64_t c = 0; c < n; ++c) {
          if (!valid[static_cast<size_t>(c)]) {
            ASSERT_EQ(e2[static_cast<size_t>(c)], 0.0f);
          } else {
            ASSERT_NEAR(e2[static_cast<size_t>(c)], e1[static_cast<size_t>(c)], 3e-7 * e1[static_cast<size_t>(c)] + 1e-37)
                << "s-m=" << s[static_cast<size_t>(c)] - m1;
          }
        }
        EXPECT_EQ(e2[static_cast<size_t>(n)], 7.0f);  // nothing written past n
      }
    }
  }
}

TEST(SoftmaxKernels, ExpOverItsRange) {
  for (Isa isa : test_isas()) {
    if (isa == Isa::kScalar) continue;  // std::exp
    const SoftmaxKernels& k = softmax_kernels(isa);
    std::vector<float> s;
    for (float x = -87.0f; x <= 0.0f; x += 0.013f) s.push_back(x);
    s.push_back(0.0f);
    std::vector<uint8_t> valid(s.size() + 8, 1);
    std::vector<float> e(s.size());
    k.exp_sum(s.data(), valid.data(), static_cast<int64_t>(s.size()), 0.0f, e.data());
    double worst = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const double want = std::exp(static_cast<double>(s[i]));
      worst = std::max(worst, std::fabs(e[i] - want) / want);
    }
    EXPECT_LT(worst, 3e-7) << isa_name(isa);
  }
}

}  // namespace
}  // namespace mlaops::kernels
