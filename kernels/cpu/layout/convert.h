// Row conversions of the operators' epilogues, bit-identical on every ISA to the scalar rules of
// include/mlaops/numeric.h (round to nearest even to bf16, NaN quiet; int8 round half away from
// zero, or to even for mul_rint_i8, with saturation, NaN -> 0).
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {

struct ConvertKernels {
  // y[i] = float_to_bf16(x[i])                                  x: [n] fp32, y: [n] bf16 bits
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);
  // x[i] = round_bf16(x[i]) (the value a bf16 store would read back)
  void (*round_bf16)(float* x, int64_t n);
  // max_i |x[i]| (NaN elements, quiet or signaling, ignored; 0 for n == 0)
  float (*absmax)(const float* x, int64_t n);
  // y[i] = int8_round_sat(x[i] / d)   (d != 0; IEEE division, then ties away from zero)
  void (*div_round_i8)(const float* x, float d, int8_t* y, int64_t n);
  // y[i] = int8_rint_sat(x[i] * s)     (the fp32 product, then ties to even; NaN -> 0)
  void (*mul_rint_i8)(const float* x, float s, int8_t* y, int64_t n);
  // MlaPrologV2's RoPE of one interleaved row, kernels::rope_deinterleave_row (mla_rows.h): float64
  // products of the fp32 and bf16 values (exact), then one rounding to fp32; dr even
  void (*rope_deinterleave)(const float* v, const uint16_t* c, const uint16_t* s, int64_t dr, float* out);
  // MlaPreprocess's RoPE of one row, kernels::rope_half_row (mla_rows.h): the same, with c, s in
  // bf16 or fp16 (`fp16`); every product exact in float64
  void (*rope_half)(const float* v, const uint16_t* c, const uint16_t* s, bool fp16, int64_t dr, float* out);
};

// The family "convert" (convert.cpp): convert_avx512, convert_avx2, convert_scalar.
const KernelTable<const ConvertKernels*>& convert_family();
// The set the family picks for the active level `isa` (counted as a use).
const ConvertKernels& convert_kernels(Isa isa);

// The kernel sets of convert_<isa>.cpp, constant-initialised (listing them runs no ISA code).
extern const ConvertKernels convert_scalar;
#if defined(MLAOPS_ARCH_X86_64)
extern const ConvertKernels convert_avx2;
extern const ConvertKernels convert_avx512;
#endif

}  // namespace mlaops::kernels
