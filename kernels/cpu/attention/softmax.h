// Row pieces of the online softmax in flash attention, over one KV block of a query row.
// `valid` marks the unmasked positions (1 = attend). Kernels never see API structs.
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {

struct SoftmaxKernels {
  // s[c] *= scale for every valid c; returns max over the valid c of the scaled s (-inf if none),
  // NaN when a valid scaled score is NaN (the row is then NaN, not empty: docs/numerics.md).
  float (*scale_max)(float* s, const uint8_t* valid, int64_t n, float scale);
  // e[c] = valid[c] ? exp(s[c] - m) : 0; returns the sum of e (fp32). m is finite.
  // The SIMD versions use a degree-6 polynomial on [-ln2/2, ln2/2] after range reduction
  // (relative error < 3e-7, about 2 float ulps); the scalar one uses std::exp.
  float (*exp_sum)(const float* s, const uint8_t* valid, int64_t n, float m, float* e);
};

// The family "softmax" (softmax.cpp): softmax_avx512, softmax_avx2, softmax_scalar.
const KernelTable<const SoftmaxKernels*>& softmax_family();
// The set the family picks for the active level `isa` (counted as a use).
const SoftmaxKernels& softmax_kernels(Isa isa);

// The kernel sets of softmax_<isa>.cpp, constant-initialised (listing them runs no ISA code).
extern const SoftmaxKernels softmax_scalar;
#if defined(MLAOPS_ARCH_X86_64)
extern const SoftmaxKernels softmax_avx2;
extern const SoftmaxKernels softmax_avx512;
#endif

}  // namespace mlaops::kernels
