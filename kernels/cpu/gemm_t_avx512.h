// The AVX-512 transposed-NZ GEMMs (gemm_t_avx512.cpp), for the AVX-512 kernel set in
// gemm_avx512.cpp. Call them through gemm_kernels() (gemm.h), whose rows check the CPU first.
#pragma once

#include "kernels/cpu/gemm.h"

namespace mlaops::kernels {

void s8_t_avx512(const GemmTArgs& g);    // needs AVX512_VNNI
void bf16_t_avx512(const GemmTArgs& g);  // needs AVX512_BF16
void f16_t_avx512(const GemmTArgs& g);
// s8_t for M > kGemmTStreamMaxM (gemm_avx512.cpp): W^T tiles transposed into the s8 kernel's
// packed panels; rowsum: A's row sums [M].
void s8_t_panels_avx512(const GemmTArgs& g, const int32_t* rowsum);

}  // namespace mlaops::kernels
