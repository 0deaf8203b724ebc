// Row kernels of MlaPreprocess's element-wise stages (docs/ops/mla_preprocess.md), in fp32 as the
// vendor kernel computes them. Every ISA gives the same bits as the scalar rules below (the element
// rules in `detail`; sum_sq has a fixed 16-lane summation order). Multiply-adds are explicit fused
// operations everywhere (GCC contracts a * b + c in C++ wherever FMA is available, so unfused ones
// would differ between the scalar and the SIMD files). The 16-bit dtype is fp16 when `fp16`, else
// bf16; conversions round to nearest even (NaN quiet, see numeric.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/kernel_registry.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {

struct MlaPreprocessRowKernels {
  // y[i] = value of the dtype bits x[i] (exact)
  void (*load_dt)(const uint16_t* x, bool fp16, float* y, int64_t n);
  // y[i] = dtype bits of x[i]
  void (*store_dt)(const float* x, bool fp16, uint16_t* y, int64_t n);
  // x[i] = round_dt(x[i]): the value a dtype store would read back
  void (*round_dt)(float* x, bool fp16, int64_t n);
  // sum of x[i]^2 in fp32: lane l = i % 16 accumulates s[l] = fma(x[i], x[i], s[l]) in index
  // order, then s[l] += s[l + 8] (l < 8), s[l] += s[l + 4], s[l] += s[l + 2], s[0] + s[1].
  float (*sum_sq)(const float* x, int64_t n);
  // y[i] = fma(x[i] / r, g[i], b[i])   (b null: x[i] / r * g[i])
  void (*norm)(const float* x, float r, const float* g, const float* b, int64_t n, float* y);
  // q[i] = detail::quant_f16(y[i], a, o): fp16(fma(y, a, o)), clamp [-128, 127], rint (NaN -> 0)
  void (*quant_f16)(const float* y, float a, float o, int64_t n, int8_t* q);
  // y[i] = detail::dequant(acc[i], bias, ds[i], s): round_dt(float(acc + bias[i]) * ds[i]) with
  // bias (the int32 sum wraps), else round_dt(float(acc) * ds[i] * s)
  void (*dequant)(const int32_t* acc, const int32_t* bias, const float* ds, float s, bool fp16, int64_t n, float* y);
  // q[i] = int8_rint_sat(round_dt(x[i]) * s)   (fp32 product: exact for two dtype values)
  void (*scale_i8)(const float* x, float s, bool fp16, int64_t n, int8_t* q);
};

// The family "mla_preprocess_rows" (mla_preprocess_rows.cpp): mla_preprocess_rows_avx512,
// mla_preprocess_rows_avx2, mla_preprocess_rows_scalar.
const KernelTable<const MlaPreprocessRowKernels*>& mla_preprocess_rows_family();
// The set the family picks for the active level `isa` (counted as a use).
const MlaPreprocessRowKernels& mla_preprocess_row_kernels(Isa isa);

// The kernel sets of mla_preprocess_rows_<isa>.cpp, constant-initialised (listing them runs no
// ISA code).
extern const MlaPreprocessRowKernels mla_preprocess_rows_scalar;
#if defined(MLAOPS_ARCH_X86_64)
extern const MlaPreprocessRowKernels mla_preprocess_rows_avx2;
extern const MlaPreprocessRowKernels mla_preprocess_rows_avx512;
#endif

namespace detail {

inline float round_dt(float v, bool fp16) { return fp16 ? round_fp16(v) : round_bf16(v); }

inline int8_t quant_f16(float y, float a, float o) {
  float h = round_fp16(std::fma(y, a, o));
  if (!(h == h)) return 0;
  h = h < -128.0f ? -128.0f : (h > 127.0f ? 127.0f : h);
  return static_cast<int8_t>(std::nearbyint(h));
}

inline float dequant(int32_t acc, const int32_t* bias, int64_t i, float ds, float s, bool fp16) {
  if (bias) {
    const int32_t a = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias[i]));
    return round_dt(static_cast<float>(a) * ds, fp16);
  }
  return round_dt(static_cast<float>(acc) * ds * s, fp16);
}

inline int8_t scale_i8(float x, float s, bool fp16) {
  return int8_rint_sat(static_cast<double>(round_dt(x, fp16) * s));
}

}  // namespace detail
}  // namespace mlaops::kernels
