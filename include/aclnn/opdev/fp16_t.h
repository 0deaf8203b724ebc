/*
 * mlaops drop-in for CANN's aclnn/opdev/fp16_t.h: op::fp16_t, an IEEE binary16 value type for
 * host buffers (2 bytes, standard layout, trivially copyable; the bits are the member `val`).
 * C++ only. See docs/sdk-headers.md.
 *
 *  * Construction from float, double and any integer type rounds to nearest, ties to even
 *    (mlaops/numeric.h: float_to_fp16, double_to_fp16; an integer is rounded once, directly);
 *    overflow gives +-inf, NaN stays NaN. fp16_t::from_bits() takes the raw bits.
 *  * operator float() is implicit (exact); double is explicit (exact).
 *  * fp16_t op fp16_t (+ - * /) is computed in float and rounded back to fp16_t (which is the
 *    correctly rounded fp16 result). Mixed with a built-in type the rules of C++23's
 *    std::float16_t apply: fp16_t op integer converts the integer to fp16_t first and gives
 *    fp16_t; fp16_t op float / double converts the fp16_t and gives float / double. Compound
 *    assignment rounds the result back to fp16_t. Comparisons follow the same conversions
 *    (so -0 == +0 and NaN compares unequal to everything).
 */
#ifndef MLAOPS_ACLNN_OPDEV_FP16_T_H_
#define MLAOPS_ACLNN_OPDEV_FP16_T_H_

#ifndef __cplusplus
#error "aclnn/opdev/fp16_t.h is a C++ header"
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

struct fp16_t {
  uint16_t val;

  fp16_t() noexcept : val(0) {}
  fp16_t(float f) noexcept : val(mlaops::float_to_fp16(f)) {}
  fp16_t(double d) noexcept : val(mlaops::double_to_fp16(d)) {}
  // long double is rounded to double first (exact on targets where they are the same type).
  fp16_t(long double d) noexcept : val(mlaops::double_to_fp16(static_cast<double>(d))) {}
  template <class T, half_detail::if_integral<T> = 0>
  fp16_t(T v) noexcept : val(mlaops::float_to_fp16(half_detail::int_to_float_sticky(v))) {}

  static fp16_t from_bits(uint16_t bits) noexcept {
    fp16_t h;
    h.val = bits;
    return h;
  }

  operator float() const noexcept { return mlaops::fp16_to_float(val); }
  explicit operator double() const noexcept { return static_cast<double>(mlaops::fp16_to_float(val)); }

  bool isnan() const noexcept { return (val & 0x7fffu) > 0x7c00u; }
  bool isinf() const noexcept { return (val & 0x7fffu) == 0x7c00u; }

  fp16_t operator+() const noexcept { return *this; }
  fp16_t operator-() const noexcept { return from_bits(static_cast<uint16_t>(val ^ 0x8000u)); }

  friend fp16_t operator+(fp16_t a, fp16_t b) noexcept { return fp16_t(static_cast<float>(a) + static_cast<float>(b)); }
  friend fp16_t operator-(fp16_t a, fp16_t b) noexcept { return fp16_t(static_cast<float>(a) - static_cast<float>(b)); }
  friend fp16_t operator*(fp16_t a, fp16_t b) noexcept { return fp16_t(static_cast<float>(a) * static_cast<float>(b)); }
  friend fp16_t operator/(fp16_t a, fp16_t b) noexcept { return fp16_t(static_cast<float>(a) / static_cast<float>(b)); }

  friend bool operator==(fp16_t a, fp16_t b) noexcept { return static_cast<float>(a) == static_cast<float>(b); }
  friend bool operator!=(fp16_t a, fp16_t b) noexcept { return static_cast<float>(a) != static_cast<float>(b); }
  friend bool operator<(fp16_t a, fp16_t b) noexcept { return static_cast<float>(a) < static_cast<float>(b); }
  friend bool operator<=(fp16_t a, fp16_t b) noexcept { return static_cast<float>(a) <= static_cast<float>(b); }
  friend bool operator>(fp16_t a, fp16_t b) noexcept { return static_cast<float>(a) > static_cast<float>(b); }
  friend bool operator>=(fp16_t a, fp16_t b) noexcept { return static_cast<float>(a) >= static_cast<float>(b); }

  fp16_t& operator+=(fp16_t o) noexcept { return *this = *this + o; }
  fp16_t& operator-=(fp16_t o) noexcept { return *this = *this - o; }
  fp16_t& operator*=(fp16_t o) noexcept { return *this = *this * o; }
  fp16_t& operator/=(fp16_t o) noexcept { return *this = *this / o; }
  template <class T, half_detail::if_arithmetic<T> = 0>
  fp16_t& operator+=(T o) noexcept { return *this = fp16_t(*this + o); }
  template <class T, half_detail::if_arithmetic<T> = 0>
  fp16_t& operator-=(T o) noexcept { return *this = fp16_t(*this - o); }
  template <class T, half_detail::if_arithmetic<T> = 0>
  fp16_t& operator*=(T o) noexcept { return *this = fp16_t(*this * o); }
  template <class T, half_detail::if_arithmetic<T> = 0>
  fp16_t& operator/=(T o) noexcept { return *this = fp16_t(*this / o); }

  fp16_t& operator++() noexcept { return *this += fp16_t(1.0f); }
  fp16_t& operator--() noexcept { return *this -= fp16_t(1.0f); }
  fp16_t operator++(int) noexcept { fp16_t old = *this; ++*this; return old; }
  fp16_t operator--(int) noexcept { fp16_t old = *this; --*this; return old; }
};

static_assert(sizeof(fp16_t) == 2, "op::fp16_t must be 2 bytes");
static_assert(std::is_standard_layout<fp16_t>::value, "op::fp16_t must be standard layout");
static_assert(std::is_trivially_copyable<fp16_t>::value, "op::fp16_t must be trivially copyable");

// Mixed with built-in arithmetic types (see the top of this file).
#define MLAOPS_FP16_MIXED_OP(OP, R)                                                               \
  template <class T, half_detail::if_integral<T> = 0>                                             \
  inline R(fp16_t) operator OP(fp16_t a, T b) noexcept { return a OP fp16_t(b); }                 \
  template <class T, half_detail::if_integral<T> = 0>                                             \
  inline R(fp16_t) operator OP(T a, fp16_t b) noexcept { return fp16_t(a) OP b; }                 \
  template <class T, half_detail::if_floating<T> = 0>                                             \
  inline R(T) operator OP(fp16_t a, T b) noexcept { return static_cast<T>(static_cast<float>(a)) OP b; } \
  template <class T, half_detail::if_floating<T> = 0>                                             \
  inline R(T) operator OP(T a, fp16_t b) noexcept { return a OP static_cast<T>(static_cast<float>(b)); }
#define MLAOPS_FP16_SAME(T) T
#define MLAOPS_FP16_BOOL(T) bool
MLAOPS_FP16_MIXED_OP(+, MLAOPS_FP16_SAME)
MLAOPS_FP16_MIXED_OP(-, MLAOPS_FP16_SAME)
MLAOPS_FP16_MIXED_OP(*, MLAOPS_FP16_SAME)
MLAOPS_FP16_MIXED_OP(/, MLAOPS_FP16_SAME)
MLAOPS_FP16_MIXED_OP(==, MLAOPS_FP16_BOOL)
MLAOPS_FP16_MIXED_OP(!=, MLAOPS_FP16_BOOL)
MLAOPS_FP16_MIXED_OP(<, MLAOPS_FP16_BOOL)
MLAOPS_FP16_MIXED_OP(<=, MLAOPS_FP16_BOOL)
MLAOPS_FP16_MIXED_OP(>, MLAOPS_FP16_BOOL)
MLAOPS_FP16_MIXED_OP(>=, MLAOPS_FP16_BOOL)
#undef MLAOPS_FP16_MIXED_OP
#undef MLAOPS_FP16_SAME
#undef MLAOPS_FP16_BOOL

// Prints the value as a float (std::ostream << float); needs <ostream> where it is used.
template <class CharT, class Traits>
std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os, fp16_t h) {
  return os << static_cast<float>(h);
}

}  // namespace op

#endif  // MLAOPS_ACLNN_OPDEV_FP16_T_H_
