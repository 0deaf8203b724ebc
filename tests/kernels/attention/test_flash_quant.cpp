// The flash_quant rows (kernels/cpu/attention/flash_quant.h) of the INT8 full-quantisation path of
// FusedInferAttentionScoreV4 against the rounding steps they implement, every row this CPU can
// run (the portable row included, so the aarch64 run covers it too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention/flash_quant.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "tests/support/isa_list.h"
#include "tests/support/kernel_rows.h"

namespace mlaops::testing {
namespace {

// Scores: bit-identical to fp16(fp16(clamp(fp32(qk * deq1))) * scale_h) (clamping and FP16
// overflow included); P · V: exact. row_quant: every row gives the same P, m, psum (the same
// operations; esum may differ in its last bits by the fp32 summation order); P against the
// double-exp emulation of the reference differs only where fp32 and double exp land on
// different sides of an FP16 / integer rounding boundary: the rate is measured and bounded.
TEST(FlashQuantKernels, RowsFollowTheRoundingSteps) {
  using kernels::FlashQuantKernels;
  const auto rows = runnable_rows(kernels::flash_quant_family());
  ASSERT_FALSE(rows.empty());
  std::mt19937 gen(11);
  std::uniform_int_distribution<int> i8(-128, 127);
  const int64_t M = 7, D = 64, n = 37, VD = 48;
  std::vector<int8_t> q(M * D), k(n * D), v(n * VD), p(M * 40);
  for (auto& x : q) x = static_cast<int8_t>(i8(gen));
  for (auto& x : k) x = static_cast<int8_t>(i8(gen));
  for (auto& x : v) x = static_cast<int8_t>(i8(gen));
  for (auto& x : p) x = static_cast<int8_t>(i8(gen));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = n; j < 40; ++j) p[m * 40 + j] = 0;
  std::vector<uint8_t> kp(48 * D), vp(40 * VD);
  kernels::fq_pack_k(k.data(), D, n, D, kp.data());
  kernels::fq_pack_v(v.data(), VD, n, VD, vp.data());
  std::vector<int32_t> psum(M, 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = 0; j < 40; ++j) psum[m] += p[m * 40 + j];
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int64_t RQ = 512, NQ = 1000;
  std::vector<float> sq(RQ * NQ);
  for (int64_t i = 0; i < RQ * NQ; ++i) {  // rows < RQ / 2: FP16 scores; the others FP32 (scores + pse)
    // rows r % 4 == 3: a few large scores, the rest far below (whole vectors of P = 0)
    const bool peaked = (i / NQ) % 4 == 3;
    const float x = peaked ? static_cast<float>(i % 97 == 0 ? 1.0 + u(gen) : -30.0 + 8.0 * u(gen))
                           : static_cast<float>(-14.0 + 16.0 * u(gen));
    sq[i] = u(gen) < 0.03 ? -INFINITY : i < RQ * NQ / 2 ? round_fp16(x) : x;
  }
  std::vector<int8_t> p_first(RQ * NQ);
  int64_t flips = 0, total = 0;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const FlashQuantKernels& f = *row.value;
    for (const float deq1 : {0.0271f * 0.0333f, 0.1f})
      for (const float sc : {0.125f, 4.0f}) {
        std::vector<float> s(M * 48);
        f.scores(q.data(), D, M, kp.data(), 48, D, deq1, sc, s.data(), 48);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t j = 0; j < n; ++j) {
            int32_t qk = 0;
            for (int64_t d = 0; d < D; ++d) qk += q[m * D + d] * k[j * D + d];
            const double x = std::min(65504.0, std::max(-65504.0, static_cast<double>(static_cast<float>(double(qk) * deq1))));
            const float want = fp16_to_float(double_to_fp16(static_cast<double>(round_fp16(static_cast<float>(x))) * sc));
            ASSERT_EQ(float_bits(s[m * 48 + j]), float_bits(want)) << m << " " << j << " qk " << qk;
          }
      }
    std::vector<int32_t> acc(M * VD);
    f.pv(p.data(), 40, psum.data(), M, vp.data(), 40, VD, acc.data(), VD);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t d = 0; d < VD; ++d) {
        int32_t want = 0;
        for (int64_t j = 0; j < n; ++j) want += p[m * 40 + j] * v[j * VD + d];
        ASSERT_EQ(acc[m * VD + d], want) << m << " " << d;
      }
    std::vector<int8_t> pr(RQ * NQ);
    for (int64_t r = 0; r < RQ; ++r) {
      float mx = r % 3 == 0 ? -INFINITY : 1.5f;
      float es = 0.0f;
      int32_t ps = 0;
      const float qs_h = round_fp16(r % 2 ? 126.7f : 300.0f);
      f.row_quant(sq.data() + r * NQ, NQ, qs_h, &mx, pr.data() + r * NQ, &es, &ps);
      double mref = r % 3 == 0 ? -INFINITY : 1.5, esref = 0;
      int32_t psref = 0;
      for (int64_t j = 0; j < NQ; ++j) mref = std::max(mref, static_cast<double>(sq[r * NQ + j]));
      for (int64_t j = 0; j < NQ; ++j) {
        const double e = std::exp(static_cast<double>(sq[r * NQ + j]) - mref);
        esref += e;
        const double ph = fp16_to_float(double_to_fp16(fp16_to_float(double_to_fp16(e)) * qs_h));
        const int8_t want = static_cast<int8_t>(std::min(127.0, std::max(-128.0, std::nearbyint(ph))));
        const int8_t got = pr[r * NQ + j];
        ASSERT_LE(std::abs(got - want), 1) << j;
        flips += got != want;
        psref += got;
        ++total;
      }
      ASSERT_EQ(static_cast<double>(mx), mref);
      ASSERT_EQ(ps, psref);
      ASSERT_NEAR(es, esref, 1e-5 * esref);
    }
    if (&row == &rows.front())
      p_first = pr;
    else
      EXPECT_TRUE(pr == p_first) << "P differs from " << rows.front().name;
  }
  const double rate = static_cast<double>(flips) / static_cast<double>(total);
  std::printf("[ measured ] P flips against the double-exp emulation: %lld of %lld (%.2e)\n", (long long)flips,
              (long long)total, rate);
  EXPECT_LE(rate, 1e-4);
}

}  // namespace
}  // namespace mlaops::testing
