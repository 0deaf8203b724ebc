// MlaPreprocess under a non-finite input element (docs/numerics.md "Non-finite and extreme
// values"). Every stage works per token, so a NaN / inf in one token's input row changes only that
// token's qOut / qRopeOut rows and its kvCache / krCache slot; every other element is bitwise the
// clean run's. What the poisoned token gets depends on the path:
//   * weights in the input dtype (no quantisation): NaN / +-inf flows through: every changed
//     element is non-finite;
//   * the INT8 stages (quantMode 0 static, 1 dynamic per token): the RmsNorm row is NaN and its
//     INT8 quantisation maps NaN to 0 (include/mlaops/numeric.h); the dynamic per-token scale
//     max |y| / 127 skips the NaN: the token's outputs change but stay finite.
// Every ISA level, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ops/nonfinite_diff.h"
#include "ops/mla_preprocess/mla_preprocess_harness.h"

namespace mlaops::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Runs a clean and a poisoned case; returns the per-output diffs (qOut, qRopeOut, kvCache, krCache).
struct Diffs {
  Diff q, qr, kv, kr;
};
Diffs run_pair(const MlaPreprocessCaseConfig& cfg, const std::function<void(MlaPreprocessCase&)>& poison) {
  MlaPreprocessCase clean = testdata::make_mla_preprocess_case(cfg);
  EXPECT_EQ(run_fast(clean), kSuccess) << last_error_message();
  MlaPreprocessCase bad = testdata::make_mla_preprocess_case(cfg);
  poison(bad);
  EXPECT_EQ(run_fast(bad), kSuccess) << last_error_message();
  return {diff(bad.q_out, clean.q_out), diff(bad.q_rope_out, clean.q_rope_out), diff(bad.kv_cache, clean.kv_cache),
          diff(bad.kv_cache_rope, clean.kv_cache_rope)};
}

// Elements of qOut / qRopeOut of a case (their per-token share is numel / T).
int64_t base_q(const MlaPreprocessCaseConfig& cfg) { return testdata::make_mla_preprocess_case(cfg).q_out.numel(); }
int64_t base_qr(const MlaPreprocessCaseConfig& cfg) {
  const MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  return c.q_rope_out.numel() >= cfg.tokens ? c.q_rope_out.numel() : 0;
}

TEST(MlaPreprocessNonFinite, DtypeWeightsPropagateNonFinite) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    MlaPreprocessCaseConfig cfg;
    cfg.dtype = dt;
    cfg.float_weights = true;
    const int64_t t = 3;
    for (double bad : {kNaN, std::numeric_limits<double>::infinity()}) {
      for_each_isa_and_threads([&] {
        SCOPED_TRACE(describe(cfg) + " value " + std::to_string(bad));
        const Diffs d = run_pair(cfg, [&](MlaPreprocessCase& c) { c.input.set(t * cfg.hidden + 4, bad); });
        // the token's qOut and qRopeOut rows, and its slot of the caches (Hckv + Dr elements over
        // kvCache and krCache; cacheMode 0 keeps both parts in kvCache)
        const int64_t T = cfg.tokens;
        EXPECT_EQ(d.q.n, base_q(cfg) / T);
        EXPECT_EQ(d.q.nonfinite, d.q.n);
        EXPECT_EQ(d.qr.n, base_qr(cfg) / T);
        EXPECT_EQ(d.qr.nonfinite, d.qr.n);
        EXPECT_EQ(d.kv.n + d.kr.n, cfg.Hckv + cfg.Dr);
        EXPECT_EQ(d.kv.nonfinite + d.kr.nonfinite, cfg.Hckv + cfg.Dr);
      });
    }
  }
}

TEST(MlaPreprocessNonFinite, Int8StagesChangeOnlyThePoisonedToken) {
  for (MlaPreprocessQuantMode qm : {MlaPreprocessQuantMode::kPerTensorAsymm, MlaPreprocessQuantMode::kPerTokenSymm}) {
    MlaPreprocessCaseConfig cfg;
    cfg.quant_mode = qm;
    const int64_t t = 1;
    for_each_isa_and_threads([&] {
      SCOPED_TRACE(describe(cfg));
      const Diffs d = run_pair(cfg, [&](MlaPreprocessCase& c) { c.input.set(t * cfg.hidden + 4, kNaN); });
      // only the poisoned token's elements change, all to finite values (NaN -> 0 at the INT8
      // quantisation; the per-token max |y| skips the NaN)
      const int64_t T = cfg.tokens;
      EXPECT_GT(d.q.n, 0);
      EXPECT_LE(d.q.n, base_q(cfg) / T);
      EXPECT_LE(d.qr.n, base_qr(cfg) / T);
      EXPECT_GT(d.kv.n + d.kr.n, 0);
      EXPECT_LE(d.kv.n + d.kr.n, cfg.Hckv + cfg.Dr);
      EXPECT_EQ(d.q.nonfinite + d.qr.nonfinite + d.kv.nonfinite + d.kr.nonfinite, 0);
    });
  }
}

}  // namespace
}  // namespace mlaops::testing
