// Scalar KV antiquant rows, and the family (dequant_row.h): its rows, best first, and the pick.
#include "kernels/cpu/quant/dequant_row.h"

#include <cmath>
#include <limits>

#include "mlaops/numeric.h"

namespace mlaops::kernels {

namespace {

// v rounded to the query dtype (bf16: an fp32 subnormal gives +-0, as vcvtne2ps2bf16 does).
inline uint16_t round_to(float v, bool fp16) {
  if (!fp16 && std::fabs(v) < std::numeric_limits<float>::min()) v = std::copysign(0.0f, v);  // subnormal -> +-0
  return fp16 ? float_to_fp16(v) : float_to_bf16(v);
}

// Element d: v = (x + offset) * scale in fp32, rounded to the query dtype into dst, the residual
// v - rounded into dst_lo.
inline void dequant_one(int x, int64_t d, const float* ch_scale, const float* ch_offset, float row_scale,
                        float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo) {
  const float off = ch_scale ? (ch_offset ? ch_offset[d] : 0.0f) : row_offset;
  const float sc = ch_scale ? ch_scale[d] : row_scale;
  const float v = (static_cast<float>(x) + off) * sc;
  dst[d] = round_to(v, fp16);
  // +-inf: the rounded value carries it, residual 0 (inf - inf would be NaN)
  const float h = fp16 ? fp16_to_float(dst[d]) : bf16_to_float(dst[d]);
  dst_lo[d] = round_to(std::isinf(h) ? 0.0f : v - h, fp16);
}

}  // namespace

void dequant_row_scalar(const int8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                        float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo) {
  for (int64_t d = 0; d < n; ++d) dequant_one(x[d], d, ch_scale, ch_offset, row_scale, row_offset, fp16, dst, dst_lo);
}

void dequant_row4_scalar(const uint8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                         float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo) {
  for (int64_t d = 0; d < n; ++d) {
    const int nib = (x[d / 2] >> (4 * (d % 2))) & 15;
    dequant_one(nib >= 8 ? nib - 16 : nib, d, ch_scale, ch_offset, row_scale, row_offset, fp16, dst, dst_lo);
  }
}

const KernelTable<DequantRowFn>& dequant_row_family() {
  using Table = KernelTable<DequantRowFn>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"dequant_row_avx512", Isa::kAvx512, gate_avx512_bf16, kNeedsAvx512Bf16}, dequant_row_avx512},
#endif
      {{"dequant_row_scalar", Isa::kScalar, gate_always, ""}, dequant_row_scalar},
  };
  static const Table table("dequant_row", rows);
  return table;
}

DequantRowFn dequant_row_kernel(Isa isa) { return dequant_row_family().pick(isa); }

const KernelTable<DequantRow4Fn>& dequant_row4_family() {
  using Table = KernelTable<DequantRow4Fn>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"dequant_row4_avx512", Isa::kAvx512, gate_avx512_bf16, kNeedsAvx512Bf16}, dequant_row4_avx512},
#endif
      {{"dequant_row4_scalar", Isa::kScalar, gate_always, ""}, dequant_row4_scalar},
  };
  static const Table table("dequant_row4", rows);
  return table;
}

DequantRow4Fn dequant_row4_kernel(Isa isa) { return dequant_row4_family().pick(isa); }

}  // namespace mlaops::kernels
