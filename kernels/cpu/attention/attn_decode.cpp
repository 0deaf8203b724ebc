// Flash decode, portable part: the scratch layout and the row offsets of a block. The AVX-512
// kernels are kernels/cpu/attention/attn_decode_avx512.cpp (listed in the attention family,
// kernels/cpu/attention/attn.cpp, with the shapes they accept).
#include "kernels/cpu/attention/attn_decode.h"

#include <cstring>

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
  const int64_t nG = n * flash_decode_padded_group(G), B = kFlashDecodeBlock;
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

}  // namespace

int64_t flash_decode_i8_scratch_bytes(int64_t n, int64_t G, int64_t QD, int64_t VD) {
  // + the per-head score lane factors, then per-token parameters: qsum, cacc [n G], vmul [16],
  // offsets [kFlashDecodeBlock] int64
  return layout(n, G, QD, VD, true).total + n * 32 * 4 + (2 * n * flash_decode_padded_group(G) + 16) * 4 +
         kFlashDecodeBlock * 8;
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

}  // namespace mlaops::kernels
