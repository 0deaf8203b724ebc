// Negative tests of the MlaProlog check sites the C++ API reaches (docs/testing.md, "Coverage
// tables"): each names the site's tag (the message words from the rule id) and proves that no
// output or cache byte changed. The C API sites are in test_mla_prolog_errors.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/expect_site.h"
#include "mlaops/mla_prolog.h"
#include "testkit/mla_prolog_test_data.h"

namespace mlaops::testing {
namespace {

using testdata::MlaPrologCase;
using testdata::MlaPrologCaseConfig;
using testdata::WeightForm;

std::vector<std::vector<uint8_t>> written_bytes(const MlaPrologCase& c) {
  return {c.kv_cache.bytes, c.kr_cache.bytes, c.query_out.bytes, c.query_rope_out.bytes,
          c.dequant_scale_q_nope_out.bytes};
}

void expect_site(const MlaPrologCase& c, const MlaPrologParams& p, const char* tag, Status code = kParamInvalid) {
  expect_site_rejected(c, p, tag, code, &mla_prolog_workspace_size, &mla_prolog, &written_bytes);
}

MlaPrologCase make(MlaPrologCaseConfig cfg = {}) { return testdata::make_mla_prolog_case(cfg); }

TEST(MlaPrologSites, NdWeightsMustBeBf16) {
  MlaPrologCaseConfig cfg;
  cfg.weight_form = WeightForm::kNd;
  cfg.scenario = MlaPrologScenario::kPartialQuantKvNoQuant;  // int8 weights
  MlaPrologCase c = make(cfg);
  expect_site(c, c.params(), "MP-03 an ND weight must be BF16");
}

TEST(MlaPrologSites, DimValues) {
  MlaPrologCase c = make();
  MlaPrologParams p = c.params();
  p.weight_uk.dims[0] = 0;  // N
  expect_site(c, p, "MP-09 must be positive");
  p = c.params();
  for (TensorView* r : {&p.rope_cos, &p.rope_sin})
    *r = make_view(r->data, r->dtype, {r->dims[0], r->dims[1], 15});  // [B, S, 15] of the same data
  expect_site(c, p, "ropeCos: MP-09 rope dim must be even");
}

TEST(MlaPrologSites, RequiredTensorAndNzDensity) {
  MlaPrologCase c = make();
  MlaPrologParams p = c.params();
  p.rope_sin = TensorView{};  // absent
  expect_site(c, p, "ropeSin: MP-01 required tensor is null", kParamNullptr);
  p = c.params();
  p.weight_dq.strides[0] *= 2;  // 4-D FRACTAL_NZ storage with gaps between the column blocks
  expect_site(c, p, "weightDq: MP-05 FRACTAL_NZ storage must be contiguous");
}

TEST(MlaPrologSites, LogicalNzViewShape) {
  MlaPrologCaseConfig cfg;
  cfg.weight_form = WeightForm::kNz2d;
  MlaPrologCase c = make(cfg);
  MlaPrologParams p = c.params();
  p.weight_dq.dims[1] -= 1;  // the logical columns no longer Hcq; the storage still covers them
  expect_site(c, p, "weightDq: MP-09 logical shape");
}

TEST(MlaPrologSites, SizeOverflow) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  MlaPrologCase c = make();
  MlaPrologParams p = c.params();
  p.weight_uk.dims[0] = int64_t{1} << 62;  // N * D * Hckv elements overflow
  expect_site(c, p, "weightUk: MP-14 tensor");
  // N * (D + Dr): weightUk [2^60, 1, 1] itself fits
  p = c.params();
  p.weight_uk.dims[0] = int64_t{1} << 60;
  p.weight_uk.dims[1] = 1;
  p.weight_uk.dims[2] = 1;
  p.weight_uk.strides[0] = 1;
  p.weight_uk.strides[1] = 1;
  expect_site(c, p, "MP-14 N*(D+Dr) overflows int64");
  // an ND weight [He, Hcq] of 2^80 elements; tokenX [.., He] and rmsnormGammaCq [Hcq] fit
  MlaPrologCaseConfig cfg;
  cfg.weight_form = WeightForm::kNd;
  MlaPrologCase nd = make(cfg);
  p = nd.params();
  p.token_x = make_view(p.token_x.data, p.token_x.dtype, {1, 1, kHuge});
  p.rmsnorm_gamma_cq = make_view(p.rmsnorm_gamma_cq.data, p.rmsnorm_gamma_cq.dtype, {kHuge});
  p.weight_dq = make_view(p.weight_dq.data, p.weight_dq.dtype, {kHuge, kHuge});
  expect_site(nd, p, "weightDq: MP-14 weight");
  // the same as FRACTAL_NZ storage [2^36, 2^36, 16, 16]
  MlaPrologCase nz = make();
  p = nz.params();
  p.token_x = make_view(p.token_x.data, p.token_x.dtype, {1, 1, kHuge});
  p.rmsnorm_gamma_cq = make_view(p.rmsnorm_gamma_cq.data, p.rmsnorm_gamma_cq.dtype, {kHuge});
  p.weight_dq = make_view(p.weight_dq.data, p.weight_dq.dtype, {kHuge / 16, kHuge / 16, 16, 16}, Format::kFractalNZ);
  expect_site(nz, p, "weightDq: MP-14 FRACTAL_NZ weight storage too large");
}

TEST(MlaPrologSites, PaNzRowWidths) {
  MlaPrologCaseConfig cfg;
  cfg.cache_mode = MlaPrologCacheMode::kPaNz;
  cfg.Dr = 8;  // an 8-wide bf16 rope row is not a whole 16-element NZ chunk
  MlaPrologCase dr = make(cfg);
  expect_site(dr, dr.params(), "krCacheRef: MP-16 PA_NZ needs Dr to be a multiple of c0");
  cfg.Dr = 16;
  cfg.Hckv = 24;  // nor a 24-wide kv row
  MlaPrologCase hckv = make(cfg);
  expect_site(hckv, hckv.params(), "kvCacheRef: MP-16 PA_NZ needs Hckv to be a multiple of c0");
}

// The V3 outputs too (queryNormOut and its scale).
std::vector<std::vector<uint8_t>> written_v3(const MlaPrologCase& c) {
  std::vector<std::vector<uint8_t>> w = written_bytes(c);
  w.push_back(c.query_norm_out.bytes);
  w.push_back(c.dequant_scale_q_norm_out.bytes);
  return w;
}

TEST(MlaPrologSites, QueryNormScaleExactlyWhenQuantized) {
  MlaPrologCaseConfig cfg;
  cfg.scenario = MlaPrologScenario::kPartialQuantKvNoQuant;  // int8 queryNormOut needs its scale
  cfg.query_norm = true;
  MlaPrologCase c = make(cfg);
  MlaPrologParams p = c.params();
  p.dequant_scale_q_norm_out = nullptr;
  expect_site_rejected(c, p, "MP-24 given exactly when queryNormOutOptional is given in a quantized scenario",
                       kParamInvalid, &mla_prolog_workspace_size, &mla_prolog, &written_v3);
}

TEST(MlaPrologSites, TndCacheShape) {
  MlaPrologCaseConfig cfg;
  cfg.cache_mode = MlaPrologCacheMode::kTnd;
  cfg.bsh = false;
  MlaPrologCase c = make(cfg);
  MlaPrologParams p = c.params();
  const TensorView& kv = p.kv_cache;  // [T, 1, Hckv] read as [T - 1, 1, Hckv]
  p.kv_cache = make_view(kv.data, kv.dtype, {kv.dims[0] - 1, 1, kv.dims[2]});
  expect_site(c, p, "kvCacheRef: MP-26 TND cache [T, 1, H]");
}

TEST(MlaPrologSites, PerTileKvQuant) {
  MlaPrologCase nq = make();  // no quant: bf16 weightUqQr and kvCache
  MlaPrologParams p = nq.params();
  p.kv_quant_per_tile = true;
  expect_site(nq, p, "MP-27 per-tile KV quant (kvCacheQuantMode 3) needs int8 weightUqQr and an int8 kvCache");
  MlaPrologCaseConfig cfg;
  cfg.scenario = MlaPrologScenario::kPartialQuantKvQuantPerTile;
  cfg.Hckv = 96;  // not a multiple of the tile (128)
  MlaPrologCase c = make(cfg);
  expect_site(c, c.params(), "rmsnormGammaCkv: MP-27 per-tile KV quant needs Hckv to be a multiple of the tile size");
}

}  // namespace
}  // namespace mlaops::testing
