/*
 * mlaops drop-in for CANN's aclnn/opdev/bfloat16.h: op::bfloat16, a bfloat16 value type for
 * host buffers (2 bytes, standard layout, trivially copyable; the bits are the member `val`).
 * C++ only. See docs/sdk-headers.md.
 *
 *  * Construction from float, double and any integer type rounds to nearest, ties to even
 *    (mlaops/numeric.h: float_to_bf16, double_to_bf16; an integer is rounded once, directly);
 *    overflow gives +-inf, NaN stays NaN (quiet). bfloat16::from_bits() takes the raw bits.
 *  * operator float() is implicit (exact); double is explicit (exact).
 *  * bfloat16 op bfloat16 (+ - * /) is computed in float and rounded back to bfloat16 (which is
 *    the correctly rounded bf16 result). Mixed with a built-in type the rules of C++23's
 *    std::bfloat16_t apply: bfloat16 op integer converts the integer to bfloat16 first and
 *    gives bfloat16; bfloat16 op float / double converts the bfloat16 and gives float / double.
 *    Compound assignment rounds the result back to bfloat16. Comparisons follow the same
 *    conversions (so -0 == +0 and NaN compares unequal to everything).
 */
#ifndef MLAOPS_ACLNN_OPDEV_BFLOAT16_H_
#define MLAOPS_ACLNN_OPDEV_BFLOAT16_H_

#ifndef __cplusplus
#error "aclnn/opdev/bfloat16.h is a C++ header"
#endif

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <type_traits>

#include "mlaops/numeric.h"

#ifndef MLAOPS_OPDEV_HALF_DETAIL_DEFINED_
#define MLAOPS_OPDEV_HALF_DETAIL_DEFINED_
namespace op {
namespace half_detail {

// A nonnegative integer as a float that rounds to any 16-bit float format as the integer
// itself would: bits below float precision are folded into a sticky lowest bit.
inline float magnitude_to_float_sticky(unsigned long long m) {
  int shift = 0;
  while ((m >> shift) >= (1ull << 24)) ++shift;
  unsigned long long kept = m >> shift;
  if (shift > 0 && (m & ((1ull << shift) - 1ull)) != 0) kept |= 1ull;
  return std::ldexp(static_cast<float>(kept), shift);  // exact: kept < 2^24, shift <= 40
}
inline float signed_to_float_sticky(long long v) {
  return v < 0 ? -magnitude_to_float_sticky(0ull - static_cast<unsigned long long>(v))
               : magnitude_to_float_sticky(static_cast<unsigned long long>(v));
}
template <class T>
inline float int_to_float_sticky(T v) {
  return std::is_signed<T>::value ? signed_to_float_sticky(static_cast<long long>(v))
                                  : magnitude_to_float_sticky(static_cast<unsigned long long>(v));
}

template <class T>
using if_integral = typename std::enable_if<std::is_integral<T>::value, int>::type;
template <class T>
using if_floating = typename std::enable_if<std::is_floating_point<T>::value, int>::type;
template <class T>
using if_arithmetic = typename std::enable_if<std::is_arithmetic<T>::value, int>::type;

}  // namespace half_detail
}  // namespace op
#endif  // MLAOPS_OPDEV_HALF_DETAIL_DEFINED_

namespace op {

struct bfloat16 {
  uint16_t val;

  bfloat16() noexcept : val(0) {}
  bfloat16(float f) noexcept : val(mlaops::float_to_bf16(f)) {}
  bfloat16(double d) noexcept : val(mlaops::double_to_bf16(d)) {}
  // long double is rounded to double first (exact on targets where they are the same type).
  bfloat16(long double d) noexcept : val(mlaops::double_to_bf16(static_cast<double>(d))) {}
  template <class T, half_detail::if_integral<T> = 0>
  bfloat16(T v) noexcept : val(mlaops::float_to_bf16(half_detail::int_to_float_sticky(v))) {}

  static bfloat16 from_bits(uint16_t bits) noexcept {
    bfloat16 h;
    h.val = bits;
    return h;
  }

  operator float() const noexcept { return mlaops::bf16_to_float(val); }
  explicit operator double() const noexcept { return static_cast<double>(mlaops::bf16_to_float(val)); }

  bool isnan() const noexcept { return (val & 0x7fffu) > 0x7f80u; }
  bool isinf() const noexcept { return (val & 0x7fffu) == 0x7f80u; }

  bfloat16 operator+() const noexcept { return *this; }
  bfloat16 operator-() const noexcept { return from_bits(static_cast<uint16_t>(val ^ 0x8000u)); }

  friend bfloat16 operator+(bfloat16 a, bfloat16 b) noexcept { return bfloat16(static_cast<float>(a) + static_cast<float>(b)); }
  friend bfloat16 operator-(bfloat16 a, bfloat16 b) noexcept { return bfloat16(static_cast<float>(a) - static_cast<float>(b)); }
  friend bfloat16 operator*(bfloat16 a, bfloat16 b) noexcept { return bfloat16(static_cast<float>(a) * static_cast<float>(b)); }
  friend bfloat16 operator/(bfloat16 a, bfloat16 b) noexcept { return bfloat16(static_cast<float>(a) / static_cast<float>(b)); }

  friend bool operator==(bfloat16 a, bfloat16 b) noexcept { return static_cast<float>(a) == static_cast<float>(b); }
  friend bool operator!=(bfloat16 a, bfloat16 b) noexcept { return static_cast<float>(a) != static_cast<float>(b); }
  friend bool operator<(bfloat16 a, bfloat16 b) noexcept { return static_cast<float>(a) < static_cast<float>(b); }
  friend bool operator<=(bfloat16 a, bfloat16 b) noexcept { return static_cast<float>(a) <= static_cast<float>(b); }
  friend bool operator>(bfloat16 a, bfloat16 b) noexcept { return static_cast<float>(a) > static_cast<float>(b); }
  friend bool operator>=(bfloat16 a, bfloat16 b) noexcept { return static_cast<float>(a) >= static_cast<float>(b); }

  bfloat16& operator+=(bfloat16 o) noexcept { return *this = *this + o; }
  bfloat16& operator-=(bfloat16 o) noexcept { return *this = *this - o; }
  bfloat16& operator*=(bfloat16 o) noexcept { return *this = *this * o; }
  bfloat16& operator/=(bfloat16 o) noexcept { return *this = *this / o; }
  template <class T, half_detail::if_arithmetic<T> = 0>
  bfloat16& operator+=(T o) noexcept { return *this = bfloat16(*this + o); }
  template <class T, half_detail::if_arithmetic<T> = 0>
  bfloat16& operator-=(T o) noexcept { return *this = bfloat16(*this - o); }
  template <class T, half_detail::if_arithmetic<T> = 0>
  bfloat16& operator*=(T o) noexcept { return *this = bfloat16(*this * o); }
  template <class T, half_detail::if_arithmetic<T> = 0>
  bfloat16& operator/=(T o) noexcept { return *this = bfloat16(*this / o); }

  bfloat16& operator++() noexcept { return *this += bfloat16(1.0f); }
  bfloat16& operator--() noexcept { return *this -= bfloat16(1.0f); }
  bfloat16 operator++(int) noexcept { bfloat16 old = *this; ++*this; return old; }
  bfloat16 operator--(int) noexcept { bfloat16 old = *this; --*this; return old; }
};

static_assert(sizeof(bfloat16) == 2, "op::bfloat16 must be 2 bytes");
static_assert(std::is_standard_layout<bfloat16>::value, "op::bfloat16 must be standard layout");
static_assert(std::is_trivially_copyable<bfloat16>::value, "op::bfloat16 must be trivially copyable");

// Mixed with built-in arithmetic types (see the top of this file).
#define MLAOPS_BF16_MIXED_OP(OP, R)                                                               \
  template <class T, half_detail::if_integral<T> = 0>                                             \
  inline R(bfloat16) operator OP(bfloat16 a, T b) noexcept { return a OP bfloat16(b); }                 \
  template <class T, half_detail::if_integral<T> = 0>                                             \
  inline R(bfloat16) operator OP(T a, bfloat16 b) noexcept { return bfloat16(a) OP b; }                 \
  template <class T, half_detail::if_floating<T> = 0>                                             \
  inline R(T) operator OP(bfloat16 a, T b) noexcept { return static_cast<T>(static_cast<float>(a)) OP b; } \
  template <class T, half_detail::if_floating<T> = 0>                                             \
  inline R(T) operator OP(T a, bfloat16 b) noexcept { return a OP static_cast<T>(static_cast<float>(b)); }
#define MLAOPS_BF16_SAME(T) T
#define MLAOPS_BF16_BOOL(T) bool
MLAOPS_BF16_MIXED_OP(+, MLAOPS_BF16_SAME)
MLAOPS_BF16_MIXED_OP(-, MLAOPS_BF16_SAME)
MLAOPS_BF16_MIXED_OP(*, MLAOPS_BF16_SAME)
MLAOPS_BF16_MIXED_OP(/, MLAOPS_BF16_SAME)
MLAOPS_BF16_MIXED_OP(==, MLAOPS_BF16_BOOL)
MLAOPS_BF16_MIXED_OP(!=, MLAOPS_BF16_BOOL)
MLAOPS_BF16_MIXED_OP(<, MLAOPS_BF16_BOOL)
MLAOPS_BF16_MIXED_OP(<=, MLAOPS_BF16_BOOL)
MLAOPS_BF16_MIXED_OP(>, MLAOPS_BF16_BOOL)
MLAOPS_BF16_MIXED_OP(>=, MLAOPS_BF16_BOOL)
#undef MLAOPS_BF16_MIXED_OP
#undef MLAOPS_BF16_SAME
#undef MLAOPS_BF16_BOOL

// Prints the value as a float (std::ostream << float); needs <ostream> where it is used.
template <class CharT, class Traits>
std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os, bfloat16 h) {
  return os << static_cast<float>(h);
}

}  // namespace op

#endif  // MLAOPS_ACLNN_OPDEV_BFLOAT16_H_
