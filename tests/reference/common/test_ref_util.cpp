// The float64 references' own helpers (reference/common/ref_util.h) against the library's: two
// independent implementations of the BF16 / FP16 encodings, the int8 rounding rules, element
// access, the FRACTAL_NZ index and the inputLayout strings must agree everywhere (decoding over
// every 16-bit pattern, encoding over ties, subnormals, overflow, NaN and random doubles). The
// test data's own layout parser (fia_test_data.h) is checked against both. A scan of reference/
// keeps the references on their own helpers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/element_access.h"
#include "core/fractal_nz.h"
#include "kernels/cpu/attention/attn_combine.h"
#include "mlaops/dtype.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/numeric.h"
#include "mlaops/tensor_view.h"
#include "reference/common/ref_util.h"
#include "testkit/fia_test_data.h"

namespace mlaops {
namespace {

constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr double kNaND = std::numeric_limits<double>::quiet_NaN();

// Equal values with equal signs (so +0 != -0); every NaN equals every NaN of the same sign.
bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// ------------------------------------------------------------------------------------------
// 16-bit float formats
// ------------------------------------------------------------------------------------------

TEST(RefUtilFloat16, DecodingAgreesOnEveryBitPattern) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto b = static_cast<uint16_t>(h);
    ASSERT_TRUE(same_value(ref::bf16_value(b), static_cast<double>(bf16_to_float(b)))) << "BF16 0x" << std::hex << h;
    ASSERT_TRUE(same_value(ref::fp16_value(b), static_cast<double>(fp16_to_float(b)))) << "FP16 0x" << std::hex << h;
  }
}

TEST(RefUtilFloat16, DecodingFromTheDefinition) {
  EXPECT_EQ(ref::bf16_value(0x3f80), 1.0);
  EXPECT_EQ(ref::bf16_value(0xc040), -3.0);
  EXPECT_EQ(ref::bf16_value(0x7f7f), std::ldexp(255.0, 120));  // largest finite: (2 - 2^-7) * 2^127
  EXPECT_EQ(ref::bf16_value(0x0001), std::ldexp(1.0, -133));   // smallest subnormal
  EXPECT_EQ(ref::fp16_value(0x3c00), 1.0);
  EXPECT_EQ(ref::fp16_value(0x7bff), 65504.0);
  EXPECT_EQ(ref::fp16_value(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(ref::fp16_value(0x03ff), std::ldexp(1023.0, -24));  // largest subnormal
  EXPECT_EQ(ref::fp16_value(0x7c00), kInfD);
  EXPECT_EQ(ref::fp16_value(0xfc00), -kInfD);
  EXPECT_TRUE(std::isnan(ref::fp16_value(0x7e00)));
  EXPECT_TRUE(std::signbit(ref::bf16_value(0x8000)));
}

// ref and library encodings of v: the same bit pattern, or both NaN with the same sign.
void expect_same_encoding(double v) {
  const uint16_t rb = ref::bf16_bits(v), lb = double_to_bf16(v);
  const uint16_t rh = ref::fp16_bits(v), lh = double_to_fp16(v);
  if (std::isnan(v)) {
    EXPECT_TRUE(std::isnan(ref::bf16_value(rb)) && std::isnan(ref::bf16_value(lb)) && (rb & 0x8000u) == (lb & 0x8000u));
    EXPECT_TRUE(std::isnan(ref::fp16_value(rh)) && std::isnan(ref::fp16_value(lh)) && (rh & 0x8000u) == (lh & 0x8000u));
    return;
  }
  ASSERT_EQ(rb, lb) << "BF16 of " << std::hexfloat << v;
  ASSERT_EQ(rh, lh) << "FP16 of " << std::hexfloat << v;
}

TEST(RefUtilFloat16, EncodingRoundTripsEveryValue) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto b = static_cast<uint16_t>(h);
    if (!std::isnan(ref::bf16_value(b))) {
      ASSERT_EQ(ref::bf16_bits(ref::bf16_value(b)), b) << std::hex << h;
    }
    if (!std::isnan(ref::fp16_value(b))) {
      ASSERT_EQ(ref::fp16_bits(ref::fp16_value(b)), b) << std::hex << h;
    }
  }
}

TEST(RefUtilFloat16, EncodingAgreesOnTiesAndTheirNeighbours) {
  // Every midpoint between two adjacent finite values of either format (exact in double), and
  // the doubles just below and above it; the midpoint above the largest finite value too.
  for (const ref::Binary16Format f : {ref::kBf16Format, ref::kFp16Format}) {
    for (uint32_t h = 0; h < 0x7fffu; ++h) {
      const double lo = ref::decode16(static_cast<uint16_t>(h), f);
      const double hi = ref::decode16(static_cast<uint16_t>(h + 1), f);
      if (std::isnan(lo) || std::isnan(hi) || std::isinf(lo)) continue;
      const double mid = std::isinf(hi) ? lo + (lo - ref::decode16(static_cast<uint16_t>(h - 1), f)) / 2 : (lo + hi) / 2;
      for (const double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, kInfD)}) {
        expect_same_encoding(v);
        expect_same_encoding(-v);
      }
    }
  }
  // Ties go to the even significand.
  EXPECT_EQ(ref::fp16_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);      // 1 + half ulp -> 1
  EXPECT_EQ(ref::fp16_bits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);  // 1 + 1.5 ulp -> 1 + 2 ulp
  EXPECT_EQ(ref::bf16_bits(1.0 + std::ldexp(1.0, -8)), 0x3f80);
  EXPECT_EQ(ref::bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);
}

TEST(RefUtilFloat16, EncodingAgreesOnEdges) {
  const double dmin = std::numeric_limits<double>::denorm_min();
  const double edges[] = {
      0.0, -0.0, kInfD, -kInfD, kNaND, -kNaND, dmin, std::numeric_limits<double>::min(),
      std::numeric_limits<double>::max(), 1e300, 1e-300, 1.0, 65504.0, 65519.0, std::nextafter(65520.0, 0.0), 65520.0,
      65536.0, 1e5, std::ldexp(1.0, -24), std::ldexp(1.0, -25), std::nextafter(std::ldexp(1.0, -25), 1.0),
      std::ldexp(3.0, -26), std::ldexp(1.0, -26), std::ldexp(1.0, -14), std::ldexp(1023.0, -24),
      std::ldexp(2047.0, -25),  // between the largest FP16 subnormal and the smallest normal
      std::ldexp(1.0, -133), std::ldexp(1.0, -134), std::nextafter(std::ldexp(1.0, -134), 1.0), std::ldexp(1.0, -126),
      std::ldexp(255.0, -134), std::ldexp(255.0, 120), std::ldexp(511.0, 119), std::nextafter(std::ldexp(511.0, 119), 0.0),
      std::ldexp(1.0, 128), 3.3895313892515355e38, 3.4028234663852886e38, 3.5e38, static_cast<double>(std::nextafter(1.0f, 2.0f))};
  for (const double v : edges) {
    expect_same_encoding(v);
    expect_same_encoding(-v);
  }
  EXPECT_EQ(ref::fp16_bits(65520.0), 0x7c00);  // the tie above 65504 rounds to inf
  EXPECT_EQ(ref::fp16_bits(std::nextafter(65520.0, 0.0)), 0x7bff);
  EXPECT_EQ(ref::fp16_bits(std::ldexp(1.0, -25)), 0x0000);  // tie between 0 and the smallest subnormal
  EXPECT_EQ(ref::fp16_bits(std::ldexp(3.0, -26)), 0x0001);
  EXPECT_EQ(ref::bf16_bits(1e300), 0x7f80);
  EXPECT_EQ(ref::bf16_bits(-dmin), 0x8000);
}

TEST(RefUtilFloat16, EncodingAgreesOnRandomDoubles) {
  std::mt19937_64 gen(20240611);
  std::uniform_int_distribution<uint64_t> bits;
  std::uniform_int_distribution<int> exp_bf16(-140, 130), exp_fp16(-28, 17);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  for (int k = 0; k < 300000; ++k) {
    uint64_t u = bits(gen);
    double any;
    std::memcpy(&any, &u, sizeof any);
    expect_same_encoding(any);  // any double: mostly far outside both ranges
    expect_same_encoding(std::ldexp(mant(gen), exp_bf16(gen)) * (k % 2 ? -1 : 1));
    expect_same_encoding(std::ldexp(mant(gen), exp_fp16(gen)) * (k % 2 ? 1 : -1));
    // Short significands: many exact values and exact ties.
    expect_same_encoding(std::ldexp(static_cast<double>(u % 8192), exp_fp16(gen) - 12));
    if (HasFatalFailure()) return;
  }
}

// ------------------------------------------------------------------------------------------
// int8 rounding
// ------------------------------------------------------------------------------------------

TEST(RefUtilInt8, RoundingRulesAgree) {
  std::vector<double> vs = {0.0, -0.0, kInfD, -kInfD, kNaND, 0.49999999999999994, -0.49999999999999994,
                            0.5000000000000001, 1e300, -1e300, 126.5, 127.5, 127.49999999999999, -128.5, -127.5,
                            -128.49999999999997, 128.0, -129.0, 2.5e-320};
  for (int k = -600; k <= 600; ++k) {
    const double v = k / 2.0;
    vs.insert(vs.end(), {v, std::nextafter(v, kInfD), std::nextafter(v, -kInfD)});
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> dist(-200.0, 200.0);
  for (int k = 0; k < 100000; ++k) vs.push_back(dist(gen));
  for (const double v : vs) {
    ASSERT_EQ(ref::int8_rint(v), int8_rint_sat(v)) << std::hexfloat << v;
    ASSERT_EQ(ref::int8_round(v), int8_round_sat(v)) << std::hexfloat << v;
  }
  EXPECT_EQ(ref::int8_rint(2.5), 2);
  EXPECT_EQ(ref::int8_rint(-2.5), -2);
  EXPECT_EQ(ref::int8_rint(3.5), 4);
  EXPECT_EQ(ref::int8_round(2.5), 3);
  EXPECT_EQ(ref::int8_round(-2.5), -3);
  EXPECT_EQ(ref::int8_rint(kNaND), 0);
  EXPECT_EQ(ref::int8_round(-1e9), -128);
}

// ------------------------------------------------------------------------------------------
// Element access
// ------------------------------------------------------------------------------------------

// A strided (non-contiguous) 3-D view [2, 3, 4] with padded strides over `buf`.
TensorView strided_view(std::vector<uint64_t>& buf, DType dt) {
  TensorView t;
  t.data = buf.data();
  t.dtype = dt;
  t.rank = 3;
  t.dims[0] = 2, t.dims[1] = 3, t.dims[2] = 4;
  t.strides[0] = 40, t.strides[1] = 11, t.strides[2] = 2;
  return t;
}

// Post-quant INT8 output (docs/ops/fused_infer_attention_score.md "Post-quant INT8 output"):
// the reference's chain against the combine step's, and both against values worked by hand.
TEST(RefUtilPostQuant, WorkedValues) {
  struct Case {
    double x, scale, offset;
    int expected;
  } cases[] = {
      {2.5, 1, 0, 2},      {3.5, 1, 0, 4},     {-2.5, 1, 0, -2},    {0.5, 1, 0, 0},
      {100.49, 1, 0, 100},  // fp16(100.49) = 100.5 (ulp 1/16), a tie: even 100
      {101.47, 1, 0, 102},  // fp16(101.47) = 101.5, a tie: even 102 (exact 101.47 would give 101)
      {1.0, 1.0, 0.3, 1},   {0.0, 1.0, 2.5, 2},  // an invalid row: clamp(round(offset))
      {0.0, 1.0, -130.0, -128}, {1000, 1, 0, 127}, {-1000, 1, 0, -128},
      {kInfD, 1, 0, 127},   {-kInfD, 1, 0, -128}, {kNaND, 1, 0, 0},
      {70000, 1, 0, 127},   // fp16 overflow to +inf, then clamped
      {1.0, 1.0, 126.6, 127},  // fp16(126.6) = 126.625; 127.625 -> 128 -> clamped to 127
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ref::post_quant_int8(c.x, c.scale, c.offset), c.expected) << c.x << " " << c.scale << " " << c.offset;
    EXPECT_EQ(kernels::attn_post_quant(static_cast<float>(c.x), round_fp16(static_cast<float>(c.scale)),
                                       round_fp16(static_cast<float>(c.offset))),
              c.expected)
        << c.x << " " << c.scale << " " << c.offset;
  }
}

TEST(RefUtilPostQuant, CombineStepAgreesOnEveryFp16InputAndRandomFloats) {
  const float scales[] = {1.0f,    0.5f,  1.0f / 3.0f, 2.7f,     37.1f, 100.0f, -1.3f, 1e-3f,
                          60000.f, 0.0f,  9.5367431640625e-07f /* 2^-20, FP16 subnormal */, 0.123456789f};
  const float offsets[] = {0.0f, 0.5f, -0.5f, 1.25f, -3.7f, 127.5f, 300.0f, -300.0f, 1e-5f};
  int64_t checked = 0;
  for (float sc : scales)
    for (float of : offsets) {
      const float sh = round_fp16(sc), oh = round_fp16(of);
      for (uint32_t bits = 0; bits < 0x10000; ++bits) {
        const float x = fp16_to_float(static_cast<uint16_t>(bits));
        const int8_t want = ref::post_quant_int8(x, sc, of);
        ASSERT_EQ(kernels::attn_post_quant(x, sh, oh), want) << x << " " << sc << " " << of;
        ++checked;
      }
    }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> ux(-300.0f, 300.0f), us(-4.0f, 4.0f), uo(-2.0f, 2.0f);
  for (int i = 0; i < 1000000; ++i) {
    const float x = ux(rng) / 64.0f * static_cast<float>(1 << (i % 8)), sc = us(rng), of = uo(rng);
    ASSERT_EQ(kernels::attn_post_quant(x, round_fp16(sc), round_fp16(of)), ref::post_quant_int8(x, sc, of))
        << x << " " << sc << " " << of;
    ++checked;
  }
  EXPECT_GT(checked, 7000000);
}

TEST(RefUtilAccess, LoadsAgreeForEveryDtype) {
  std::mt19937_64 gen(3);
  for (const DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                         DType::kUInt8, DType::kBool, DType::kInt16, DType::kUInt16, DType::kInt32, DType::kUInt32,
                         DType::kInt64, DType::kUInt64}) {
    std::vector<uint64_t> buf(80 * 8);
    for (auto& w : buf) w = gen();
    const TensorView t = strided_view(buf, dt);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t off = ref::linear_offset(t, i);
      ASSERT_EQ(off, linear_to_offset(t, i));
      const int64_t idx[3] = {i / 12, (i / 4) % 3, i % 4};
      ASSERT_EQ(ref::offset(t, idx), elem_offset(t, idx));
      ASSERT_TRUE(same_value(ref::load(t, off), load_f64(t, off))) << dtype_name(dt) << " element " << i;
      if (dt != DType::kFloat32 && dt != DType::kFloat64 && dt != DType::kFloat16 && dt != DType::kBFloat16 &&
          dt != DType::kBool) {
        ASSERT_EQ(ref::load_int(t, off), load_i64(t, off)) << dtype_name(dt);
      }
    }
  }
}

TEST(RefUtilAccess, StoresAgree) {
  std::vector<double> vs = {0.0, -0.0, 1.0, -1.0, 0.1, 1e-8, 65504.0, 65520.0, 1e30, -1e30, 1e300, kInfD, -kInfD,
                            kNaND, 3.0, -7.0, 127.0, -128.0, 300.0, -300.0, 255.0, 1e9, -3e9};
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> dist(-1e4, 1e4);
  for (int k = 0; k < 2000; ++k) vs.push_back(dist(gen));
  for (const DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                         DType::kUInt8, DType::kBool, DType::kInt32, DType::kInt64}) {
    const bool is_int = dt != DType::kFloat32 && dt != DType::kFloat64 && dt != DType::kFloat16 && dt != DType::kBFloat16;
    for (const double v0 : vs) {
      // Integer dtypes take already rounded values; INT64 only values it holds.
      const double v = is_int && std::isfinite(v0) ? std::trunc(v0) : v0;
      if (dt == DType::kInt64 && !(std::fabs(v) < 9e18)) continue;
      std::vector<uint64_t> a(80, 0x5555555555555555ull), b = a;
      const TensorView ta = strided_view(a, dt), tb = strided_view(b, dt);
      ref::store(ta, 13, v);
      store_f64(tb, 13, v);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 8), 0) << dtype_name(dt) << " " << std::hexfloat << v;
    }
  }
}

TEST(RefUtilAccess, DtypeNamesAndSizes) {
  for (const DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt8, DType::kUInt8,
                         DType::kInt16, DType::kUInt16, DType::kInt32, DType::kUInt32, DType::kInt64, DType::kUInt64,
                         DType::kBool, DType::kInt4}) {
    EXPECT_STREQ(ref::type_name(dt), dtype_name(dt));
    if (ref::elem_bytes(dt) > 0) {
      EXPECT_EQ(ref::elem_bytes(dt), dtype_size(dt)) << dtype_name(dt);
    }
  }
  EXPECT_EQ(ref::elem_bytes(DType::kInt4), 0);
  TensorView t;
  t.rank = 3;
  t.dims[0] = 2, t.dims[1] = 0, t.dims[2] = 7;
  char buf[64];
  EXPECT_EQ(ref::shape_str(t), shape_string(t, buf, sizeof buf));
  int64_t n = -1;
  EXPECT_TRUE(ref::numel_of(t, &n));
  EXPECT_EQ(n, 0);
  t.dims[1] = -1;
  EXPECT_FALSE(ref::numel_of(t, &n));
  t.dims[0] = int64_t{1} << 40, t.dims[1] = int64_t{1} << 30;
  EXPECT_FALSE(ref::numel_of(t, &n));
}

// ------------------------------------------------------------------------------------------
// FRACTAL_NZ
// ------------------------------------------------------------------------------------------

TEST(RefUtilNz, IndexAgreesWithTheLibrary) {
  struct Shape {
    int64_t rows, cols;
  };
  for (const DType dt : {DType::kBFloat16, DType::kFloat16, DType::kInt8, DType::kFloat32}) {
    const int64_t es = dtype_size(dt);
    ASSERT_EQ(ref::nz_c0_of(dt), nz_c0(es));
    for (const Shape s : {Shape{1, 1}, Shape{16, 16}, Shape{16, 32}, Shape{17, 33}, Shape{35, 70}, Shape{128, 64},
                          Shape{5, 100}, Shape{64, 7}}) {
      int64_t st[4];
      nz_storage_shape(s.rows, s.cols, es, st);
      // The 4-D storage view and the 2-D logical view with storage dims: the same geometry.
      std::vector<uint64_t> buf(static_cast<size_t>(st[0] * st[1] * st[2] * st[3]) + 1);
      const TensorView v4 = make_view(buf.data(), dt, {st[0], st[1], st[2], st[3]}, Format::kFractalNZ);
      TensorView v2 = make_view(buf.data(), dt, {s.rows, s.cols}, Format::kFractalNZ);
      v2.storage_rank = 4;
      for (int i = 0; i < 4; ++i) v2.storage_dims[i] = st[i];
      NzMatrix lib;
      ASSERT_EQ(resolve_nz(v4, "test", "w", "rule", &lib), kSuccess);
      for (const TensorView* v : {&v4, static_cast<const TensorView*>(&v2)}) {
        ref::NzGeometry g;
        ASSERT_EQ(ref::nz_geometry(*v, "test", "w", s.rows, s.cols, &g), kSuccess) << last_error_message();
        EXPECT_EQ(g.r1, lib.r1);
        EXPECT_EQ(g.c1, lib.c1);
        EXPECT_EQ(g.c0, lib.c0);
        for (int64_t r = 0; r < s.rows; ++r)
          for (int64_t c = 0; c < s.cols; ++c) ASSERT_EQ(g.index(r, c), lib.index(r, c)) << r << "," << c;
      }
      // Packed by the library, read back through the reference's index.
      std::vector<uint8_t> nd(static_cast<size_t>(s.rows * s.cols * es)), nz(buf.size() * 8);
      for (size_t i = 0; i < nd.size(); ++i) nd[i] = static_cast<uint8_t>(i * 37 + 11);
      nd_to_nz(nd.data(), nz.data(), s.rows, s.cols, es);
      ref::NzGeometry g;
      ASSERT_EQ(ref::nz_geometry(v4, "test", "w", s.rows, s.cols, &g), kSuccess);
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t c = 0; c < s.cols; ++c)
          ASSERT_EQ(std::memcmp(&nz[static_cast<size_t>(g.index(r, c) * es)], &nd[static_cast<size_t>((r * s.cols + c) * es)],
                                static_cast<size_t>(es)),
                    0);
    }
  }
  // From the definition: bf16 [20, 40] -> c0 16, R1 2, C1 3; W[17][35] is in tile (2, 1), row 1, col 3.
  TensorView t;
  t.dtype = DType::kBFloat16;
  t.format = Format::kFractalNZ;
  t.rank = 4;
  t.dims[0] = 3, t.dims[1] = 2, t.dims[2] = 16, t.dims[3] = 16;
  ref::NzGeometry g;
  ASSERT_EQ(ref::nz_geometry(t, "test", "w", 20, 40, &g), kSuccess);
  EXPECT_EQ(g.index(17, 35), (2 * 2 + 1) * 256 + 1 * 16 + 3);
  // Storage that does not match the logical shape, or no storage dims for a 2-D view: rejected.
  EXPECT_EQ(ref::nz_geometry(t, "test", "w", 20, 49, &g), kParamInvalid);
  t.rank = 2;
  t.dims[0] = 20, t.dims[1] = 40;
  EXPECT_EQ(ref::nz_geometry(t, "test", "w", 20, 40, &g), kParamInvalid);
  t.dtype = DType::kInt4;
  EXPECT_EQ(ref::nz_geometry(t, "test", "w", 20, 40, &g), kParamInvalid);
}

// ------------------------------------------------------------------------------------------
// inputLayout strings
// ------------------------------------------------------------------------------------------

TEST(RefUtilLayout, ThreeParsersAgree) {
  const char* const sides[] = {"BSH", "BSND", "BNSD", "TND", "NTD", "NBSD", "SH", "NSD", "", "bsh", "BSHX"};
  std::vector<std::string> strings;
  for (const char* a : sides) {
    strings.push_back(a);
    for (const char* b : sides) strings.push_back(std::string(a) + "_" + b);
  }
  strings.insert(strings.end(), {"BSH_BNSD_NBSD", "_", "BSH__BNSD", " BSH", "BSH "});
  int accepted = 0;
  for (const std::string& s : strings) {
    FiaLayout li = FiaLayout::kNBSD, lo = FiaLayout::kNBSD, ri = FiaLayout::kNBSD, ro = FiaLayout::kNBSD,
              ti = FiaLayout::kNBSD, to = FiaLayout::kNBSD;
    const bool lib = parse_fia_layout(s, &li, &lo);
    ASSERT_EQ(ref::layout_from_string(s, &ri, &ro), lib) << '"' << s << '"';
    ASSERT_EQ(fia_test::layout_of_string(s, &ti, &to), lib) << '"' << s << '"';
    if (!lib) continue;
    ++accepted;
    EXPECT_EQ(ri, li) << s;
    EXPECT_EQ(ro, lo) << s;
    EXPECT_EQ(ti, li) << s;
    EXPECT_EQ(to, lo) << s;
    EXPECT_EQ(ref::layout_packed(ri), fia_layout_is_packed(li)) << s;
    EXPECT_EQ(fia_test::layout_is_packed(ti), fia_layout_is_packed(li)) << s;
  }
  EXPECT_EQ(accepted, 13);
  for (const FiaLayout l : {FiaLayout::kBSH, FiaLayout::kBSND, FiaLayout::kBNSD, FiaLayout::kTND, FiaLayout::kNTD,
                            FiaLayout::kNBSD})
    EXPECT_STREQ(ref::layout_text(l), fia_layout_name(l));
}

// ------------------------------------------------------------------------------------------
// The references use only their own helpers
// ------------------------------------------------------------------------------------------

// The header named by an #include line ("" when the line is none); *angle: <...> form.
std::string included_header(const std::string& line, bool* angle) {
  const size_t hash = line.find_first_not_of(" \t");
  if (hash == std::string::npos || line[hash] != '#') return "";
  const size_t word = line.find_first_not_of(" \t", hash + 1);
  if (word == std::string::npos || line.compare(word, 7, "include") != 0) return "";
  const size_t open = line.find_first_of("\"<", word + 7);
  if (open == std::string::npos) return "";
  *angle = line[open] == '<';
  const size_t close = line.find(*angle ? '>' : '"', open + 1);
  return close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

// The identifiers of `code` that are followed by "(" (calls and declarations).
std::vector<std::string> called_names(const std::string& code) {
  std::vector<std::string> names;
  const auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t i = 0; i < code.size();) {
    if (!ident(code[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < code.size() && ident(code[j])) ++j;
    size_t k = j;
    while (k < code.size() && code[k] == ' ') ++k;
    if (k < code.size() && code[k] == '(') names.push_back(code.substr(i, j - i));
    i = j;
  }
  return names;
}

TEST(RefUtilIndependence, ReferencesIncludeOnlyPublicStructsAndTheErrorChannel) {
  // MLAOPS_REFERENCE_DIR: the reference's source folder (tests/CMakeLists.txt; not __FILE__, which a
  // compiler cache may make relative)
  const std::filesystem::path dir = MLAOPS_REFERENCE_DIR;
  ASSERT_TRUE(std::filesystem::exists(dir / "common" / "ref_util.h")) << "sources not found at " << dir;
  const std::vector<std::string> allowed = {"core/error.h",         "mlaops/dtype.h",         "mlaops/status.h",
                                            "mlaops/tensor_view.h", "mlaops/fused_infer_attention_score.h",
                                            "mlaops/mla_prolog.h",  "mlaops/mla_preprocess.h", "mlaops/mlapo.h"};
  // Library functions reachable through the allowed public headers.
  const std::vector<std::string> forbidden = {
      "parse_fia_layout", "fia_layout_name", "fia_layout_is_packed", "dtype_name", "dtype_size", "format_name",
      "shape_string", "checked_numel", "checked_nbytes", "make_view", "dtype_is_known", "format_is_known",
      "mla_prolog_scenario", "mla_prolog_scenario_name", "mla_prolog_is_full_quant", "mla_prolog_is_partial_quant",
      "mla_prolog_is_kv_quant", "mla_prolog_cache_mode_name", "mla_preprocess_is_nz_cache",
      "mla_preprocess_has_rope_outputs", "mla_preprocess_cache_mode_name", "mla_preprocess_quant_mode_name",
      "mla_prolog", "mla_prolog_workspace_size", "mla_preprocess", "mla_preprocess_workspace_size",
      "fused_infer_attention_score_v4", "fused_infer_attention_score_v4_workspace_size"};
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    int no = 0;
    while (std::getline(in, line)) {
      ++no;
      const std::string where = e.path().filename().string() + ":" + std::to_string(no) + ": " + line;
      bool angle = false;
      const std::string inc = included_header(line, &angle);
      if (!inc.empty()) {
        const bool ok = angle ||  // standard headers
                        inc.rfind("reference/", 0) == 0 || inc.find('/') == std::string::npos ||
                        std::find(allowed.begin(), allowed.end(), inc) != allowed.end();
        EXPECT_TRUE(ok) << where;
        continue;
      }
      for (const std::string& name : called_names(line.substr(0, line.find("//"))))
        EXPECT_EQ(std::find(forbidden.begin(), forbidden.end(), name), forbidden.end()) << where;
    }
  }
  EXPECT_GE(files, 7);
  // The scanners themselves.
  bool angle = false;
  EXPECT_EQ(included_header("  #  include \"core/fractal_nz.h\"", &angle), "core/fractal_nz.h");
  EXPECT_FALSE(angle);
  EXPECT_EQ(included_header("#include <cmath>", &angle), "cmath");
  EXPECT_TRUE(angle);
  EXPECT_EQ(called_names("x = ref::load(t, shape_string (a)) + b;"), (std::vector<std::string>{"load", "shape_string"}));
}

}  // namespace
}  // namespace mlaops
