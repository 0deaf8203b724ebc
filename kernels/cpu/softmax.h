// Row pieces of the online softmax in flash attention, over one KV block of a query row.
// `valid` marks the unmasked positions (1 = attend). Kernels never see API structs.
#pragma once

#include <cstdint>

#include "mlaops/runtime.h"

namespace mlaops::kernels {

struct SoftmaxKernels {
  // s[c] *= scale for every valid c; returns max over the valid c of the scaled s (-inf if none).
  float (*scale_max)(float* s, const uint8_t* valid, int64_t n, float scale);
  // e[c] = valid[c] ? exp(s[c] - m) : 0; returns the sum of e (fp32). m is finite.
  // The SIMD versions use a degree-6 polynomial on [-ln2/2, ln2/2] after range reduction
  // (relative error < 3e-7, about 2 float ulps); the scalar one uses std::exp.
  float (*exp_sum)(const float* s, const uint8_t* valid, int64_t n, float m, float* e);
  const char* name;
};

const SoftmaxKernels& softmax_kernels(Isa isa);
const SoftmaxKernels& softmax_kernels_scalar();
const SoftmaxKernels& softmax_kernels_avx2();
const SoftmaxKernels& softmax_kernels_avx512();

}  // namespace mlaops::kernels
