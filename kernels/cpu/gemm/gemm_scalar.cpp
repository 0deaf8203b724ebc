// Portable panel GEMM (any shape): the fallback and the kernels' own reference.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

float ld_bf16(uint16_t v) { return bf16_to_float(v); }
float ld_f16(uint16_t v) { return fp16_to_float(v); }
int32_t ld_s8(int8_t v) { return v; }

// The panel GEMM over any element type: T the stored type, Acc the accumulator, load the widening.
template <class T, class Acc, Acc (*load)(T)>
void panel_scalar(const GemmArgs& g) {
  const auto* A = static_cast<const T*>(g.A);
  const auto* B = static_cast<const T*>(g.B);
  auto* C = static_cast<Acc*>(g.C);
  const int64_t W = g.panel_width;
  for (int64_t m = 0; m < g.M; ++m) {
    for (int64_t n = g.n_begin; n < g.n_end; ++n) {
      const T* b = B + (n / W) * g.panel_stride + (n % W);
      const T* a = A + m * g.lda;
      Acc acc = 0;
      for (int64_t k = 0; k < g.K; ++k) acc += load(a[k]) * load(b[k * g.ldb]);
      C[m * g.ldc + n] = acc;
    }
  }
}
void bf16_scalar(const GemmArgs& g) { panel_scalar<uint16_t, float, ld_bf16>(g); }
void s8_scalar(const GemmArgs& g) { panel_scalar<int8_t, int32_t, ld_s8>(g); }
void f16_scalar(const GemmArgs& g) { panel_scalar<uint16_t, float, ld_f16>(g); }

// W^T NZ element (n, k) for a 16-row tile layout with c0 columns per k panel.
inline int64_t nzt_index(int64_t n, int64_t k, int64_t r1, int64_t c0) {
  return ((k / c0) * r1 + n / 16) * 16 * c0 + (n % 16) * c0 + (k % c0);
}

template <class T, class Acc, Acc (*load)(T)>
void gemm_t_scalar(const GemmTArgs& g, int64_t c0) {
  const auto* A = static_cast<const T*>(g.A);
  const auto* W = static_cast<const T*>(g.W);
  auto* C = static_cast<Acc*>(g.C);
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t n = g.n_begin; n < g.n_end; ++n) {
      Acc acc = 0;
      for (int64_t k = 0; k < g.K; ++k) acc += load(A[m * g.lda + k]) * load(W[nzt_index(n, k, g.r1, c0)]);
      C[m * g.ldc + n] = acc;
    }
}
void bf16_t_scalar(const GemmTArgs& g) { gemm_t_scalar<uint16_t, float, ld_bf16>(g, 16); }
void f16_t_scalar(const GemmTArgs& g) { gemm_t_scalar<uint16_t, float, ld_f16>(g, 16); }
void s8_t_scalar(const GemmTArgs& g) { gemm_t_scalar<int8_t, int32_t, ld_s8>(g, 32); }
void s8_rowsum_scalar(const int8_t* A, int64_t lda, int64_t M, int64_t K, int32_t* out) { s8_row_sums(A, lda, M, K, out); }

}  // namespace

constinit const GemmKernels gemm_scalar{bf16_scalar,   s8_scalar,   f16_scalar,      bf16_t_scalar,
                                        s8_t_scalar, f16_t_scalar, s8_rowsum_scalar};

}  // namespace mlaops::kernels
