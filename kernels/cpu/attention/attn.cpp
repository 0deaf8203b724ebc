// The attention family's rows (attn.h): what each kernel runs, and its host gate.
#include "kernels/cpu/attention/attn.h"

#include "kernels/cpu/attention/attn_lanes.h"

namespace mlaops::kernels {
namespace {

#if defined(MLAOPS_ARCH_X86_64)  // the rules of the x86 rows
// Shared by both decode kernels: one query row per head, no rope part, G <= 16 (run as the next
// power of two: kernels/cpu/attention/attn_decode.h), no position of the range masked by the rule
// (an explicit mask is applied to the block's scores).
const char* decode_shape(const AttnShape& s) {
  if (s.R != 1) return "more than one query row per head";
  if (s.DR != 0) return "a rope part (queryRope / keyRope)";
  if (s.G < 1 || s.G > 16) return "a group size G above 16";
  if (!s.full_range) return "positions masked inside the KV range";
  if (s.fp16_softmax) return "the FP16 high-performance softmax (innerPrecise bit 0)";
  return nullptr;
}

const char* why_not_decode_i8(const AttnShape& s) {
  if (!s.kv_int8) return "key / value are not INT8";
  // contiguous rows, or INT8 NZ chunks of 32 channels (both key and value)
  if ((s.k_c0 < s.QD || s.v_c0 < s.VD) && (s.k_c0 != 32 || s.v_c0 != 32)) return "channel chunks other than 32";
  if (const char* w = decode_shape(s)) return w;
  // QD <= 512: the int32 dot products stay below 2^31 (512 * 32767 * 128 < 2^31)
  if (s.QD <= 0 || s.VD <= 0 || s.QD % 32 != 0 || s.VD % 32 != 0 || s.QD > 512)
    return "head dims not multiples of 32 (or D > 512)";
  return nullptr;
}

// Channels contiguous (c0 >= D) or NZ chunks of 16.
bool channels_ok(int64_t c0, int64_t D) { return c0 >= D || c0 == 16; }

const char* why_not_decode(const AttnShape& s) {
  if (s.kv_int8) return "INT8 rows (dequantised first)";
  if (const char* w = decode_shape(s)) return w;
  if (s.QD <= 0 || s.VD <= 0 || s.QD % 16 != 0 || s.VD % 16 != 0) return "head dims not multiples of 16";
  if (!channels_ok(s.k_c0, s.QD) || !channels_ok(s.v_c0, s.VD) || (s.k_c0 < s.QD) != (s.v_c0 < s.VD))
    return "key / value channel chunks differ";
  return nullptr;
}

const char* why_not_lanes(const AttnShape& s) {
  if (s.kv_int8) return "INT8 rows (dequantised first)";
  if (s.G * s.R < lanes::kMinRows) return "fewer than 16 query rows per item";
  if (s.fp16_softmax) return "the FP16 high-performance softmax (innerPrecise bit 0) runs on the panel kind";
  return nullptr;
}

#endif

const char* why_not_panel(const AttnShape& s) { return s.kv_int8 ? "INT8 rows (dequantised first)" : nullptr; }

}  // namespace

const KernelTable<AttnRow>& attn_family() {
  using Row = KernelTable<AttnRow>::Row;
  static const Row kRows[] = {
#if defined(MLAOPS_ARCH_X86_64)
    {{"attn_avx512_decode_i8", Isa::kAvx512, gate_avx512_bf16_vnni, kNeedsAvx512Bf16Vnni},
     {AttnKind::kDecodeI8, why_not_decode_i8, nullptr, flash_decode_i8_kernel_avx512(), nullptr, nullptr}},
    {{"attn_avx512_decode", Isa::kAvx512, gate_avx512_bf16, kNeedsAvx512Bf16},
     {AttnKind::kDecode, why_not_decode, flash_decode_kernel_avx512(), nullptr, nullptr, nullptr}},
    {{"attn_avx512_lanes", Isa::kAvx512, gate_avx512_bf16, kNeedsAvx512Bf16},
     {AttnKind::kLanes, why_not_lanes, nullptr, nullptr, &lanes::run_avx512, &lanes::run_group_avx512}},
#endif
    {{"attn_scalar_panel", Isa::kScalar, gate_always, ""}, {AttnKind::kPanel, why_not_panel}},
  };
  static const KernelTable<AttnRow> table("attn", kRows);
  return table;
}

void attn_run(const AttnRow& row, const FlashKernels& panel, const FlashShape& shape, const FlashItem* items, int64_t n,
              void* scratch) {
  switch (row.kind) {
    case AttnKind::kDecode: row.decode(items, n, scratch); return;
    case AttnKind::kLanes:
      if (n > 1 && flash_attn_lanes_group(items, n, shape, row.lanes_group, scratch)) return;
      for (int64_t i = 0; i < n; ++i) flash_attn_lanes(items[i], shape, row.lanes, scratch);
      return;
    case AttnKind::kPanel:
    case AttnKind::kDecodeI8:
      break;
  }
  for (int64_t i = 0; i < n; ++i) flash_attn_panel(items[i], shape, panel, scratch);
}

}  // namespace mlaops::kernels
