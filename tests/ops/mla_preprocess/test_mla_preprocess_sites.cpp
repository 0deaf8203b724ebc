// Negative tests of the MlaPreprocess check sites the C++ API reaches (docs/testing.md, "Coverage
// tables"): each names the site's tag (the message words from the rule id) and proves that no
// output or cache byte changed. The C API sites are in test_mla_preprocess_errors.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/expect_site.h"
#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "mlaops/mla_preprocess.h"
#include "testkit/mla_preprocess_test_data.h"

namespace mlaops::testing {
namespace {

using testdata::MlaPreprocessCase;
using testdata::MlaPreprocessCaseConfig;
using testdata::MlaPreprocessWeightForm;

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

TEST(MlaPreprocessSites, NzWeightViews) {
  MlaPreprocessCaseConfig cfg;
  cfg.weight_form = MlaPreprocessWeightForm::kNz2d;
  MlaPreprocessCase c = make(cfg);
  MlaPreprocessParams p = c.params();
  p.wdqkv.dims[1] -= 1;  // the logical columns no longer hidden; the storage still covers them
  expect_site(c, p, "wdqkv: MPP-09 logical");
  p = c.params();
  p.wdqkv.storage_rank = 3;  // 2-D logical view over 3-D storage dims
  expect_site(c, p, "wdqkv: MPP-09 storage shape of a 2-D FRACTAL_NZ view");
  // a hidden size whose FRACTAL_NZ storage [He / 16, 8, 16, 16] FP16 (He * 512 bytes) overflows
  // int64 while input [5, He] still fits; input, gamma0 and beta0 agree on He
  constexpr int64_t kHuge = int64_t{1} << 56;
  MlaPreprocessCase nz = make();
  p = nz.params();
  p.input = make_view(p.input.data, p.input.dtype, {p.input.dims[0], kHuge});
  for (TensorView* g : {&p.gamma0, &p.beta0}) *g = make_view(g->data, g->dtype, {kHuge});
  expect_site(nz, p, "wdqkv: MPP-15 FRACTAL_NZ weight storage too large");
}

TEST(MlaPreprocessSites, NzWukHeadDims) {
  MlaPreprocessCaseConfig cfg;
  cfg.wuk_nz = true;
  MlaPreprocessCase c = make(cfg);
  MlaPreprocessParams p = c.params();
  p.wuk = make_view(p.wuk.data, p.wuk.dtype, {p.wuk.dims[0], p.wuk.dims[1], 24, p.wuk.dims[3]},
                    Format::kFractalNZ);  // D 24: not a multiple of 16
  // wuq's rows N * (D + Dr) = 2 * (24 + 16) = 80: FRACTAL_NZ [2, 5, 16, 32] (a prefix of its storage)
  p.wuq = make_view(p.wuq.data, p.wuq.dtype, {p.wuq.dims[0], 5, 16, p.wuq.dims[3]}, Format::kFractalNZ);
  expect_site(c, p, "wuk: MPP-09 FRACTAL_NZ needs Hckv (");
}

TEST(MlaPreprocessSites, CacheExtentOverflow) {
  MlaPreprocessCase c = make();
  MlaPreprocessParams p = c.params();
  p.kv_cache.strides[0] = int64_t{1} << 61;  // (BlockNum - 1) * stride overflows
  expect_site(c, p, "kvCache: MPP-15 cache extent too large");
}

// Slot values are read by the run (phase 2): phase 1 accepts the call, the run rejects it before
// writing.
TEST(MlaPreprocessSites, SlotOutOfRange) {
  MlaPreprocessCase c = make();
  c.slot_mapping.set(0, static_cast<double>(c.cfg.block_num * c.cfg.block_size));
  const auto before = written_bytes(c);
  const MlaPreprocessParams p = c.params();
  uint64_t size = 0;
  ASSERT_EQ(mla_preprocess_workspace_size(p, &size), kSuccess) << last_error_message();
  std::vector<uint8_t> ws(static_cast<size_t>(size) + 1);
  EXPECT_EQ(mla_preprocess(p, ws.data(), size), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("slotMapping: MPP-17 slotMapping["), std::string::npos)
      << last_error_message();
  EXPECT_TRUE(written_bytes(c) == before) << "an out-of-range slot changed an output or cache byte";
}

// aclnnMlaPreprocessV2 makes the caches contiguous before its kernel reads their geometry: a
// padded block axis (accepted by aclnnMlaPreprocess, MPP-05's cache layout) is rejected there.
TEST(MlaPreprocessSites, V2NeedsContiguousCaches) {
  // the aclnn layer's vendor ranges (hidden 7168, N 16, ...)
  MlaPreprocessCaseConfig cfg =
      testdata::vendor_cfg({DType::kBFloat16, 2, 16, MlaPreprocessCacheMode::kNzCache,
                            MlaPreprocessQuantMode::kPerTokenSymm, false, testdata::MlaPreprocessWeightForm::kNz4d, false},
                           1);
  cfg.block_num = 4;
  cfg.q_down = true;  // qDownOut: the call goes through aclnnMlaPreprocessV2
  const MlaPreprocessCase c = make(cfg);
  const auto before = written_bytes(c);
  const aclnnStatus s = mla_preprocess_call(c, [](MlaPreprocessArgs& a) {
    for (const char* n : {"kvCache", "kvCacheOut", "kvCacheRope", "krCacheOut"}) {  // blocks 0 and 2 of 4
      TensorView& t = a[n];
      t.dims[0] = 2;
      t.strides[0] *= 2;
    }
  });
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, ACLNN_ERR_PARAM_INVALID) << msg;
  EXPECT_NE(msg.find("aclnnMlaPreprocessV2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kvCache: MPP-05 (aclnnMlaPreprocessV2: contiguous caches)"), std::string::npos) << msg;
  EXPECT_TRUE(written_bytes(c) == before) << "a rejected call changed an output or cache byte";
}

}  // namespace
}  // namespace mlaops::testing
