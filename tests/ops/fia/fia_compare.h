// The comparison of a FusedInferAttentionScore run with the float64 reference's under the
// tolerances stated in fia_harness.h (no gtest: the operator tests and the fuzz targets share it).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "testkit/compare.h"
#include "testkit/fia_test_data.h"

namespace mlaops::testing {

inline Tolerance fia_out_tolerance(DType dt) {
  if (dt == DType::kFloat16) return {5e-3, 5e-3, 2e-3, 0.9999, 0, 0};
  return {7.8e-3, 1e-2, 1.5e-2, 0.9995, 0, 0};
}

struct FiaCompare {
  Stats out, lse;
  bool ok = false;
  std::string str() const { return "out{" + out.str() + "} lse{" + lse.str() + "}"; }
};

// Compares the operator's outputs (run `op`) with the reference's (run `ref`, FP64 output).
inline FiaCompare compare_fia(const fia_test::FiaRun& op, const fia_test::FiaRun& ref, DType dtype, bool lse) {
  FiaCompare r;
  const fia_test::HostTensor a = op.out_bnsd(), b = ref.out_bnsd();
  const Tolerance t = fia_out_tolerance(dtype);
  r.out = compare(a.view(), b.view(), t);
  r.ok = within(r.out, t, false);
  if (lse) {  // own loop: +inf positions must match exactly and must not enter the scale
    const fia_test::HostTensor la = op.lse_bns(), lb = ref.lse_bns();
    r.lse.n = lb.numel();
    for (int64_t i = 0; i < r.lse.n; ++i) {
      const double x = la.flat(i), y = lb.flat(i);
      if (std::isinf(x) || std::isinf(y) || std::isnan(x) || std::isnan(y)) {
        if (!(x == y)) {
          ++r.lse.bad;
          r.lse.worst = i;
        }
        continue;
      }
      const double diff = std::fabs(x - y);
      r.lse.max_abs = std::max(r.lse.max_abs, diff);
      r.lse.max_rel = std::max(r.lse.max_rel, diff / (std::fabs(y) + 1e-30));
      if (!(diff <= 1e-4 * std::fabs(y) + 1e-5)) {
        ++r.lse.bad;
        r.lse.worst = i;
      }
    }
    r.ok = r.ok && r.lse.bad == 0;
  }
  return r;
}

}  // namespace mlaops::testing
