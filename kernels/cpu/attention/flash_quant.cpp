// The flash_quant family (flash_quant.h): the packing and the exponential shared by every row,
// the portable row, and the family table.
#include "kernels/cpu/attention/flash_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "mlaops/numeric.h"

namespace mlaops::kernels {

void fq_pack_k(const int8_t* k, int64_t stride, int64_t n, int64_t D, uint8_t* out) {
  const int64_t n16 = fq_pad(n, 16), quads = D / 4;
  for (int64_t t = 0; t < n16 / 16; ++t) {
    uint8_t* o = out + t * quads * 64;
    for (int64_t j = 0; j < 16; ++j) {
      const int64_t pos = t * 16 + j;
      if (pos >= n) {
        for (int64_t c = 0; c < quads; ++c) std::memset(o + (c * 16 + j) * 4, 0x80, 4);
        continue;
      }
      const int8_t* row = k + pos * stride;
      for (int64_t c = 0; c < quads; ++c) {
        uint32_t w = 0;
        std::memcpy(&w, row + c * 4, 4);
        w ^= 0x80808080u;
        std::memcpy(o + (c * 16 + j) * 4, &w, 4);
      }
    }
  }
}

void fq_pack_v(const int8_t* v, int64_t stride, int64_t n, int64_t VD, uint8_t* out) {
  const int64_t n4 = fq_pad(n, 4);
  for (int64_t t = 0; t < n4 / 4; ++t) {
    uint8_t* o = out + t * VD * 4;
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t pos = t * 4 + i;
      if (pos >= n) {
        for (int64_t d = 0; d < VD; ++d) o[d * 4 + i] = 0x80;
        continue;
      }
      const int8_t* row = v + pos * stride;
      for (int64_t d = 0; d < VD; ++d) o[d * 4 + i] = static_cast<uint8_t>(row[d]) ^ 0x80;
    }
  }
}

float fq_exp(float x) {
  if (!(x >= -87.25f)) return x != x ? x : 0.0f;  // NaN stays NaN; below the normal range: 0
  if (x > 88.5f) return HUGE_VALF;
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  // Estrin's scheme (short dependency chains): (1 + r) + r^2 (1/2 + r/6) + r^4 ((1/24 + r/120) + r^2 (1/720 + r/5040))
  const float r2 = r * r, r4 = r2 * r2;
  const float a = std::fma(r, 1.0f, 1.0f), b = std::fma(r, 1.0f / 6.0f, 0.5f);
  const float c = std::fma(r, 1.0f / 120.0f, 1.0f / 24.0f), d = std::fma(r, 1.0f / 5040.0f, 1.0f / 720.0f);
  const float ab = std::fma(b, r2, a), cd = std::fma(d, r2, c);
  const float p = std::fma(cd, r4, ab);
  return std::ldexp(p, static_cast<int>(n));
}

namespace {

float score_of(int32_t qk, float deq1, float scale_h) {
  float x = static_cast<float>(qk) * deq1;
  x = std::min(std::max(x, -65504.0f), 65504.0f);  // saturate to FP16; NaN stays NaN (as vmaxps / vminps x, c)
  return round_fp16(round_fp16(x) * scale_h);
}

void scores_scalar(const int8_t* q, int64_t q_stride, int64_t M, const uint8_t* kp, int64_t n16, int64_t D, float deq1,
                   float scale_h, float* s, int64_t s_stride) {
  const int64_t quads = D / 4;
  for (int64_t m = 0; m < M; ++m) {
    const int8_t* qr = q + m * q_stride;
    for (int64_t j = 0; j < n16; ++j) {
      const uint8_t* kt = kp + (j / 16) * quads * 64 + (j % 16) * 4;
      int32_t acc = 0;
      for (int64_t c = 0; c < quads; ++c)
        for (int64_t i = 0; i < 4; ++i) acc += qr[c * 4 + i] * (static_cast<int32_t>(kt[c * 64 + i]) - 128);
      s[m * s_stride + j] = score_of(acc, deq1, scale_h);
    }
  }
}

int8_t quant_p(float e, float qs_h) {
  const float v = std::nearbyint(round_fp16(round_fp16(e) * qs_h));
  if (v != v) return 0;  // NaN gives 0 (docs/numerics.md)
  return static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, v)));
}

void row_quant_scalar(const float* s, int64_t n, float qs_h, float* m, int8_t* p, float* esum, int32_t* psum) {
  float cmax = -HUGE_VALF;
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) {
    cmax = std::max(cmax, s[j]);
    nan = nan || s[j] != s[j];
  }
  if (nan) cmax = std::numeric_limits<float>::quiet_NaN();  // a NaN score: a NaN row (mn below is NaN)
  *esum = 0.0f;
  *psum = 0;
  if (cmax == -HUGE_VALF) {
    std::memset(p, 0, static_cast<size_t>(n));
    return;
  }
  const float mn = *m > cmax ? *m : cmax;  // NaN when cmax is
  float es = 0.0f;
  int32_t ps = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float e = fq_exp(s[j] - mn);
    es += e;
    p[j] = quant_p(e, qs_h);
    ps += p[j];
  }
  *m = mn;
  *esum = es;
  *psum = ps;
}

void pv_scalar(const int8_t* p, int64_t p_stride, const int32_t* /*psum*/, int64_t M, const uint8_t* vp, int64_t n4,
               int64_t VD, int32_t* acc, int64_t acc_stride) {
  for (int64_t m = 0; m < M; ++m) {
    int32_t* a = acc + m * acc_stride;
    std::fill(a, a + VD, 0);
    const int8_t* pr = p + m * p_stride;
    for (int64_t j = 0; j < n4; ++j) {
      const int32_t pj = pr[j];
      if (pj == 0) continue;
      const uint8_t* vt = vp + (j / 4) * VD * 4 + j % 4;
      for (int64_t d = 0; d < VD; ++d) a[d] += pj * (static_cast<int32_t>(vt[d * 4]) - 128);
    }
  }
}

}  // namespace

constinit const FlashQuantKernels flash_quant_scalar{fq_pack_k, fq_pack_v, scores_scalar, row_quant_scalar, pv_scalar};

const KernelTable<const FlashQuantKernels*>& flash_quant_family() {
  using Table = KernelTable<const FlashQuantKernels*>;
  static const Table::Row rows[] = {
#if defined(MLAOPS_ARCH_X86_64)
      {{"flash_quant_avx512_vnni", Isa::kAvx512, gate_avx512_vnni, kNeedsAvx512Vnni}, &flash_quant_avx512_vnni},
#endif
      {{"flash_quant_scalar", Isa::kScalar, gate_always, ""}, &flash_quant_scalar},
  };
  static const Table table("flash_quant", rows);
  return table;
}

const FlashQuantKernels& flash_quant_kernels(Isa isa) { return *flash_quant_family().pick(isa); }

}  // namespace mlaops::kernels
