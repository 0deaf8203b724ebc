// Tests of the float64 MlaPreprocess reference (reference/mla_preprocess/mla_preprocess_ref.h): hand-checked
// pieces (the fp16 double rounding of RmsNormQuant, half-rotation RoPE, the documented cache offsets,
// the INT64-encoded deScale), consistency between cache modes, quant modes, dtypes and weight
// forms, and slot skipping. End-to-end paths and errors: test_mla_preprocess_ref_paths.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "mla_preprocess_ref_checks.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/numeric.h"
#include "mlaops/status.h"
#include "reference/mla_preprocess/mla_preprocess_ref.h"
#include "testkit/mla_preprocess_test_data.h"

namespace mlaops {
namespace {

using namespace mpp_ref_test;  // the shared helpers and case types (mla_preprocess_ref_checks.h)

// ------------------------------------------------------------------------------------------
// hand-checked pieces

TEST(MlaPreprocessRefPieces, QuantInt8RoundsTwiceThroughFp16) {
  struct Row {
    double v;
    int want;
  };
  const Row rows[] = {
      {2.5, 2},             // fp16 exact; int8 round half to even
      {3.5, 4},
      {-2.5, -2},
      {0.5, 0},
      {-0.5, 0},
      {2.5004, 2},          // fp16 rounds to 2.5 (spacing 2^-9), then 2.5 -> 2; one rounding would give 3
      {1.4999, 2},          // fp16 1.5 (spacing 2^-10), then 1.5 -> 2; one rounding would give 1
      {3.4990234375, 4},    // an exact fp16 tie (3.498046875 | 3.5): to even = 3.5, then 3.5 -> 4
      {100.53125, 100},     // fp16 tie (100.5 | 100.5625) to even = 100.5, then 100.5 -> 100 (not 101)
      {127.4, 127},         // fp16 127.375
      {127.97, 127},        // fp16 128, clamped in fp16 to 127
      {-128.4, -128},       // fp16 -128.375, clamped
      {65519.0, 127},       // fp16 65504
      {1e6, 127},           // fp16 +inf, clamped
      {-1e6, -128},
      {std::numeric_limits<double>::quiet_NaN(), 0},
  };
  for (const Row& r : rows) EXPECT_EQ(mla_preprocess_quant_int8(r.v), r.want) << r.v;
}

TEST(MlaPreprocessRefPieces, RmsNormQuantPerTensorDividesByScaleAndAddsOffset) {
  // v = 1 everywhere and eps = 0: rms = 1, so y = gamma + beta exactly.
  const double v[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const double gamma[8] = {0.5, -0.5, 0.375, 0.3751, 10, -10, 40, -40};
  const double beta[8] = {0.125, 0, 0, 0, 0, 0, 0, 0};
  int8_t q[8];
  // qs = 0.25 (times 4), qo = 1: y*4 + 1 = [3.5, -1, 2.5, 2.5004, 41, -39, 161, -159]
  mla_preprocess_rms_norm_quant_per_tensor(v, gamma, beta, 8, 0.0, 0.25, 1.0, q);
  const int want[8] = {4, -1, 2, 2, 41, -39, 127, -128};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q[i], want[i]) << i;
  // a real norm: v = [3, 4], rms = sqrt(12.5); qs = 0.125 (times 8), qo = -3
  const double v2[2] = {3, 4}, g2[2] = {1, 1}, b2[2] = {0, 0};
  mla_preprocess_rms_norm_quant_per_tensor(v2, g2, b2, 2, 0.0, 0.125, -3.0, q);
  EXPECT_EQ(q[0], static_cast<int>(std::nearbyint(3 / std::sqrt(12.5) * 8 - 3)));  // 3.79 -> 4
  EXPECT_EQ(q[1], static_cast<int>(std::nearbyint(4 / std::sqrt(12.5) * 8 - 3)));  // 6.05 -> 6
  EXPECT_EQ(q[0], 4);
  EXPECT_EQ(q[1], 6);
  // eps inside the sqrt: v = [0, 0] with eps 0.25 gives y = beta
  const double z[2] = {0, 0}, b3[2] = {0.75, -0.75};
  mla_preprocess_rms_norm_quant_per_tensor(z, g2, b3, 2, 0.25, 0.5, 0.0, q);  // 0.75 / 0.5 = 1.5 -> 2
  EXPECT_EQ(q[0], 2);
  EXPECT_EQ(q[1], -2);
}

TEST(MlaPreprocessRefPieces, RmsNormQuantPerTokenKnownRow) {
  const double v[4] = {1, 1, 1, 1};
  const double gamma[4] = {1, -0.5, 0.25, 0};
  const double beta[4] = {0, 0, 0, 0};
  int8_t q[4];
  // y = [1, -0.5, 0.25, 0]: s = 1/127, y * 127 = [127, -63.5, 31.75, 0]
  EXPECT_DOUBLE_EQ(mla_preprocess_rms_norm_quant_per_token(v, gamma, beta, 4, 0.0, q), 1.0 / 127.0);
  const int want[4] = {127, -64, 32, 0};  // -63.5 -> -64 (half to even)
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q[i], want[i]) << i;
  // beta takes part in the max: y = [0.25, -2, 0.25, 0] -> s = 2/127
  const double beta2[4] = {-0.75, -1.5, 0, 0};
  EXPECT_DOUBLE_EQ(mla_preprocess_rms_norm_quant_per_token(v, gamma, beta2, 4, 0.0, q), 2.0 / 127.0);
  EXPECT_EQ(q[0], 16);    // 0.25 * 63.5 = 15.875
  EXPECT_EQ(q[1], -127);
  EXPECT_EQ(q[2], 16);
  EXPECT_EQ(q[3], 0);
  // all-zero y: scale 0, q = 0 (documented choice)
  const double zero[4] = {0, 0, 0, 0};
  int8_t qz[4] = {9, 9, 9, 9};
  EXPECT_EQ(mla_preprocess_rms_norm_quant_per_token(v, zero, zero, 4, 1e-6, qz), 0.0);
  for (int8_t x : qz) EXPECT_EQ(x, 0);
}

TEST(MlaPreprocessRefPieces, RopeIsHalfRotationWithoutDeinterleave) {
  const double v[4] = {1, 2, 3, 4};
  double out[4];
  const double c[4] = {0.5, 2, 1, -1}, s[4] = {3, 0.25, -1, 2};
  mla_preprocess_rope(v, c, s, 4, out);  // rotate_half(v) = [-3, -4, 1, 2]
  EXPECT_EQ(out[0], 1 * 0.5 + -3 * 3);
  EXPECT_EQ(out[1], 2 * 2 + -4 * 0.25);
  EXPECT_EQ(out[2], 3 * 1 + 1 * -1);
  EXPECT_EQ(out[3], 4 * -1 + 2 * 2);
  const double zero[4] = {0, 0, 0, 0}, one[4] = {1, 1, 1, 1};
  mla_preprocess_rope(v, zero, one, 4, out);  // pure rotate_half
  EXPECT_EQ(out[0], -3);
  EXPECT_EQ(out[1], -4);
  EXPECT_EQ(out[2], 1);
  EXPECT_EQ(out[3], 2);
  mla_preprocess_rope(v, one, zero, 4, out);  // identity: the order is kept (no de-interleave)
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], v[i]);
  double rms[2] = {0, 0};
  const double g[2] = {1, 1};
  const double v2[2] = {3, 4};
  mla_preprocess_rms_norm(v2, g, nullptr, 2, 0.0, rms);
  EXPECT_DOUBLE_EQ(rms[0], 3 / std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(rms[1], 4 / std::sqrt(12.5));
}

TEST(MlaPreprocessRefPieces, CacheOffsetsMatchTheSpecFormulas) {
  // The vendor geometry: blockSize 128, slot 300 -> b = 2, o = 44.
  const TensorView kv0 = make_view(nullptr, DType::kFloat16, {4, 128, 1, 576});
  EXPECT_EQ(mla_preprocess_cache_offset(kv0, false, 300, 100), 300 * 576 + 100);
  const TensorView kv2 = make_view(nullptr, DType::kInt8, {4, 16, 128, 32});
  EXPECT_EQ(mla_preprocess_cache_offset(kv2, true, 300, 100), 2 * 128 * 512 + 3 * 128 * 32 + 44 * 32 + 4);
  EXPECT_EQ(mla_preprocess_cache_offset(kv2, true, 300, 100), 144772);
  const TensorView kr2 = make_view(nullptr, DType::kFloat16, {4, 4, 128, 16});
  EXPECT_EQ(mla_preprocess_cache_offset(kr2, true, 300, 37), 2 * 128 * 64 + 2 * 128 * 16 + 44 * 16 + 5);
  EXPECT_EQ(mla_preprocess_cache_offset(kr2, true, 300, 37), 21189);
  const TensorView kv3 = make_view(nullptr, DType::kBFloat16, {4, 32, 128, 16});
  EXPECT_EQ(mla_preprocess_cache_offset(kv3, true, 300, 100), 2 * 128 * 512 + 6 * 128 * 16 + 44 * 16 + 4);
  const TensorView kr1 = make_view(nullptr, DType::kFloat16, {4, 128, 1, 64});
  EXPECT_EQ(mla_preprocess_cache_offset(kr1, false, 511, 63), 511 * 64 + 63);
  // every (slot, j) of small caches against the formulas
  for (const TensorView& v : {kv0, kv2, kr2, kv3, kr1}) {
    const bool nz = v.dims[2] != 1;
    const int64_t w = nz ? v.dims[1] * v.dims[3] : v.dims[3];
    for (int64_t s = 0; s < 512; s += 37)
      for (int64_t j = 0; j < w; ++j) ASSERT_EQ(mla_preprocess_cache_offset(v, nz, s, j), spec_offset(v, nz, s, j));
  }
  // only the block axis may be non-contiguous: it is followed through strides[0]
  TensorView gap = kv2;
  gap.strides[0] = 70000;
  EXPECT_EQ(mla_preprocess_cache_offset(gap, true, 300, 100), 2 * 70000 + 3 * 128 * 32 + 44 * 32 + 4);
}

TEST(MlaPreprocessRefPieces, DeScaleInt64HoldsFp32BitsInTheLow32Bits) {
  const float a = 0.00123f, b = -0.5f;
  int64_t bits[3] = {static_cast<int64_t>(float_bits(a)), static_cast<int64_t>(float_bits(b)),
                     static_cast<int64_t>((uint64_t{0x12345678} << 32) | float_bits(a))};  // high bits ignored
  const TensorView i64 = make_view(bits, DType::kInt64, {3});
  EXPECT_EQ(mla_preprocess_load_descale(i64, 0), static_cast<double>(a));
  EXPECT_EQ(mla_preprocess_load_descale(i64, 1), -0.5);
  EXPECT_EQ(mla_preprocess_load_descale(i64, 2), static_cast<double>(a));
  const TensorView u64 = make_view(bits, DType::kUInt64, {3});
  EXPECT_EQ(mla_preprocess_load_descale(u64, 1), -0.5);
  float f32[2] = {0.25f, a};
  const TensorView f = make_view(f32, DType::kFloat32, {2});
  EXPECT_EQ(mla_preprocess_load_descale(f, 0), 0.25);
  EXPECT_EQ(mla_preprocess_load_descale(f, 1), static_cast<double>(a));
  // the test-data builder's encodings decode to the same fp32 values
  MlaPreprocessCaseConfig cfg = config(DType::kFloat16, CacheMode::kKvCache);
  MlaPreprocessCase h = make_mla_preprocess_case(cfg);
  cfg.dtype = DType::kBFloat16;
  MlaPreprocessCase bf = make_mla_preprocess_case(cfg);
  ASSERT_EQ(h.de_scale0.view.dtype, DType::kInt64);
  ASSERT_EQ(bf.de_scale0.view.dtype, DType::kFloat32);
  for (int64_t i = 0; i < h.de_scale0.numel(); ++i)
    ASSERT_EQ(mla_preprocess_load_descale(h.de_scale0.view, i), mla_preprocess_load_descale(bf.de_scale0.view, i));
}

TEST(MlaPreprocessRefPieces, ModeNames) {
  EXPECT_STREQ(mla_preprocess_cache_mode_name(CacheMode::kKvCache), "KVCACHE");
  EXPECT_STREQ(mla_preprocess_cache_mode_name(CacheMode::kKropeCtkv), "KROPE_CTKV");
  EXPECT_STREQ(mla_preprocess_cache_mode_name(CacheMode::kInt8NzCache), "INT8_NZCACHE");
  EXPECT_STREQ(mla_preprocess_cache_mode_name(CacheMode::kNzCache), "NZCACHE");
  EXPECT_STREQ(mla_preprocess_cache_mode_name(static_cast<CacheMode>(7)), "?");
  EXPECT_STREQ(mla_preprocess_quant_mode_name(QuantMode::kPerTensorAsymm), "PER_TENSOR_QUANT_ASYMM");
  EXPECT_STREQ(mla_preprocess_quant_mode_name(QuantMode::kPerTokenSymm), "PER_TOKEN_QUANT_SYMM");
  EXPECT_EQ(static_cast<int>(CacheMode::kNzCache), 3);
  EXPECT_EQ(static_cast<int>(QuantMode::kPerTokenSymm), 1);
  EXPECT_TRUE(mla_preprocess_is_nz_cache(CacheMode::kInt8NzCache));
  EXPECT_FALSE(mla_preprocess_is_nz_cache(CacheMode::kKropeCtkv));
  EXPECT_FALSE(mla_preprocess_has_rope_outputs(CacheMode::kKvCache));
}

// ------------------------------------------------------------------------------------------
// cache modes 0, 1, 3 hold the same kN / kR values at their mapped positions

TEST(MlaPreprocessRefCache, Modes013HoldTheSameValues) {
  for (DType dt : kDtypes) {
    for (QuantMode qm : {QuantMode::kPerTensorAsymm, QuantMode::kPerTokenSymm}) {
      SCOPED_TRACE(name_of(dt, CacheMode::kKvCache, qm));
      MlaPreprocessCase c0 = make_mla_preprocess_case(config(dt, CacheMode::kKvCache, qm));
      MlaPreprocessCase c1 = make_mla_preprocess_case(config(dt, CacheMode::kKropeCtkv, qm));
      MlaPreprocessCase c3 = make_mla_preprocess_case(config(dt, CacheMode::kNzCache, qm));
      run_ok(c0);
      run_ok(c1);
      run_ok(c3);
      const MlaPreprocessCaseConfig& cfg = c1.cfg;
      int64_t written = 0, nonzero = 0;
      for (int64_t t = 0; t < cfg.tokens; ++t) {
        const int64_t s = slot_of(c1, t);
        ASSERT_EQ(s, slot_of(c0, t));
        if (s < 0) continue;
        ++written;
        for (int64_t j = 0; j < cfg.Hckv; ++j) {
          const double v = stored_kn(c1, s, j);
          ASSERT_EQ(stored_kn(c0, s, j), v) << "t " << t << " j " << j;
          ASSERT_EQ(stored_kn(c3, s, j), v) << "t " << t << " j " << j;
          nonzero += v != 0;
        }
        for (int64_t j = 0; j < cfg.Dr; ++j) {
          ASSERT_EQ(stored_kr(c0, s, j), stored_kr(c1, s, j)) << "t " << t << " j " << j;
          ASSERT_EQ(stored_kr(c3, s, j), stored_kr(c1, s, j)) << "t " << t << " j " << j;
        }
      }
      EXPECT_EQ(written, cfg.tokens - 1);  // slot[0] = -1
      EXPECT_GT(nonzero, written * cfg.Hckv / 2);
      // qOut: cm0 = concat(qNope, qRope); cm1 and cm3 split it the same way
      for (int64_t t = 0; t < cfg.tokens; ++t)
        for (int64_t h = 0; h < cfg.heads; ++h) {
          for (int64_t k = 0; k < cfg.Hckv; ++k) {
            ASSERT_EQ(out_q_nope(c0, t, h, k), out_q_nope(c1, t, h, k));
            ASSERT_EQ(out_q_nope(c3, t, h, k), out_q_nope(c1, t, h, k));
          }
          for (int64_t i = 0; i < cfg.Dr; ++i) {
            ASSERT_EQ(out_q_rope(c0, t, h, i), out_q_rope(c1, t, h, i));
            ASSERT_EQ(out_q_rope(c3, t, h, i), out_q_rope(c1, t, h, i));
          }
        }
      EXPECT_TRUE(testdata::same_bytes(c1.q_rope_out, c3.q_rope_out));
      EXPECT_FALSE(testdata::all_bytes(c1.q_out, cfg.canary));
    }
  }
}

// cacheMode 2: int8 kv = quant(kN_fp32 / ctkvScale) (DIVIDE), qOut = round(qNope * qNopeScale[h])
// (MULTIPLY); the rope cache and qRopeOut are those of the other modes.
TEST(MlaPreprocessRefCache, Int8NzCacheDividesTheKvAndMultipliesTheQuery) {
  for (DType dt : kDtypes) {
    for (QuantMode qm : {QuantMode::kPerTensorAsymm, QuantMode::kPerTokenSymm}) {
      SCOPED_TRACE(name_of(dt, CacheMode::kInt8NzCache, qm));
      MlaPreprocessCaseConfig cfg = config(dt, CacheMode::kKropeCtkv, qm);
      cfg.tokens = 8;
      MlaPreprocessCase c1 = make_mla_preprocess_case(cfg);
      cfg.cache_mode = CacheMode::kInt8NzCache;
      MlaPreprocessCase c2 = make_mla_preprocess_case(cfg);
      run_ok(c1);
      run_ok(c2);
      EXPECT_TRUE(testdata::same_bytes(c1.q_rope_out, c2.q_rope_out));
      const double ctkv = c2.ctkv_scale.get(0);
      int64_t exact = 0, total = 0, unsaturated = 0;
      for (int64_t t = 0; t < cfg.tokens; ++t) {
        for (int64_t h = 0; h < cfg.heads; ++h) {
          const double qns = c2.q_nope_scale.get(h);
          for (int64_t k = 0; k < cfg.Hckv; ++k)
            ASSERT_EQ(out_q_nope(c2, t, h, k), static_cast<double>(int8_rint_sat(out_q_nope(c1, t, h, k) * qns)))
                << "t " << t << " h " << h << " k " << k;
        }
        const int64_t s = slot_of(c1, t);
        if (s < 0) continue;
        for (int64_t j = 0; j < cfg.Dr; ++j) ASSERT_EQ(stored_kr(c2, s, j), stored_kr(c1, s, j));
        for (int64_t j = 0; j < cfg.Hckv; ++j, ++total) {
          // from the fp32 RmsNorm output, which the dtype-rounded kN of cacheMode 1 approximates
          const double got = cache_elem(c2.kv_cache, true, s, j);
          const double want = int8_rint_sat(stored_kn(c1, s, j) / ctkv);
          ASSERT_LE(std::fabs(got - want), 1.0) << "t " << t << " j " << j;
          exact += got == want;
          unsaturated += std::fabs(got) < 127;
        }
      }
      EXPECT_GT(exact, total * 8 / 10);
      EXPECT_GT(unsaturated, total / 2);
    }
  }
}

// ------------------------------------------------------------------------------------------
// slotMapping

TEST(MlaPreprocessRefSlots, MinusOneLeavesRowsUntouched) {
  for (DType dt : kDtypes) {
    for (CacheMode cm : kAllCacheModes) {
      SCOPED_TRACE(name_of(dt, cm));
      MlaPreprocessCase c = make_mla_preprocess_case(config(dt, cm));
      c.slot_mapping.set(3, -1);  // and slot[0] = -1 from the builder
      run_ok(c);
      const bool nz = mla_preprocess_is_nz_cache(cm);
      std::vector<int64_t> written;
      for (int64_t t = 0; t < c.cfg.tokens; ++t)
        if (slot_of(c, t) >= 0) written.push_back(slot_of(c, t));
      ASSERT_EQ(written.size(), static_cast<size_t>(c.cfg.tokens - 2));
      for (const HostTensor* cache : {&c.kv_cache, &c.kv_cache_rope}) {
        if (!cache->present()) continue;
        const int64_t es = dtype_size(cache->view.dtype);
        const int64_t w = nz ? cache->view.dims[1] * cache->view.dims[3] : cache->view.dims[3];
        std::vector<bool> touched(cache->bytes.size(), false);
        for (int64_t s : written)
          for (int64_t j = 0; j < w; ++j)
            for (int64_t b = 0; b < es; ++b) touched[static_cast<size_t>(spec_offset(cache->view, nz, s, j) * es + b)] = true;
        int64_t n_touched = 0;
        for (size_t i = 0; i < cache->bytes.size(); ++i) {
          if (touched[i]) {
            ++n_touched;
          } else {
            ASSERT_EQ(cache->bytes[i], c.cfg.canary) << "byte " << i;
          }
        }
        EXPECT_EQ(n_touched, static_cast<int64_t>(written.size()) * w * es);
      }
      // the skipped tokens' query rows are still written
      const size_t row_bytes = c.q_out.bytes.size() / static_cast<size_t>(c.cfg.tokens);
      for (const size_t t : {size_t{0}, size_t{3}}) {
        const auto first = c.q_out.bytes.begin() + static_cast<std::ptrdiff_t>(t * row_bytes);
        EXPECT_TRUE(std::any_of(first, first + static_cast<std::ptrdiff_t>(row_bytes),
                                [&](uint8_t x) { return x != c.cfg.canary; }))
            << "token " << t;
      }
    }
  }
}

TEST(MlaPreprocessRefSlots, OutOfRangeSlotChangesNothing) {
  for (CacheMode cm : kAllCacheModes) {
    const MlaPreprocessCaseConfig cfg = config(DType::kFloat16, cm);
    const int64_t slots = cfg.block_num * cfg.block_size;
    for (const double bad : {static_cast<double>(slots), -2.0, 1e9}) {
      SCOPED_TRACE(name_of(cfg.dtype, cm) + " slot " + std::to_string(bad));
      MlaPreprocessCase c = make_mla_preprocess_case(cfg);
      c.slot_mapping.set(4, bad);  // the last token: the earlier ones are valid
      EXPECT_EQ(mla_preprocess_ref(c.params()), kParamInvalid);
      const std::string msg = last_error_message();
      EXPECT_NE(msg.find("slotMapping[4]"), std::string::npos) << msg;
      expect_untouched(c);
    }
  }
}

TEST(MlaPreprocessRefSlots, DuplicateSlotsLastTokenWins) {
  MlaPreprocessCase a = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKropeCtkv));
  MlaPreprocessCase b = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKropeCtkv));
  a.slot_mapping.set(1, a.slot_mapping.get(4));  // tokens 1 and 4 -> the same slot
  b.slot_mapping.set(1, -1);                     // token 4 alone
  run_ok(a);
  run_ok(b);
  EXPECT_TRUE(testdata::same_bytes(a.kv_cache, b.kv_cache));
  EXPECT_TRUE(testdata::same_bytes(a.kv_cache_rope, b.kv_cache_rope));
}

// ------------------------------------------------------------------------------------------
// dtypes, quant modes, weight forms

// The builder draws bf16-representable values, so the fp16 and bf16 cases share their inputs;
// the results differ by the dtype roundings only.
TEST(MlaPreprocessRefDtypes, Fp16AndBf16Agree) {
  for (QuantMode qm : {QuantMode::kPerTensorAsymm, QuantMode::kPerTokenSymm}) {
    SCOPED_TRACE(mla_preprocess_quant_mode_name(qm));
    MlaPreprocessCaseConfig cfg = config(DType::kFloat16, CacheMode::kKropeCtkv, qm);
    cfg.tokens = 8;
    MlaPreprocessCase h = make_mla_preprocess_case(cfg);
    cfg.dtype = DType::kBFloat16;
    MlaPreprocessCase b = make_mla_preprocess_case(cfg);
    for (int64_t i = 0; i < h.input.numel(); ++i) ASSERT_EQ(h.input.get(i), b.input.get(i));
    run_ok(h);
    run_ok(b);
    EXPECT_EQ(h.q_out.view.dtype, DType::kFloat16);
    EXPECT_EQ(b.q_out.view.dtype, DType::kBFloat16);
    EXPECT_LT(rel_l2(b.q_out.values(), h.q_out.values()), 0.02);  // observed 0.2% .. 0.5%
    EXPECT_LT(rel_l2(b.q_rope_out.values(), h.q_rope_out.values()), 0.02);
    std::vector<double> kn_h, kn_b, kr_h, kr_b;
    for (int64_t t = 1; t < cfg.tokens; ++t) {
      const int64_t s = slot_of(h, t);
      for (int64_t j = 0; j < cfg.Hckv; ++j) {
        kn_h.push_back(stored_kn(h, s, j));
        kn_b.push_back(stored_kn(b, s, j));
      }
      for (int64_t j = 0; j < cfg.Dr; ++j) {
        kr_h.push_back(stored_kr(h, s, j));
        kr_b.push_back(stored_kr(b, s, j));
      }
    }
    EXPECT_LT(rel_l2(kn_b, kn_h), 0.02);
    EXPECT_LT(rel_l2(kr_b, kr_h), 0.02);
    EXPECT_NE(kn_b, kn_h);  // the roundings really differ
  }
}

// quantMode 1 is per-token symmetric: with beta0 = 0, doubling gamma0 doubles y, the scale and
// m1 exactly (bf16 has no subnormals in range), so the kr cache doubles exactly; with eps = 0 the
// RmsNorms of ckv and cq are exactly scale invariant, so kN and the whole Q path are unchanged.
TEST(MlaPreprocessRefQuant, PerTokenIsScaleInvariant) {
  MlaPreprocessCaseConfig cfg = config(DType::kBFloat16, CacheMode::kKropeCtkv, QuantMode::kPerTokenSymm);
  cfg.epsilon = 0.0;
  MlaPreprocessCase a = make_mla_preprocess_case(cfg);
  MlaPreprocessCase b = make_mla_preprocess_case(cfg);
  for (int64_t i = 0; i < cfg.hidden; ++i) {
    a.beta0.set(i, 0.0);
    b.beta0.set(i, 0.0);
    b.gamma0.set(i, 2.0 * a.gamma0.get(i));
  }
  run_ok(a);
  run_ok(b);
  int64_t nonzero = 0;
  for (int64_t t = 1; t < cfg.tokens; ++t) {
    const int64_t s = slot_of(a, t);
    for (int64_t j = 0; j < cfg.Dr; ++j) {
      ASSERT_EQ(stored_kr(b, s, j), 2.0 * stored_kr(a, s, j)) << "t " << t << " j " << j;
      nonzero += stored_kr(a, s, j) != 0;
    }
    for (int64_t j = 0; j < cfg.Hckv; ++j) ASSERT_EQ(stored_kn(b, s, j), stored_kn(a, s, j));
  }
  EXPECT_GT(nonzero, 0);
  EXPECT_TRUE(testdata::same_bytes(a.q_out, b.q_out));
  EXPECT_TRUE(testdata::same_bytes(a.q_rope_out, b.q_rope_out));
  // per-tensor asymmetric quant is not invariant (the offset and the static scale)
  cfg.quant_mode = QuantMode::kPerTensorAsymm;
  MlaPreprocessCase c = make_mla_preprocess_case(cfg);
  MlaPreprocessCase d = make_mla_preprocess_case(cfg);
  for (int64_t i = 0; i < cfg.hidden; ++i) {
    c.beta0.set(i, 0.0);
    d.beta0.set(i, 0.0);
    d.gamma0.set(i, 2.0 * c.gamma0.get(i));
  }
  run_ok(c);
  run_ok(d);
  bool differs = false;
  for (int64_t t = 1; t < cfg.tokens; ++t)
    for (int64_t j = 0; j < cfg.Dr; ++j)
      differs = differs || stored_kr(d, slot_of(c, t), j) != 2.0 * stored_kr(c, slot_of(c, t), j);
  EXPECT_TRUE(differs);
}

TEST(MlaPreprocessRefQuant, PerTokenIgnoresScaleOffsetAndBias) {
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    // same seed: the per-tensor case has the same data plus quantScale / quantOffset / bias
    MlaPreprocessCase with = make_mla_preprocess_case(config(dt, CacheMode::kKvCache, QuantMode::kPerTensorAsymm));
    MlaPreprocessCase without = make_mla_preprocess_case(config(dt, CacheMode::kKvCache, QuantMode::kPerTokenSymm));
    ASSERT_TRUE(with.bias0.present());
    ASSERT_FALSE(without.bias0.present());
    MlaPreprocessParams p = with.params();
    p.quant_mode = QuantMode::kPerTokenSymm;
    ASSERT_EQ(mla_preprocess_ref(p), kSuccess) << last_error_message();
    run_ok(without);
    EXPECT_TRUE(testdata::same_bytes(with.q_out, without.q_out));
    EXPECT_TRUE(testdata::same_bytes(with.kv_cache, without.kv_cache));
    // and quantMode 0 gives something else
    with.reset_outputs();
    run_ok(with);
    EXPECT_FALSE(testdata::same_bytes(with.q_out, without.q_out));
  }
}

TEST(MlaPreprocessRefWeights, WukNdAndNzAreIdentical) {
  for (DType dt : kDtypes) {
    for (CacheMode cm : {CacheMode::kKvCache, CacheMode::kInt8NzCache}) {
      SCOPED_TRACE(name_of(dt, cm));
      MlaPreprocessCaseConfig cfg = config(dt, cm);
      MlaPreprocessCase nd = make_mla_preprocess_case(cfg);
      cfg.wuk_nz = true;
      MlaPreprocessCase nz = make_mla_preprocess_case(cfg);
      ASSERT_EQ(nz.wuk.view.rank, 4);
      ASSERT_EQ(nz.wuk.view.dims[1], cfg.Hckv / 16);
      ASSERT_EQ(nz.wuk.view.dims[2], cfg.D);
      run_ok(nd);
      run_ok(nz);
      EXPECT_TRUE(testdata::same_bytes(nd.q_out, nz.q_out));
      EXPECT_TRUE(testdata::same_bytes(nd.q_rope_out, nz.q_rope_out));
      EXPECT_TRUE(testdata::same_bytes(nd.kv_cache, nz.kv_cache));
      EXPECT_FALSE(testdata::all_bytes(nd.q_out, cfg.canary));
    }
  }
}

TEST(MlaPreprocessRefWeights, NzFormsAndNdAreIdentical) {
  for (bool float_weights : {false, true}) {
    SCOPED_TRACE(float_weights ? "dtype weights" : "int8 weights");
    MlaPreprocessCaseConfig cfg = config(DType::kBFloat16, CacheMode::kKropeCtkv);
    cfg.float_weights = float_weights;
    cfg.hidden = 40;  // K not a multiple of c0: padded columns
    cfg.Hcq = 40;     // wdqkv rows 64 + 16 + 40 = 120: padded rows
    cfg.heads = 3;
    cfg.D = 16;
    MlaPreprocessCase base = make_mla_preprocess_case(cfg);
    run_ok(base);
    for (MlaPreprocessWeightForm form :
         {MlaPreprocessWeightForm::kNzAtb, MlaPreprocessWeightForm::kNz2d, MlaPreprocessWeightForm::kNd}) {
      SCOPED_TRACE(static_cast<int>(form));
      cfg.weight_form = form;
      MlaPreprocessCase c = make_mla_preprocess_case(cfg);
      run_ok(c);
      EXPECT_TRUE(testdata::same_bytes(base.q_out, c.q_out));
      EXPECT_TRUE(testdata::same_bytes(base.q_rope_out, c.q_rope_out));
      EXPECT_TRUE(testdata::same_bytes(base.kv_cache, c.kv_cache));
      EXPECT_TRUE(testdata::same_bytes(base.kv_cache_rope, c.kv_cache_rope));
    }
    EXPECT_FALSE(testdata::all_bytes(base.q_out, cfg.canary));
  }
}

}  // namespace
}  // namespace mlaops
