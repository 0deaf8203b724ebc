// MlaPreprocess row kernels: every ISA bit-identical to the scalar kernels, and the scalar
// kernels to the element rules, on random values, specials (NaN, inf, subnormals, ties) and
// every tail length.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/rows/mla_preprocess_rows.h"
#include "mlaops/numeric.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

std::vector<float> test_values(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<float> v;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {0.0f,   -0.0f,   1.0f,    -1.0f,   0.5f,    -0.5f,  1.5f,   2.5f,     -2.5f,   126.5f,
                            127.5f, -128.5f, 128.0f,  -129.0f, 1e-40f,  -1e-41f, nan,   -nan,     inf,     -inf,
                            65504.0f, 65520.0f, 3e-8f, 6e-8f,  bits_float(0x3f808000u), bits_float(0x3f818000u),
                            bits_float(0x3f801000u), bits_float(0x7f7fffffu), 3e38f, 2.0009765625f};
  for (float s : specials) v.push_back(s);
  while (v.size() < n) {
    switch (rng() % 3) {
      case 0: v.push_back(bits_float(rng())); break;
      case 1: v.push_back(std::ldexp(static_cast<float>(static_cast<int>(rng() % 4000) - 2000) / 8.0f, static_cast<int>(rng() % 6) - 3)); break;
      default: v.push_back(static_cast<float>(static_cast<int>(rng() % 2000001) - 1000000) * 1e-4f); break;
    }
  }
  return v;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || float_bits(a) == float_bits(b); }

void expect_same(const std::vector<float>& a, const std::vector<float>& b, const char* what, const char* isa, size_t n) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_TRUE(same_float(a[i], b[i])) << what << " " << isa << " n=" << n << " i=" << i << " " << a[i] << " vs " << b[i];
}

TEST(MlaPreprocessRowKernels, EveryIsaMatchesScalarBitForBit) {
  const MlaPreprocessRowKernels& s = mla_preprocess_rows_scalar;
  for (Isa isa : test_isas()) {
    const MlaPreprocessRowKernels& k = mla_preprocess_row_kernels(isa);
    const char* name = isa_name(isa);
    const std::vector<float> all = test_values(static_cast<uint32_t>(isa) + 7, 12000);
    const std::vector<float> g = test_values(99, 12000), b = test_values(98, 12000);
    std::mt19937 rng(5);
    std::vector<int32_t> acc(all.size()), bias(all.size());
    for (size_t i = 0; i < acc.size(); ++i) {
      acc[i] = static_cast<int32_t>(rng());
      if (i % 3) acc[i] >>= (rng() % 24);
      bias[i] = static_cast<int32_t>(rng() % 21) - 10;
      if (i % 97 == 0) bias[i] = static_cast<int32_t>(rng());
    }
    std::vector<uint16_t> bits(all.size());
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(rng());
    for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, size_t{31},
                     size_t{33}, size_t{512}, size_t{7168}, all.size() - 3}) {
      for (size_t off : {size_t{0}, size_t{3}}) {
        const float* x = all.data() + off;
        const int64_t ni = static_cast<int64_t>(n);
        for (bool fp16 : {true, false}) {
          std::vector<float> y1(n + 1, 7.0f), y2(n + 1, 7.0f);
          s.load_dt(bits.data() + off, fp16, y1.data(), ni);
          k.load_dt(bits.data() + off, fp16, y2.data(), ni);
          expect_same(y1, y2, "load_dt", name, n);
          std::vector<uint16_t> h1(n + 1, 0xABCD), h2(n + 1, 0xABCD);
          s.store_dt(x, fp16, h1.data(), ni);
          k.store_dt(x, fp16, h2.data(), ni);
          ASSERT_EQ(h1, h2) << "store_dt " << name << " n=" << n << " fp16=" << fp16;
          std::vector<float> r1(x, x + n), r2(x, x + n);
          s.round_dt(r1.data(), fp16, ni);
          k.round_dt(r2.data(), fp16, ni);
          expect_same(r1, r2, "round_dt", name, n);
          for (float sc : {1.0f, 0.37f, -1.5f, 1e-3f, 3e-9f}) {
            std::vector<float> d1(n + 1, 7.0f), d2(n + 1, 7.0f);
            std::vector<float> ds(all.begin() + 11, all.begin() + 11 + static_cast<std::ptrdiff_t>(n));
            for (float& v : ds) v = std::fabs(v) < 1e30f ? v * 1e-3f : 1e-3f;
            for (const int32_t* bp : {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(bias.data() + off)}) {
              s.dequant(acc.data() + off, bp, ds.data(), sc, fp16, ni, d1.data());
              k.dequant(acc.data() + off, bp, ds.data(), sc, fp16, ni, d2.data());
              expect_same(d1, d2, "dequant", name, n);
            }
            std::vector<int8_t> q1(n + 1, 55), q2(n + 1, 55);
            s.scale_i8(x, sc, fp16, ni, q1.data());
            k.scale_i8(x, sc, fp16, ni, q2.data());
            ASSERT_EQ(q1, q2) << "scale_i8 " << name << " n=" << n << " s=" << sc;
          }
        }
        for (float a : {1.0f, 0.5f, 3.7f, -0.01f}) {
          for (float o : {0.0f, 0.5f, -17.0f}) {
            std::vector<int8_t> q1(n + 1, 55), q2(n + 1, 55);
            s.quant_f16(x, a, o, ni, q1.data());
            k.quant_f16(x, a, o, ni, q2.data());
            ASSERT_EQ(q1, q2) << "quant_f16 " << name << " n=" << n << " a=" << a << " o=" << o;
          }
        }
        EXPECT_TRUE(same_float(s.sum_sq(x, ni), k.sum_sq(x, ni))) << name << " n=" << n;
        const float* small = g.data() + off;  // finite-ish values for a meaningful sum
        std::vector<float> fin(small, small + n);
        for (float& v : fin) v = std::isfinite(v) && std::fabs(v) < 1e6f ? v : 0.25f;
        EXPECT_TRUE(same_float(s.sum_sq(fin.data(), ni), k.sum_sq(fin.data(), ni))) << name << " n=" << n;
        for (float r : {1.0f, 0.3f, 0.0f}) {
          for (const float* bp : {static_cast<const float*>(nullptr), static_cast<const float*>(b.data())}) {
            std::vector<float> y1(n + 1, 7.0f), y2(n + 1, 7.0f);
            s.norm(x, r, g.data(), bp, ni, y1.data());
            k.norm(x, r, g.data(), bp, ni, y2.data());
            expect_same(y1, y2, "norm", name, n);
          }
        }
      }
    }
  }
}

TEST(MlaPreprocessRowKernels, ScalarRules) {
  const MlaPreprocessRowKernels& s = mla_preprocess_rows_scalar;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // fp16 double rounding: 2.5 -> 2 (half to even), 126.6 -> 126.625 (fp16) -> 127, clamp, NaN -> 0
  const float y[] = {2.5f, -2.5f, 3.5f, 126.6f, 300.0f, -300.0f, nan, 0.4999f, 64.3f};
  int8_t q[9];
  s.quant_f16(y, 1.0f, 0.0f, 9, q);
  const int8_t want[] = {2, -2, 4, 127, 127, -128, 0, 0, 64};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(q[i], want[i]) << i;
  // fp16(64.52) = 64.5 -> 64 (half to even), while a single rounding of 64.52 would give 65;
  // with the offset: fp16(60.02 * 1 + 4.5) = 64.5 -> 64
  const float y2[] = {64.52f, 60.02f};
  s.quant_f16(y2, 1.0f, 0.0f, 1, q);
  EXPECT_EQ(q[0], 64);
  s.quant_f16(y2 + 1, 1.0f, 4.5f, 1, q);
  EXPECT_EQ(q[0], 64);
  // sum of squares in the documented lane order
  std::vector<float> v(37);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.1f;
  float lanes[16] = {};
  for (size_t i = 0; i < v.size(); ++i) lanes[i % 16] = std::fma(v[i], v[i], lanes[i % 16]);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  EXPECT_EQ(float_bits(s.sum_sq(v.data(), 37)), float_bits(lanes[0]));
  // dequant with bias (int32 sum first) and per-token scale
  const int32_t acc[] = {100, -7, 33554433};
  const int32_t bias[] = {5, 10, 0};
  const float ds[] = {0.5f, 0.25f, 1.0f};
  float out[3];
  s.dequant(acc, bias, ds, 1.0f, true, 3, out);
  EXPECT_EQ(out[0], 52.5f);
  EXPECT_EQ(out[1], 0.75f);
  EXPECT_TRUE(std::isinf(out[2]));  // beyond fp16
  s.dequant(acc, nullptr, ds, 2.0f, false, 2, out);
  EXPECT_EQ(out[0], 100.0f);
  EXPECT_EQ(out[1], -3.5f);
  // scale_i8: round half to even, saturate
  const float x[] = {0.5f, 1.5f, -2.5f, 1000.0f, nan};
  int8_t qi[5];
  s.scale_i8(x, 1.0f, true, 5, qi);
  const int8_t want_i[] = {0, 2, -2, 127, 0};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(qi[i], want_i[i]) << i;
}

}  // namespace
}  // namespace mlaops::kernels
