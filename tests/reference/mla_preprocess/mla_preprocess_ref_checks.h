// Helpers shared by the MlaPreprocess reference tests (test_mla_preprocess_ref.cpp,
// test_mla_preprocess_ref_paths.cpp): case configs, the documented cache offsets, output accessors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/mla_preprocess.h"
#include "mlaops/numeric.h"
#include "mlaops/status.h"
#include "reference/mla_preprocess/mla_preprocess_ref.h"
#include "testkit/mla_preprocess_test_data.h"

namespace mlaops::mpp_ref_test {

using testdata::HostTensor;
using testdata::make_mla_preprocess_case;
using testdata::MlaPreprocessCase;
using testdata::MlaPreprocessCaseConfig;
using testdata::MlaPreprocessWeightForm;
using CacheMode = MlaPreprocessCacheMode;
using QuantMode = MlaPreprocessQuantMode;

inline constexpr CacheMode kAllCacheModes[] = {CacheMode::kKvCache, CacheMode::kKropeCtkv, CacheMode::kInt8NzCache,
                                        CacheMode::kNzCache};
inline constexpr DType kDtypes[] = {DType::kFloat16, DType::kBFloat16};

inline MlaPreprocessCaseConfig config(DType dt, CacheMode cm, QuantMode qm = QuantMode::kPerTensorAsymm) {
  MlaPreprocessCaseConfig cfg;
  cfg.dtype = dt;
  cfg.cache_mode = cm;
  cfg.quant_mode = qm;
  return cfg;
}

inline std::string name_of(DType dt, CacheMode cm, QuantMode qm = QuantMode::kPerTensorAsymm) {
  return std::string(dtype_name(dt)) + " " + mla_preprocess_cache_mode_name(cm) + " " +
         mla_preprocess_quant_mode_name(qm);
}

inline void run_ok(const MlaPreprocessCase& c) {
  const Status st = mla_preprocess_ref(c.params());
  ASSERT_EQ(st, kSuccess) << last_error_message();
}

inline int64_t slot_of(const MlaPreprocessCase& c, int64_t t) { return static_cast<int64_t>(c.slot_mapping.get(t)); }

// Element j of flat slot s of a contiguous cache, by the formulas of docs/ops/mla_preprocess.md:
// ND [BlockNum, BlockSize, 1, W]: s*W + j; NZ [BlockNum, W/c0, BlockSize, c0]:
// b*BlockSize*W + (j/c0)*BlockSize*c0 + o*c0 + j%c0.
inline int64_t spec_offset(const TensorView& cache, bool nz, int64_t s, int64_t j) {
  if (!nz) return s * cache.dims[3] + j;
  const int64_t bs = cache.dims[2], c0 = cache.dims[3], w = cache.dims[1] * c0;
  return (s / bs) * bs * w + (j / c0) * bs * c0 + (s % bs) * c0 + j % c0;
}
inline double cache_elem(const HostTensor& cache, bool nz, int64_t s, int64_t j) {
  return load_f64(cache.view, spec_offset(cache.view, nz, s, j));
}

// kN[j] / kR[j] as stored for slot s (not for the int8 kv cache of cacheMode 2).
inline double stored_kn(const MlaPreprocessCase& c, int64_t s, int64_t j) {
  return cache_elem(c.kv_cache, mla_preprocess_is_nz_cache(c.cfg.cache_mode), s, j);
}
inline double stored_kr(const MlaPreprocessCase& c, int64_t s, int64_t j) {
  switch (c.cfg.cache_mode) {
    case CacheMode::kKvCache: return cache_elem(c.kv_cache, false, s, c.cfg.Hckv + j);
    case CacheMode::kKropeCtkv: return cache_elem(c.kv_cache_rope, false, s, j);
    default: return cache_elem(c.kv_cache_rope, true, s, j);
  }
}
// qNope[t, h, k] and qRope[t, h, i] as output (qNope not for cacheMode 2).
inline double out_q_nope(const MlaPreprocessCase& c, int64_t t, int64_t h, int64_t k) {
  const int64_t w = c.q_out.view.dims[2];
  return c.q_out.get((t * c.cfg.heads + h) * w + k);
}
inline double out_q_rope(const MlaPreprocessCase& c, int64_t t, int64_t h, int64_t i) {
  if (c.cfg.cache_mode == CacheMode::kKvCache) return out_q_nope(c, t, h, c.cfg.Hckv + i);
  return c.q_rope_out.get((t * c.cfg.heads + h) * c.cfg.Dr + i);
}

inline void expect_untouched(const MlaPreprocessCase& c) {
  for (const HostTensor* h : {&c.kv_cache, &c.kv_cache_rope, &c.q_out, &c.q_rope_out})
    EXPECT_TRUE(testdata::all_bytes(*h, c.cfg.canary));
}

// ||a - b||_2 / ||b||_2
inline double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den == 0 ? (num == 0 ? 0 : INFINITY) : std::sqrt(num / den);
}

}  // namespace mlaops::mpp_ref_test
