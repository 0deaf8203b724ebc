// Portable panel GEMM (any shape): the fallback and the kernels' own reference.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

void bf16_scalar(const GemmArgs& g) {
  const auto* A = static_cast<const uint16_t*>(g.A);
  const auto* B = static_cast<const uint16_t*>(g.B);
  auto* C = static_cast<float*>(g.C);
  const int64_t W = g.panel_width;
  for (int64_t m = 0; m < g.M; ++m) {
    for (int64_t n = g.n_begin; n < g.n_end; ++n) {
      const uint16_t* b = B + (n / W) * g.panel_stride + (n % W);
      const uint16_t* a = A + m * g.lda;
      float acc = 0.0f;
      for (int64_t k = 0; k < g.K; ++k) acc += bf16_to_float(a[k]) * bf16_to_float(b[k * g.ldb]);
      C[m * g.ldc + n] = acc;
    }
  }
}

void s8_scalar(const GemmArgs& g) {
  const auto* A = static_cast<const int8_t*>(g.A);
  const auto* B = static_cast<const int8_t*>(g.B);
  auto* C = static_cast<int32_t*>(g.C);
  const int64_t W = g.panel_width;
  for (int64_t m = 0; m < g.M; ++m) {
    for (int64_t n = g.n_begin; n < g.n_end; ++n) {
      const int8_t* b = B + (n / W) * g.panel_stride + (n % W);
      const int8_t* a = A + m * g.lda;
      int32_t acc = 0;
      for (int64_t k = 0; k < g.K; ++k) acc += static_cast<int32_t>(a[k]) * static_cast<int32_t>(b[k * g.ldb]);
      C[m * g.ldc + n] = acc;
    }
  }
}

}  // namespace

const GemmKernels& gemm_kernels_scalar() {
  static const GemmKernels k{bf16_scalar, s8_scalar, "scalar"};
  return k;
}

}  // namespace mlaops::kernels
