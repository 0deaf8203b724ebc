#include "kernels/cpu/mla_preprocess_rows.h"

namespace mlaops::kernels {

const MlaPreprocessRowKernels& mla_preprocess_row_kernels(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return mla_preprocess_row_kernels_avx512();
    case Isa::kAvx2: return mla_preprocess_row_kernels_avx2();
    case Isa::kScalar: break;
  }
  return mla_preprocess_row_kernels_scalar();
}

}  // namespace mlaops::kernels
