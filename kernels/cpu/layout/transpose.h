// 16 x 16 transposes of 16-bit elements, the packing step of flash attention's K^T panels:
// dst[c * 16 + k] = src[k][c] for 16 source rows k (16 consecutive elements each, any address)
// and 16 channels c. Kernels never see API structs.
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {

using Transpose16Fn = void (*)(const uint16_t* const src[16], uint16_t* dst);

// The family "transpose16" (transpose.cpp): transpose16_avx512 (three rounds of vpermt2w),
// transpose16_scalar.
const KernelTable<Transpose16Fn>& transpose16_family();
// The kernel the family picks for the active level `isa` (counted as a use).
Transpose16Fn transpose16_kernel(Isa isa);

void transpose16_scalar(const uint16_t* const src[16], uint16_t* dst);
#if defined(MLAOPS_ARCH_X86_64)
void transpose16_avx512(const uint16_t* const src[16], uint16_t* dst);
#endif

}  // namespace mlaops::kernels
