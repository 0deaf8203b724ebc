// KV antiquant row kernels (kernels/cpu/quant/dequant_row.h): the AVX-512 kernel bit-identical to the
// scalar rule (both parts) for every tail length, per-channel and per-row parameters, with and
// without offsets, FP16 and BF16 results (including values that round to fp16 subnormals and
// ties); the rounded part against (x + offset) * scale evaluated in double and rounded once, and
// the two parts together against the unrounded value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/quant/dequant_row.h"
#include "mlaops/numeric.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

struct Inputs {
  std::vector<int8_t> x;
  std::vector<float> sc, off;
};

Inputs inputs(uint32_t seed, int64_t n) {
  std::mt19937 g(seed);
  Inputs in;
  for (int64_t i = 0; i < n; ++i) {
    in.x.push_back(static_cast<int8_t>(static_cast<int>(g() % 256) - 128));
    // scales from tiny (fp16 subnormal results) to large, offsets with halves (ties after scaling)
    const int e = static_cast<int>(g() % 30) - 24;
    in.sc.push_back(std::ldexp(1.0f + static_cast<float>(g() % 1024) / 1024.0f, e));
    in.off.push_back(static_cast<float>(static_cast<int>(g() % 17) - 8) * 0.5f);
  }
  return in;
}

// `fast` against the scalar rule, bit for bit, over tail lengths, parameter forms and dtypes.
void check_against_scalar(DequantRowFn fast) {
  for (int64_t n : {0, 1, 15, 16, 17, 31, 64, 100, 128, 129, 576}) {
    const Inputs in = inputs(static_cast<uint32_t>(n) + 3, n);
    for (bool fp16 : {false, true})
      for (int form = 0; form < 3; ++form) {  // channel + offset, channel, row
        const float* sc = form < 2 ? in.sc.data() : nullptr;
        const float* off = form == 0 ? in.off.data() : nullptr;
        const float rs = n ? in.sc[0] : 1.0f, ro = form == 2 ? -3.5f : 0.0f;
        std::vector<uint16_t> a(static_cast<size_t>(n) + 1, 0x1234), b(a.size(), 0x1234);
        std::vector<uint16_t> alo(a.size(), 0x4321), blo(a.size(), 0x4321);
        dequant_row_scalar(in.x.data(), n, sc, off, rs, ro, fp16, a.data(), alo.data());
        fast(in.x.data(), n, sc, off, rs, ro, fp16, b.data(), blo.data());
        EXPECT_EQ(a, b) << "n " << n << " fp16 " << fp16 << " form " << form;
        EXPECT_EQ(alo, blo) << "residual n " << n << " fp16 " << fp16 << " form " << form;
        EXPECT_EQ(b.back(), 0x1234) << "wrote past n";
        EXPECT_EQ(blo.back(), 0x4321) << "wrote past n";
      }
  }
}

TEST(DequantKv, EveryIsaMatchesScalarBitForBit) {
  // each level's kernel against the scalar rule (below AVX-512 with BF16 it is the scalar one)
  for (Isa isa : test_isas()) {
    SCOPED_TRACE(isa_name(isa));
    check_against_scalar(dequant_row_kernel(isa));
  }
}

TEST(DequantKv, KernelChoice) {
  const auto& fam = dequant_row_family();
  for (Isa isa : test_isas()) EXPECT_EQ(dequant_row_kernel(isa), fam.value(fam.select(isa))) << isa_name(isa);
  EXPECT_EQ(dequant_row_kernel(Isa::kScalar), &dequant_row_scalar);
  EXPECT_EQ(dequant_row_kernel(Isa::kAvx2), &dequant_row_scalar);  // no AVX2 row
}

TEST(DequantKv, ScalarIsTheRoundedDoubleFormula) {
  const Inputs in = inputs(7, 4096);
  std::vector<uint16_t> a(4096), lo(4096);
  for (bool fp16 : {false, true}) {
    dequant_row_scalar(in.x.data(), 4096, in.sc.data(), in.off.data(), 1.0f, 0.0f, fp16, a.data(), lo.data());
    int64_t differ = 0;
    for (int64_t i = 0; i < 4096; ++i) {
      const double v = (static_cast<double>(in.x[static_cast<size_t>(i)]) + in.off[static_cast<size_t>(i)]) *
                       static_cast<double>(in.sc[static_cast<size_t>(i)]);
      const uint16_t want = fp16 ? double_to_fp16(v) : double_to_bf16(v);
      // fp32 arithmetic then one rounding: equal to the double path except for a rare double
      // rounding tie, which may move the result by one unit in the last place
      if (a[static_cast<size_t>(i)] != want) {
        ++differ;
        EXPECT_LE(std::abs(static_cast<int>(a[static_cast<size_t>(i)]) - static_cast<int>(want)), 1) << i;
      }
    }
    EXPECT_LE(differ, 4) << "fp16 " << fp16;
  }
}

// The rounded row plus its residual carries (x + offset) * scale to about 2^-16 (bf16) / 2^-21
// (fp16) relative, far below one rounding to the query dtype.
TEST(DequantKv, ResidualRowRestoresTheFp32Value) {
  const Inputs in = inputs(9, 4096);
  std::vector<uint16_t> hi(4096), lo(4096);
  for (bool fp16 : {false, true}) {
    dequant_row_scalar(in.x.data(), 4096, in.sc.data(), in.off.data(), 1.0f, 0.0f, fp16, hi.data(), lo.data());
    double worst = 0;
    for (size_t i = 0; i < 4096; ++i) {
      const double v = (static_cast<double>(in.x[i]) + in.off[i]) * static_cast<double>(in.sc[i]);
      const double got = fp16 ? double(fp16_to_float(hi[i])) + fp16_to_float(lo[i])
                              : double(bf16_to_float(hi[i])) + bf16_to_float(lo[i]);
      if (std::fabs(v) > (fp16 ? 0.1 : 1e-30)) worst = std::max(worst, std::fabs(got - v) / std::fabs(v));
    }
    EXPECT_LT(worst, fp16 ? 1e-5 : 2e-5) << "fp16 " << fp16;
  }
}

// Packed INT4 rows: every level's kernel equals the INT8 scalar rule on the unpacked nibbles (low
// nibble first, two's complement), bit for bit, for every even length and parameter form, and
// writes nothing past n.
TEST(DequantKv, Int4RowsMatchTheUnpackedInt8Rule) {
  for (Isa isa : test_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const DequantRow4Fn fn = dequant_row4_kernel(isa);
    for (int64_t n : {0, 2, 8, 14, 16, 18, 30, 32, 34, 64, 100, 128, 130, 576}) {
      const Inputs in = inputs(static_cast<uint32_t>(n) + 11, n);
      std::vector<uint8_t> packed(static_cast<size_t>(n / 2) + 1, 0);
      std::vector<int8_t> unpacked(static_cast<size_t>(n));
      std::mt19937 g(static_cast<uint32_t>(n));
      for (int64_t i = 0; i < n / 2; ++i) packed[static_cast<size_t>(i)] = static_cast<uint8_t>(g() % 256);
      for (int64_t d = 0; d < n; ++d) {
        const int nib = (packed[static_cast<size_t>(d / 2)] >> (d % 2 ? 4 : 0)) & 15;
        unpacked[static_cast<size_t>(d)] = static_cast<int8_t>(nib >= 8 ? nib - 16 : nib);
      }
      for (bool fp16 : {false, true})
        for (int form = 0; form < 3; ++form) {
          const float* sc = form < 2 ? in.sc.data() : nullptr;
          const float* off = form == 0 ? in.off.data() : nullptr;
          const float rs = n ? in.sc[0] : 1.0f, ro = form == 2 ? -3.5f : 0.0f;
          std::vector<uint16_t> a(static_cast<size_t>(n) + 1, 0x1234), b(static_cast<size_t>(n) + 1, 0x1234);
          std::vector<uint16_t> alo(a.size(), 0x4321), blo(a.size(), 0x4321);
          dequant_row_scalar(unpacked.data(), n, sc, off, rs, ro, fp16, a.data(), alo.data());
          fn(packed.data(), n, sc, off, rs, ro, fp16, b.data(), blo.data());
          EXPECT_EQ(a, b) << "n " << n << " fp16 " << fp16 << " form " << form;
          EXPECT_EQ(alo, blo) << "residual n " << n << " fp16 " << fp16 << " form " << form;
          EXPECT_EQ(b.back(), 0x1234) << "wrote past n";
          EXPECT_EQ(blo.back(), 0x4321) << "wrote past n";
        }
    }
  }
  const auto& fam = dequant_row4_family();
  for (Isa isa : test_isas()) EXPECT_EQ(dequant_row4_kernel(isa), fam.value(fam.select(isa))) << isa_name(isa);
  EXPECT_EQ(dequant_row4_kernel(Isa::kScalar), &dequant_row4_scalar);
}

}  // namespace
}  // namespace mlaops::kernels
