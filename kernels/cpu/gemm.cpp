#include "kernels/cpu/gemm.h"

namespace mlaops::kernels {

const GemmKernels& gemm_kernels(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return gemm_kernels_avx512();
    case Isa::kAvx2: return gemm_kernels_avx2();
    case Isa::kScalar: break;
  }
  return gemm_kernels_scalar();
}

}  // namespace mlaops::kernels
