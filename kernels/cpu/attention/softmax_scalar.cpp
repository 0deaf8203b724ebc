#include <cmath>
#include <limits>

#include "kernels/cpu/attention/softmax.h"

namespace mlaops::kernels {
namespace {

float scale_max_scalar(float* s, const uint8_t* valid, int64_t n, float scale) {
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (int64_t c = 0; c < n; ++c)
    if (valid[c]) {
      s[c] *= scale;
      if (s[c] > m) m = s[c];
      nan = nan || std::isnan(s[c]);
    }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

float exp_sum_scalar(const float* s, const uint8_t* valid, int64_t n, float m, float* e) {
  float sum = 0.0f;
  for (int64_t c = 0; c < n; ++c) {
    e[c] = valid[c] ? std::exp(s[c] - m) : 0.0f;
    sum += e[c];
  }
  return sum;
}

}  // namespace

constinit const SoftmaxKernels softmax_scalar{scale_max_scalar, exp_sum_scalar};

}  // namespace mlaops::kernels
