// Scalar numeric conversions shared by the kernels, the float64 reference and the tests.
//
// Rounding rules (docs/numerics.md):
//  * float -> bf16 / fp16: round to nearest, ties to even (CANN's CAST_RINT); overflow gives
//    +-inf; NaN stays NaN (quiet) with its sign.
//  * double -> bf16 / fp16: rounded once, directly from the double (no double rounding).
//  * float -> int8 (cache / dynamic quant): clamp(rint(v), -128, 127) with ties to even;
//    NaN gives 0 (defined, never UB).
//  * float -> int8 "round" variant: ties away from zero, same saturation and NaN rule.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mlaops {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- bfloat16 ----
inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// ---- IEEE binary16 ----
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24, exact
    return bits_float(sign | float_bits(v));
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_fp16(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 -> inf
  if (ax < 0x38800000u) {                                               // half subnormal or 0
    if (ax < 0x33000000u) return static_cast<uint16_t>(sign);         // < 2^-25 -> 0
    const uint32_t e = ax >> 23;                                        // 102..112
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;                                    // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t v = ax - (112u << 23);
  v += 0xfffu + ((v >> 13) & 1u);
  return static_cast<uint16_t>(sign | (v >> 13));
}

// Truncates d to float and folds the lost bits into a sticky bit, so that a following
// float -> 16-bit round to nearest even rounds exactly as a direct rounding of d would.
inline float double_to_float_sticky(double d) {
  if (std::isnan(d)) return static_cast<float>(d);
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return bits_float(float_bits(f) | 1u);
}
inline uint16_t double_to_bf16(double d) { return float_to_bf16(double_to_float_sticky(d)); }
inline uint16_t double_to_fp16(double d) { return float_to_fp16(double_to_float_sticky(d)); }

// Round-trips: the value a 16-bit store of v would read back.
inline float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }
inline float round_fp16(float v) { return fp16_to_float(float_to_fp16(v)); }
inline double round_bf16(double v) { return bf16_to_float(double_to_bf16(v)); }
inline double round_fp16(double v) { return fp16_to_float(double_to_fp16(v)); }

// ---- int8 saturation ----
inline int8_t saturate_int8(double r) {  // r already rounded; NaN -> 0
  if (!(r == r)) return 0;
  if (r > 127.0) return 127;
  if (r < -128.0) return -128;
  return static_cast<int8_t>(r);
}
// clamp(rint(v), -128, 127), ties to even.
inline int8_t int8_rint_sat(double v) { return saturate_int8(std::nearbyint(v)); }
// clamp(round(v), -128, 127), ties away from zero.
inline int8_t int8_round_sat(double v) { return saturate_int8(std::round(v)); }

}  // namespace mlaops
