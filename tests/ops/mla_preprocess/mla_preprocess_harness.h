// Runs MlaPreprocess's fast path (ops/mla_preprocess) and the float64 reference on the same case
// and compares every output and cache with the vendor's tolerance (docs/ops/mla_preprocess.md):
//   float outputs: the fraction of elements with |out - ref| > max(0.003 * |ref|, 0.003) must be
//                  <= 0.1 %;
//   int8 outputs (cacheMode 2 qOut and kvCache): max |out - ref| <= 1.
// With weights in the input dtype (doRmsNorm = false, which the vendor's tests do not cover) the
// float outputs follow mla_preprocess_dtype_weights_tolerance (testkit/compare.h) instead: three
// dtype roundings before the W_UK product make the vendor rule fail between two fp32 paths.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "core/element_access.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/runtime.h"
#include "ops/mla_preprocess/mla_preprocess_compare.h"
#include "ops/print_names.h"
#include "reference/mla_preprocess/mla_preprocess_ref.h"
#include "testkit/compare.h"
#include "testkit/mla_preprocess_test_data.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {

using testdata::HostTensor;
using testdata::MlaPreprocessCase;
using testdata::MlaPreprocessCaseConfig;

// The C++ API path (no vendor ranges): workspace size, then run.
inline Status run_fast(const MlaPreprocessCase& c) {
  const MlaPreprocessParams p = c.params();
  uint64_t bytes = 0;
  Status s = mla_preprocess_workspace_size(p, &bytes);
  if (s != kSuccess) return s;
  std::vector<uint8_t> ws(static_cast<size_t>(bytes) + 1);
  return mla_preprocess(p, ws.data(), bytes);
}

// Every output and cache of two runs, byte for byte.
inline bool outputs_equal(const MlaPreprocessCase& a, const MlaPreprocessCase& b) {
  return a.q_out.bytes == b.q_out.bytes && a.q_rope_out.bytes == b.q_rope_out.bytes &&
         a.kv_cache.bytes == b.kv_cache.bytes && a.kv_cache_rope.bytes == b.kv_cache_rope.bytes &&
         a.q_down_out.bytes == b.q_down_out.bytes;
}

inline void expect_match(const MlaPreprocessCase& fast, const MlaPreprocessCase& ref) {
  EXPECT_EQ(mla_preprocess_mismatches(fast, ref), "");
}

// The reference once, then the fast path under every ISA and thread count.
inline void run_and_compare_all_isas(const MlaPreprocessCaseConfig& cfg) {
  MlaPreprocessCase ref = testdata::make_mla_preprocess_case(cfg);
  ASSERT_EQ(mla_preprocess_ref(ref.params()), kSuccess) << last_error_message();
  for_each_isa_and_threads([&] {
    MlaPreprocessCase fast = testdata::make_mla_preprocess_case(cfg);
    ASSERT_EQ(run_fast(fast), kSuccess) << last_error_message() << " | " << describe(cfg);
    expect_match(fast, ref);
  });
}

}  // namespace mlaops::testing
