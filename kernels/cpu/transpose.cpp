#include "kernels/cpu/transpose.h"

namespace mlaops::kernels {

void transpose16_scalar(const uint16_t* const src[16], uint16_t* dst) {
  for (int k = 0; k < 16; ++k)
    for (int c = 0; c < 16; ++c) dst[c * 16 + k] = src[k][c];
}

Transpose16Fn transpose16_kernel(Isa isa) {
  if (isa == Isa::kAvx512 && cpu_features().avx512bw) return transpose16_avx512;
  return transpose16_scalar;
}

}  // namespace mlaops::kernels
