// Flash decode, portable part: eligibility, scratch layout, the final row write and the kernel
// table. The AVX-512 kernel is kernels/cpu/flash_decode_avx512.cpp; the AVX2 and scalar levels
// have no decode kernel and run the generic flash attention item (kernels/cpu/flash_attn.cpp).
#include "kernels/cpu/flash_decode.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "mlaops/numeric.h"

namespace mlaops::kernels {
namespace {

constexpr int64_t kAlign = 64;
constexpr int64_t ru(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

struct Layout {
  int64_t o, s, p, m, l, alpha, q, k_off, v_off, total;
};

Layout layout(int64_t n, int64_t G, int64_t QD, int64_t VD, bool fp16) {
  Layout y;
  int64_t off = 0;
  auto take = [&](int64_t bytes) {
    const int64_t at = off;
    off = ru(off + bytes, kAlign);
    return at;
  };
  const int64_t nG = n * G, B = kFlashDecodeBlock;
  y.o = take(nG * ru(VD, 32) * 4);
  y.s = take((B + 16) * nG * 4);
  y.p = take(B / 2 * nG * 4);
  y.m = take(nG * 4);
  y.l = take(nG * 4);
  y.alpha = take(nG * 4);
  y.q = take(fp16 ? nG * QD * 4 : ru(QD, 32) * nG * 2);
  y.k_off = take(2 * B * 8);
  y.v_off = take(2 * B * 8);
  y.total = off;
  return y;
}

// Channels of a key / value source: contiguous (c0 >= D) or NZ (c0 == 16).
bool channels_ok(const FlashKv& kv, int64_t D) { return kv.c0 >= D || kv.c0 == 16; }
bool is_nz(const FlashKv& kv, int64_t D) { return kv.c0 < D; }

bool same_addressing(const FlashKv& a, const FlashKv& b) {
  return a.block_ids == b.block_ids && a.block_size == b.block_size && a.blk_stride == b.blk_stride &&
         a.slot_stride == b.slot_stride && a.c0 == b.c0 && a.c0_stride == b.c0_stride;
}

// Shared by both kernels: one query row per head, G a power of two <= 16, no rope part, no
// explicit mask, and mask deltas that keep every column of [kv_begin, kv_end).
bool decode_item_ok(const FlashItem& it) {
  if (it.R != 1 || it.DR != 0 || it.mask != nullptr) return false;
  if (it.G != 1 && it.G != 2 && it.G != 4 && it.G != 8 && it.G != 16) return false;
  return it.kv_end <= it.kv_begin ||
         (it.row0 + it.lo_delta <= it.kv_begin && it.row0 + it.hi_delta >= it.kv_end - 1);
}

// n a power of two <= 16 and every item shaped like the first (shape, KV range, scale, outputs).
bool same_group(const FlashItem* items, int64_t n) {
  if (n < 1 || n > 16 || (n & (n - 1)) != 0) return false;
  const FlashItem& a = items[0];
  for (int64_t i = 1; i < n; ++i) {
    const FlashItem& b = items[i];
    if (b.G != a.G || b.QD != a.QD || b.VD != a.VD || b.fp16 != a.fp16 || b.kv_begin != a.kv_begin ||
        b.kv_end != a.kv_end || b.scale != a.scale || (b.partial_o == nullptr) != (a.partial_o == nullptr))
      return false;
  }
  return true;
}

}  // namespace

bool flash_decode_eligible(const FlashItem& it) {
  if (!decode_item_ok(it)) return false;
  if (it.QD <= 0 || it.VD <= 0 || it.QD % 16 != 0 || it.VD % 16 != 0) return false;
  if (!channels_ok(it.k, it.QD) || !channels_ok(it.v, it.VD)) return false;
  return is_nz(it.k, it.QD) == is_nz(it.v, it.VD);
}

bool flash_decode_i8_eligible(const FlashItem* items, int64_t n) {
  if (!same_group(items, n)) return false;
  const FlashItem& a = items[0];
  // QD <= 512: the int32 dot products stay below 2^31 (512 * 32767 * 128 < 2^31)
  if (a.QD <= 0 || a.VD <= 0 || a.QD % 32 != 0 || a.VD % 32 != 0 || a.QD > 512) return false;
  for (int64_t i = 0; i < n; ++i)
    if (!decode_item_ok(items[i])) return false;
  return true;
}

int64_t flash_decode_i8_scratch_bytes(int64_t n, int64_t G, int64_t QD, int64_t VD) {
  return layout(n, G, QD, VD, true).total + n * 32 * 4;  // + the per-head score lane factors
}

void flash_decode_row_offsets(const FlashKv& kv, int64_t p0, int64_t n, int64_t* out) {
  if (kv.block_ids == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = (p0 + i) * kv.slot_stride;
    return;
  }
  int64_t blk = p0 / kv.block_size, off = p0 % kv.block_size;
  int64_t row = static_cast<int64_t>(kv.block_ids[blk]) * kv.blk_stride + off * kv.slot_stride;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = row;
    row += kv.slot_stride;
    if (++off == kv.block_size && i + 1 < n) {
      off = 0;
      row = static_cast<int64_t>(kv.block_ids[++blk]) * kv.blk_stride;
    }
  }
}

bool flash_decode_group_eligible(const FlashItem* items, int64_t n) {
  if (!same_group(items, n)) return false;
  for (int64_t i = 0; i < n; ++i)
    if (!flash_decode_eligible(items[i]) || !same_addressing(items[0].k, items[i].k) ||
        !same_addressing(items[0].v, items[i].v))
      return false;
  return true;
}

int64_t flash_decode_scratch_bytes(int64_t n, int64_t G, int64_t QD, int64_t VD, bool fp16) {
  return layout(n, G, QD, VD, fp16).total;
}

FlashDecodeScratch flash_decode_scratch(int64_t n, int64_t G, int64_t QD, int64_t VD, bool fp16, void* scratch) {
  const Layout y = layout(n, G, QD, VD, fp16);
  char* b = static_cast<char*>(scratch);
  FlashDecodeScratch s;
  s.o = reinterpret_cast<float*>(b + y.o);
  s.s = reinterpret_cast<float*>(b + y.s);
  s.p = reinterpret_cast<uint32_t*>(b + y.p);
  s.m = reinterpret_cast<float*>(b + y.m);
  s.l = reinterpret_cast<float*>(b + y.l);
  s.alpha = reinterpret_cast<float*>(b + y.alpha);
  s.q = reinterpret_cast<float*>(b + y.q);
  s.k_off = reinterpret_cast<int64_t*>(b + y.k_off);
  s.v_off = reinterpret_cast<int64_t*>(b + y.v_off);
  return s;
}

bool flash_decode_try(FlashDecodeFn fn, const FlashItem* items, int64_t n, void* scratch, int64_t scratch_bytes) {
  if (fn == nullptr || !flash_decode_group_eligible(items, n)) return false;
  const FlashItem& a = items[0];
  if (flash_decode_scratch_bytes(n, a.G, a.QD, a.VD, a.fp16) > scratch_bytes) return false;
  fn(items, n, scratch);
  return true;
}

void flash_decode_finish(const FlashItem& it, const float* o, const float* m, const float* l) {
  const int64_t VD = it.VD;
  if (it.partial_o != nullptr) {
    std::memcpy(it.partial_o, o, static_cast<size_t>(it.G * VD) * 4);
    for (int64_t g = 0; g < it.G; ++g) {
      it.partial_m[g] = m[g];
      it.partial_l[g] = l[g];
    }
    return;
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t g = 0; g < it.G; ++g) {
    uint16_t* dst = it.out + g * it.out_n_stride;  // [VD] in the operand dtype
    const float* src = o + g * VD;
    if (l[g] > 0.0f) {
      const float inv = 1.0f / l[g];
      if (it.fp16)
        for (int64_t d = 0; d < VD; ++d) dst[d] = float_to_fp16(src[d] * inv);
      else
        for (int64_t d = 0; d < VD; ++d) dst[d] = float_to_bf16(src[d] * inv);
    } else {
      std::memset(dst, 0, static_cast<size_t>(VD) * 2);
    }
    if (it.lse != nullptr) it.lse[g * it.lse_n_stride] = l[g] > 0.0f ? m[g] + std::log(l[g]) : inf;
  }
}

// The AVX-512 kernels use vdpbf16ps / vcvtne2ps2bf16 (AVX512_BF16) and vpdpwssd (AVX512_VNNI),
// which the kAvx512 level does not imply.
// (x86 code: flash_decode_avx512.cpp is compiled on x86-64 only.)
FlashDecodeFn flash_decode_kernel(Isa isa) {
#if defined(MLAOPS_ARCH_X86_64)
  if (isa == Isa::kAvx512 && cpu_features().avx512_bf16) return flash_decode_kernel_avx512();
#endif
  return nullptr;
}

FlashDecodeI8Fn flash_decode_i8_kernel(Isa isa) {
#if defined(MLAOPS_ARCH_X86_64)
  const CpuFeatures& f = cpu_features();
  if (isa == Isa::kAvx512 && f.avx512_bf16 && f.avx512_vnni) return flash_decode_i8_kernel_avx512();
#endif
  return nullptr;
}

}  // namespace mlaops::kernels
