/*
 * The shared implementation of op::fp16_t (aclnn/opdev/fp16_t.h) and op::bfloat16
 * (aclnn/opdev/bfloat16.h): a 16-bit float value type over the conversions of mlaops/numeric.h.
 * Not included directly. The rules are stated in the two public headers.
 */
#ifndef MLAOPS_ACLNN_OPDEV_HALF16_H_
#define MLAOPS_ACLNN_OPDEV_HALF16_H_

#ifndef __cplusplus
#error "aclnn/opdev/half16.h is a C++ header"
#endif

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <type_traits>

#include "mlaops/numeric.h"

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


// D is the value type (op::fp16_t or op::bfloat16), Conv its conversions:
//   static uint16_t from_float(float), from_double(double); static float to_float(uint16_t);
//   static constexpr uint16_t kInfBits (the +inf pattern; NaN is anything above it in magnitude).
template <class D, class Conv>
struct half16 {
  uint16_t val;

  half16() noexcept : val(0) {}
  half16(float f) noexcept : val(Conv::from_float(f)) {}
  half16(double d) noexcept : val(Conv::from_double(d)) {}
  // long double is rounded to double first (exact on targets where they are the same type).
  half16(long double d) noexcept : val(Conv::from_double(static_cast<double>(d))) {}
  template <class T, if_integral<T> = 0>
  half16(T v) noexcept : val(Conv::from_float(int_to_float_sticky(v))) {}

  static D from_bits(uint16_t bits) noexcept {
    D h;
    h.val = bits;
    return h;
  }

  operator float() const noexcept { return Conv::to_float(val); }
  explicit operator double() const noexcept { return static_cast<double>(Conv::to_float(val)); }

  bool isnan() const noexcept { return (val & 0x7fffu) > Conv::kInfBits; }
  bool isinf() const noexcept { return (val & 0x7fffu) == Conv::kInfBits; }

  D operator+() const noexcept { return self(); }
  D operator-() const noexcept { return from_bits(static_cast<uint16_t>(val ^ 0x8000u)); }

  friend D operator+(D a, D b) noexcept { return D(static_cast<float>(a) + static_cast<float>(b)); }
  friend D operator-(D a, D b) noexcept { return D(static_cast<float>(a) - static_cast<float>(b)); }
  friend D operator*(D a, D b) noexcept { return D(static_cast<float>(a) * static_cast<float>(b)); }
  friend D operator/(D a, D b) noexcept { return D(static_cast<float>(a) / static_cast<float>(b)); }

  friend bool operator==(D a, D b) noexcept { return static_cast<float>(a) == static_cast<float>(b); }
  friend bool operator!=(D a, D b) noexcept { return static_cast<float>(a) != static_cast<float>(b); }
  friend bool operator<(D a, D b) noexcept { return static_cast<float>(a) < static_cast<float>(b); }
  friend bool operator<=(D a, D b) noexcept { return static_cast<float>(a) <= static_cast<float>(b); }
  friend bool operator>(D a, D b) noexcept { return static_cast<float>(a) > static_cast<float>(b); }
  friend bool operator>=(D a, D b) noexcept { return static_cast<float>(a) >= static_cast<float>(b); }

  D& operator+=(D o) noexcept { return self() = self() + o; }
  D& operator-=(D o) noexcept { return self() = self() - o; }
  D& operator*=(D o) noexcept { return self() = self() * o; }
  D& operator/=(D o) noexcept { return self() = self() / o; }
  template <class T, if_arithmetic<T> = 0>
  D& operator+=(T o) noexcept { return self() = D(self() + o); }
  template <class T, if_arithmetic<T> = 0>
  D& operator-=(T o) noexcept { return self() = D(self() - o); }
  template <class T, if_arithmetic<T> = 0>
  D& operator*=(T o) noexcept { return self() = D(self() * o); }
  template <class T, if_arithmetic<T> = 0>
  D& operator/=(T o) noexcept { return self() = D(self() / o); }

  D& operator++() noexcept { return self() += D(1.0f); }
  D& operator--() noexcept { return self() -= D(1.0f); }
  D operator++(int) noexcept {
    D old = self();
    ++self();
    return old;
  }
  D operator--(int) noexcept {
    D old = self();
    --self();
    return old;
  }

  // Mixed with built-in arithmetic types: integer operands convert to D first (result D);
  // floating operands take the value as that type (result that type) — C++23's std::float16_t.
#define MLAOPS_HALF16_MIXED_OP(OP, R)                                                                 \
  template <class T, if_integral<T> = 0>                                                              \
  friend R(D) operator OP(D a, T b) noexcept { return a OP D(b); }                                    \
  template <class T, if_integral<T> = 0>                                                              \
  friend R(D) operator OP(T a, D b) noexcept { return D(a) OP b; }                                    \
  template <class T, if_floating<T> = 0>                                                              \
  friend R(T) operator OP(D a, T b) noexcept { return static_cast<T>(static_cast<float>(a)) OP b; }   \
  template <class T, if_floating<T> = 0>                                                              \
  friend R(T) operator OP(T a, D b) noexcept { return a OP static_cast<T>(static_cast<float>(b)); }
#define MLAOPS_HALF16_SAME(T) T
#define MLAOPS_HALF16_BOOL(T) bool
  MLAOPS_HALF16_MIXED_OP(+, MLAOPS_HALF16_SAME)
  MLAOPS_HALF16_MIXED_OP(-, MLAOPS_HALF16_SAME)
  MLAOPS_HALF16_MIXED_OP(*, MLAOPS_HALF16_SAME)
  MLAOPS_HALF16_MIXED_OP(/, MLAOPS_HALF16_SAME)
  MLAOPS_HALF16_MIXED_OP(==, MLAOPS_HALF16_BOOL)
  MLAOPS_HALF16_MIXED_OP(!=, MLAOPS_HALF16_BOOL)
  MLAOPS_HALF16_MIXED_OP(<, MLAOPS_HALF16_BOOL)
  MLAOPS_HALF16_MIXED_OP(<=, MLAOPS_HALF16_BOOL)
  MLAOPS_HALF16_MIXED_OP(>, MLAOPS_HALF16_BOOL)
  MLAOPS_HALF16_MIXED_OP(>=, MLAOPS_HALF16_BOOL)
#undef MLAOPS_HALF16_MIXED_OP
#undef MLAOPS_HALF16_SAME
#undef MLAOPS_HALF16_BOOL

  // Prints the value as a float (std::ostream << float); needs <ostream> where it is used.
  template <class CharT, class Traits>
  friend std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os, D h) {
    return os << static_cast<float>(h);
  }

 private:
  D& self() noexcept { return static_cast<D&>(*this); }
  const D& self() const noexcept { return static_cast<const D&>(*this); }
};

struct fp16_conv {
  static uint16_t from_float(float f) noexcept { return mlaops::float_to_fp16(f); }
  static uint16_t from_double(double d) noexcept { return mlaops::double_to_fp16(d); }
  static float to_float(uint16_t h) noexcept { return mlaops::fp16_to_float(h); }
  static constexpr uint16_t kInfBits = 0x7c00u;
};
struct bf16_conv {
  static uint16_t from_float(float f) noexcept { return mlaops::float_to_bf16(f); }
  static uint16_t from_double(double d) noexcept { return mlaops::double_to_bf16(d); }
  static float to_float(uint16_t h) noexcept { return mlaops::bf16_to_float(h); }
  static constexpr uint16_t kInfBits = 0x7f80u;
};

}  // namespace half_detail
}  // namespace op

#endif  // MLAOPS_ACLNN_OPDEV_HALF16_H_
