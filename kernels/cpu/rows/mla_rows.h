// Row-wise pieces of the MLA prologue operators (RmsNorm, RoPE, dynamic quant), fp32 in and
// out with float64 accumulation of the reductions. Portable C++ (the dynamic quant on the
// convert kernels of the active ISA). Kernels never see API structs.
#pragma once

#include <cstdint>

namespace mlaops::kernels {

struct ConvertKernels;

// y[j] = v[j] / sqrt(sum(v^2) / n + eps) * gamma[j]            v, y: [n] fp32; gamma: [n] bf16 bits
void rms_norm_row(const float* v, const uint16_t* gamma, int64_t n, double eps, float* y);

// MlaProlog's de-interleaving RoPE (docs/ops/mla_prolog.md), h = dr / 2:
//   u = [v[0], v[2], ..., v[dr-2], v[1], v[3], ..., v[dr-1]]
//   out[i] = u[i] c[i] - u[h+i] s[i],  out[h+i] = u[h+i] c[h+i] + u[i] s[h+i]   (i < h)
// v, out: [dr] fp32 (out may not alias v); c, s: [dr] bf16 bits.
void rope_deinterleave_row(const float* v, const uint16_t* c, const uint16_t* s, int64_t dr, float* out);

// MlaPreprocess's half-rotation RoPE (no de-interleave): out = v*c + rotate_half(v)*s with
// rotate_half(v) = [-v[h:], v[:h]].  c, s in the input dtype (bf16 or fp16 bits, `fp16` says
// which).
void rope_half_row(const float* v, const uint16_t* c, const uint16_t* s, bool fp16, int64_t dr, float* out);

// Per-row dynamic symmetric int8 quant: m = max|v|, q[j] = clamp(rint(v[j] * (127 / m))), returns
// the dequant scale m / 127 (NaN elements ignored in m). An all-zero row gives scale 0 and q = 0.
// Runs on the convert kernels `cv` of the active ISA (bit-identical on every ISA).
float dyn_quant_row(const ConvertKernels& cv, const float* v, int64_t n, int8_t* q);

}  // namespace mlaops::kernels
