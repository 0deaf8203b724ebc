// KV antiquant (FusedInferAttentionScore, docs/ops/fused_infer_attention_score.md): one row of an INT8 (or packed INT4)
// key / value dequantised, unrounded, as two parts in the query dtype:
//   v = (float(x[d]) + offset) * scale                         (fp32 arithmetic)
//   dst[d]    = round_to_dtype(v)                              (RNE; bf16: an fp32 subnormal gives
//   dst_lo[d] = round_to_dtype(v - float(dst[d]))               +-0, as vcvtne2ps2bf16 does)
// with per-channel parameters (ch_scale[d], ch_offset[d]; offset nullable) or, when ch_scale is
// null, one scale / offset for the whole row; dst + dst_lo carries v to about 16 (bf16) / 22
// (fp16) significant bits (an infinite dst carries v alone: dst_lo 0). Bit-identical on every ISA.
#pragma once

#include <cstdint>

#include "core/kernel_registry.h"
#include "mlaops/runtime.h"

namespace mlaops::kernels {

// x: [n] int8; ch_scale / ch_offset: [n] floats or null; dst, dst_lo: [n] bf16 / fp16 bits.
using DequantRowFn = void (*)(const int8_t* x, int64_t n, const float* ch_scale, const float* ch_offset,
                              float row_scale, float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo);

// The family "dequant_row" (dequant_row.cpp): dequant_row_avx512 (vcvtne2ps2bf16: AVX512_BF16),
// dequant_row_scalar.
const KernelTable<DequantRowFn>& dequant_row_family();
// The kernel the family picks for the active level `isa` (counted as a use).
DequantRowFn dequant_row_kernel(Isa isa);

// Packed INT4: element k of the row is the nibble k % 2 of byte x[k / 2] (k even: bits 0..3,
// odd: bits 4..7), two's complement (a nibble >= 8 is the value - 16). This is the vendor's INT32
// container (8 nibbles per word, nibble k = bits [4k, 4k + 3]) read byte by byte on a
// little-endian host. n is even; the same rule and rounding as the INT8 rows.
using DequantRow4Fn = void (*)(const uint8_t* x, int64_t n, const float* ch_scale, const float* ch_offset,
                               float row_scale, float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo);
// The family "dequant_row4": dequant_row4_avx512 (AVX512_BF16), dequant_row4_scalar.
const KernelTable<DequantRow4Fn>& dequant_row4_family();
DequantRow4Fn dequant_row4_kernel(Isa isa);

void dequant_row_scalar(const int8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                        float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo);
void dequant_row4_scalar(const uint8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                         float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo);
#if defined(MLAOPS_ARCH_X86_64)
void dequant_row4_avx512(const uint8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                         float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo);
void dequant_row_avx512(const int8_t* x, int64_t n, const float* ch_scale, const float* ch_offset, float row_scale,
                        float row_offset, bool fp16, uint16_t* dst, uint16_t* dst_lo);
#endif

}  // namespace mlaops::kernels
