// aclnnMlaPrologV3WeightNz through the C API: with the V2-equivalent mode tuples it is bitwise
// V2; the α scales and queryNormOut against the float64 reference at the vendor's shapes;
// per-tensor KV quant with quantScaleCkvOptional (1) against the reference; every V3 rule
// (MP-19..MP-28, MP-01 for cacheIndexOptional, the V3 forms of MP-03 / MP-09 / MP-10) and the V3 ranges of MP-07 with its
// status, message and proof that no output or cache byte changed; shapes at the new values of
// the V3 ranges against the reference; the plain aclnnMlaPrologV3 (not supported). Every forced ISA.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <string>
#include <vector>

#include "aclnnop/aclnn_mla_prolog_v3.h"
#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_harness.h"
#include "ops/mla_prolog/table_values.h"

namespace mlaops::testing {
namespace {

constexpr MlaPrologScenario kAll[] = {MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvNoQuant,
                                      MlaPrologScenario::kPartialQuantKvQuant, MlaPrologScenario::kFullQuantKvNoQuant,
                                      MlaPrologScenario::kFullQuantKvQuant};
constexpr auto NQ = MlaPrologScenario::kNoQuant;
constexpr auto PQ = MlaPrologScenario::kPartialQuantKvNoQuant;
constexpr auto PKV = MlaPrologScenario::kPartialQuantKvQuant;
constexpr auto FQ = MlaPrologScenario::kFullQuantKvNoQuant;
constexpr auto FKV = MlaPrologScenario::kFullQuantKvQuant;

MlaPrologCaseConfig vendor_cfg(MlaPrologScenario sc, bool bsh, MlaPrologCacheMode mode) {
  return testdata::vendor_small_cfg(sc, bsh, mode);
}

MlaPrologCall v3_call() {
  MlaPrologCall c;
  c.v3 = true;
  return c;
}

// `base` through aclnnMlaPrologV3WeightNz under every ISA level (a clone per run) against the
// reference (computed once, on a clone).
void expect_v3_matches_reference(const MlaPrologCase& base) {
  MlaPrologCase ref = base.clone();
  ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess) << last_error_message() << " | " << describe(base.cfg);
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    SCOPED_TRACE(isa_name(isa));
    MlaPrologCase fast = base.clone();
    ASSERT_EQ(mla_prolog_call(fast, v3_call()), ACLNN_SUCCESS) << aclGetRecentErrMsg() << " | " << describe(base.cfg);
    expect_match(fast, ref);
  }
  reset_isa();
}

std::vector<const HostTensor*> outputs_of(const MlaPrologCase& c) {
  return {&c.query_out, &c.query_rope_out, &c.kv_cache, &c.kr_cache, &c.dequant_scale_q_nope_out,
          &c.query_norm_out, &c.dequant_scale_q_norm_out};
}

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

struct Snapshot {
  std::vector<std::vector<uint8_t>> bytes;
  explicit Snapshot(const MlaPrologCase& c) {
    for (const HostTensor* h : outputs_of(c)) bytes.push_back(h->bytes);
  }
  bool same(const MlaPrologCase& c) const {
    const auto o = outputs_of(c);
    for (size_t i = 0; i < o.size(); ++i)
      if (o[i]->bytes != bytes[i]) return false;
    return true;
  }
};

// The case of a scenario with queryNormOut (and its scale when quantized), built once.
const MlaPrologCase& v3_case(MlaPrologScenario sc) {
  static MlaPrologCase* cases[7] = {};
  const int i = static_cast<int>(sc);
  if (cases[i] == nullptr) {
    MlaPrologCaseConfig cfg = vendor_cfg(sc, false, MlaPrologCacheMode::kPaBsnd);
    cfg.query_norm = true;
    cases[i] = new MlaPrologCase(testdata::make_mla_prolog_case(cfg));
  }
  return *cases[i];
}

// Calls aclnnMlaPrologV3WeightNz on `c` with `call`; expects `code`, a message naming the
// parameter and the rule, and every output and cache byte unchanged.
void expect_rejected_in(const MlaPrologCase& c, aclnnStatus code, const char* param, const char* rule,
                        MlaPrologCall call) {
  const Snapshot before(c);
  call.v3 = true;
  const aclnnStatus s = mla_prolog_call(c, call);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, code) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << "message does not name " << param << ": " << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << "message does not name " << rule << ": " << msg;
  EXPECT_NE(msg.find("aclnnMlaPrologV3WeightNz"), std::string::npos) << msg;
  EXPECT_TRUE(before.same(c)) << "a rejected call changed an output or cache byte (" << rule << ")";
}

// The same on the scenario's case (v3_case), with the cacheMode string `cache_mode` (null: the case's).
void expect_rejected(MlaPrologScenario sc, aclnnStatus code, const char* param, const char* rule, MlaPrologCall call,
                     const char* cache_mode = nullptr) {
  call.cache_mode = cache_mode;
  expect_rejected_in(v3_case(sc), code, param, rule, call);
}

MlaPrologCall modes(int64_t w, int64_t kv, int64_t q) {
  MlaPrologCall c;
  c.modes[0] = w;
  c.modes[1] = kv;
  c.modes[2] = q;
  return c;
}
MlaPrologCall drop(const char* name) {
  MlaPrologCall c;
  const std::string n = name;
  c.mutate = [n](MlaPrologArgs& a) { a.passed[a.index(n)] = false; };
  return c;
}
MlaPrologCall edit(std::function<void(MlaPrologArgs&)> f) {
  MlaPrologCall c;
  c.mutate = std::move(f);
  return c;
}

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

// ---- the V3 cache modes and per-tile KV quant ----

constexpr auto PKVT = MlaPrologScenario::kPartialQuantKvQuantPerTile;
constexpr auto FKVT = MlaPrologScenario::kFullQuantKvQuantPerTile;
constexpr auto kPaBsnd = MlaPrologCacheMode::kPaBsnd;
constexpr auto kPaBlkBsnd = MlaPrologCacheMode::kPaBlkBsnd;
constexpr auto kPaBlkNz = MlaPrologCacheMode::kPaBlkNz;
constexpr auto kBsnd = MlaPrologCacheMode::kBsnd;
constexpr auto kTnd = MlaPrologCacheMode::kTnd;

// A vendor-shape case in a V3 cache mode: BSND and the PA_BLK modes with tokenX [B, S, He] take
// B 2, S 3; TND T 3; the PA_BLK modes with tokenX [T, He] take batches of 3, 0, 17 and 1 tokens
// (block ids 1 + 0 + 2 + 1 with BlockSize 16).
MlaPrologCaseConfig mode_cfg(MlaPrologScenario sc, MlaPrologCacheMode mode, bool bsh) {
  MlaPrologCaseConfig c = vendor_cfg(sc, bsh, mode);
  c.B = bsh ? 2 : 3;
  c.S = bsh ? 3 : 1;
  if (mla_prolog_cache_blocks(mode) && !bsh) c.seq_lens = {3, 0, 17, 1};
  c.block_num = 6;
  return c;
}

// One V3 call per new cache mode and per-tile KV quant through the C API against the reference
// (every ISA).
TEST(MlaPrologV3, NewCacheModesAndPerTileAgainstReference) {
  struct Case {
    MlaPrologScenario sc;
    MlaPrologCacheMode mode;
    bool bsh;
  };
  const Case cases[] = {{NQ, kBsnd, true},        {PKV, kTnd, false},      {FKV, kPaBlkBsnd, true},
                        {PQ, kPaBlkNz, false},    {NQ, kPaBlkBsnd, false}, {PKVT, kPaBsnd, true},
                        {FKVT, kTnd, false},      {PKVT, kBsnd, true}};
  for (const Case& k : cases) {
    MlaPrologCaseConfig cfg = mode_cfg(k.sc, k.mode, k.bsh);
    cfg.query_norm = k.sc == PKVT;
    cfg.kc_scale = k.sc == FKVT ? 10.0 : 1.0;
    expect_v3_matches_reference(testdata::make_mla_prolog_case(cfg));
  }
}

// ---- per-tensor KV quant: quantScaleCkvOptional (1) ----

// FULL_QUANT_KV_QUANT (modes (2, 1, 1)) with quantScaleCkvOptional of shape (1), the shape the
// vendor's V3 takes for per-tensor KV quant (FillFullKVQuantParamInfo of its tiling check), against
// the reference under every ISA: both token layouts, paged and dense cache modes, with and without
// the α scales and queryNormOut.
TEST(MlaPrologV3, PerTensorKvQuantScaleOfShapeOneAgainstReference) {
  struct Case {
    MlaPrologCacheMode mode;
    bool bsh, extras;
  };
  const Case cases[] = {{kPaBsnd, true, false},   {MlaPrologCacheMode::kPaNz, false, true}, {kBsnd, true, true},
                        {kTnd, false, false},     {kPaBlkNz, false, true}};
  for (const Case& k : cases) {
    MlaPrologCaseConfig cfg = mode_cfg(FKV, k.mode, k.bsh);
    cfg.quant_scale_ckv_1d = true;
    cfg.query_norm = k.extras;
    cfg.qc_qr_scale = k.extras ? 10.0 : 1.0;
    cfg.kc_scale = k.extras ? 0.5 : 1.0;
    cfg.smooth = k.extras;
    const MlaPrologCase base = testdata::make_mla_prolog_case(cfg);
    ASSERT_EQ(base.quant_scale_ckv.view.rank, 1);
    SCOPED_TRACE(describe(cfg));
    expect_v3_matches_reference(base);
  }
}

// The (1) scale holds element 0 of V2's (1, Hckv): V3 writes V2's bytes; so does V3 with the (1, 1)
// scale vllm-ascend passes and with V2's (1, Hckv) (torch_npu's V3 test).
TEST(MlaPrologV3, PerTensorKvQuantScaleOfShapeOneIsV2Bitwise) {
  MlaPrologCaseConfig cfg = vendor_cfg(FKV, true, MlaPrologCacheMode::kPaNz);
  const MlaPrologCase v2_base = testdata::make_mla_prolog_case(cfg);
  cfg.quant_scale_ckv_1d = true;
  const MlaPrologCase v3_base = testdata::make_mla_prolog_case(cfg);
  ASSERT_EQ(v3_base.quant_scale_ckv.get(0), v2_base.quant_scale_ckv.get(0));
  const std::vector<int64_t> shapes[] = {{1}, {1, 1}, {1, 512}};
  for (Isa isa : runnable_isas()) {
    set_isa(isa);
    SCOPED_TRACE(isa_name(isa));
    MlaPrologCase v2 = v2_base.clone();
    ASSERT_EQ(mla_prolog_call(v2), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    for (const std::vector<int64_t>& dims : shapes) {
      MlaPrologCase v3 = v3_base.clone();
      MlaPrologCall call = v3_call();
      call.mutate = [&](MlaPrologArgs& a) {  // v2's (1, Hckv) scale, viewed with `dims`
        a["quantScaleCkvOptional"] = make_view(v2_base.quant_scale_ckv.view.data, DType::kFloat32, dims.data(),
                                               static_cast<int>(dims.size()));
      };
      ASSERT_EQ(mla_prolog_call(v3, call), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      for (auto m : {&MlaPrologCase::query_out, &MlaPrologCase::query_rope_out, &MlaPrologCase::kv_cache,
                     &MlaPrologCase::kr_cache, &MlaPrologCase::dequant_scale_q_nope_out})
        EXPECT_TRUE(testdata::same_bytes(v2.*m, v3.*m)) << dims.size();
    }
  }
  reset_isa();
}

// MP-09 / MP-04 of quantScaleCkvOptional in V3: (1), (1, 1) or (1, Hckv) in per-tensor KV quant,
// (1, Hckv) in per-channel KV quant; V2 keeps (1, Hckv) for both (MlaPrologErrors.MP09_Shapes).
TEST(MlaPrologV3Errors, MP09_QuantScaleCkvShapeByKvQuantMode) {
  MlaPrologCaseConfig cfg = vendor_cfg(FKV, false, MlaPrologCacheMode::kPaBsnd);
  cfg.quant_scale_ckv_1d = true;
  const MlaPrologCase fkv = testdata::make_mla_prolog_case(cfg);
  const MlaPrologCase& v2_shaped = v3_case(FKV);  // quantScaleCkv (1, 512)
  static std::vector<float> backing(1024, 16.0f);  // room for every shape below
  auto with_dims = [](std::vector<int64_t> dims) {
    return edit([dims](MlaPrologArgs& a) {
      a["quantScaleCkvOptional"] =
          make_view(backing.data(), DType::kFloat32, dims.data(), static_cast<int>(dims.size()));
    });
  };
  (void)v2_shaped;
  const char* per_tensor = "MP-09 per-tensor KV quant (kvCacheQuantMode 1) shape; allowed [1], [1, 1] or [1, 512], got";
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2}, std::vector<int64_t>{1, 2}, std::vector<int64_t>{512},
                                    std::vector<int64_t>{2, 512}})
    expect_rejected_in(fkv, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", per_tensor, with_dims(dims));
  expect_rejected_in(fkv, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", "MP-04", with_dims({1, 1, 1}));
  expect_rejected_in(fkv, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", "MP-02", edit([](MlaPrologArgs& a) {
                       a["quantScaleCkvOptional"].dtype = DType::kFloat16;
                     }));
  expect_rejected_in(fkv, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", "MP-10",
                     edit([](MlaPrologArgs& a) { a.passed[a.index("quantScaleCkvOptional")] = false; }));
  // per channel (modes (1, 2, 0)): (1, Hckv) only
  const MlaPrologCase& pkv = v3_case(PKV);
  expect_rejected_in(pkv, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", "MP-09 shape; allowed [1, 512], got [1]",
                     with_dims({1}));
}

// The Python npu_mla_prolog_v3 plans through mla_prolog_make_plan with the V3 options (what
// python/src/module.cpp passes): the same per-tensor shape rule.
TEST(MlaPrologV3Errors, PerTensorQuantScaleCkvThroughTheV3Options) {
  MlaPrologCheckOptions o;
  o.op = "npu_mla_prolog_v3";
  o.v3 = true;
  o.modes.weight_quant_mode = 2;
  o.modes.kv_cache_quant_mode = 1;
  o.modes.query_quant_mode = 1;
  MlaPrologCaseConfig cfg = vendor_cfg(FKV, true, MlaPrologCacheMode::kPaBsnd);
  cfg.quant_scale_ckv_1d = true;
  const MlaPrologCase one = testdata::make_mla_prolog_case(cfg);
  OpPlan plan;
  EXPECT_EQ(mla_prolog_make_plan(one.params(), o, &plan), kSuccess) << last_error_message();
  const MlaPrologCase& two = v3_case(FKV);  // (1, Hckv): accepted too (element 0 read)
  OpPlan also;
  EXPECT_EQ(mla_prolog_make_plan(two.params(), o, &also), kSuccess) << last_error_message();
  std::vector<float> scale(4, 1.0f);
  MlaPrologParams wrong = one.params();
  const TensorView two_elems = make_view(scale.data(), DType::kFloat32, {2});
  wrong.quant_scale_ckv = &two_elems;
  OpPlan bad;
  EXPECT_EQ(mla_prolog_make_plan(wrong, o, &bad), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("npu_mla_prolog_v3: quantScaleCkvOptional: MP-09 per-tensor"),
            std::string::npos)
      << last_error_message();
  // the C++ API without the V3 options keeps V2's (1, Hckv)
  uint64_t ws = 0;
  EXPECT_EQ(mla_prolog_workspace_size(two.params(), &ws), kSuccess) << last_error_message();
  EXPECT_EQ(mla_prolog_workspace_size(one.params(), &ws), kParamInvalid);
}

// A case of a new mode, built once per (scenario, mode, token layout).
const MlaPrologCase& mode_case(MlaPrologScenario sc, MlaPrologCacheMode mode, bool bsh) {
  static std::map<std::tuple<int, int, bool>, std::unique_ptr<MlaPrologCase>> cases;
  std::unique_ptr<MlaPrologCase>& c = cases[{static_cast<int>(sc), static_cast<int>(mode), bsh}];
  if (c == nullptr) c = std::make_unique<MlaPrologCase>(testdata::make_mla_prolog_case(mode_cfg(sc, mode, bsh)));
  return *c;
}

// Writes v into element i of an int64 / int32 / fp32 input for the duration of one call.
template <class T>
MlaPrologCall poke(const char* name, int64_t i, T v) {
  const std::string n = name;
  return edit([n, i, v](MlaPrologArgs& a) {
    static std::vector<char> copy;  // a copy of the tensor with element i changed
    const TensorView& t = a[n];
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype);
    copy.assign(static_cast<const char*>(t.data), static_cast<const char*>(t.data) + bytes);
    std::memcpy(copy.data() + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
    a[n].data = copy.data();
  });
}

MlaPrologCall cache_mode(const char* mode, std::function<void(MlaPrologArgs&)> f = {}) {
  MlaPrologCall c;
  c.cache_mode = mode;
  c.mutate = std::move(f);
  return c;
}

TEST(MlaPrologV3Errors, MP26_CacheModeGeometry) {
  constexpr auto E = ACLNN_ERR_PARAM_INVALID;
  // BSND needs tokenX [B, S, He], TND [T, He]
  expect_rejected_in(mode_case(NQ, kTnd, false), E, "tokenX", "MP-26 cache mode BSND needs tokenX [B, S, He]", cache_mode("BSND"));
  expect_rejected_in(mode_case(NQ, kBsnd, true), E, "tokenX", "MP-26 cache mode TND needs tokenX [T, He]", cache_mode("TND"));
  // dense caches: no cacheIndex; their shapes follow the tokens
  const MlaPrologCase& paged = mode_case(NQ, kPaBsnd, true);
  expect_rejected_in(mode_case(NQ, kBsnd, true), E, "cacheIndex", "MP-26 cache mode", edit([&](MlaPrologArgs& a) {
                       a["cacheIndex"] = paged.cache_index.view;
                       a.passed[a.index("cacheIndex")] = true;
                     }));
  expect_rejected_in(mode_case(NQ, kBsnd, true), E, "kvCacheRef", "MP-26 BSND cache [B, S, 1, H]", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["kvCacheRef"];
                       t = make_view(t.data, t.dtype, {3, 2, 1, 512});
                     }));
  expect_rejected_in(mode_case(NQ, kTnd, false), E, "kvCacheRef", "MP-04", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["kvCacheRef"];
                       t = make_view(t.data, t.dtype, {3, 1, 1, 512});
                     }));
  expect_rejected_in(mode_case(NQ, kTnd, false), E, "krCacheRef", "MP-09", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["krCacheRef"];
                       t = make_view(t.data, t.dtype, {1, 3, 64});
                     }));
  // PA_BLK: block ids [B, ceil(S/BlockSize)] with tokenX [B, S, He]; 1-D with [T, He]
  expect_rejected_in(mode_case(NQ, kPaBlkBsnd, true), E, "cacheIndex", "MP-26 PA_BLK block ids [B, ceil(S/BlockSize)]", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["cacheIndex"];
                       t = make_view(t.data, t.dtype, {1, 2});
                     }));
  expect_rejected_in(mode_case(NQ, kPaBlkBsnd, false), E, "cacheIndex", "MP-26 PA_BLK block ids with tokenX [T, He] are 1-D [sum_b ceil(S_b/BlockSize)]", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["cacheIndex"];
                       t = make_view(t.data, t.dtype, {2, 2});
                     }));
  // required: cacheIndex in the paged modes, actualSeqLen in PA_BLK with tokenX [T, He]
  expect_rejected_in(mode_case(NQ, kPaBlkNz, false), ACLNN_ERR_PARAM_NULLPTR, "cacheIndex", "MP-01 required in cache mode",
                     drop("cacheIndex"));
  expect_rejected_in(mode_case(NQ, kPaBlkNz, false), ACLNN_ERR_PARAM_NULLPTR, "actualSeqLenOptional", "MP-01 required in cache mode",
                     drop("actualSeqLenOptional"));
  expect_rejected_in(mode_case(NQ, kPaBlkNz, false), E, "actualSeqLenOptional", "MP-02", edit([](MlaPrologArgs& a) {
                       a["actualSeqLenOptional"].dtype = DType::kInt64;
                     }));
}

// Phase 2: the block ids and actualSeqLen are read in a pre-pass before any write.
TEST(MlaPrologV3Errors, MP17_MP28_BlockTablesAndSeqLens) {
  constexpr auto E = ACLNN_ERR_PARAM_INVALID;
  const MlaPrologCase& bsh = mode_case(FKV, kPaBlkBsnd, true);
  expect_rejected_in(bsh, E, "cacheIndex", "MP-17 cacheIndex[", poke<int64_t>("cacheIndex", 1, 6));  // BlockNum 6
  const MlaPrologCase& tnd = mode_case(NQ, kPaBlkNz, false);                              // 3, 0, 17, 1 tokens
  expect_rejected_in(tnd, E, "cacheIndex", "MP-17 cacheIndex[", poke<int64_t>("cacheIndex", 3, 1 << 20));
  expect_rejected_in(tnd, E, "actualSeqLenOptional", "MP-28 actualSeqLenOptional[", poke<int32_t>("actualSeqLenOptional", 1, 2));  // 3, 2
  expect_rejected_in(tnd, E, "actualSeqLenOptional", "MP-28 the last prefix sum is the token count", poke<int32_t>("actualSeqLenOptional", 3, 20));  // last != T
  expect_rejected_in(tnd, E, "actualSeqLenOptional", "MP-28 actualSeqLenOptional[", poke<int32_t>("actualSeqLenOptional", 0, -1));
  expect_rejected_in(tnd, E, "actualSeqLenOptional", "MP-28 actualSeqLenOptional[", poke<int32_t>("actualSeqLenOptional", 2, 22));  // > T
  // the batches need 4 block ids: a table of 3 fails
  expect_rejected_in(tnd, E, "cacheIndex", "MP-28 block ids of batches 0", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["cacheIndex"];
                       t = make_view(t.data, t.dtype, {3});
                     }));
}

TEST(MlaPrologV3, PaBlkNegativeBlockIdsSkip) {
  // a negative block id skips its tokens' cache rows (as a negative slot does); the others land
  MlaPrologCaseConfig cfg = mode_cfg(NQ, kPaBlkBsnd, false);
  MlaPrologCase ref = testdata::make_mla_prolog_case(cfg);
  ref.cache_index.view.ptr<int64_t>()[1] = -1;  // batch 2's first block (its tokens 0..15)
  ASSERT_EQ(mla_prolog_ref(ref.params()), kSuccess) << last_error_message();
  MlaPrologCase fast = testdata::make_mla_prolog_case(cfg);
  fast.cache_index.view.ptr<int64_t>()[1] = -1;
  ASSERT_EQ(mla_prolog_call(fast, v3_call()), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  expect_match(fast, ref);
  EXPECT_FALSE(testdata::all_bytes(fast.kv_cache, cfg.canary));
}

TEST(MlaPrologV3Errors, MP27_PerTileKvQuant) {
  constexpr auto E = ACLNN_ERR_PARAM_INVALID;
  const MlaPrologCase& c = mode_case(PKVT, kPaBsnd, true);
  expect_rejected_in(c, E, "cacheModeOptional", "MP-27 per-tile KV quant (kvCacheQuantMode 3) takes the cache modes {PA_BSND, BSND, TND}", cache_mode("PA_NZ"));
  expect_rejected_in(c, E, "cacheModeOptional", "MP-27 per-tile KV quant (kvCacheQuantMode 3) takes the cache modes {PA_BSND, BSND, TND}", cache_mode("PA_BLK_BSND", [](MlaPrologArgs& a) {
                       TensorView& t = a["cacheIndex"];  // block ids [B, ceil(S/16)] = [2, 1]
                       t = make_view(t.data, t.dtype, {2, 1});
                     }));
  expect_rejected_in(c, E, "kvCacheRef", "MP-27 per-tile KV quant row of Hckv + 2*Dr + 4*Hckv/", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["kvCacheRef"];
                       t = make_view(t.data, t.dtype, {6, 16, 1, 655});
                     }));
  expect_rejected_in(c, E, "krCacheRef", "MP-27 per-tile KV quant keeps the rope row in the kv row: krCacheRef must be an empty tensor", edit([](MlaPrologArgs& a) {
                       TensorView& t = a["krCacheRef"];
                       static std::vector<uint16_t> kr(64);
                       t = make_view(kr.data(), DType::kBFloat16, {1, 1, 1, 64});
                     }));
  // the clip alpha: required, FP32 [1], finite and > 0 (phase 2)
  expect_rejected_in(c, E, "kNopeClipAlphaOptional", "MP-22 given exactly with per-tile KV quant (kvCacheQuantMode 3)", drop("kNopeClipAlphaOptional"));
  expect_rejected_in(c, E, "kNopeClipAlphaOptional", "MP-22", edit([](MlaPrologArgs& a) {
                       static std::vector<float> two(2, 1.0f);
                       a["kNopeClipAlphaOptional"] = make_view(two.data(), DType::kFloat32, {2});
                     }));
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    expect_rejected_in(c, E, "kNopeClipAlphaOptional", "MP-28 value", poke<float>("kNopeClipAlphaOptional", 0, bad));
  // the repo modes are 1 exactly with kvCacheQuantMode 3; the per-tile quant reads no quantScaleCkv
  MlaPrologCall r;
  r.ckvkr_repo_mode = 0;
  expect_rejected_in(c, E, "ckvkrRepoMode", "MP-21 1 exactly with kvCacheQuantMode 3", r);
  r = {};
  r.quant_scale_repo_mode = 0;
  expect_rejected_in(c, E, "quantScaleRepoMode", "MP-21 1 exactly with kvCacheQuantMode 3", r);
  const MlaPrologCase& pkv = mode_case(PKV, kPaBsnd, true);
  expect_rejected_in(c, E, "quantScaleCkvOptional", "MP-10", edit([&](MlaPrologArgs& a) {
                       a["quantScaleCkvOptional"] = pkv.quant_scale_ckv.view;
                       a.passed[a.index("quantScaleCkvOptional")] = true;
                     }));
  // mode 3 with a bf16 kvCache: the tuple names another scenario
  expect_rejected_in(mode_case(PQ, kPaBsnd, true), E, "kvCacheQuantMode", "MP-20 must match the tensors' dtypes (scenario", modes(1, 3, 0));
}

TEST(MlaPrologV3Errors, MP27_PerTileInTheCppApi) {
  MlaPrologCaseConfig cfg;
  cfg.scenario = MlaPrologScenario::kPartialQuantKvNoQuant;  // bf16 kvCache
  MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  MlaPrologParams p = c.params();
  p.kv_quant_per_tile = true;
  HostTensor alpha = from_values(DType::kFloat32, {1}, {1.0});
  p.k_nope_clip_alpha = &alpha.view;
  uint64_t ws = 0;
  EXPECT_EQ(mla_prolog_workspace_size(p, &ws), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("mla_prolog: kvCacheRef: MP-27"), std::string::npos)
      << last_error_message();
  cfg.scenario = PKVT;
  cfg.Hckv = 96;  // not a multiple of the tile
  MlaPrologCase d = testdata::make_mla_prolog_case(cfg);
  EXPECT_EQ(mla_prolog_workspace_size(d.params(), &ws), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("MP-27"), std::string::npos) << last_error_message();
}

// MP-08 / MP-10 of the per-tile scenario rows (V3 only): every dtype column set to the other
// dtype, every optional input dropped (when the row reads it) or added (when it does not). A
// column that chooses the scenario moves the call to another row or mode tuple, which rejects it.
TEST(MlaPrologV3Errors, PerTileScenarioRows) {
  namespace table = mla_prolog_table;
  const MlaPrologCase& donor = mode_case(FKV, kPaBsnd, true);  // every optional input but quantScaleCkr
  const MlaPrologCase& pkv = mode_case(PKV, kPaBsnd, true);
  for (const auto& row : table::kScenarios) {
    if (!mla_prolog_is_per_tile(row.scenario)) continue;
    const MlaPrologCase& c = mode_case(row.scenario, kPaBsnd, true);
    for (size_t i = 0; i < row.dtypes.size(); ++i) {
      if (row.dtypes[i] == DType::kUndefined) continue;  // the empty krCache: any dtype
      const std::string param = table::kScenarioDtypeParams[i];
      const DType other = row.dtypes[i] == DType::kInt8 ? DType::kBFloat16 : DType::kInt8;
      SCOPED_TRACE(std::string(mla_prolog_scenario_name(row.scenario)) + " " + param);
      bool chooser = false;
      for (const char* ch : table::kScenarioChoosers) chooser |= param == ch;
      const Snapshot before(c);
      MlaPrologCall call = edit([&](MlaPrologArgs& a) { a[param].dtype = other; });
      call.v3 = true;
      EXPECT_EQ(mla_prolog_call(c, call), ACLNN_ERR_PARAM_INVALID);
      const std::string msg = aclGetRecentErrMsg();
      if (chooser)
        EXPECT_TRUE(msg.find("MP-08") != std::string::npos || msg.find("MP-10") != std::string::npos ||
                    msg.find("MP-20") != std::string::npos)
            << msg;
      else
        EXPECT_NE(msg.find(param + ": MP-08"), std::string::npos) << msg;
      EXPECT_TRUE(before.same(c));
    }
    for (size_t i = 0; i < row.optionals.size(); ++i) {
      const std::string param = table::kScenarioOptionalParams[i];
      SCOPED_TRACE(std::string(mla_prolog_scenario_name(row.scenario)) + " " + param);
      const HostTensor* from = param == "quantScaleCkrOptional" ? &pkv.quant_scale_ckr : nullptr;
      const int k = args_of(c).index(param);
      expect_rejected_in(c, ACLNN_ERR_PARAM_INVALID, param.c_str(), "MP-10", edit([&](MlaPrologArgs& a) {
                           a.v[k] = from != nullptr ? from->view : args_of(donor).v[k];
                           a.passed[k] = !row.optionals[i];
                         }));
    }
  }
}

// ---- the V3 document's shape ranges (MP-07 of aclnnMlaPrologV3WeightNz) ----

constexpr auto kPaNz = MlaPrologCacheMode::kPaNz;

// Shapes at new values of the V3 ranges through the C API against the reference, every ISA:
// He 1024 / 2048 / 8192, Hcq 2048, D 192, BlockSize 16 / 64 / 1024, S above V2's 16; T small.
TEST(MlaPrologV3, WiderVendorRangesAgainstReference) {
  struct Case {
    MlaPrologScenario sc;
    MlaPrologCacheMode mode;
    bool bsh;
    int64_t He, Hcq, D, N, B, S, block_size, block_num;
  };
  const Case cases[] = {
      {NQ, kPaBsnd, true, 1024, 1536, 192, 1, 1, 17, 64, 1},      // S 17, BlockSize 64
      {PKV, kPaNz, false, 2048, 2048, 128, 2, 3, 1, 1024, 1},     // BlockSize 1024 (int8 NZ cache)
      {FQ, kPaBlkBsnd, true, 8192, 2048, 192, 1, 1, 18, 16, 3},   // He 8192, two blocks per batch
      {FKV, kPaBlkNz, true, 1024, 2048, 192, 2, 1, 20, 16, 3},    // S 20, int8 query
      {PKVT, kTnd, false, 1024, 2048, 192, 1, 20, 1, 16, 1},      // per-tile KV quant, T 20
  };
  for (const Case& k : cases) {
    MlaPrologCaseConfig cfg = vendor_cfg(k.sc, k.bsh, k.mode);
    cfg.He = k.He;
    cfg.Hcq = k.Hcq;
    cfg.D = k.D;
    cfg.N = k.N;
    cfg.B = k.B;
    cfg.S = k.S;
    cfg.block_size = k.block_size;
    cfg.block_num = k.block_num;
    cfg.query_norm = k.sc == PKV;
    const MlaPrologCase base = testdata::make_mla_prolog_case(cfg);  // generated once, cloned per run
    expect_v3_matches_reference(base);
    // V2 keeps its own ranges: the same call is rejected there (S, He, Hcq, D or BlockSize)
    if (!mla_prolog_is_per_tile(k.sc) && !mla_prolog_cache_blocks(k.mode)) {
      MlaPrologCase v2 = base.clone();
      EXPECT_EQ(mla_prolog_call(v2), ACLNN_ERR_PARAM_INVALID);
      EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnMlaPrologV2WeightNz: "), std::string::npos);
      EXPECT_NE(std::string(aclGetRecentErrMsg()).find(": MP-07 "), std::string::npos) << aclGetRecentErrMsg();
    }
  }
  reset_isa();
}

// Where a symbol of a value row is read from (ops/mla_prolog_check.h kDimSources, kCacheDimSources).
const mla_prolog_table::DimSource* source_of(mla_prolog_table::Sym s) {
  for (const auto& d : mla_prolog_table::kDimSources)
    if (d.sym == s) return &d;
  for (const auto& d : mla_prolog_table::kCacheDimSources)
    if (d.sym == s) return &d;
  return nullptr;
}

MlaPrologCall with_dims(const char* name, std::vector<int64_t> dims) {
  const std::string n = name;
  return edit([n, dims](MlaPrologArgs& a) {
    TensorView& t = a[n];
    t = make_view(t.data, t.dtype, dims.data(), static_cast<int>(dims.size()), t.format);
  });
}

// Every row of the V3 range table with a value it does not allow (its largest value + 2), then
// values between and below the allowed ones, and the BlockSize steps.
TEST(MlaPrologV3Errors, MP07_V3Ranges) {
  constexpr auto E = ACLNN_ERR_PARAM_INVALID;
  for (const auto& row : mla_prolog_table::kVendorRangesV3) {
    int64_t bad = 0;
    for (int64_t v : row.set.values()) bad = std::max(bad, v + 2);
    SCOPED_TRACE(std::string(row.rule) + " = " + std::to_string(bad));
    const mla_prolog_table::DimSource* src = source_of(row.sym);
    ASSERT_NE(src, nullptr);
    std::vector<int64_t> dims = dims_of(args_of(v3_case(NQ))[src->param]);
    dims[src->dim < 0 ? dims.size() - 1 : static_cast<size_t>(src->dim)] = bad;
    expect_rejected(NQ, E, row.param, row.rule, with_dims(src->param, dims));
  }
  expect_rejected(NQ, E, "tokenX", "MP-07 He", with_dims("tokenX", {3, 1536}));
  expect_rejected(NQ, E, "tokenX", "MP-07 He", with_dims("tokenX", {3, 512}));
  expect_rejected(NQ, E, "rmsnormGammaCq", "MP-07 Hcq", with_dims("rmsnormGammaCq", {1024}));
  expect_rejected(NQ, E, "weightUk", "MP-07 D", with_dims("weightUk", {2, 64, 512}));
  expect_rejected(NQ, E, "weightUk", "MP-07 N", with_dims("weightUk", {3, 128, 512}));
  // BlockSize: multiples of 16 in [16, 1024] (the cache is never read in phase 1)
  for (int64_t bs : {int64_t{8}, int64_t{24}, int64_t{1040}, int64_t{2048}}) {
    SCOPED_TRACE("BlockSize " + std::to_string(bs));
    expect_rejected(NQ, E, "kvCacheRef", "MP-07 BlockSize", with_dims("kvCacheRef", {1, bs, 1, 512}));
  }
  // B of tokenX [B, S, He] and of actualSeqLen (PA_BLK with tokenX [T, He]): descriptions only
  expect_rejected(NQ, E, "tokenX", "MP-07 B", edit([](MlaPrologArgs& a) {
                    a["tokenX"] = make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kBFloat16,
                                            {65537, 1, 7168});
                  }));
  expect_rejected_in(mode_case(NQ, kPaBlkNz, false), E, "actualSeqLenOptional", "MP-07 B", edit([](MlaPrologArgs& a) {
                       a["actualSeqLenOptional"] =
                           make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kInt32, {65537});
                     }));
  // S and T have no V3 limit: a tokenX past V2's S 16 and T 1048576 gets past MP-07 (and is then
  // rejected for its shapes, MP-09)
  for (std::vector<int64_t> tok : {std::vector<int64_t>{1, 4096, 7168}, std::vector<int64_t>{1048577, 7168}}) {
    expect_rejected(NQ, E, "ropeSin", "MP-09", edit([tok](MlaPrologArgs& a) {
                      a["tokenX"] = make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kBFloat16,
                                              tok.data(), static_cast<int>(tok.size()));
                    }));
  }
}

// ---- the plain aclnnMlaPrologV3 (the vendor's unsupported entry point) ----

// Both functions return ACLNN_ERR_INNER with "not supported" in the recent message and touch
// nothing: no workspace size, no executor, no output or cache byte (a valid V3 call's tensors).
TEST(MlaPrologV3Plain, BothFunctionsAreNotSupported) {
  const MlaPrologCase& c = v3_case(PQ);
  const Snapshot before(c);
  MlaPrologArgs a = args_of(c);
  std::vector<AclTensor> t;
  t.reserve(MlaPrologArgs::kCount);
  for (int i = 0; i < MlaPrologArgs::kCount; ++i) t.emplace_back(a.v[i], a.passed[i] && i != 21);
  char mode[] = "PA_BSND";
  uint64_t ws = 12345;
  aclOpExecutor* ex = reinterpret_cast<aclOpExecutor*>(uintptr_t{0x1234});
  EXPECT_EQ(aclnnMlaPrologV3GetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[10], t[11], t[9],
                                             t[12], t[13], t[14], t[15], t[16], t[17], t[18], t[24], t[25], 1e-5, 1e-5,
                                             mode, true, 1, 0, 0, 0, 0, 128, 1.0, 1.0, t[19], t[20], t[21], t[22],
                                             t[23], &ws, &ex),
            561000);
  std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclnnMlaPrologV3GetWorkspaceSize: ACL-65 not supported"), std::string::npos) << msg;
  EXPECT_EQ(ws, 12345u);
  EXPECT_EQ(ex, reinterpret_cast<aclOpExecutor*>(uintptr_t{0x1234}));
  // nulls and bad values change nothing: the entry point looks at no argument
  EXPECT_EQ(aclnnMlaPrologV3GetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             nullptr, nullptr, nullptr, nullptr, nullptr, -1.0, -1.0, nullptr, false, 9,
                                             9, 9, 9, 9, 0, 0.0, 0.0, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             nullptr, nullptr),
            ACLNN_ERR_INNER);
  // phase 2, with a real V3WeightNz executor: refused, and that executor still runs afterwards
  uint64_t size = 0;
  aclOpExecutor* real = nullptr;
  MlaPrologCase other = testdata::make_mla_prolog_case(c.cfg);
  ASSERT_EQ(mla_prolog_phase1(other, v3_call(), &size, &real), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const Snapshot other_before(other);
  std::vector<char> buf(size);
  EXPECT_EQ(aclnnMlaPrologV3(buf.data(), size, real, nullptr), ACLNN_ERR_INNER);
  msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclnnMlaPrologV3: ACL-65 not supported"), std::string::npos) << msg;
  EXPECT_EQ(aclnnMlaPrologV3(nullptr, 0, nullptr, nullptr), ACLNN_ERR_INNER);
  EXPECT_TRUE(other_before.same(other));
  EXPECT_TRUE(before.same(c));
  EXPECT_EQ(aclnnMlaPrologV3WeightNz(buf.data(), size, real, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_FALSE(other_before.same(other));
}

}  // namespace
}  // namespace mlaops::testing
