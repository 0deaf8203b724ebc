// Scalar KV antiquant rows and the ISA choice (dequant_kv.h).
#include "kernels/cpu/dequant_kv.h"

#include <cmath>
#include <limits>

#include "mlaops/numeric.h"

namespace mlaops::kernels {

void dequant_row_scalar(const int8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                        float row_offset, bool fp16, uint16_t* dst) {
  for (int64_t d = 0; d < n; ++d) {
    const float off = ch_scale ? (ch_offset ? ch_offset[d] : 0.0f) : row_offset;
    const float sc = ch_scale ? ch_scale[d] : row_scale;
    float v = (static_cast<float>(x[d]) + off) * sc;
    if (!fp16 && std::fabs(v) < std::numeric_limits<float>::min()) v = std::copysign(0.0f, v);  // subnormal -> +-0
    dst[d] = fp16 ? float_to_fp16(v) : float_to_bf16(v);
  }
}

DequantRowFn dequant_row_kernel(Isa isa) {
  if (isa == Isa::kAvx512) return dequant_row_avx512;
  return dequant_row_scalar;
}

}  // namespace mlaops::kernels
