#include "kernels/cpu/rows/mla_rows.h"

#include "kernels/cpu/layout/convert.h"

#include <cmath>

#include "mlaops/numeric.h"

namespace mlaops::kernels {

void rms_norm_row(const float* v, const uint16_t* gamma, int64_t n, double eps, float* y) {
  double ss = 0.0;
  for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(v[j]) * v[j];
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(v[j] * r * bf16_to_float(gamma[j]));
}

void rope_deinterleave_row(const float* v, const uint16_t* c, const uint16_t* s, int64_t dr, float* out) {
  const int64_t h = dr / 2;
  for (int64_t i = 0; i < h; ++i) {
    const double even = v[2 * i], odd = v[2 * i + 1];
    out[i] = static_cast<float>(even * bf16_to_float(c[i]) - odd * bf16_to_float(s[i]));
    out[h + i] = static_cast<float>(odd * bf16_to_float(c[h + i]) + even * bf16_to_float(s[h + i]));
  }
}

void rope_half_row(const float* v, const uint16_t* c, const uint16_t* s, bool fp16, int64_t dr, float* out) {
  const int64_t h = dr / 2;
  auto ld = [fp16](uint16_t x) { return static_cast<double>(fp16 ? fp16_to_float(x) : bf16_to_float(x)); };
  for (int64_t i = 0; i < h; ++i) {
    out[i] = static_cast<float>(v[i] * ld(c[i]) - v[h + i] * ld(s[i]));
    out[h + i] = static_cast<float>(v[h + i] * ld(c[h + i]) + v[i] * ld(s[h + i]));
  }
}

float dyn_quant_row(const ConvertKernels& cv, const float* v, int64_t n, int8_t* q) {
  const float m = cv.absmax(v, n);  // NaN ignored
  if (m == 0.0f) {
    for (int64_t j = 0; j < n; ++j) q[j] = 0;
    return 0.0f;
  }
  cv.mul_rint_i8(v, 127.0f / m, q, n);
  return m / 127.0f;
}

}  // namespace mlaops::kernels
