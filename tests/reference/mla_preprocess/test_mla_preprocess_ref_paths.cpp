// Tests of the float64 MlaPreprocess reference (reference/mla_preprocess/mla_preprocess_ref.h), end to end: the
// order of the first projection, the RoPE wiring, the kv row's RmsNorm, linearity of the float
// weight path, the vendor split sizes in every cache mode, and errors that write nothing.
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
// the order of the first projection and the RoPE wiring, end to end

TEST(MlaPreprocessRefPaths, FirstProjectionIsKvFirst) {
  MlaPreprocessCaseConfig cfg = config(DType::kFloat16, CacheMode::kKropeCtkv);
  MlaPreprocessCase base = make_mla_preprocess_case(cfg);
  MlaPreprocessCase no_ckv = make_mla_preprocess_case(cfg);
  MlaPreprocessCase no_kpe = make_mla_preprocess_case(cfg);
  for (int64_t c = 0; c < cfg.Hckv; ++c) no_ckv.de_scale0.set(c, 0.0);            // m1[0:Hckv] = 0
  for (int64_t c = cfg.Hckv; c < cfg.Hckv + cfg.Dr; ++c) no_kpe.de_scale0.set(c, 0.0);  // m1[Hckv:Hckv+Dr] = 0
  run_ok(base);
  run_ok(no_ckv);
  run_ok(no_kpe);
  // the Q path reads only cq
  EXPECT_TRUE(testdata::same_bytes(base.q_out, no_ckv.q_out));
  EXPECT_TRUE(testdata::same_bytes(base.q_out, no_kpe.q_out));
  EXPECT_TRUE(testdata::same_bytes(base.q_rope_out, no_kpe.q_rope_out));
  EXPECT_TRUE(testdata::same_bytes(base.kv_cache_rope, no_ckv.kv_cache_rope));
  EXPECT_TRUE(testdata::same_bytes(base.kv_cache, no_kpe.kv_cache));
  for (int64_t t = 1; t < cfg.tokens; ++t) {
    const int64_t s = slot_of(base, t);
    for (int64_t j = 0; j < cfg.Hckv; ++j) ASSERT_EQ(stored_kn(no_ckv, s, j), 0.0);  // RmsNorm(0) = 0
    for (int64_t j = 0; j < cfg.Dr; ++j) ASSERT_EQ(stored_kr(no_kpe, s, j), 0.0);
  }
}

TEST(MlaPreprocessRefPaths, RopeRotatesHalvesEndToEnd) {
  // Identity tables (cos 1, sin 0) expose kpe and qp; the real tables must give
  // v*cos + rotate_half(v)*sin of them, within the dtype's rounding.
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    MlaPreprocessCaseConfig cfg = config(dt, CacheMode::kKropeCtkv);
    MlaPreprocessCase id = make_mla_preprocess_case(cfg);
    MlaPreprocessCase rot = make_mla_preprocess_case(cfg);
    for (int64_t i = 0; i < id.cos.numel(); ++i) {
      id.cos.set(i, 1.0);
      id.sin.set(i, 0.0);
    }
    run_ok(id);
    run_ok(rot);
    EXPECT_TRUE(testdata::same_bytes(id.q_out, rot.q_out));
    const int64_t Dr = cfg.Dr, h = Dr / 2;
    const double ulp = dt == DType::kFloat16 ? 1.0 / 1024 : 1.0 / 128;
    auto check = [&](const std::vector<double>& v, const std::vector<double>& out, int64_t t) {
      for (int64_t i = 0; i < Dr; ++i) {
        const double c = rot.cos.get(t * Dr + i), s = rot.sin.get(t * Dr + i);
        const double r = i < h ? -v[static_cast<size_t>(i + h)] : v[static_cast<size_t>(i - h)];
        const double want = v[static_cast<size_t>(i)] * c + r * s;
        ASSERT_NEAR(out[static_cast<size_t>(i)], want, (std::fabs(v[static_cast<size_t>(i)]) + std::fabs(r)) * ulp + 1e-6)
            << "t " << t << " i " << i;
      }
    };
    for (int64_t t = 0; t < cfg.tokens; ++t) {
      for (int64_t hd = 0; hd < cfg.heads; ++hd) {
        std::vector<double> v, out;
        for (int64_t i = 0; i < Dr; ++i) {
          v.push_back(out_q_rope(id, t, hd, i));
          out.push_back(out_q_rope(rot, t, hd, i));
        }
        check(v, out, t);
      }
      const int64_t s = slot_of(id, t);
      if (s < 0) continue;
      std::vector<double> v, out;
      for (int64_t i = 0; i < Dr; ++i) {
        v.push_back(stored_kr(id, s, i));
        out.push_back(stored_kr(rot, s, i));
      }
      check(v, out, t);
    }
    EXPECT_FALSE(testdata::same_bytes(id.q_rope_out, rot.q_rope_out));
  }
}

TEST(MlaPreprocessRefPaths, KvRowHasUnitRmsWithUnitGamma) {
  MlaPreprocessCaseConfig cfg = config(DType::kBFloat16, CacheMode::kNzCache);
  MlaPreprocessCase c = make_mla_preprocess_case(cfg);
  for (int64_t j = 0; j < cfg.Hckv; ++j) c.gamma2.set(j, 1.0);
  run_ok(c);
  for (int64_t t = 1; t < cfg.tokens; ++t) {
    double ms = 0;
    for (int64_t j = 0; j < cfg.Hckv; ++j) ms += stored_kn(c, slot_of(c, t), j) * stored_kn(c, slot_of(c, t), j);
    EXPECT_NEAR(ms / static_cast<double>(cfg.Hckv), 1.0, 2.0 / 128) << "t " << t;
  }
}

// The unquantized path (weights in the input dtype, doRmsNorm = false; UNCONFIRMED math): the
// first projection is a plain matmul of the input, so doubling the input doubles kpe and the kr
// cache exactly (bf16), while the Q path and kN (both normalized; eps = 0) do not move at all.
TEST(MlaPreprocessRefPaths, FloatWeightPathIsLinearInTheInput) {
  for (CacheMode cm : {CacheMode::kKvCache, CacheMode::kKropeCtkv}) {
    SCOPED_TRACE(mla_preprocess_cache_mode_name(cm));
    MlaPreprocessCaseConfig cfg = config(DType::kBFloat16, cm);
    cfg.float_weights = true;
    cfg.epsilon = 0.0;  // exact scale invariance of the RmsNorms
    MlaPreprocessCase a = make_mla_preprocess_case(cfg);
    MlaPreprocessCase b = make_mla_preprocess_case(cfg);
    EXPECT_FALSE(a.de_scale0.present());
    EXPECT_FALSE(a.params().do_rms_norm);
    for (int64_t i = 0; i < a.input.numel(); ++i) b.input.set(i, 2.0 * a.input.get(i));
    run_ok(a);
    run_ok(b);
    int64_t nonzero = 0;
    for (int64_t t = 1; t < cfg.tokens; ++t) {
      const int64_t s = slot_of(a, t);
      for (int64_t j = 0; j < cfg.Dr; ++j) {
        ASSERT_EQ(stored_kr(b, s, j), 2.0 * stored_kr(a, s, j));
        nonzero += stored_kr(a, s, j) != 0;
      }
      for (int64_t j = 0; j < cfg.Hckv; ++j) ASSERT_EQ(stored_kn(b, s, j), stored_kn(a, s, j));
    }
    EXPECT_GT(nonzero, 0);
    // the Q path normalizes cq before the second matmul: unchanged
    if (cm == CacheMode::kKvCache) {
      for (int64_t t = 0; t < cfg.tokens; ++t)
        for (int64_t h = 0; h < cfg.heads; ++h)
          for (int64_t k = 0; k < cfg.Hckv; ++k) ASSERT_EQ(out_q_nope(b, t, h, k), out_q_nope(a, t, h, k));
    } else {
      EXPECT_TRUE(testdata::same_bytes(a.q_out, b.q_out));
      EXPECT_TRUE(testdata::same_bytes(a.q_rope_out, b.q_rope_out));
    }
    // fp16 runs too
    cfg.dtype = DType::kFloat16;
    run_ok(make_mla_preprocess_case(cfg));
  }
}

// The vendor's split sizes (512 / 64 / 1536 / 128) and block size 128, every cache mode, checked
// with the literal cache-offset formulas of docs/ops/mla_preprocess.md.
TEST(MlaPreprocessRefVendor, VendorSplitSizesInEveryCacheMode) {
  MlaPreprocessCaseConfig cfg = config(DType::kFloat16, CacheMode::kKropeCtkv);
  cfg.Hckv = 512;
  cfg.Dr = 64;
  cfg.Hcq = 1536;
  cfg.D = 128;
  cfg.heads = 2;
  cfg.hidden = 256;
  cfg.tokens = 3;
  cfg.block_num = 2;
  cfg.block_size = 128;
  MlaPreprocessCase c1 = make_mla_preprocess_case(cfg);
  run_ok(c1);
  ASSERT_EQ(c1.wdqkv.view.dims[1], 2112 / 16);
  for (CacheMode cm : {CacheMode::kKvCache, CacheMode::kInt8NzCache, CacheMode::kNzCache}) {
    SCOPED_TRACE(mla_preprocess_cache_mode_name(cm));
    cfg.cache_mode = cm;
    MlaPreprocessCase c = make_mla_preprocess_case(cfg);
    run_ok(c);
    const double ctkv = c.ctkv_scale.present() ? c.ctkv_scale.get(0) : 0.0;
    for (int64_t t = 1; t < cfg.tokens; ++t) {
      const int64_t s = slot_of(c, t), b = s / 128, o = s % 128;
      for (int64_t j = 0; j < 512; ++j) {
        const double kn = stored_kn(c1, s, j);
        switch (cm) {
          case CacheMode::kKvCache: ASSERT_EQ(load_f64(c.kv_cache.view, s * 576 + j), kn); break;
          case CacheMode::kInt8NzCache: {
            const double v = load_f64(c.kv_cache.view, b * 128 * 512 + (j / 32) * 128 * 32 + o * 32 + j % 32);
            ASSERT_LE(std::fabs(v - int8_rint_sat(kn / ctkv)), 1.0) << j;
            break;
          }
          default: ASSERT_EQ(load_f64(c.kv_cache.view, b * 128 * 512 + (j / 16) * 128 * 16 + o * 16 + j % 16), kn);
        }
      }
      for (int64_t j = 0; j < 64; ++j) {
        const double kr = stored_kr(c1, s, j);
        if (cm == CacheMode::kKvCache) {
          ASSERT_EQ(load_f64(c.kv_cache.view, s * 576 + 512 + j), kr);
        } else {
          ASSERT_EQ(load_f64(c.kv_cache_rope.view, b * 128 * 64 + (j / 16) * 128 * 16 + o * 16 + j % 16), kr);
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------------------
// errors: nothing is written

TEST(MlaPreprocessRefErrors, InvalidCallsWriteNothing) {
  const auto expect_fail = [](MlaPreprocessCase& c, const MlaPreprocessParams& p, Status code, const char* what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(mla_preprocess_ref(p), code);
    EXPECT_NE(std::string(last_error_message()).find(what), std::string::npos) << last_error_message();
    expect_untouched(c);
  };
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kInt8NzCache));
    MlaPreprocessParams p = c.params();
    p.ctkv_scale = nullptr;
    expect_fail(c, p, kParamNullptr, "ctkvScale");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKropeCtkv));
    MlaPreprocessParams p = c.params();
    p.q_rope_out = nullptr;
    expect_fail(c, p, kParamNullptr, "qRopeOut");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKvCache));
    MlaPreprocessParams p = c.params();
    p.bias0 = nullptr;
    expect_fail(c, p, kParamNullptr, "bias0");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kBFloat16, CacheMode::kKropeCtkv));
    MlaPreprocessParams p = c.params();
    p.gamma1.dims[0] -= 16;
    expect_fail(c, p, kParamInvalid, "wdqkv");  // Hcq is derived from gamma1: wdqkv's rows no longer match
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kBFloat16, CacheMode::kKropeCtkv));
    MlaPreprocessParams p = c.params();
    p.beta1.dims[0] -= 1;
    expect_fail(c, p, kParamInvalid, "beta1");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kNzCache));
    MlaPreprocessParams p = c.params();
    p.q_out.dtype = DType::kInt8;
    expect_fail(c, p, kParamInvalid, "qOut");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kInt8NzCache));
    MlaPreprocessParams p = c.params();
    p.kv_cache.dtype = DType::kFloat16;  // cacheMode 2 needs the INT8 cache
    expect_fail(c, p, kParamInvalid, "kvCache");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKvCache));
    MlaPreprocessCase other = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKvCache));
    MlaPreprocessParams p = c.params();
    TensorView small = other.kv_cache.view;
    small.dims[0] = 1;  // holds block 0 only; the case writes rows in later blocks
    p.kv_cache_out = small;
    expect_fail(c, p, kParamInvalid, "kvCacheOut");
    EXPECT_TRUE(testdata::all_bytes(other.kv_cache, c.cfg.canary));
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKropeCtkv));
    MlaPreprocessParams p = c.params();
    p.do_rms_norm = false;  // INT8 weights without RmsNorm: not supported
    expect_fail(c, p, kParamInvalid, "doRmsNorm");
  }
  {
    MlaPreprocessCaseConfig cfg = config(DType::kBFloat16, CacheMode::kKropeCtkv);
    cfg.float_weights = true;
    MlaPreprocessCase c = make_mla_preprocess_case(cfg);
    MlaPreprocessParams p = c.params();
    p.do_rms_norm = true;
    expect_fail(c, p, kParamInvalid, "doRmsNorm");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKropeCtkv));
    MlaPreprocessParams p = c.params();
    p.quant_mode = static_cast<QuantMode>(2);  // PER_TOKEN_QUANT_ASYMM: rejected by the vendor
    expect_fail(c, p, kParamInvalid, "quantMode");
  }
  {
    MlaPreprocessCase c = make_mla_preprocess_case(config(DType::kFloat16, CacheMode::kKropeCtkv));
    MlaPreprocessParams p = c.params();
    p.wdqkv.dims[1] += 1;  // not an accepted NZ view of [Hckv+Dr+Hcq, He]
    expect_fail(c, p, kParamInvalid, "wdqkv");
  }
}

TEST(MlaPreprocessRefErrors, ZeroTokensWriteNothing) {
  for (CacheMode cm : kAllCacheModes) {
    SCOPED_TRACE(mla_preprocess_cache_mode_name(cm));
    MlaPreprocessCaseConfig cfg = config(DType::kFloat16, cm);
    cfg.tokens = 0;
    MlaPreprocessCase c = make_mla_preprocess_case(cfg);
    run_ok(c);
    expect_untouched(c);
  }
}

}  // namespace
}  // namespace mlaops
