// The FP16 high-performance softmax of the panel path (FlashItem::fp16_softmax,
// kernels/cpu/attention/attn_fp16_softmax.h) at every ISA level: one item (G heads x R rows, FP16 operands,
// a band mask, KV range longer than two 128-position blocks) against the emulation written out
// here in float64 (each FP16 step rounded once from its exact value). The scores and P x V of the
// path are fp32-accurate (the FP16 gemm rows), so the FP16 roundings agree but for rare flips
// (measured on AMD Zen 5, scalar / AVX2 / AVX-512: every output equal to the emulation rounded to
// FP16, lse within 5.3e-8; bounds: >= 99.5 % equal, the rest within 0.004 x rms, lse 1e-6).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/attention/attn_fp16_softmax.h"
#include "kernels/cpu/attention/attn_panel.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

double r16(double x) { return round_fp16(x); }

TEST(AttnFp16Softmax, PanelFollowsTheEmulationEveryIsa) {
  const int64_t G = 4, R = 5, D = 64, P = 300, M = G * R;
  const float scale = 0.4f;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> q(static_cast<size_t>(M * D)), k(static_cast<size_t>(P * D)), v(static_cast<size_t>(P * D));
  for (auto& x : q) x = float_to_fp16(u(rng) * 2.0f);
  for (auto& x : k) x = float_to_fp16(u(rng) * 2.0f);
  for (auto& x : v) x = float_to_fp16(u(rng));
  const int64_t lo = -200, hi = 150;  // row i sees [i - 200, i + 150]: rows start and end in different blocks
  // float64 emulation, row m = g * R + r
  std::vector<double> want(static_cast<size_t>(M * D)), want_lse(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    const int64_t i = m % R;
    double mx = -std::numeric_limits<double>::infinity(), l = 0;
    std::vector<double> o(static_cast<size_t>(D), 0.0);
    for (int64_t j0 = 0; j0 < P; j0 += kFp16SoftmaxBlock) {
      const int64_t j1 = std::min(P, j0 + kFp16SoftmaxBlock);
      std::vector<double> s(static_cast<size_t>(j1 - j0), -std::numeric_limits<double>::infinity());
      double bm = s[0];
      for (int64_t j = std::max(j0, i + lo); j < std::min(j1, i + hi + 1); ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(fp16_to_float(q[m * D + d])) * fp16_to_float(k[j * D + d]);
        s[j - j0] = r16(r16(dot) * r16(scale));
        bm = std::max(bm, s[j - j0]);
      }
      if (std::isinf(bm)) continue;
      const double mn = std::max(mx, bm), a = std::isinf(mx) ? 0.0 : std::exp(mx - mn);
      std::vector<double> pv(static_cast<size_t>(D), 0.0);
      double sum = 0;
      for (int64_t j = j0; j < j1; ++j) {
        if (std::isinf(s[j - j0])) continue;
        const double e = std::exp(s[j - j0] - mn);
        sum += e;
        for (int64_t d = 0; d < D; ++d) pv[d] += r16(e) * fp16_to_float(v[j * D + d]);
      }
      l = l * a + sum;
      for (int64_t d = 0; d < D; ++d) o[d] = r16(r16(o[d] * r16(a)) + r16(pv[d]));
      mx = mn;
    }
    for (int64_t d = 0; d < D; ++d) want[m * D + d] = o[d] / r16(l);
    want_lse[m] = mx + std::log(l);
  }
  double ss = 0;
  for (double x : want) ss += x * x;
  const double rms = std::sqrt(ss / static_cast<double>(want.size()));
  for (Isa isa : test_isas()) {
    FlashItem it;
    it.q = q.data();
    it.q_n_stride = R * D;
    it.q_s_stride = D;
    it.G = G;
    it.R = R;
    it.QD = D;
    it.VD = D;
    it.fp16 = true;
    it.fp16_softmax = true;
    it.k.base = k.data();
    it.k.c0 = D;
    it.k.slot_stride = D;
    it.v = it.k;
    it.v.base = v.data();
    it.kv_end = P;
    it.scale = scale;
    it.lo_delta = lo;
    it.hi_delta = hi;
    std::vector<uint16_t> out(static_cast<size_t>(M * D), 0);
    std::vector<float> lse(static_cast<size_t>(M), 0);
    it.out = out.data();
    it.out_n_stride = R * D;
    it.out_s_stride = D;
    it.lse = lse.data();
    it.lse_n_stride = R;
    it.lse_s_stride = 1;
    FlashShape sh;
    sh.M = M;
    sh.R = R;
    sh.QD = D;
    sh.VD = D;
    sh.tile = kFp16SoftmaxBlock;
    sh.fp16 = true;
    std::vector<char> scratch(static_cast<size_t>(flash_scratch_bytes(sh) + 64));
    flash_attn_panel(it, sh, flash_kernels(isa), scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64);
    int64_t equal = 0;
    double worst = 0, worst_lse = 0;
    for (int64_t e = 0; e < M * D; ++e) {
      const double x = fp16_to_float(out[e]);
      equal += x == r16(want[e]) ? 1 : 0;
      worst = std::max(worst, std::fabs(x - want[e]) / rms);
    }
    for (int64_t m = 0; m < M; ++m) worst_lse = std::max(worst_lse, std::fabs(lse[m] - want_lse[m]) / std::fabs(want_lse[m]));
    std::printf("[fp16-softmax] %s: %.4f equal, max %.3g x rms, lse %.2g\n", isa_name(isa),
                static_cast<double>(equal) / static_cast<double>(M * D), worst, worst_lse);
    EXPECT_GE(static_cast<double>(equal) / static_cast<double>(M * D), 0.995) << isa_name(isa);
    EXPECT_LE(worst, 4e-3) << isa_name(isa);
    EXPECT_LE(worst_lse, 1e-6) << isa_name(isa);
  }
}

}  // namespace
}  // namespace mlaops::kernels
