// MlaProlog (scenario NoQuant: BF16 activations, weights, caches) under non-finite and denormal
// data (docs/numerics.md "Non-finite and extreme values"): every row of the computation is one
// token, so a NaN / inf in one token's tokenX element makes exactly that token's queryOut /
// queryRopeOut rows and its kvCache / krCache slot NaN, and every other output element is
// bitwise the clean run's; a NaN in a RmsNorm gamma poisons its channel (spread by the next
// projection, if any) for every token. Every
// ISA level, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ops/mla_prolog/mla_prolog_harness.h"
#include "ops/nonfinite_diff.h"

namespace mlaops::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Expected {
  int64_t query, query_rope, kv, kr;  // poisoned elements per output (all NaN or +-inf)
};

void check(const MlaPrologCaseConfig& cfg, const std::function<void(MlaPrologCase&)>& poison, Expected e,
           const std::string& what) {
  for_each_isa_and_threads([&] {
    SCOPED_TRACE(what + " isa=" + isa_name(active_isa()));
    MlaPrologCase clean = testdata::make_mla_prolog_case(cfg);
    ASSERT_EQ(run_fast(clean), kSuccess) << last_error_message();
    MlaPrologCase bad = testdata::make_mla_prolog_case(cfg);
    poison(bad);
    ASSERT_EQ(run_fast(bad), kSuccess) << last_error_message();
    const Diff q = diff(bad.query_out, clean.query_out), qr = diff(bad.query_rope_out, clean.query_rope_out);
    const Diff kv = diff(bad.kv_cache, clean.kv_cache), kr = diff(bad.kr_cache, clean.kr_cache);
    EXPECT_EQ(q.n, e.query);
    EXPECT_EQ(q.nonfinite, e.query) << "queryOut: changed elements must be non-finite";
    EXPECT_EQ(qr.n, e.query_rope);
    EXPECT_EQ(qr.nonfinite, e.query_rope);
    EXPECT_EQ(kv.n, e.kv);
    EXPECT_EQ(kv.nonfinite, e.kv) << "kvCache";
    EXPECT_EQ(kr.n, e.kr);
    EXPECT_EQ(kr.nonfinite, e.kr) << "krCache";
  });
}

MlaPrologCaseConfig base_cfg() {
  MlaPrologCaseConfig cfg;  // NoQuant, B 2, S 3, He 64, N 2, Hckv 32, Dr 16, PA_BSND
  cfg.seed = 11;
  return cfg;
}

TEST(MlaPrologNonFinite, NanOrInfInOneTokenPoisonsThatTokenOnly) {
  const MlaPrologCaseConfig cfg = base_cfg();
  const int64_t t = 4, N = cfg.N, Hckv = cfg.Hckv, Dr = cfg.Dr;
  const Expected one_token{N * Hckv, N * Dr, Hckv, Dr};
  check(cfg, [&](MlaPrologCase& c) { c.token_x.set(t * cfg.He + 5, kNaN); }, one_token, "NaN in tokenX");
  // +inf: the RmsNorm branches give inf / inf = NaN; the rope key (no norm) x * W_kr gives +-inf,
  // and its rotation inf - inf = NaN or +-inf: that slot is non-finite, not all NaN
  check(cfg, [&](MlaPrologCase& c) { c.token_x.set(t * cfg.He + 9, std::numeric_limits<double>::infinity()); },
        one_token, "+inf in tokenX");
}

TEST(MlaPrologNonFinite, NanInAGammaPoisonsItsChannel) {
  const MlaPrologCaseConfig cfg = base_cfg();
  const int64_t T = cfg.T(), N = cfg.N, Hckv = cfg.Hckv, Dr = cfg.Dr;
  // gammaCq[j] poisons channel j of c_Q, which the W_UQ projection spreads over the whole query
  // branch (queryOut and queryRopeOut); gammaCkv[j] only channel j of every kv cache row
  check(cfg, [](MlaPrologCase& c) { c.rmsnorm_gamma_cq.set(3, kNaN); }, {T * N * Hckv, T * N * Dr, 0, 0},
        "NaN in rmsnormGammaCq");
  check(cfg, [](MlaPrologCase& c) { c.rmsnorm_gamma_ckv.set(3, kNaN); }, {0, 0, T, 0}, "NaN in rmsnormGammaCkv");
}

// Denormal BF16 tokenX values (~1e-39; the AVX-512 BF16 dot products read them as zero): the
// RmsNorm of a row of them is finite (x / sqrt(mean x^2 + eps) with eps 1e-5), no NaN anywhere.
TEST(MlaPrologNonFinite, DenormalTokenRowIsFinite) {
  const MlaPrologCaseConfig cfg = base_cfg();
  for_each_isa_and_threads([&] {
    MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
    for (int64_t k = 0; k < cfg.He; ++k) c.token_x.set(2 * cfg.He + k, k % 2 ? 1e-39 : -1e-39);
    ASSERT_EQ(run_fast(c), kSuccess) << last_error_message();
    for (const HostTensor* h : {&c.query_out, &c.query_rope_out})
      for (int64_t i = 0; i < h->numel(); ++i) ASSERT_TRUE(std::isfinite(h->get(i))) << isa_name(active_isa()) << " " << i;
  });
}

// Large epsilons (finite in float32) are accepted and defined: with eps = 1e30 the RmsNorm
// output is ~x * 1e-15 (tiny, finite); eps = FLT_MAX too.
TEST(MlaPrologNonFinite, LargeFiniteEpsilons) {
  for (double eps : {1e30, 3.4028234663852886e38}) {
    MlaPrologCaseConfig cfg = base_cfg();
    for_each_isa_and_threads([&] {
      MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
      MlaPrologParams p = c.params();
      p.rmsnorm_epsilon_cq = p.rmsnorm_epsilon_ckv = eps;
      uint64_t bytes = 0;
      ASSERT_EQ(mla_prolog_workspace_size(p, &bytes), kSuccess) << last_error_message();
      std::vector<uint8_t> ws(static_cast<size_t>(bytes) + 1);
      ASSERT_EQ(mla_prolog(p, ws.data(), bytes), kSuccess) << last_error_message();
      for (const HostTensor* h : {&c.query_out, &c.query_rope_out})
        for (int64_t i = 0; i < h->numel(); ++i) ASSERT_TRUE(std::isfinite(h->get(i))) << eps << " " << i;
    });
  }
}

}  // namespace
}  // namespace mlaops::testing
