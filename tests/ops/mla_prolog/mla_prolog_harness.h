// Runs MlaProlog's fast path (ops/mla_prolog) and the float64 reference on the same case and
// compares every output and cache at the stated tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mlaops/runtime.h"
#include "ops/mla_prolog/mla_prolog_compare.h"
#include "ops/print_names.h"
#include "ops/mla_prolog/mla_prolog.h"
#include "reference/mla_prolog/mla_prolog_ref.h"
#include "testkit/compare.h"
#include "testkit/mla_prolog_test_data.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {

using testdata::HostTensor;
using testdata::MlaPrologCase;
using testdata::MlaPrologCaseConfig;

// The C++ API path (no vendor ranges): workspace size, then run.
inline Status run_fast(const MlaPrologCase& c) {
  const MlaPrologParams p = c.params();
  uint64_t bytes = 0;
  Status s = mla_prolog_workspace_size(p, &bytes);
  if (s != kSuccess) return s;
  std::vector<uint8_t> ws(static_cast<size_t>(bytes) + 1);
  return mla_prolog(p, ws.data(), bytes);
}


inline void expect_match(const MlaPrologCase& fast, const MlaPrologCase& ref) {
  EXPECT_EQ(mla_prolog_mismatches(fast, ref), "");
}

// Builds the case twice (the fast path and the reference each write their own copy), runs both.
inline void run_and_compare(const MlaPrologCaseConfig& cfg) {
  MlaPrologCase ref = testdata::make_mla_prolog_case(cfg);
  ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess) << last_error_message();
  MlaPrologCase fast = testdata::make_mla_prolog_case(cfg);
  ASSERT_EQ(run_fast(fast), kSuccess) << last_error_message() << " | " << describe(cfg);
  expect_match(fast, ref);
}

}  // namespace mlaops::testing
