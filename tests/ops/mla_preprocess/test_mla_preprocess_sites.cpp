// Negative tests of the MlaPreprocess check sites the C++ API reaches (docs/testing.md, "Coverage
// tables"): each names the site's tag (the message words from the rule id) and proves that no
// output or cache byte changed. The C API sites are in test_mla_preprocess_errors.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/expect_site.h"
#include "mlaops/mla_preprocess.h"
#include "reference/mla_preprocess_test_data.h"

namespace mlaops::testing {
namespace {

using testdata::MlaPreprocessCase;
using testdata::MlaPreprocessCaseConfig;

std::vector<std::vector<uint8_t>> written_bytes(const MlaPreprocessCase& c) {
  return {c.kv_cache.bytes, c.kv_cache_rope.bytes, c.q_out.bytes, c.q_rope_out.bytes, c.q_down_out.bytes};
}

void expect_site(const MlaPreprocessCase& c, const MlaPreprocessParams& p, const char* tag, Status code = kParamInvalid) {
  expect_site_rejected(c, p, tag, code, &mla_preprocess_workspace_size, &mla_preprocess, &written_bytes);
}

MlaPreprocessCase make(MlaPreprocessCaseConfig cfg = {}) { return testdata::make_mla_preprocess_case(cfg); }

TEST(MlaPreprocessSites, DimValues) {
  MlaPreprocessCase c = make();
  MlaPreprocessParams p = c.params();
  p.wuk = make_view(p.wuk.data, p.wuk.dtype, {0, p.wuk.dims[1], p.wuk.dims[2]});  // headNum 0
  expect_site(c, p, "MPP-09 must be positive");
  p = c.params();
  for (TensorView* r : {&p.cos, &p.sin}) *r = make_view(r->data, r->dtype, {r->dims[0], 15});  // odd rope dim
  expect_site(c, p, "cos: MPP-09 the rope dim must be even");
  p = c.params();
  p.wuk = make_view(p.wuk.data, p.wuk.dtype, {p.wuk.dims[0], p.wuk.dims[1], p.wuk.dims[2], 1});  // 4 dims, ND
  expect_site(c, p, "wuk: MPP-04 ([N, D, Hckv])");
}

TEST(MlaPreprocessSites, NzMultiples) {
  MlaPreprocessCaseConfig cfg;
  cfg.wuk_nz = true;
  MlaPreprocessCase nz = make(cfg);
  MlaPreprocessParams p = nz.params();
  p.wuk = make_view(p.wuk.data, p.wuk.dtype, {p.wuk.dims[0], p.wuk.dims[1] * p.wuk.dims[2], p.wuk.dims[3]},
                    Format::kFractalNZ);  // 3 dims, FRACTAL_NZ
  expect_site(nz, p, "wuk: MPP-04 (FRACTAL_NZ [N, Hckv/16, D, 16])");
}

TEST(MlaPreprocessSites, NzCacheRowWidths) {
  MlaPreprocessCaseConfig cfg;
  cfg.cache_mode = MlaPreprocessCacheMode::kNzCache;
  cfg.Dr = 8;  // an 8-wide rope row is not a whole 16-element chunk
  MlaPreprocessCase dr = make(cfg);
  expect_site(dr, dr.params(), "MPP-09 the NZ caches need Hckv (");
}

TEST(MlaPreprocessSites, SizeOverflow) {
  MlaPreprocessCase c = make();
  MlaPreprocessParams p = c.params();
  p.kv_cache = make_view(p.kv_cache.data, p.kv_cache.dtype,
                         {int64_t{1} << 62, p.kv_cache.dims[1], p.kv_cache.dims[2], p.kv_cache.dims[3]});
  expect_site(c, p, "MPP-15 size overflows int64");  // BlockNum * BlockSize
  p = c.params();
  p.kv_cache_out.strides[0] = -1;
  expect_site(c, p, "kvCacheOut: MPP-15 the view's extent");
}

}  // namespace
}  // namespace mlaops::testing
