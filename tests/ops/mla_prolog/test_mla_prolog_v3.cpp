// aclnnMlaPrologV3WeightNz through the C API: with the V2-equivalent mode tuples it is bitwise
// V2; the α scales and queryNormOut against the float64 reference at the vendor's shapes; the V3
// rules (MP-19..MP-25, MP-01 for cacheIndexOptional, MP-26 of actualSeqLen, the V3 forms of
// MP-03 / MP-10) with their status, message and proof that no output or cache byte changed. The
// cache modes, per-tile and per-tensor KV quant: test_mla_prolog_v3_cache_modes.cpp; the V3
// ranges and the plain aclnnMlaPrologV3: test_mla_prolog_v3_ranges.cpp. Every forced ISA.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/mla_prolog/mla_prolog_v3_cases.h"

namespace mlaops::testing {
namespace {

using namespace mla_prolog_v3;

// With α = 1, no queryNormOut and the scenario's mode tuple, V3 writes exactly V2's bytes.
TEST(MlaPrologV3, V2EquivalentModesAreBitwiseV2) {
  for (MlaPrologScenario sc : kAll)
    for (bool bsh : {true, false}) {
      const MlaPrologCaseConfig cfg =
          vendor_cfg(sc, bsh, bsh ? MlaPrologCacheMode::kPaBsnd : MlaPrologCacheMode::kPaNz);
      SCOPED_TRACE(describe(cfg));
      const MlaPrologCase base = testdata::make_mla_prolog_case(cfg);  // generated once, cloned per run
      for (Isa isa : runnable_isas()) {
        set_isa(isa);
        SCOPED_TRACE(isa_name(isa));
        MlaPrologCase v2 = base.clone();
        ASSERT_EQ(mla_prolog_call(v2), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        MlaPrologCase v3 = base.clone();
        ASSERT_EQ(mla_prolog_call(v3, v3_call()), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        EXPECT_TRUE(testdata::same_bytes(v2.query_out, v3.query_out));
        EXPECT_TRUE(testdata::same_bytes(v2.query_rope_out, v3.query_rope_out));
        EXPECT_TRUE(testdata::same_bytes(v2.kv_cache, v3.kv_cache));
        EXPECT_TRUE(testdata::same_bytes(v2.kr_cache, v3.kr_cache));
        if (sc == FKV) {
          EXPECT_TRUE(testdata::same_bytes(v2.dequant_scale_q_nope_out, v3.dequant_scale_q_nope_out));
        }
      }
    }
  reset_isa();
}

// qcQrScale / kcScale and queryNormOut (+ dequantScaleQNormOut) against the reference, at the
// vendor example's B = 8 (a single int8 flip of the W_UQ_QR A operand moves a handful of one
// token's query values past the elementwise bound: the rounding-cascade allowance of
// docs/ops/mla_prolog.md is a fraction of the elements).
TEST(MlaPrologV3, ScalesAndQueryNormAgainstReference) {
  for (MlaPrologScenario sc : kAll) {
    MlaPrologCaseConfig cfg = vendor_cfg(sc, sc != PQ, sc == FQ ? MlaPrologCacheMode::kPaNz : MlaPrologCacheMode::kPaBsnd);
    cfg.B = 8;  // the vendor's example: B 8, S 1
    cfg.block_num = 1;
    cfg.qc_qr_scale = 10.0;  // the vendor's V3 test value
    cfg.kc_scale = sc == FKV ? 10.0 : 0.5;
    cfg.query_norm = true;
    // the case generated once and the reference computed once; every ISA runs a clone against it
    expect_v3_matches_reference(testdata::make_mla_prolog_case(cfg));
  }
}

// ---- rules ----

constexpr aclnnStatus kGraphFailed = -1;

TEST(MlaPrologV3Errors, MP19_WrapperModeChecksReturnGraphFailed) {
  expect_rejected(NQ, kGraphFailed, "weightQuantMode", "MP-19 value", modes(3, 0, 0));
  expect_rejected(NQ, kGraphFailed, "weightQuantMode", "MP-19 value", modes(-1, 0, 0));
  expect_rejected(NQ, kGraphFailed, "kvCacheQuantMode", "MP-19 value with weightQuantMode", modes(0, 1, 0));
  expect_rejected(PQ, kGraphFailed, "kvCacheQuantMode", "MP-19 value with weightQuantMode", modes(1, 1, 0));
  expect_rejected(FQ, kGraphFailed, "kvCacheQuantMode", "MP-19 value with weightQuantMode", modes(2, 2, 0));
  expect_rejected(FQ, kGraphFailed, "kvCacheQuantMode", "MP-19 value with weightQuantMode", modes(2, 4, 0));
  expect_rejected(NQ, kGraphFailed, "queryQuantMode", "MP-19 value", modes(0, 0, 2));
  // dequantScaleQNopeOut: non-null exactly in (2, 1, x)
  expect_rejected(FKV, kGraphFailed, "dequantScaleQNopeOutOptional", "MP-19 non-null exactly when weightQuantMode is 2 and kvCacheQuantMode is 1", drop("dequantScaleQNopeOutOptional"));
  expect_rejected(NQ, kGraphFailed, "dequantScaleQNopeOutOptional", "MP-19 non-null exactly when weightQuantMode is 2 and kvCacheQuantMode is 1", edit([](MlaPrologArgs& a) {
                    a.passed[a.index("dequantScaleQNopeOutOptional")] = true;  // the V2 (1) placeholder
                  }));
  // dequantScaleQNormOut: non-null exactly when weightQuantMode != 0 and queryNormOut is given
  expect_rejected(PQ, kGraphFailed, "dequantScaleQNormOutOptional", "MP-19 non-null exactly when weightQuantMode is not 0 and queryNormOutOptional is non-null", drop("dequantScaleQNormOutOptional"));
  expect_rejected(PKV, kGraphFailed, "dequantScaleQNormOutOptional", "MP-19 non-null exactly when weightQuantMode is not 0 and queryNormOutOptional is non-null", drop("queryNormOutOptional"));
  expect_rejected(NQ, kGraphFailed, "dequantScaleQNormOutOptional", "MP-19 non-null exactly when weightQuantMode is not 0 and queryNormOutOptional is non-null", edit([](MlaPrologArgs& a) {
                    const int k = a.index("dequantScaleQNormOutOptional");
                    a.v[k] = args_of(v3_case(PQ)).v[k];
                    a.passed[k] = true;
                  }));
}

TEST(MlaPrologV3Errors, MP20_ModeTupleMatchesTheDtypes) {
  // without queryNormOut, so that the wrapper's MP-19 nullness rules hold for every tuple
  auto no_norm = [](int64_t w, int64_t kv, int64_t q) {
    MlaPrologCall c = modes(w, kv, q);
    c.mutate = [](MlaPrologArgs& a) {
      a.passed[a.index("queryNormOutOptional")] = false;
      a.passed[a.index("dequantScaleQNormOutOptional")] = false;
    };
    return c;
  };
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightQuantMode", "MP-20 must match the tensors' dtypes (scenario", no_norm(1, 0, 0));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "weightQuantMode", "MP-20 must match the tensors' dtypes (scenario", no_norm(0, 0, 0));
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "kvCacheQuantMode", "MP-20 must match the tensors' dtypes (scenario", no_norm(1, 0, 0));
  expect_rejected(FQ, ACLNN_ERR_PARAM_INVALID, "queryQuantMode", "MP-20 must match the tensors' dtypes (scenario", no_norm(2, 0, 1));
  expect_rejected(FQ, ACLNN_ERR_PARAM_INVALID, "weightQuantMode", "MP-20 must match the tensors' dtypes (scenario", no_norm(1, 0, 0));
}

TEST(MlaPrologV3Errors, MP21_TileSizeAndRepoModes) {
  MlaPrologCall c;
  c.tile_size = 64;
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tileSize", "MP-21 value", c);
  c = {};
  c.ckvkr_repo_mode = 1;
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "ckvkrRepoMode", "MP-21 1 exactly with kvCacheQuantMode 3", c);
  c = {};
  c.quant_scale_repo_mode = 1;
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "quantScaleRepoMode", "MP-21 1 exactly with kvCacheQuantMode 3", c);
}

TEST(MlaPrologV3Errors, MP22_KNopeClipAlphaOnlyWithPerTileQuant) {
  HostTensor alpha = from_values(DType::kFloat32, {1}, {1.0});
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "kNopeClipAlphaOptional", "MP-22 given exactly with per-tile KV quant (kvCacheQuantMode 3)", edit([&](MlaPrologArgs& a) {
                    a["kNopeClipAlphaOptional"] = alpha.view;
                    a.passed[a.index("kNopeClipAlphaOptional")] = true;
                  }));
}

TEST(MlaPrologV3Errors, MP06_CacheModeStrings) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "cacheModeOptional", "MP-06 value", {}, "BNSD");
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "cacheModeOptional", "MP-06 value", {}, "pa_blk_bsnd");
}

TEST(MlaPrologV3Errors, MP24_QueryNormOut) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryNormOutOptional", "MP-24 dtype in scenario",
                  edit([](MlaPrologArgs& a) { a["queryNormOutOptional"].dtype = DType::kInt8; }));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "queryNormOutOptional", "MP-24 dtype in scenario",
                  edit([](MlaPrologArgs& a) { a["queryNormOutOptional"].dtype = DType::kBFloat16; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryNormOutOptional", "MP-02",
                  edit([](MlaPrologArgs& a) { a["queryNormOutOptional"].dtype = DType::kFloat16; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryNormOutOptional", "MP-03",
                  edit([](MlaPrologArgs& a) { a["queryNormOutOptional"].format = Format::kFractalNZ; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryNormOutOptional", "MP-04", edit([](MlaPrologArgs& a) {
                    TensorView& t = a["queryNormOutOptional"];
                    t = make_view(t.data, t.dtype, {3 * 1536});
                  }));
  for (int64_t bad : {int64_t{2}, int64_t{1535}})
    expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryNormOutOptional", "MP-24", edit([bad](MlaPrologArgs& a) {
                      TensorView& t = a["queryNormOutOptional"];
                      t = bad == 2 ? make_view(t.data, t.dtype, {2, 1536}) : make_view(t.data, t.dtype, {3, 1535});
                    }));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleQNormOutOptional", "MP-24", edit([](MlaPrologArgs& a) {
                    TensorView& t = a["dequantScaleQNormOutOptional"];
                    t = make_view(t.data, t.dtype, {2, 1});
                  }));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleQNormOutOptional", "MP-02",
                  edit([](MlaPrologArgs& a) { a["dequantScaleQNormOutOptional"].dtype = DType::kFloat16; }));
  // aliasing: queryNormOut over queryOut
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryNormOutOptional", "MP-12",
                  edit([](MlaPrologArgs& a) { a["queryNormOutOptional"].data = a["queryOut"].data; }));
}

TEST(MlaPrologV3Errors, MP24_QueryNormOutInTheCppApi) {
  // the C++ API has no wrapper: the MP-24 nullness rule stands for the wrapper's MP-19
  MlaPrologCaseConfig cfg;
  cfg.scenario = PQ;
  cfg.query_norm = true;
  MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  MlaPrologParams p = c.params();
  p.dequant_scale_q_norm_out = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(mla_prolog_workspace_size(p, &ws), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("mla_prolog: dequantScaleQNormOutOptional: MP-24"),
            std::string::npos)
      << last_error_message();
  p = c.params();
  p.qc_qr_scale = 1e300;  // not finite in float32
  EXPECT_EQ(mla_prolog_workspace_size(p, &ws), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("mla_prolog: qcQrScale: MP-25"), std::string::npos)
      << last_error_message();
}

TEST(MlaPrologV3Errors, MP25_ScalesFiniteInFloat32) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::nan(""), 1e39}) {
    const MlaPrologCase& c = v3_case(NQ);
    const Snapshot before(c);
    MlaPrologCaseConfig cfg = c.cfg;
    // the scales travel in the case's config: use a copy with the bad value
    MlaPrologCase bad_case = testdata::make_mla_prolog_case(cfg);
    bad_case.cfg.kc_scale = bad;
    const Snapshot bad_before(bad_case);
    EXPECT_EQ(mla_prolog_call(bad_case, v3_call()), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("aclnnMlaPrologV3WeightNz: kcScale: MP-25"), std::string::npos) << msg;
    EXPECT_TRUE(bad_before.same(bad_case));
    EXPECT_TRUE(before.same(c));
  }
}

TEST(MlaPrologV3Errors, MP01_RequiredTensors) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_NULLPTR, "cacheIndex", "MP-01 required in cache mode", drop("cacheIndex"));  // PA_BSND
  for (const char* n : {"tokenX", "weightUk", "kvCacheRef", "krCacheRef", "queryOut", "queryRopeOut"})
    expect_rejected(NQ, ACLNN_ERR_PARAM_NULLPTR, n, "required", drop(n));
  const MlaPrologCase& c = v3_case(NQ);
  aclOpExecutor* ex = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(mla_prolog_phase1(c, v3_call(), nullptr, &ex), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(mla_prolog_phase1(c, v3_call(), &ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

// MP-26: actualSeqLenOptional only where it is read, the PA_BLK modes with tokenX [T, He] (the V3
// tiling check expects it nowhere else); the C++ API (no V3 options) accepts and ignores it.
TEST(MlaPrologV3Errors, MP26_ActualSeqLenOnlyInPaBlkWithTokensFlat) {
  HostTensor lens = from_values(DType::kInt32, {3}, {1, 2, 3});
  auto add_lens = [&lens]() {
    return edit([&lens](MlaPrologArgs& a) {
      a["actualSeqLenOptional"] = lens.view;
      a.passed[a.index("actualSeqLenOptional")] = true;
    });
  };
  const char* rule = "MP-26 given only in cache modes PA_BLK_BSND / PA_BLK_NZ with tokenX [T, He]";
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "actualSeqLenOptional", rule, add_lens());  // PA_BSND, [T, He]
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "actualSeqLenOptional", rule, add_lens(), "PA_NZ");
  for (auto [mode, bsh] : {std::pair{MlaPrologCacheMode::kPaBlkBsnd, true}, std::pair{MlaPrologCacheMode::kBsnd, true},
                           std::pair{MlaPrologCacheMode::kTnd, false}}) {
    MlaPrologCaseConfig cfg = vendor_cfg(NQ, bsh, mode);
    cfg.block_num = 3;
    expect_rejected_in(testdata::make_mla_prolog_case(cfg), ACLNN_ERR_PARAM_INVALID, "actualSeqLenOptional", rule,
                       add_lens());
  }
  // the C++ API ignores it outside the PA_BLK modes
  MlaPrologCaseConfig cfg = vendor_cfg(NQ, false, MlaPrologCacheMode::kPaBsnd);
  MlaPrologCase plain = testdata::make_mla_prolog_case(cfg);
  uint64_t ws = 0;
  ASSERT_EQ(mla_prolog_workspace_size(plain.params(), &ws), kSuccess) << last_error_message();
  std::vector<char> w(ws);
  ASSERT_EQ(mla_prolog(plain.params(), w.data(), ws), kSuccess) << last_error_message();
  MlaPrologCase with = testdata::make_mla_prolog_case(cfg);
  with.actual_seq_len = lens.clone();
  ASSERT_EQ(mla_prolog_workspace_size(with.params(), &ws), kSuccess) << last_error_message();  // + its copy
  w.assign(ws, 0);
  ASSERT_EQ(mla_prolog(with.params(), w.data(), ws), kSuccess) << last_error_message();
  EXPECT_TRUE(testdata::same_bytes(plain.query_out, with.query_out));
  EXPECT_TRUE(testdata::same_bytes(plain.kv_cache, with.kv_cache));
}

// MP-10: smoothScalesCqOptional is null in NO_QUANT (the V3 tiling check expects it only in the
// quantized scenarios); V1 / V2 keep accepting it there (docs/ops/mla_prolog.md).
TEST(MlaPrologV3Errors, MP10_SmoothScalesOnlyInQuantizedScenarios) {
  const MlaPrologCase& pq = v3_case(PQ);
  HostTensor smooth = from_values(DType::kFloat32, {1, 1536}, std::vector<double>(1536, 1.0));
  auto add_smooth = [&smooth]() {
    return edit([&smooth](MlaPrologArgs& a) {
      a["smoothScalesCqOptional"] = smooth.view;
      a.passed[a.index("smoothScalesCqOptional")] = true;
    });
  };
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "smoothScalesCqOptional",
                  "MP-10 must be absent (null) in scenario NO_QUANT", add_smooth());
  MlaPrologCase v2 = testdata::make_mla_prolog_case(vendor_cfg(NQ, false, MlaPrologCacheMode::kPaBsnd));
  MlaPrologCall v2_call;
  v2_call.mutate = [&smooth](MlaPrologArgs& a) {
    a["smoothScalesCqOptional"] = smooth.view;
    a.passed[a.index("smoothScalesCqOptional")] = true;
  };
  EXPECT_EQ(mla_prolog_call(v2, v2_call), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  // accepted in every quantized scenario (the PQ case passes none: add one)
  MlaPrologCase pq_smooth = pq.clone();
  MlaPrologCall c = add_smooth();
  c.v3 = true;
  EXPECT_EQ(mla_prolog_call(pq_smooth, c), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

// MP-03: V3 takes ND (or NCHW) caches in every cache mode; V1 / V2 also take the FRACTAL_NZ tag
// in PA_NZ.
TEST(MlaPrologV3Errors, MP03_CacheFormatsV3) {
  for (const char* name : {"kvCacheRef", "krCacheRef"})
    for (const char* mode : {"PA_NZ", "PA_BSND"})
      expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, name, "MP-03", edit([name](MlaPrologArgs& a) {
                        a[name].format = Format::kFractalNZ;
                      }), mode);
  MlaPrologCase v2 = testdata::make_mla_prolog_case(vendor_cfg(FKV, false, MlaPrologCacheMode::kPaNz));
  MlaPrologCall v2_call;
  v2_call.mutate = [](MlaPrologArgs& a) {
    a["kvCacheRef"].format = Format::kFractalNZ;
    a["krCacheRef"].format = Format::kFractalNZ;
  };
  EXPECT_EQ(mla_prolog_call(v2, v2_call), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

}  // namespace
}  // namespace mlaops::testing
