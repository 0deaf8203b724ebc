// The AVX-512 GEMM kernels of the files other than gemm_avx512.cpp, for its kernel set
// (gemm_avx512): the int8 ones (gemm_s8_avx512.cpp) and the transposed-NZ bf16 / fp16 / int8
// drivers (gemm_t_avx512.cpp). Call them through the GEMM families (gemm.h), whose rows check the
// CPU and the call first.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/gemm/gemm.h"

namespace mlaops::kernels {

// gemm_s8_avx512.cpp (AVX512_VNNI)
void s8_avx512(const GemmArgs& g);
void s8_rowsum_avx512(const int8_t* A, int64_t lda, int64_t M, int64_t K, int32_t* out);
// s8_t for M > kGemmTStreamMaxM: W^T tiles transposed into the s8 kernel's packed panels;
// rowsum: A's row sums [M].
void s8_t_panels_avx512(const GemmTArgs& g, const int32_t* rowsum);

// gemm_avx512.cpp (AVX512_BF16): bf16_t for M > kGemmTStreamMaxM, W^T tiles transposed into the
// bf16 kernel's NZ panels.
void bf16_t_panels_avx512(const GemmTArgs& g);
// gemm_avx512.cpp: f16_t for M > kGemmTStreamMaxM, the same with the fp16 panel tiles.
void f16_t_panels_avx512(const GemmTArgs& g);

// gemm_t_avx512.cpp
void s8_t_avx512(const GemmTArgs& g);    // needs AVX512_VNNI
void bf16_t_avx512(const GemmTArgs& g);  // needs AVX512_BF16
void f16_t_avx512(const GemmTArgs& g);

}  // namespace mlaops::kernels
