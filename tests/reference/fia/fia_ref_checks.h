// Checks shared by the FusedInferAttentionScoreV4 reference tests (test_fia_ref.cpp,
// test_fia_ref_masks.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "core/error.h"
#include "reference/fia/fia_ref.h"
#include "testkit/fia_test_data.h"

namespace mlaops::fia_test {

// Runs the reference on a fresh materialisation; fails the test on a non-success status.
inline std::unique_ptr<FiaRun> run_ok(const FiaCanonical& c, const FiaRunConfig& cfg) {
  auto r = build_fia_run(c, cfg);
  EXPECT_NE(r, nullptr) << cfg.layout;
  if (r == nullptr) return r;
  const Status st = fused_infer_attention_score_v4_ref(r->params);
  EXPECT_EQ(st, kSuccess) << cfg.layout << ": " << last_error_message();
  return r;
}

// Element-wise equality (NaN == NaN, inf == inf), `tol` absolute+relative.
inline void expect_close(const HostTensor& a, const HostTensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  int bad = 0;
  for (int64_t i = 0; i < a.numel() && bad < 5; ++i) {
    const double x = a.flat(i), y = b.flat(i);
    const bool same = (std::isnan(x) && std::isnan(y)) || x == y ||
                      (std::isfinite(x) && std::isfinite(y) && std::fabs(x - y) <= tol * (1.0 + std::fabs(y)));
    if (!same) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << ": " << x << " vs " << y;
    }
  }
}
inline void expect_same(const HostTensor& a, const HostTensor& b, const std::string& what) { expect_close(a, b, 0.0, what); }

inline bool has_nan(const HostTensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (std::isnan(t.flat(i))) return true;
  return false;
}

}  // namespace mlaops::fia_test
