// The comparison of an MlaPreprocess run with the float64 reference's (no gtest: shared by the
// operator tests and the fuzz targets).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "core/element_access.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/runtime.h"
#include "testkit/compare.h"
#include "testkit/mla_preprocess_test_data.h"

namespace mlaops::testing {

using testdata::HostTensor;
using testdata::MlaPreprocessCase;
using testdata::MlaPreprocessCaseConfig;

inline std::string describe(const MlaPreprocessCaseConfig& c) {
  return std::string(dtype_name(c.dtype)) + " T=" + std::to_string(c.tokens) + " N=" + std::to_string(c.heads) +
         " He=" + std::to_string(c.hidden) + " Hckv=" + std::to_string(c.Hckv) + " Dr=" + std::to_string(c.Dr) +
         " Hcq=" + std::to_string(c.Hcq) + " D=" + std::to_string(c.D) + " " +
         mla_preprocess_cache_mode_name(c.cache_mode) + " " + mla_preprocess_quant_mode_name(c.quant_mode) +
         (c.float_weights ? " dtype-weights" : " int8-weights") + (c.wuk_nz ? " wuk-NZ" : " wuk-ND") +
         " form=" + std::to_string(static_cast<int>(c.weight_form)) +
         (c.mlapo ? std::string(" mlapo") + (c.rope ? "" : " no-rope") + (c.beta1 ? "" : " no-beta1") : "") +
         " blocks=" + std::to_string(c.block_num) + "x" +
         std::to_string(c.block_size) + " isa=" + isa_name(active_isa()) + " threads=" + std::to_string(num_threads());
}

// The vendor comparison of one tensor.
struct VendorStats {
  int64_t n = 0, beyond = 0;  // elements beyond max(0.003 |ref|, 0.003) (float) / beyond +-1 (int8)
  double max_abs = 0, max_rel = 0;
  int64_t off_by_one = 0;     // int8: elements that differ at all
  std::string str() const {
    char b[200];
    std::snprintf(b, sizeof b, "n=%lld beyond=%lld (%.4f%%) max_abs=%.3g max_rel=%.3g diff=%lld", (long long)n,
                  (long long)beyond, n ? 100.0 * static_cast<double>(beyond) / static_cast<double>(n) : 0.0, max_abs,
                  max_rel, (long long)off_by_one);
    return b;
  }
};

inline VendorStats vendor_compare(const TensorView& a, const TensorView& r) {
  VendorStats s;
  s.n = r.numel();
  const bool integer = r.dtype == DType::kInt8;
  for (int64_t i = 0; i < s.n; ++i) {
    const double av = load_f64(a, linear_to_offset(a, i)), rv = load_f64(r, linear_to_offset(r, i));
    if (std::isnan(av) && std::isnan(rv)) continue;
    const double diff = std::fabs(av - rv);
    s.max_abs = std::max(s.max_abs, diff);
    s.max_rel = std::max(s.max_rel, diff / std::max(std::fabs(rv), 1e-3));
    if (diff > 0) ++s.off_by_one;
    const bool bad = integer ? !(diff <= 1.0) : !(diff <= std::max(0.003 * std::fabs(rv), 0.003));
    s.beyond += bad;
  }
  return s;
}

// The worst statistics seen per output name (printed at the end with MLAOPS_TEST_VERBOSE).
// Returns one line per failed check (empty: every check passed).
inline std::string mla_preprocess_mismatches(const MlaPreprocessCase& fast, const MlaPreprocessCase& ref) {
  const std::string what = describe(fast.cfg);
  std::string bad;
  auto check = [&](const char* name, const HostTensor& a, const HostTensor& r) {
    if (!r.present()) return;
    if (fast.cfg.float_weights && r.view.dtype != DType::kInt8) {
      const Tolerance tol = mla_preprocess_dtype_weights_tolerance(r.view.dtype);
      const Stats st = compare(a.view, r.view, tol);
      if (!within(st, tol, false)) bad += std::string(name) + ": " + st.str() + " | " + what + "\n";
      if (std::getenv("MLAOPS_TEST_VERBOSE")) std::printf("%-14s %s | %s\n", name, st.str().c_str(), what.c_str());
      return;
    }
    const VendorStats s = vendor_compare(a.view, r.view);
    const bool ok = r.view.dtype == DType::kInt8 ? s.beyond == 0
                                                 : static_cast<double>(s.beyond) <= 0.001 * static_cast<double>(s.n);
    if (!ok) bad += std::string(name) + ": " + s.str() + " | " + what + "\n";
    if (std::getenv("MLAOPS_TEST_VERBOSE")) std::printf("%-14s %s | %s\n", name, s.str().c_str(), what.c_str());
  };
  check("q_out", fast.q_out, ref.q_out);
  check("q_rope_out", fast.q_rope_out, ref.q_rope_out);
  check("kv_cache", fast.kv_cache, ref.kv_cache);
  check("kv_cache_rope", fast.kv_cache_rope, ref.kv_cache_rope);
  check("q_down_out", fast.q_down_out, ref.q_down_out);
  // caches: elements the reference left at the canary must be untouched by the fast path too
  for (auto [name, a, r] : {std::tuple{"kv_cache", &fast.kv_cache, &ref.kv_cache},
                            std::tuple{"kv_cache_rope", &fast.kv_cache_rope, &ref.kv_cache_rope}}) {
    if (!r->present()) continue;
    int64_t mismatch = 0;
    const size_t es = static_cast<size_t>(dtype_size(r->view.dtype));
    for (size_t i = 0; i + es <= r->bytes.size(); i += es) {
      bool rc = true, fc = true;
      for (size_t k = 0; k < es; ++k) {
        rc &= r->bytes[i + k] == fast.cfg.canary;
        fc &= a->bytes[i + k] == fast.cfg.canary;
      }
      mismatch += rc != fc;
    }
    if (mismatch != 0) bad += std::string(name) + ": written/untouched elements differ | " + what + "\n";
  }
  return bad;
}

}  // namespace mlaops::testing
