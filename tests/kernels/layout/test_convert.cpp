// Epilogue conversion kernels: every ISA bit-identical to the scalar rules (numeric.h), on random
// bit patterns, specials (NaN, inf, subnormals, ties) and every tail length.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/rows/mla_rows.h"
#include "mlaops/numeric.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

std::vector<float> test_values(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<float> v;
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 126.5f, 127.5f, -128.5f,
                            1e-40f, -1e-41f, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            bits_float(0x3f808000u), bits_float(0x3f818000u), bits_float(0x7f7fffffu), 3e38f};
  for (float s : specials) v.push_back(s);
  while (v.size() < n) {
    if (rng() % 2) v.push_back(bits_float(rng()));
    else v.push_back(std::ldexp(static_cast<float>(static_cast<int>(rng() % 4000) - 2000) / 8.0f, static_cast<int>(rng() % 6)));
  }
  return v;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || float_bits(a) == float_bits(b); }

TEST(ConvertKernels, EveryIsaMatchesScalarBitForBit) {
  const ConvertKernels& s = convert_scalar;
  for (Isa isa : test_isas()) {
    const ConvertKernels& k = convert_kernels(isa);
    SCOPED_TRACE(isa_name(isa));
    const std::vector<float> all = test_values(static_cast<uint32_t>(isa) + 1, 20000);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, size_t{33},
                     size_t{512}, all.size()}) {
      for (size_t off : {size_t{0}, size_t{3}}) {
        if (off + n > all.size()) continue;
        const float* x = all.data() + off;
        std::vector<uint16_t> y1(n + 1, 0xABCD), y2(n + 1, 0xABCD);
        s.f32_to_bf16(x, y1.data(), static_cast<int64_t>(n));
        k.f32_to_bf16(x, y2.data(), static_cast<int64_t>(n));
        ASSERT_EQ(y1, y2) << "n=" << n;
        std::vector<float> r1(x, x + n), r2(x, x + n);
        s.round_bf16(r1.data(), static_cast<int64_t>(n));
        k.round_bf16(r2.data(), static_cast<int64_t>(n));
        for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same_float(r1[i], r2[i])) << "i=" << i;
        EXPECT_TRUE(same_float(s.absmax(x, static_cast<int64_t>(n)), k.absmax(x, static_cast<int64_t>(n))))
            << "n=" << n;
        for (float d : {1.0f, 0.5f, 3.0f, 0.0078125f, 1e-30f}) {
          std::vector<int8_t> q1(n + 1, 55), q2(n + 1, 55);
          s.div_round_i8(x, d, q1.data(), static_cast<int64_t>(n));
          k.div_round_i8(x, d, q2.data(), static_cast<int64_t>(n));
          ASSERT_EQ(q1, q2) << "n=" << n << " d=" << d;
        }
        for (float sc : {1.0f, 0.5f, 3.0f, 127.0f / 3e38f, 1e30f, -2.0f}) {
          std::vector<int8_t> q1(n + 1, 55), q2(n + 1, 55);
          s.mul_rint_i8(x, sc, q1.data(), static_cast<int64_t>(n));
          k.mul_rint_i8(x, sc, q2.data(), static_cast<int64_t>(n));
          ASSERT_EQ(q1, q2) << "n=" << n << " s=" << sc;
        }
      }
    }
  }
}

// The RoPE rows (MlaPrologV2's interleaved, MlaPreprocess's rotate-half): every ISA gives the
// portable row's bits (random fp32 values incl. the specials above, random cos / sin bits incl.
// NaN and inf patterns, read as bf16 or fp16), every even width to 80.
TEST(ConvertKernels, RopeRowsMatchThePortableRows) {
  const std::vector<float> vals = test_values(7, 4000);
  std::mt19937 rng(11);
  std::vector<uint16_t> cs(4000);
  for (auto& w : cs) w = static_cast<uint16_t>(rng() % 8 == 0 ? rng() : float_bits(std::ldexp(static_cast<float>(rng() % 2001) / 1000.0f - 1.0f, 0)) >> 16);
  for (Isa isa : test_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const ConvertKernels& k = convert_kernels(isa);
    for (int64_t dr = 2; dr <= 80; dr += 2) {
      for (size_t off : {size_t{0}, size_t{5}, size_t{300}}) {
        std::vector<float> o1(static_cast<size_t>(dr) + 1, 9.0f), o2(static_cast<size_t>(dr) + 1, 9.0f);
        rope_deinterleave_row(vals.data() + off, cs.data() + off, cs.data() + 1000 + off, dr, o1.data());
        k.rope_deinterleave(vals.data() + off, cs.data() + off, cs.data() + 1000 + off, dr, o2.data());
        for (size_t i = 0; i <= static_cast<size_t>(dr); ++i) ASSERT_TRUE(same_float(o1[i], o2[i])) << "dr=" << dr << " i=" << i;
        for (bool fp16 : {false, true}) {  // MlaPreprocess's rotate-half form, bf16 or fp16 cos / sin
          std::vector<float> h1(static_cast<size_t>(dr) + 1, 9.0f), h2(static_cast<size_t>(dr) + 1, 9.0f);
          rope_half_row(vals.data() + off, cs.data() + off, cs.data() + 1000 + off, fp16, dr, h1.data());
          k.rope_half(vals.data() + off, cs.data() + off, cs.data() + 1000 + off, fp16, dr, h2.data());
          for (size_t i = 0; i <= static_cast<size_t>(dr); ++i)
            ASSERT_TRUE(same_float(h1[i], h2[i])) << "fp16=" << fp16 << " dr=" << dr << " i=" << i;
        }
      }
    }
  }
}

TEST(ConvertKernels, ScalarRules) {
  const ConvertKernels& s = convert_scalar;
  const float x[] = {0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 200.0f, -300.0f, std::numeric_limits<float>::quiet_NaN()};
  int8_t q[8];
  s.div_round_i8(x, 1.0f, q, 8);
  const int8_t want[] = {1, -1, 2, 3, -3, 127, -128, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q[i], want[i]) << i;
  s.mul_rint_i8(x, 1.0f, q, 8);  // ties to even
  const int8_t want_even[] = {0, 0, 2, 2, -2, 127, -128, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q[i], want_even[i]) << i;
  EXPECT_EQ(s.absmax(x, 8), 300.0f);  // NaN ignored
  EXPECT_EQ(s.absmax(x, 0), 0.0f);
}

}  // namespace
}  // namespace mlaops::kernels
