// 16 x 16 transposes of 16-bit elements, the packing step of flash attention's K^T panels:
// dst[c * 16 + k] = src[k][c] for 16 source rows k (16 consecutive elements each, any address)
// and 16 channels c. Kernels never see API structs.
#pragma once

#include <cstdint>

#include "mlaops/runtime.h"

namespace mlaops::kernels {

using Transpose16Fn = void (*)(const uint16_t* const src[16], uint16_t* dst);

// The kernel of an ISA level (AVX-512: three rounds of vpermt2w; otherwise portable code).
Transpose16Fn transpose16_kernel(Isa isa);
void transpose16_scalar(const uint16_t* const src[16], uint16_t* dst);
void transpose16_avx512(const uint16_t* const src[16], uint16_t* dst);

}  // namespace mlaops::kernels
