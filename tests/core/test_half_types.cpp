// op::fp16_t (aclnn/opdev/fp16_t.h) and op::bfloat16 (aclnn/opdev/bfloat16.h): conversions
// against the library's own routines (mlaops/numeric.h) over every 16-bit pattern and a sweep
// of float bit patterns, integer construction, arithmetic, comparison, layout and printing.
#include "aclnn/opdev/bfloat16.h"
#include "aclnn/opdev/fp16_t.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>
#include <vector>

#include "mlaops/numeric.h"

using mlaops::bits_float;
using mlaops::float_bits;
using op::bfloat16;
using op::fp16_t;

static_assert(sizeof(fp16_t) == 2 && sizeof(bfloat16) == 2, "2 bytes");
static_assert(std::is_standard_layout<fp16_t>::value && std::is_standard_layout<bfloat16>::value,
              "standard layout");
static_assert(std::is_trivially_copyable<fp16_t>::value &&
                  std::is_trivially_copyable<bfloat16>::value,
              "trivially copyable");
static_assert(std::is_same<decltype(fp16_t::val), uint16_t>::value, "member val");
static_assert(std::is_same<decltype(bfloat16::val), uint16_t>::value, "member val");

// Result types of mixed arithmetic (C++23 extended floating-point rules).
static_assert(std::is_same<decltype(fp16_t() + fp16_t()), fp16_t>::value, "");
static_assert(std::is_same<decltype(fp16_t() + 1), fp16_t>::value, "");
static_assert(std::is_same<decltype(2u * fp16_t()), fp16_t>::value, "");
static_assert(std::is_same<decltype(fp16_t() - 1.0f), float>::value, "");
static_assert(std::is_same<decltype(1.0 / fp16_t()), double>::value, "");
static_assert(std::is_same<decltype(bfloat16() + bfloat16()), bfloat16>::value, "");
static_assert(std::is_same<decltype(bfloat16() * 3), bfloat16>::value, "");
static_assert(std::is_same<decltype(bfloat16() + 1.0f), float>::value, "");
static_assert(std::is_same<decltype(bfloat16() == 1.0), bool>::value, "");
static_assert(std::is_convertible<fp16_t, float>::value, "implicit operator float");
static_assert(!std::is_convertible<fp16_t, double>::value ||
                  std::is_convertible<fp16_t, float>::value,
              "double through float");

namespace {

bool same_or_both_nan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return float_bits(a) == float_bits(b);
}

// The two types side by side, for typed tests.
struct Fp16Traits {
  using T = fp16_t;
  static float to_float(uint16_t h) { return mlaops::fp16_to_float(h); }
  static uint16_t from_float(float f) { return mlaops::float_to_fp16(f); }
  static uint16_t from_double(double d) { return mlaops::double_to_fp16(d); }
  static bool is_nan_bits(uint16_t h) { return (h & 0x7fffu) > 0x7c00u; }
};
struct Bf16Traits {
  using T = bfloat16;
  static float to_float(uint16_t h) { return mlaops::bf16_to_float(h); }
  static uint16_t from_float(float f) { return mlaops::float_to_bf16(f); }
  static uint16_t from_double(double d) { return mlaops::double_to_bf16(d); }
  static bool is_nan_bits(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }
};

template <class Tr>
class half : public ::testing::Test {};
using HalfTypes = ::testing::Types<Fp16Traits, Bf16Traits>;
class HalfNames {
 public:
  template <class Tr>
  static std::string GetName(int) {
    return std::is_same<Tr, Fp16Traits>::value ? "fp16_t" : "bfloat16";
  }
};
TYPED_TEST_SUITE(half, HalfTypes, HalfNames);

}  // namespace

TYPED_TEST(half, ToFloatAllBitPatterns) {
  using T = typename TypeParam::T;
  for (uint32_t b = 0; b < 65536; ++b) {
    const T h = T::from_bits(static_cast<uint16_t>(b));
    ASSERT_EQ(h.val, b);
    const float ref = TypeParam::to_float(static_cast<uint16_t>(b));
    const float f = h;  // implicit
    ASSERT_TRUE(same_or_both_nan(f, ref)) << "bits 0x" << std::hex << b;
    const double d = static_cast<double>(h);
    ASSERT_TRUE(std::isnan(d) ? std::isnan(ref) : d == static_cast<double>(ref)) << std::hex << b;
    ASSERT_EQ(h.isnan(), TypeParam::is_nan_bits(static_cast<uint16_t>(b)));
    ASSERT_EQ(h.isnan(), std::isnan(ref));
    ASSERT_EQ(h.isinf(), std::isinf(ref));
  }
}

TYPED_TEST(half, EveryValueRoundTrips) {
  using T = typename TypeParam::T;
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = TypeParam::to_float(static_cast<uint16_t>(b));
    const T from_f(f);
    const T from_d(static_cast<double>(f));
    if (std::isnan(f)) {
      ASSERT_TRUE(from_f.isnan()) << std::hex << b;
      ASSERT_TRUE(from_d.isnan()) << std::hex << b;
      ASSERT_EQ(from_f.val & 0x8000u, b & 0x8000u);  // sign kept
      continue;
    }
    ASSERT_EQ(from_f.val, b) << std::hex << b;  // -0 and +-inf included
    ASSERT_EQ(from_d.val, b) << std::hex << b;
  }
}

TYPED_TEST(half, FloatBitPatternSweep) {
  using T = typename TypeParam::T;
  // About 4.3 million float bit patterns spread over all of them (a stride prime to 2^32),
  // plus every pattern near the rounding boundaries of the low mantissa bits.
  uint64_t n = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 997, ++n) {
    const float f = bits_float(static_cast<uint32_t>(u));
    const T h(f);
    const uint16_t ref = TypeParam::from_float(f);
    if (TypeParam::is_nan_bits(ref)) {
      ASSERT_TRUE(h.isnan()) << std::hex << u;
    } else {
      ASSERT_EQ(h.val, ref) << std::hex << u;
    }
    if ((u & 7) == 0) {
      const double d = static_cast<double>(f) * 1.0000001;
      const T hd(d);
      const uint16_t refd = TypeParam::from_double(d);
      if (TypeParam::is_nan_bits(refd)) {
        ASSERT_TRUE(hd.isnan());
      } else {
        ASSERT_EQ(hd.val, refd) << d;
      }
    }
  }
  EXPECT_GT(n, 4000000u);
  for (uint32_t hi = 0; hi < 65536; hi += 7) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0x1001u, 0x7fffu, 0x8000u, 0x8001u,
                        0xefffu, 0xf000u, 0xffffu}) {
      const float f = bits_float((hi << 16) | lo);
      const T h(f);
      const uint16_t ref = TypeParam::from_float(f);
      if (TypeParam::is_nan_bits(ref)) {
        ASSERT_TRUE(h.isnan());
      } else {
        ASSERT_EQ(h.val, ref) << std::hex << ((hi << 16) | lo);
      }
    }
  }
}

TYPED_TEST(half, ConstructFromIntegers) {
  using T = typename TypeParam::T;
  // Every int in +-2^20 (exact in double, so the double routine is the reference).
  for (int32_t i = -(1 << 20); i <= (1 << 20); ++i) {
    ASSERT_EQ(T(i).val, TypeParam::from_double(static_cast<double>(i))) << i;
  }
  const std::vector<int64_t> samples = {0, 1, -1, 7, 255, 2047, 2049, 4097, 65504, 65519, 65520,
                                        1000003, -1000003, 16777217, -16777217,
                                        (int64_t{1} << 40) + 12345, std::numeric_limits<int64_t>::min(),
                                        std::numeric_limits<int64_t>::max()};
  for (int64_t v : samples) {
    // |v| <= 2^53 is exact in double; beyond that, the expectations are written out below.
    if (v > -(int64_t{1} << 53) && v < (int64_t{1} << 53)) {
      EXPECT_EQ(T(v).val, TypeParam::from_double(static_cast<double>(v))) << v;
      EXPECT_EQ(T(static_cast<long>(v)).val, T(v).val);
    }
  }
  // Every integer type.
  EXPECT_EQ(static_cast<float>(T(static_cast<int8_t>(-5))), -5.0f);
  EXPECT_EQ(static_cast<float>(T(static_cast<uint8_t>(200))), 200.0f);
  EXPECT_EQ(static_cast<float>(T(static_cast<int16_t>(-300))), -300.0f);
  EXPECT_EQ(static_cast<float>(T(static_cast<uint16_t>(100))), 100.0f);  // a value, not bits
  EXPECT_EQ(static_cast<float>(T(100u)), 100.0f);
  EXPECT_EQ(static_cast<float>(T(100ul)), 100.0f);
  EXPECT_EQ(static_cast<float>(T(-100ll)), -100.0f);
  EXPECT_EQ(static_cast<float>(T('A')), 65.0f);
  EXPECT_EQ(static_cast<float>(T(true)), 1.0f);
  EXPECT_EQ(static_cast<float>(T(false)), 0.0f);
  EXPECT_EQ(T(0).val, 0u);  // +0
}

TEST(half, LargeIntegersRoundOnce) {
  // bf16 keeps 8 significant bits; at 2^60 its step is 2^53. A double would first round
  // 2^60 + 2^52 + 1 to the tie 2^60 + 2^52 (then to even, 2^60): a direct rounding goes up.
  const uint64_t p60 = uint64_t{1} << 60;
  EXPECT_EQ(bfloat16(p60 + (uint64_t{1} << 52) + 1).val, bfloat16(std::ldexp(1.0, 60) + std::ldexp(1.0, 53)).val);
  EXPECT_EQ(bfloat16(p60 + (uint64_t{1} << 52)).val, bfloat16(std::ldexp(1.0, 60)).val);  // tie: even
  EXPECT_EQ(bfloat16(-static_cast<int64_t>(p60 + (uint64_t{1} << 52) + 1)).val,
            bfloat16(-(std::ldexp(1.0, 60) + std::ldexp(1.0, 53))).val);
  EXPECT_EQ(static_cast<float>(bfloat16(std::numeric_limits<uint64_t>::max())), std::ldexp(1.0f, 64));
  EXPECT_EQ(static_cast<float>(bfloat16(std::numeric_limits<int64_t>::min())), -std::ldexp(1.0f, 63));
  EXPECT_EQ(static_cast<float>(bfloat16(std::numeric_limits<int64_t>::max())), std::ldexp(1.0f, 63));
  EXPECT_TRUE(fp16_t(std::numeric_limits<int64_t>::max()).isinf());
  EXPECT_TRUE(fp16_t(std::numeric_limits<uint64_t>::max()).isinf());
  EXPECT_EQ(fp16_t(std::numeric_limits<int64_t>::min()).val, 0xfc00u);  // -inf
  // fp16: 65519 rounds down to 65504, 65520 (the midpoint to 65536) overflows to inf.
  EXPECT_EQ(static_cast<float>(fp16_t(65519)), 65504.0f);
  EXPECT_TRUE(fp16_t(65520).isinf());
  // 2049 is a tie between 2048 and 2050 in fp16: even mantissa (2048).
  EXPECT_EQ(static_cast<float>(fp16_t(2049)), 2048.0f);
  EXPECT_EQ(static_cast<float>(fp16_t(2051)), 2052.0f);
}

TEST(half, ConstructFromFloatAndDouble) {
  EXPECT_EQ(fp16_t(1.0f).val, 0x3c00u);
  EXPECT_EQ(fp16_t(-2.0).val, 0xc000u);
  EXPECT_EQ(fp16_t(0.1f).val, 0x2e66u);
  EXPECT_EQ(fp16_t(0.1).val, 0x2e66u);
  EXPECT_EQ(fp16_t(65504.0f).val, 0x7bffu);
  EXPECT_EQ(fp16_t(1e6).val, 0x7c00u);
  EXPECT_EQ(fp16_t(-1e6f).val, 0xfc00u);
  EXPECT_EQ(fp16_t(-0.0f).val, 0x8000u);
  EXPECT_EQ(fp16_t(5.9604644775390625e-08).val, 0x0001u);  // smallest subnormal
  EXPECT_EQ(fp16_t(1e-9).val, 0x0000u);
  EXPECT_TRUE(fp16_t(std::numeric_limits<float>::quiet_NaN()).isnan());
  EXPECT_TRUE(fp16_t(std::numeric_limits<double>::quiet_NaN()).isnan());
  EXPECT_EQ(fp16_t(1.5L).val, 0x3e00u);
  EXPECT_EQ(bfloat16(1.0f).val, 0x3f80u);
  EXPECT_EQ(bfloat16(0.1f).val, 0x3dcdu);
  EXPECT_EQ(bfloat16(0.1).val, 0x3dcdu);
  EXPECT_EQ(bfloat16(-3.0).val, 0xc040u);
  EXPECT_EQ(bfloat16(1e39).val, 0x7f80u);
  EXPECT_TRUE(bfloat16(std::numeric_limits<float>::quiet_NaN()).isnan());
  EXPECT_EQ(fp16_t().val, 0u);
  EXPECT_EQ(bfloat16().val, 0u);
  // Double rounded directly, not through float: 1 + 2^-11 + 2^-40 is just above the fp16 tie.
  EXPECT_EQ(fp16_t(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).val, 0x3c01u);
  EXPECT_EQ(fp16_t(1.0 + std::ldexp(1.0, -11)).val, 0x3c00u);
}

namespace {

// A correctly rounded reference: the double result of two 16-bit values (exact for + - *,
// rounded once for /) rounded once to 16 bits.
template <class Tr>
void check_op(uint16_t a, uint16_t b) {
  using T = typename Tr::T;
  const T x = T::from_bits(a), y = T::from_bits(b);
  const double da = Tr::to_float(a), db = Tr::to_float(b);
  const T results[4] = {x + y, x - y, x * y, x / y};
  const double refs[4] = {da + db, da - db, da * db, da / db};
  for (int k = 0; k < 4; ++k) {
    const uint16_t ref = Tr::from_double(refs[k]);
    if (Tr::is_nan_bits(ref)) {
      ASSERT_TRUE(results[k].isnan()) << k << " " << std::hex << a << " " << b;
    } else {
      ASSERT_EQ(results[k].val, ref) << k << " " << std::hex << a << " " << b;
    }
  }
  T c = x;
  c += y;
  ASSERT_TRUE(c.val == results[0].val || (c.isnan() && results[0].isnan()));
  c = x;
  c -= y;
  ASSERT_TRUE(c.val == results[1].val || (c.isnan() && results[1].isnan()));
  c = x;
  c *= y;
  ASSERT_TRUE(c.val == results[2].val || (c.isnan() && results[2].isnan()));
  c = x;
  c /= y;
  ASSERT_TRUE(c.val == results[3].val || (c.isnan() && results[3].isnan()));
  // Comparisons as the float values compare.
  const float fa = x, fb = y;
  ASSERT_EQ(x == y, fa == fb);
  ASSERT_EQ(x != y, fa != fb);
  ASSERT_EQ(x < y, fa < fb);
  ASSERT_EQ(x <= y, fa <= fb);
  ASSERT_EQ(x > y, fa > fb);
  ASSERT_EQ(x >= y, fa >= fb);
}

}  // namespace

TYPED_TEST(half, ArithmeticAndComparisonCorrectlyRounded) {
  // All pairs from a strided subset of the bit patterns (specials included), then random pairs.
  std::vector<uint16_t> subset;
  for (uint32_t b = 0; b < 65536; b += 251) subset.push_back(static_cast<uint16_t>(b));
  for (uint16_t s : {0x0000, 0x8000, 0x0001, 0x8001, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00,
                     0x7e00, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x0080})
    subset.push_back(s);
  for (uint16_t a : subset)
    for (uint16_t b : subset) check_op<TypeParam>(a, b);
  std::mt19937 rng(12345);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t r = rng();
    check_op<TypeParam>(static_cast<uint16_t>(r), static_cast<uint16_t>(r >> 16));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(half, UnaryMixedAndCompound) {
  using T = typename TypeParam::T;
  const T a = 1.5f;
  EXPECT_EQ((-a).val, static_cast<uint16_t>(a.val ^ 0x8000u));
  EXPECT_EQ((-T(0.0f)).val, 0x8000u);
  EXPECT_EQ((+a).val, a.val);
  EXPECT_TRUE((-T(std::numeric_limits<float>::quiet_NaN())).isnan());
  // Mixed with integers: the integer becomes T first, the result is T.
  EXPECT_EQ(static_cast<float>(a + 1), 2.5f);
  EXPECT_EQ(static_cast<float>(2 * a), 3.0f);
  EXPECT_EQ(static_cast<float>(a - 2), -0.5f);
  EXPECT_EQ(static_cast<float>(3 / T(2.0f)), 1.5f);
  // Mixed with float / double: computed and returned in float / double.
  EXPECT_EQ(a + 0.25f, 1.75f);
  EXPECT_EQ(a * 0.1, 1.5 * 0.1);
  EXPECT_EQ(1.0f / a, 1.0f / 1.5f);
  EXPECT_TRUE(a == 1.5f);
  EXPECT_TRUE(1.5 == a);
  EXPECT_TRUE(a != 1);
  EXPECT_TRUE(a < 2);
  EXPECT_TRUE(2u > a);
  EXPECT_TRUE(a <= 1.5);
  EXPECT_TRUE(a >= 1.5f);
  EXPECT_TRUE(T(-0.0f) == T(0.0f));
  const T nan(std::numeric_limits<float>::quiet_NaN());
  EXPECT_FALSE(nan == nan);
  EXPECT_TRUE(nan != nan);
  EXPECT_FALSE(nan < 1.0f);
  // Compound assignment rounds back to T.
  T c = 1.0f;
  c += 1;
  EXPECT_EQ(static_cast<float>(c), 2.0f);
  c *= 0.1f;
  EXPECT_EQ(c.val, T(0.2f).val);
  c -= 0.2;
  EXPECT_EQ(c.val, T(static_cast<double>(T(0.2f)) - 0.2).val);
  c = 3.0f;
  c /= 2;
  EXPECT_EQ(static_cast<float>(c), 1.5f);
  c += T(0.5f);
  EXPECT_EQ(static_cast<float>(c), 2.0f);
  EXPECT_EQ(static_cast<float>(++c), 3.0f);
  EXPECT_EQ(static_cast<float>(c++), 3.0f);
  EXPECT_EQ(static_cast<float>(c), 4.0f);
  EXPECT_EQ(static_cast<float>(--c), 3.0f);
  EXPECT_EQ(static_cast<float>(c--), 3.0f);
  EXPECT_EQ(static_cast<float>(c), 2.0f);
  // Plain assignment from built-in values.
  c = 7;
  EXPECT_EQ(static_cast<float>(c), 7.0f);
  c = 0.5;
  EXPECT_EQ(static_cast<float>(c), 0.5f);
  // Conversions out.
  const float f = a;
  const double d = static_cast<double>(a);
  const int i = static_cast<int>(a);
  EXPECT_EQ(f, 1.5f);
  EXPECT_EQ(d, 1.5);
  EXPECT_EQ(i, 1);
  EXPECT_FALSE(std::isnan(a));
}

TYPED_TEST(half, HostBufferElement) {
  using T = typename TypeParam::T;
  std::vector<T> buf(1000);
  for (size_t k = 0; k < buf.size(); ++k) {
    EXPECT_EQ(buf[k].val, 0u);  // value-initialized to +0
    buf[k] = static_cast<float>(k) * 0.5f;
  }
  std::vector<uint16_t> raw(buf.size());
  std::memcpy(raw.data(), buf.data(), buf.size() * sizeof(T));
  for (size_t k = 0; k < buf.size(); ++k) {
    EXPECT_EQ(raw[k], TypeParam::from_float(static_cast<float>(k) * 0.5f));
  }
  T arr[3] = {1.0f, 2, 3.0};
  EXPECT_EQ(sizeof(arr), 6u);
  EXPECT_EQ(static_cast<float>(arr[1]), 2.0f);
}

TYPED_TEST(half, Prints) {
  using T = typename TypeParam::T;
  for (float v : {0.0f, 1.5f, -2.25f, 100.0f, 0.1f, 1e-3f}) {
    std::ostringstream a, b;
    a << T(v);
    b << static_cast<float>(T(v));
    EXPECT_EQ(a.str(), b.str());
  }
  std::ostringstream s;
  s << T(1.5f) << ' ' << T(-3) << ' ' << T(std::numeric_limits<float>::infinity());
  EXPECT_EQ(s.str(), "1.5 -3 inf");
  std::wostringstream w;
  w << T(0.5f);
  EXPECT_EQ(w.str(), L"0.5");
}
