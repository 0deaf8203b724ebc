// The online-softmax row kernels under non-finite scores, each ISA (docs/numerics.md
// "Non-finite and extreme values"): scale_max returns NaN when a valid score is NaN and ignores
// NaN / inf at masked positions; exp_sum gives NaN for a NaN score (the polynomial exps keep NaN
// through their clamps) and at most e^-87 for -inf; the result never depends on where in a vector the NaN is.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/attention/softmax.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SoftmaxNonFinite, NanScoreAtEveryPosition) {
  for (Isa isa : test_isas()) {
    const SoftmaxKernels& k = softmax_kernels(isa);
    SCOPED_TRACE(isa_name(isa));
    for (int64_t n : {1, 5, 8, 16, 17, 40}) {
      for (int64_t at = 0; at < n; ++at) {
        std::vector<float> s(static_cast<size_t>(n));
        for (int64_t c = 0; c < n; ++c) s[static_cast<size_t>(c)] = 0.25f * static_cast<float>(c % 7) - 1.0f;
        std::vector<uint8_t> valid(static_cast<size_t>(n) + 16, 1);
        s[static_cast<size_t>(at)] = kNaN;
        std::vector<float> s2 = s;
        EXPECT_TRUE(std::isnan(k.scale_max(s2.data(), valid.data(), n, 0.5f))) << "n=" << n << " at=" << at;
        // the same NaN at a masked position is not read
        valid[static_cast<size_t>(at)] = 0;
        s2 = s;
        const float m = k.scale_max(s2.data(), valid.data(), n, 0.5f);
        EXPECT_FALSE(std::isnan(m)) << "n=" << n << " at=" << at;
        if (n > 1) {
          std::vector<float> e(static_cast<size_t>(n));
          EXPECT_TRUE(std::isfinite(k.exp_sum(s2.data(), valid.data(), n, m, e.data()))) << "n=" << n << " at=" << at;
          EXPECT_EQ(e[static_cast<size_t>(at)], 0.0f);
        }
        // exp_sum of a valid NaN score with a finite max: NaN
        valid[static_cast<size_t>(at)] = 1;
        std::vector<float> e(static_cast<size_t>(n));
        EXPECT_TRUE(std::isnan(k.exp_sum(s.data(), valid.data(), n, 1.0f, e.data()))) << "n=" << n << " at=" << at;
        EXPECT_TRUE(std::isnan(e[static_cast<size_t>(at)]));
      }
    }
  }
}

TEST(SoftmaxNonFinite, InfiniteScores) {
  for (Isa isa : test_isas()) {
    const SoftmaxKernels& k = softmax_kernels(isa);
    SCOPED_TRACE(isa_name(isa));
    const int64_t n = 20;
    std::vector<uint8_t> valid(static_cast<size_t>(n) + 16, 1);
    std::vector<float> s(static_cast<size_t>(n), 1.0f);
    s[3] = kInf;
    std::vector<float> s2 = s;
    EXPECT_EQ(k.scale_max(s2.data(), valid.data(), n, 1.0f), kInf);
    // -inf scores (in a vector lane and in a tail) and scores far below the max give at most
    // e^-87 ~ 1.6e-38 (the AVX2 exp clamps there to keep 2^k normal; the others give 0), never a
    // NaN or a negative value, and leave the other terms exact
    s = std::vector<float>(static_cast<size_t>(n), 0.0f);
    s[5] = -kInf;
    s[17] = -kInf;
    s[9] = -1e30f;
    std::vector<float> e(static_cast<size_t>(n));
    EXPECT_FLOAT_EQ(k.exp_sum(s.data(), valid.data(), n, 0.0f, e.data()), static_cast<float>(n - 3));
    for (size_t c : {size_t{5}, size_t{9}, size_t{17}}) {
      EXPECT_GE(e[c], 0.0f) << c;
      EXPECT_LE(e[c], 1.7e-38f) << c;
    }
  }
}

}  // namespace
}  // namespace mlaops::kernels
