// The check-site negative test of a C++ API operator (docs/testing.md, "Coverage tables"): phase 1
// and the one-shot call on mutated parameters return `code`, name the site's tag in the message,
// and leave every output and cache byte of the case (`written(c)`) unchanged.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/runtime.h"
#include "mlaops/status.h"

namespace mlaops::testing {

template <class Case, class Params, class Written>
void expect_site_rejected(const Case& c, const Params& p, const char* tag, Status code,
                          Status (*workspace_size)(const Params&, uint64_t*),
                          Status (*one_shot)(const Params&, void*, uint64_t), Written written) {
  SCOPED_TRACE(tag);
  const auto before = written(c);
  uint64_t size = 0;
  EXPECT_EQ(workspace_size(p, &size), code) << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find(tag), std::string::npos) << last_error_message();
  std::vector<uint8_t> ws(1 << 16);
  EXPECT_EQ(one_shot(p, ws.data(), ws.size()), code) << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find(tag), std::string::npos) << last_error_message();
  EXPECT_TRUE(written(c) == before) << "a rejected call changed an output or cache byte";
}

}  // namespace mlaops::testing
