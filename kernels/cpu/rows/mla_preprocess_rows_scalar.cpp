// Scalar MlaPreprocess row kernels: the rules of mla_preprocess_rows.h.
#include <cmath>

#include "kernels/cpu/rows/mla_preprocess_rows.h"

namespace mlaops::kernels {
namespace {

void load_dt_scalar(const uint16_t* x, bool fp16, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16 ? fp16_to_float(x[i]) : bf16_to_float(x[i]);
}
void store_dt_scalar(const float* x, bool fp16, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16 ? float_to_fp16(x[i]) : float_to_bf16(x[i]);
}
void round_dt_scalar(float* x, bool fp16, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = detail::round_dt(x[i], fp16);
}
float sum_sq_scalar(const float* x, int64_t n) {
  float s[16] = {};
  for (int64_t i = 0; i < n; ++i) s[i % 16] = std::fma(x[i], x[i], s[i % 16]);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) s[l] += s[l + w];
  return s[0];
}
void norm_scalar(const float* x, float r, const float* g, const float* b, int64_t n, float* y) {
  if (b) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::fma(x[i] / r, g[i], b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] / r * g[i];
  }
}
void quant_f16_scalar(const float* y, float a, float o, int64_t n, int8_t* q) {
  for (int64_t i = 0; i < n; ++i) q[i] = detail::quant_f16(y[i], a, o);
}
void dequant_scalar(const int32_t* acc, const int32_t* bias, const float* ds, float s, bool fp16, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = detail::dequant(acc[i], bias, i, ds[i], s, fp16);
}
void scale_i8_scalar(const float* x, float s, bool fp16, int64_t n, int8_t* q) {
  for (int64_t i = 0; i < n; ++i) q[i] = detail::scale_i8(x[i], s, fp16);
}

}  // namespace

constinit const MlaPreprocessRowKernels mla_preprocess_rows_scalar{
    load_dt_scalar, store_dt_scalar, round_dt_scalar, sum_sq_scalar,
    norm_scalar, quant_f16_scalar, dequant_scalar, scale_i8_scalar};

}  // namespace mlaops::kernels
