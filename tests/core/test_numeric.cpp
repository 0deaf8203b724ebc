// bf16 / fp16 / int8 conversions (include/mlaops/numeric.h) against first principles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "mlaops/numeric.h"

namespace mlaops {
namespace {

// The exact value of a 16-bit pattern, computed from the format definition with ldexp.
double fp16_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);
  else if (exp == 31) v = mant ? std::nan("") : INFINITY;
  else v = std::ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}
double bf16_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 7) & 255, mant = h & 127;
  double v;
  if (exp == 0) v = std::ldexp(mant, -133);
  else if (exp == 255) v = mant ? std::nan("") : INFINITY;
  else v = std::ldexp(128 + mant, exp - 134);
  return sign ? -v : v;
}

// Round-to-nearest-even of x onto the finite values of a 16-bit format, by brute force over
// the neighbouring patterns: the reference the bit-twiddling conversions are checked against.
template <class Value>
uint16_t brute_round(double x, Value value, uint16_t max_finite) {
  if (std::isnan(x)) return 0x7fff;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(x);
  const double maxv = value(max_finite);
  const double next_ulp = maxv - value(static_cast<uint16_t>(max_finite - 1));
  if (ax >= maxv + next_ulp / 2) {
    // halfway to the next (non-existent) value rounds to even: max_finite has an odd mantissa
    return static_cast<uint16_t>(sign | (max_finite + 1));  // inf pattern
  }
  uint16_t lo = 0, hi = max_finite;
  while (lo < hi) {  // largest pattern with value <= ax
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (value(mid) <= ax) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
  }
  uint16_t r = lo;
  if (value(lo) != ax && lo < max_finite) {
    const double dlo = ax - value(lo), dhi = value(static_cast<uint16_t>(lo + 1)) - ax;
    if (dhi < dlo || (dhi == dlo && (lo & 1))) r = static_cast<uint16_t>(lo + 1);
  }
  return static_cast<uint16_t>(sign | r);
}

TEST(Numeric, Fp16ToFloatAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_float(static_cast<uint16_t>(h));
    const double want = fp16_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), want) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(Numeric, Bf16ToFloatAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_float(static_cast<uint16_t>(h));
    const double want = bf16_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), want) << h;
    }
  }
}

TEST(Numeric, FloatTo16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t p = static_cast<uint16_t>(h);
    if (!std::isnan(fp16_to_float(p))) {
      EXPECT_EQ(float_to_fp16(fp16_to_float(p)), p) << h;
      EXPECT_EQ(double_to_fp16(fp16_to_float(p)), p) << h;
    }
    if (!std::isnan(bf16_to_float(p))) {
      EXPECT_EQ(float_to_bf16(bf16_to_float(p)), p) << h;
      EXPECT_EQ(double_to_bf16(bf16_to_float(p)), p) << h;
    }
  }
}

TEST(Numeric, FloatTo16MatchesBruteForceRounding) {
  std::mt19937 rng(7);
  auto f16v = [](uint16_t h) { return fp16_value(h); };
  auto b16v = [](uint16_t h) { return bf16_value(h); };
  for (int i = 0; i < 400000; ++i) {
    const uint32_t bits = rng();
    const float f = bits_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_fp16(f), brute_round(f, f16v, 0x7bff)) << std::hex << bits;
    EXPECT_EQ(float_to_bf16(f), brute_round(f, b16v, 0x7f7f)) << std::hex << bits;
  }
  // values near the fp16 range: ties, subnormals, overflow boundary
  for (int i = 0; i < 400000; ++i) {
    const double x = std::ldexp(static_cast<double>(rng() % 4096) + 0.5 * (rng() % 3), -34 + static_cast<int>(rng() % 40));
    const float f = static_cast<float>(x);
    EXPECT_EQ(float_to_fp16(f), brute_round(f, f16v, 0x7bff)) << x;
    EXPECT_EQ(double_to_fp16(x), brute_round(x, f16v, 0x7bff)) << x;
    EXPECT_EQ(double_to_bf16(x), brute_round(x, b16v, 0x7f7f)) << x;
  }
}

TEST(Numeric, TiesToEvenAndSpecials) {
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), 0x3f80);      // tie -> even (1.0)
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256), 0x3f82);      // tie -> even (up)
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);               // overflow boundary -> inf
  EXPECT_EQ(float_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even 0
  EXPECT_EQ(float_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(NAN))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(-NAN))));
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(3.4e38f * 10), 0x7f80);
}

TEST(Numeric, DoubleRoundsOnce) {
  // 1 + 2^-8 + 2^-30: as float it rounds to the tie 1 + 2^-8 (-> bf16 even = 1.0), but the
  // exact value is above the tie, so a single rounding gives 1 + 2^-7.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(float_to_bf16(static_cast<float>(x)), 0x3f80);
  EXPECT_EQ(double_to_bf16(x), 0x3f81);
  EXPECT_EQ(round_bf16(x), 1.0 + std::ldexp(1.0, -7));
}

TEST(Numeric, Int8Saturation) {
  EXPECT_EQ(int8_rint_sat(0.5), 0);
  EXPECT_EQ(int8_rint_sat(1.5), 2);
  EXPECT_EQ(int8_rint_sat(-2.5), -2);
  EXPECT_EQ(int8_round_sat(0.5), 1);
  EXPECT_EQ(int8_round_sat(-2.5), -3);
  EXPECT_EQ(int8_rint_sat(127.4), 127);
  EXPECT_EQ(int8_rint_sat(1e9), 127);
  EXPECT_EQ(int8_rint_sat(-1e9), -128);
  EXPECT_EQ(int8_rint_sat(-128.4), -128);
  EXPECT_EQ(int8_rint_sat(INFINITY), 127);
  EXPECT_EQ(int8_rint_sat(-INFINITY), -128);
  EXPECT_EQ(int8_rint_sat(NAN), 0);
  EXPECT_EQ(int8_round_sat(NAN), 0);
}

}  // namespace
}  // namespace mlaops
