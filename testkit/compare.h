// Comparison of an operator's output with the float64 reference's, with the per-dtype rules the
// operator tests state (docs/testing.md):
//  * bf16 / fp16 outputs: every element within atol + rtol*|ref| where rtol is a small number of
//    ulps of the output type and atol a fraction of the tensor's RMS (absorbs cancellation); plus
//    the mean relative error bound and cosine similarity.
//  * int8 outputs: |out - ref| <= 1 everywhere, and at most max_off_frac of the elements differ.
//  * fp32 outputs: relative error bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/element_access.h"
#include "mlaops/tensor_view.h"

namespace mlaops::testing {

struct Stats {
  int64_t n = 0, bad = 0, off_by_one = 0, beyond_cap = 0;
  double max_abs = 0, max_rel = 0, mean_rel = 0, rms_ref = 0, cosine = 1;
  int64_t worst = -1;
  std::string str() const {
    std::ostringstream s;
    s << "n=" << n << " bad=" << bad << " beyond_cap=" << beyond_cap << " max_abs=" << max_abs << " max_rel=" << max_rel << " mean_rel=" << mean_rel
      << " rms_ref=" << rms_ref << " cos=" << cosine << " worst=" << worst << " off_by_one=" << off_by_one;
    return s.str();
  }
};

struct Tolerance {
  double rtol = 0, atol_rms = 0;   // |a - r| <= atol_rms * rms(ref) + rtol * |r|
  double max_mean_rel = 1;         // mean(|a - r| / (|r| + rms*1e-3))
  double min_cosine = 0;
  int64_t int_max_diff = 0;        // integer outputs
  double int_max_off_frac = 0;
  // Quantized intermediates (a dynamic int8 quant that rounds a tie the other way in fp32 than
  // in float64) move a few elements past the elementwise bound: allow at most this fraction of
  // elements beyond it, each still within cap_rms * rms(ref). 0 = strict.
  double max_bad_frac = 0;
  double cap_rms = 0;
};

// bf16 outputs produced by fp32 arithmetic from the same bf16 inputs as the reference.
inline Tolerance bf16_tolerance(double ulps = 2) { return {ulps * 0.0078125, 0.004, 0.004, 0.9999, 0, 0, 0, 0}; }
// The same rule in ulps of the output dtype: 2^-7 relative (bf16) or 2^-10 (fp16).
inline Tolerance half_tolerance(DType dt, double ulps = 2) {
  Tolerance t = bf16_tolerance(ulps);
  if (dt == DType::kFloat16) t.rtol = ulps * 0.0009765625;
  return t;
}
// Outputs at the end of a chain of bf16 / fp16 (or int8 re-quantization) roundings that the
// vendor kernel also performs: fp32 accumulation in the fast path against float64 in the
// reference sends an intermediate across a rounding boundary now and then, and every later stage
// carries the other neighbour (two fp32 paths, e.g. the scalar and the AVX-512 one, differ from
// each other as much as from the reference; docs/testing.md). At most 0.1 % of the elements may
// exceed the elementwise bound, each within 5 % of the output's RMS, and the mean relative error
// may reach one ulp of the dtype (one flip early in a token's chain can move a third of its
// outputs by an ulp).
inline Tolerance with_rounding_cascade(Tolerance t, DType dt = DType::kBFloat16) {
  t.max_bad_frac = 0.001;
  t.cap_rms = 0.05;
  t.max_mean_rel = std::max(t.max_mean_rel, dt == DType::kFloat16 ? 0.0009765625 : 0.0078125);
  return t;
}
inline Tolerance int8_tolerance(double off_frac = 0.01) { return {0, 0, 1, 0, 1, off_frac, 0, 0}; }
inline Tolerance fp32_tolerance(double rtol = 1e-4) { return {rtol, 1e-6, rtol, 0.99999, 0, 0, 0, 0}; }

// Compares all elements of a and r (same shape and dtype).
inline Stats compare(const TensorView& a, const TensorView& r, const Tolerance& tol) {
  Stats s;
  s.n = r.numel();
  double ss = 0, dot = 0, na = 0;
  for (int64_t i = 0; i < s.n; ++i) {
    const double rv = load_f64(r, linear_to_offset(r, i));
    ss += rv * rv;
  }
  s.rms_ref = s.n ? std::sqrt(ss / static_cast<double>(s.n)) : 0;
  const bool integer = r.dtype == DType::kInt8 || r.dtype == DType::kInt32 || r.dtype == DType::kInt64;
  double worst_excess = -1;
  for (int64_t i = 0; i < s.n; ++i) {
    const double av = load_f64(a, linear_to_offset(a, i));
    const double rv = load_f64(r, linear_to_offset(r, i));
    const double diff = std::fabs(av - rv);
    const bool both_nan = std::isnan(av) && std::isnan(rv);
    const bool same_inf = std::isinf(av) && std::isinf(rv) && (av > 0) == (rv > 0);
    if (both_nan || same_inf) continue;
    dot += av * rv;
    na += av * av;
    s.max_abs = std::max(s.max_abs, diff);
    const double rel = diff / (std::fabs(rv) + s.rms_ref * 1e-3 + 1e-30);
    s.max_rel = std::max(s.max_rel, rel);
    s.mean_rel += rel;
    double allowed;
    if (integer) {
      allowed = static_cast<double>(tol.int_max_diff);
      if (diff > 0) ++s.off_by_one;
    } else {
      allowed = tol.atol_rms * s.rms_ref + tol.rtol * std::fabs(rv);
    }
    if (!integer && tol.cap_rms > 0 && !(diff <= tol.cap_rms * s.rms_ref)) ++s.beyond_cap;
    if (!(diff <= allowed)) {
      ++s.bad;
      if (diff - allowed > worst_excess) {
        worst_excess = diff - allowed;
        s.worst = i;
      }
    }
  }
  if (s.n) s.mean_rel /= static_cast<double>(s.n);
  s.cosine = (na > 0 && ss > 0) ? dot / std::sqrt(na * ss) : (na == ss ? 1.0 : 0.0);
  return s;
}

inline bool within(const Stats& s, const Tolerance& tol, bool integer) {
  if (!integer && tol.max_bad_frac > 0) {
    if (s.beyond_cap > 0 || static_cast<double>(s.bad) > tol.max_bad_frac * static_cast<double>(s.n)) return false;
  } else if (s.bad) {
    return false;
  }
  if (integer) return static_cast<double>(s.off_by_one) <= tol.int_max_off_frac * static_cast<double>(s.n) + 1;
  return s.mean_rel <= tol.max_mean_rel && s.cosine >= tol.min_cosine;
}

// ---- the operators' rules, shared by the operator tests and `mlaops check` ----

// MlaPrologV2 queryOut / queryRopeOut (bf16): 2 ulps (4 where c_Q is re-quantized to int8) and the
// rounding-cascade allowance (docs/ops/mla_prolog.md).
inline Tolerance mla_prolog_query_tolerance(bool quantized_cq) {
  return with_rounding_cascade(bf16_tolerance(quantized_cq ? 4 : 2));
}

// MlaPreprocess with weights in the input dtype (doRmsNorm = false; the vendor's tests cover only
// int8 weights): float outputs and caches at 2 ulps of the dtype with the rounding-cascade
// allowance. Three dtype roundings in a row (the W_DQKV product, the RmsNorm'd c_Q, the W_UQ
// product) sit before the W_UK product, so the vendor rule (0.1 % of the elements beyond
// max(0.003 |ref|, 0.003), less than one bf16 ulp) fails between two fp32 paths at the aclnn
// doc's shape (docs/ops/mla_preprocess.md).
inline Tolerance mla_preprocess_dtype_weights_tolerance(DType dt) {
  return with_rounding_cascade(half_tolerance(dt, 2), dt);
}

}  // namespace mlaops::testing
