#include <cmath>

#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/rows/mla_rows.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

void f32_to_bf16_scalar(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float_to_bf16(x[i]);
}
void round_bf16_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = mlaops::round_bf16(x[i]);
}
float absmax_scalar(const float* x, int64_t n) {
  float m = 0.0f;  // NaNs (quiet or signaling) never compare greater: ignored
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > m) m = a;
  }
  return m;
}
void div_round_i8_scalar(const float* x, float d, int8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = int8_round_sat(x[i] / d);
}
void mul_rint_i8_scalar(const float* x, float s, int8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = int8_rint_sat(x[i] * s);
}

}  // namespace

constinit const ConvertKernels convert_scalar{f32_to_bf16_scalar, round_bf16_scalar, absmax_scalar,
                                              div_round_i8_scalar, mul_rint_i8_scalar,
                                              rope_deinterleave_row, rope_half_row};

}  // namespace mlaops::kernels
