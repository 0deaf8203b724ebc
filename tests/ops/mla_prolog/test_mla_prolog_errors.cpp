// Negative tests of MlaProlog: every validation rule (docs/ops/mla_prolog.md, ids MP-01..MP-17)
// with its status code and message, every row of the support tables (ops/mla_prolog/mla_prolog_check.h)
// with every value it does not allow, and proof that no output or cache byte changed.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_harness.h"
#include "ops/mla_prolog/table_values.h"
#include "ops/mla_prolog/mla_prolog_check.h"

namespace mlaops::testing {
namespace {

using testdata::MlaPrologCase;
using testdata::WeightForm;

// One vendor-shaped case per scenario, built once (He 7168, N 2, T 2, PA_BSND, NZ 4-D weights;
// PARTIAL_QUANT_KV_QUANT passes smoothScalesCq); `bsh`: the NO_QUANT case with tokenX [2, 1, He].
const MlaPrologCase& vendor_case(MlaPrologScenario sc, bool bsh = false) {
  static MlaPrologCase* cases[6] = {};
  const int i = bsh ? 5 : static_cast<int>(sc);
  if (cases[i] == nullptr) {
    MlaPrologCaseConfig c =
        testdata::vendor_small_cfg(bsh ? MlaPrologScenario::kNoQuant : sc, bsh, MlaPrologCacheMode::kPaBsnd);
    c.smooth = sc == MlaPrologScenario::kPartialQuantKvQuant;
    c.B = 2;
    c.seed = 1;
    cases[i] = new MlaPrologCase(testdata::make_mla_prolog_case(c));
  }
  return *cases[i];
}

struct Snapshot {
  std::vector<uint8_t> kv, kr, q, qr, dqs;
  explicit Snapshot(const MlaPrologCase& c)
      : kv(c.kv_cache.bytes), kr(c.kr_cache.bytes), q(c.query_out.bytes), qr(c.query_rope_out.bytes),
        dqs(c.dequant_scale_q_nope_out.bytes) {}
  bool same(const MlaPrologCase& c) const {
    return kv == c.kv_cache.bytes && kr == c.kr_cache.bytes && q == c.query_out.bytes &&
           qr == c.query_rope_out.bytes && dqs == c.dequant_scale_q_nope_out.bytes;
  }
};

// Runs both phases with the mutation; expects `code`, a message naming the parameter and the
// rule, and every output and cache byte unchanged.
void expect_rejected(const MlaPrologCase& c, aclnnStatus code, const char* param, const char* rule,
                     const MlaPrologCall& call) {
  const Snapshot before(c);
  const aclnnStatus s = mla_prolog_call(c, call);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, code) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << "message does not name " << param << ": " << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << "message does not name " << rule << ": " << msg;
  EXPECT_NE(msg.find("aclnnMlaProlog"), std::string::npos) << msg;  // the operator's entry point
  EXPECT_TRUE(before.same(c)) << "a rejected call changed an output or cache byte (" << rule << ")";
}
void expect_rejected(MlaPrologScenario sc, aclnnStatus code, const char* param, const char* rule,
                     const MlaPrologCall& call) {
  expect_rejected(vendor_case(sc), code, param, rule, call);
}

MlaPrologCall mutate(std::function<void(MlaPrologArgs&)> f) {
  MlaPrologCall c;
  c.mutate = std::move(f);
  return c;
}

constexpr auto NQ = MlaPrologScenario::kNoQuant;
constexpr auto PQ = MlaPrologScenario::kPartialQuantKvNoQuant;
constexpr auto PKV = MlaPrologScenario::kPartialQuantKvQuant;
constexpr auto FQ = MlaPrologScenario::kFullQuantKvNoQuant;
constexpr auto FKV = MlaPrologScenario::kFullQuantKvQuant;

TEST(MlaPrologErrors, MP01_RequiredTensorsAndOutPointers) {
  for (int i = 0; i < MlaPrologArgs::kCount; ++i) {
    const std::string n = MlaPrologArgs::name(i);
    if (n.find("Optional") != std::string::npos) continue;
    expect_rejected(NQ, ACLNN_ERR_PARAM_NULLPTR, n.c_str(), "required",
                    mutate([i](MlaPrologArgs& a) { a.passed[i] = false; }));
  }
  expect_rejected(FKV, ACLNN_ERR_PARAM_NULLPTR, "dequantScaleQNopeOutOptional", "MP-01 required in scenario FULL_QUANT_KV_QUANT",
                  mutate([](MlaPrologArgs& a) { a.passed[a.index("dequantScaleQNopeOutOptional")] = false; }));
  const MlaPrologCase& c = vendor_case(NQ);
  aclOpExecutor* ex = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(mla_prolog_phase1(c, {}, nullptr, &ex), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("MP-01 out-pointer is null"), std::string::npos);
  EXPECT_EQ(mla_prolog_phase1(c, {}, &ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(MlaPrologErrors, MP02_Dtypes) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tokenX", "MP-02", mutate([](MlaPrologArgs& a) { a["tokenX"].dtype = DType::kFloat16; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightUk", "MP-02", mutate([](MlaPrologArgs& a) { a["weightUk"].dtype = DType::kFloat16; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "rmsnormGammaCq", "MP-02",
                  mutate([](MlaPrologArgs& a) { a["rmsnormGammaCq"].dtype = DType::kFloat16; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "ropeSin", "MP-02", mutate([](MlaPrologArgs& a) { a["ropeSin"].dtype = DType::kFloat16; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "cacheIndex", "MP-02", mutate([](MlaPrologArgs& a) {
    a["cacheIndex"].dtype = DType::kInt32;
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-02", mutate([](MlaPrologArgs& a) { a["kvCacheRef"].dtype = DType::kFloat16; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryRopeOut", "MP-02",
                  mutate([](MlaPrologArgs& a) { a["queryRopeOut"].dtype = DType::kFloat16; }));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleWUqQrOptional", "MP-02",
                  mutate([](MlaPrologArgs& a) { a["dequantScaleWUqQrOptional"].dtype = DType::kInt32; }));
}

TEST(MlaPrologErrors, MP03_Formats) {
  // the aclnn entry point takes FRACTAL_NZ weights only
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightDq", "MP-03", mutate([](MlaPrologArgs& a) {
    TensorView& w = a["weightDq"];
    w.format = Format::kND;
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tokenX", "MP-03", mutate([](MlaPrologArgs& a) { a["tokenX"].format = Format::kFractalNZ; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-03",
                  mutate([](MlaPrologArgs& a) { a["kvCacheRef"].format = Format::kFractalNZ; }));  // PA_BSND
}

TEST(MlaPrologErrors, MP04_Ranks) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tokenX", "MP-04", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["tokenX"];
    t = make_view(t.data, t.dtype, {1, 2, 1, 7168});
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightUk", "MP-04", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["weightUk"];
    t = make_view(t.data, t.dtype, {256, 512});
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-04", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["kvCacheRef"];
    t = make_view(t.data, t.dtype, {2, 16, 512});
  }));
}

TEST(MlaPrologErrors, MP05_DensityAndAlignment) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-05", mutate([](MlaPrologArgs& a) {
    static std::vector<uint16_t> padded(2 * 2 * 2 * 512);
    TensorView& t = a["queryOut"];
    t.data = padded.data();
    t.strides[0] = t.strides[0] * 2;  // padded token rows: not dense
    t.storage_rank = 1;
    t.storage_dims[0] = static_cast<int64_t>(padded.size());
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryRopeOut", "MP-05", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["queryRopeOut"];
    t.data = static_cast<char*>(t.data) + 1;  // bf16 at an odd address
  }));
}

TEST(MlaPrologErrors, MP06_CacheMode) {
  for (const char* bad : {"BNSD", "PA_BSN", "pa_bsnd", "", "PA_BSND_AND_A_VERY_LONG_SUFFIX"}) {
    MlaPrologCall call;
    call.cache_mode = bad;
    expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "cacheModeOptional", "MP-06 value", call);
  }
}

TEST(MlaPrologErrors, MP07_VendorRanges) {
  // He outside {6144, 7168, 7680}: tokenX [2, 1536] (the weight shapes follow the token_x He)
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tokenX", "MP-07 He", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["tokenX"];
    t = make_view(t.data, t.dtype, {2, 1536});
  }));
  // N = 3 (weightUk [3, 128, 512])
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightUk", "MP-07 N", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["weightUk"];
    t = make_view(t.data, t.dtype, {3, 128, 512});
  }));
  // D = 129
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightUk", "MP-07 D", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["weightUk"];
    t = make_view(t.data, t.dtype, {1, 129, 512});
  }));
  // BlockSize 129 (the cache is never read in phase 1)
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-07 BlockSize", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["kvCacheRef"];
    t = make_view(t.data, t.dtype, {1, 129 / 2, 1, 512});  // fits the buffer; 64 is not allowed either
  }));
  // Hckv 256 (kvCacheRef [2, 16, 1, 256]) and Dr 32 (ropeCos [2, 32])
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-07 Hckv", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["kvCacheRef"];
    t = make_view(t.data, t.dtype, {2, 16, 1, 256});
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "ropeCos", "MP-07 Dr", mutate([](MlaPrologArgs& a) {
    TensorView& t = a["ropeCos"];
    t = make_view(t.data, t.dtype, {t.dims[0], 32});
  }));
  // S = 17, B = 65537, T = 1048577: descriptions only (phase 1 reads no data), far-apart fake addresses
  auto huge = [](std::initializer_list<int64_t> tok, std::initializer_list<int64_t> idx) {
    return mutate([tok, idx](MlaPrologArgs& a) {
      a["tokenX"] = make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kBFloat16, tok);
      a["cacheIndex"] = make_view(reinterpret_cast<void*>(uintptr_t{2} << 44), DType::kInt64, idx);
    });
  };
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tokenX", "MP-07 S", huge({1, 17, 7168}, {1, 17}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tokenX", "MP-07 B", huge({65537, 1, 7168}, {65537, 1}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "tokenX", "MP-07 T", huge({1048577, 7168}, {1048577}));
}

TEST(MlaPrologErrors, MP08_ScenarioDtypes) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightDq", "MP-08 dtype in scenario", mutate([](MlaPrologArgs& a) {
    a["weightDq"].dtype = DType::kInt8;  // int8 weightDq needs int8 tokenX (full quant)
    a["weightDq"].dims[3] = 32;
    a["weightDq"].dims[0] /= 2;
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-08 dtype in scenario", mutate([](MlaPrologArgs& a) { a["kvCacheRef"].dtype = DType::kInt8; }));
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "krCacheRef", "MP-08 dtype in scenario", mutate([](MlaPrologArgs& a) { a["krCacheRef"].dtype = DType::kInt8; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-08 dtype in scenario", mutate([](MlaPrologArgs& a) { a["queryOut"].dtype = DType::kInt8; }));
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-08 dtype in scenario", mutate([](MlaPrologArgs& a) { a["queryOut"].dtype = DType::kBFloat16; }));
}

TEST(MlaPrologErrors, MP09_Shapes) {
  auto reshape = [](const char* name, std::initializer_list<int64_t> dims) {
    std::string n = name;
    return mutate([n, dims](MlaPrologArgs& a) {
      TensorView& t = a[n];
      t = make_view(t.data, t.dtype, dims, t.format);
    });
  };
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "ropeSin", "MP-09", reshape("ropeSin", {2, 32}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "cacheIndex", "MP-09", reshape("cacheIndex", {1}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-09", reshape("queryOut", {2, 1, 512}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryRopeOut", "MP-09", reshape("queryRopeOut", {2, 2, 32}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "rmsnormGammaCkv", "MP-09", reshape("rmsnormGammaCkv", {256}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "krCacheRef", "MP-09", reshape("krCacheRef", {2, 16, 1, 32}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-09 Nkv (the dim before the row)", reshape("kvCacheRef", {1, 16, 2, 512}));
  expect_rejected(FQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleXOptional", "MP-09", reshape("dequantScaleXOptional", {1, 2}));
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "quantScaleCkrOptional", "MP-09", reshape("quantScaleCkrOptional", {1, 32}));
  // V1 / V2 take the per-tensor scale as (1, Hckv) too (V3's (1): MlaPrologV3Errors.MP09_QuantScaleCkvShapeByKvQuantMode)
  for (MlaPrologScenario sc : {PKV, FKV})
    expect_rejected(sc, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", "MP-09 shape; allowed [1, 512], got [1]",
                    reshape("quantScaleCkvOptional", {1}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleQNopeOutOptional", "MP-09 (placeholder outside FULL_QUANT_KV_QUANT)",
                  reshape("dequantScaleQNopeOutOptional", {2}));  // outside FULL+KVq: (1) placeholder only
}

TEST(MlaPrologErrors, MP10_OptionalsByScenario) {
  auto drop = [](const char* name) {
    std::string n = name;
    return mutate([n](MlaPrologArgs& a) { a.passed[a.index(n)] = false; });
  };
  auto add_from = [](const char* name, MlaPrologScenario src) {
    std::string n = name;
    return mutate([n, src](MlaPrologArgs& a) {
      const MlaPrologArgs other = args_of(vendor_case(src));
      a.v[a.index(n)] = other.v[a.index(n)];
      a.passed[a.index(n)] = true;
    });
  };
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleWUqQrOptional", "MP-10", add_from("dequantScaleWUqQrOptional", PQ));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleXOptional", "MP-10", add_from("dequantScaleXOptional", FQ));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", "MP-10", add_from("quantScaleCkvOptional", PKV));
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "quantScaleCkrOptional", "MP-10", add_from("quantScaleCkrOptional", PKV));
  expect_rejected(PQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleWUqQrOptional", "MP-10", drop("dequantScaleWUqQrOptional"));
  expect_rejected(FQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleWDqOptional", "MP-10", drop("dequantScaleWDqOptional"));
  expect_rejected(FQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleWDkvKrOptional", "MP-10", drop("dequantScaleWDkvKrOptional"));
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "quantScaleCkvOptional", "MP-10", drop("quantScaleCkvOptional"));
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "quantScaleCkrOptional", "MP-10", drop("quantScaleCkrOptional"));
}

TEST(MlaPrologErrors, MP11_V1CannotExpressFullQuantKvQuant) {
  MlaPrologCall call;
  call.v2 = false;
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-11 scenario FULL_QUANT_KV_QUANT (int8 tokenX and int8 kvCache) needs the dequantScaleQNope output", call);
}

TEST(MlaPrologErrors, MP12_Aliasing) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-12",
                  mutate([](MlaPrologArgs& a) { a["queryOut"].data = a["tokenX"].data; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryRopeOut", "MP-12", mutate([](MlaPrologArgs& a) {
    a["queryRopeOut"].data = static_cast<char*>(a["kvCacheRef"].data) + 64;
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-12",
                  mutate([](MlaPrologArgs& a) { a["krCacheRef"].data = a["kvCacheRef"].data; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-12", mutate([](MlaPrologArgs& a) {
    a["queryOut"].data = static_cast<char*>(a["weightDq"].data) + 1024;  // output on top of a weight
  }));
}

TEST(MlaPrologErrors, MP13_FractalNzShapes) {
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightDq", "MP-13 FRACTAL_NZ storage", mutate([](MlaPrologArgs& a) {
    a["weightDq"].dims[1] = 447;  // [96, 447, 16, 16] does not match He 7168
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightUqQr", "MP-13 NZ view FRACTAL_NZ storage must be", mutate([](MlaPrologArgs& a) {
    TensorView& w = a["weightUqQr"];
    w.dims[0] /= 2;
    w.dims[3] = 32;  // c0 32 is the int8 tile, not bf16's
  }));
}

TEST(MlaPrologErrors, MP14_SizeOverflowInTheCppApi) {
  // through the C++ API a view can describe sizes no aclTensor could: overflow is an error
  MlaPrologCase c = testdata::make_mla_prolog_case(MlaPrologCaseConfig{});
  MlaPrologParams p = c.params();
  p.weight_uk.dims[0] = int64_t{1} << 62;  // N * D * Hckv elements overflow
  uint64_t ws = 0;
  EXPECT_EQ(mla_prolog_workspace_size(p, &ws), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("weightUk: MP-14"), std::string::npos) << last_error_message();
}

TEST(MlaPrologErrors, MP15_Epsilon) {
  // 1e300 / 3.5e38: finite doubles that overflow the float32 the RmsNorm uses
  for (double eps : {-1e-5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e300,
                     3.5e38}) {
    MlaPrologCall call;
    call.eps_ckv = eps;
    expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "rmsnormEpsilonCkv", "MP-15", call);
    MlaPrologCall cq;
    cq.eps_cq = eps;
    expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "rmsnormEpsilonCq", "MP-15", cq);
  }
}

TEST(MlaPrologErrors, MP16_PaNzRowWidthInTheCppApi) {
  MlaPrologCaseConfig cfg;
  cfg.Dr = 8;  // an 8-wide bf16 row is not a whole 16-element NZ chunk
  cfg.cache_mode = MlaPrologCacheMode::kPaNz;
  MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  EXPECT_EQ(run_fast(c), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("MP-16"), std::string::npos) << last_error_message();
  EXPECT_TRUE(testdata::all_bytes(c.kr_cache, cfg.canary));
}

TEST(MlaPrologErrors, MP17_CacheIndexOutOfRangeAtExecute) {
  for (auto sc : {NQ, FKV}) {
    MlaPrologCase& c = const_cast<MlaPrologCase&>(vendor_case(sc));
    int64_t* idx = c.cache_index.view.ptr<int64_t>();
    const int64_t saved = idx[1];
    idx[1] = c.cfg.block_num * c.cfg.block_size;  // one past the end
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    const Snapshot before(c);
    EXPECT_EQ(mla_prolog_call(c, {}, stream), ACLNN_ERR_PARAM_INVALID);  // reported by synchronize
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("MP-17 cacheIndex[1]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("got 32"), std::string::npos) << msg;
    EXPECT_TRUE(before.same(c));
    EXPECT_EQ(mla_prolog_call(c, {}, nullptr), ACLNN_ERR_PARAM_INVALID);  // null stream: returned directly
    EXPECT_TRUE(before.same(c));
    idx[1] = std::numeric_limits<int64_t>::max();
    EXPECT_EQ(mla_prolog_call(c, {}, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(before.same(c));
    idx[1] = saved;
    aclrtDestroyStream(stream);
  }
}

TEST(MlaPrologErrors, ShortOrMissingWorkspace) {
  const MlaPrologCase& c = vendor_case(NQ);
  const Snapshot before(c);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mla_prolog_phase1(c, {}, &ws_size, &ex), ACLNN_SUCCESS);
  ASSERT_GT(ws_size, 0u);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  std::vector<uint8_t> ws(ws_size);
  EXPECT_EQ(aclnnMlaPrologV2WeightNz(nullptr, ws_size, ex, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnMlaPrologV2WeightNz(ws.data(), ws_size - 1, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(before.same(c));
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}


// ---- the support tables, row by row ----

namespace table = mla_prolog_table;

constexpr MlaPrologScenario kAllScenarios[] = {NQ, PQ, PKV, FQ, FKV};

// The first scenario whose vendor case passes `param`.
MlaPrologScenario scenario_with(const char* param) {
  for (auto sc : kAllScenarios)
    if (args_of(vendor_case(sc)).passed[MlaPrologArgs{}.index(param)]) return sc;
  ADD_FAILURE() << "no case passes " << param;
  return NQ;
}


MlaPrologCall set_dtype(const char* name, DType d) {
  std::string n = name;
  return mutate([n, d](MlaPrologArgs& a) { a[n].dtype = d; });
}
MlaPrologCall set_format(const char* name, Format f) {
  std::string n = name;
  return mutate([n, f](MlaPrologArgs& a) { a[n].format = f; });
}
MlaPrologCall set_dims(const char* name, std::vector<int64_t> dims) {
  std::string n = name;
  return mutate([n, dims](MlaPrologArgs& a) {
    TensorView& t = a[n];
    t = make_view(t.data, t.dtype, dims.data(), static_cast<int>(dims.size()), t.format);
  });
}

TEST(MlaPrologTables, DtypeRows) {
  for (const auto& row : table::kDtypes) {
    const MlaPrologScenario sc = scenario_with(row.param);
    for (DType d : every_dtype()) {
      if (row.allowed.has(d)) continue;
      SCOPED_TRACE(std::string(row.param) + " " + dtype_name(d));
      expect_rejected(sc, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dtype(row.param, d));
    }
  }
}

TEST(MlaPrologTables, FormatRows) {
  auto every_row = [](std::span<const check::FormatRow> rows, const char* cache_mode) {
    for (const auto& row : rows) {
      const MlaPrologScenario sc = scenario_with(row.param);
      for (Format f : every_format()) {
        if (row.allowed.has(f)) continue;
        SCOPED_TRACE(std::string(row.param) + " " + format_name(f) + " " + cache_mode);
        MlaPrologCall call = set_format(row.param, f);
        call.cache_mode = cache_mode;
        expect_rejected(sc, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, call);
      }
    }
  };
  every_row(table::kFormats, "PA_BSND");
  every_row(table::kWeightFormatsAclnn, "PA_BSND");  // the aclnn entry points: FRACTAL_NZ weights only
  every_row(table::kCacheFormatsPaBsnd, "PA_BSND");
  every_row(table::kCacheFormatsPaNz, "PA_NZ");
}

// The C++ API's weight formats (bf16 ND weights too), through mla_prolog_workspace_size.
TEST(MlaPrologTables, CppWeightFormatRows) {
  MlaPrologCaseConfig cfg;
  cfg.weight_form = WeightForm::kNd;
  MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  for (const auto& row : table::kWeightFormatsCpp) {
    for (Format f : every_format()) {
      if (row.allowed.has(f)) continue;
      MlaPrologParams p = c.params();
      for (const check::Named& n : mla_prolog_tensors(p))
        if (std::string(n.name) == row.param) const_cast<TensorView*>(n.t)->format = f;
      uint64_t ws = 0;
      EXPECT_EQ(mla_prolog_workspace_size(p, &ws), kParamInvalid) << row.param << " " << format_name(f);
      const std::string msg = last_error_message();
      EXPECT_NE(msg.find(std::string("mla_prolog: ") + row.param + ": " + row.rule), std::string::npos) << msg;
    }
  }
}

TEST(MlaPrologTables, RankRows) {
  for (const auto& row : table::kRanks) {
    const MlaPrologScenario sc = scenario_with(row.param);
    for (int r = 1; r <= 5; ++r) {
      if (row.allowed.has(r)) continue;
      SCOPED_TRACE(std::string(row.param) + " rank " + std::to_string(r));
      expect_rejected(sc, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dims(row.param, std::vector<int64_t>(r, 1)));
    }
  }
}

// MP-01 / MP-08 / MP-10: per scenario row, every dtype column set to the other allowed dtype and
// every optional input dropped (when the row reads it) or added (when it does not). A column
// that chooses the scenario moves the call to another row, which then rejects it.
TEST(MlaPrologTables, ScenarioRows) {
  for (const auto& row : table::kScenarios) {
    if (mla_prolog_is_per_tile(row.scenario)) continue;  // V3 only: MlaPrologV3Errors.PerTileScenarioRows
    for (size_t i = 0; i < row.dtypes.size(); ++i) {
      const char* param = table::kScenarioDtypeParams[i];
      const DType other = row.dtypes[i] == DType::kInt8 ? DType::kBFloat16 : DType::kInt8;
      SCOPED_TRACE(std::string(mla_prolog_scenario_name(row.scenario)) + " " + param + " " + dtype_name(other));
      bool chooser = false;
      for (const char* c : table::kScenarioChoosers) chooser |= std::string(c) == param;
      if (!chooser) {
        expect_rejected(row.scenario, ACLNN_ERR_PARAM_INVALID, param, "MP-08 dtype in scenario", set_dtype(param, other));
        continue;
      }
      const MlaPrologCase& c = vendor_case(row.scenario);
      const Snapshot before(c);
      EXPECT_EQ(mla_prolog_call(c, set_dtype(param, other)), ACLNN_ERR_PARAM_INVALID);
      const std::string msg = aclGetRecentErrMsg();
      EXPECT_TRUE(msg.find("MP-08") != std::string::npos || msg.find("MP-10") != std::string::npos) << msg;
      EXPECT_TRUE(before.same(c));
    }
    for (size_t i = 0; i < row.optionals.size(); ++i) {
      const std::string param = table::kScenarioOptionalParams[i];
      SCOPED_TRACE(std::string(mla_prolog_scenario_name(row.scenario)) + " " + param);
      const MlaPrologScenario from = scenario_with(param.c_str());
      expect_rejected(row.scenario, ACLNN_ERR_PARAM_INVALID, param.c_str(), "MP-10", mutate([&](MlaPrologArgs& a) {
                        const int k = a.index(param);
                        a.v[k] = args_of(vendor_case(from)).v[k];
                        a.passed[k] = !row.optionals[i];
                      }));
    }
  }
}

// Where a symbol of a value row is read from (ops/mla_prolog/mla_prolog_check.h kDimSources, kCacheDimSources).
const table::DimSource* source_of(table::Sym s) {
  for (const auto& d : table::kDimSources)
    if (d.sym == s) return &d;
  for (const auto& d : table::kCacheDimSources)
    if (d.sym == s) return &d;
  return nullptr;
}

// MP-07 / MP-09 values: each symbol set to a value its row does not allow (the largest allowed
// value + 2, or one past the range; even, so that Dr stays even). B, S, T are tokenX's leading
// dims: a huge tokenX is described only (phase 1 reads no data).
TEST(MlaPrologTables, ValueRows) {
  auto every_row = [](std::span<const check::ValueRow<table::Sym>> rows, bool bsh) {
    for (const auto& row : rows) {
      int64_t bad = row.hi + 1;
      if (row.set.n > 0) {
        bad = 0;
        for (int64_t v : row.set.values()) bad = std::max(bad, v + 2);
      }
      SCOPED_TRACE(std::string(row.rule) + " = " + std::to_string(bad));
      const MlaPrologCase& c = vendor_case(NQ, bsh);
      if (const table::DimSource* src = source_of(row.sym)) {
        std::vector<int64_t> dims = dims_of(args_of(c)[src->param]);
        dims[src->dim < 0 ? dims.size() - 1 : static_cast<size_t>(src->dim)] = bad;
        expect_rejected(c, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dims(src->param, dims));
        continue;
      }
      std::vector<int64_t> tok = bsh ? std::vector<int64_t>{2, 1, 7168} : std::vector<int64_t>{2, 7168};
      tok[row.sym == table::Sym::kS ? 1 : 0] = bad;
      expect_rejected(c, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, mutate([tok](MlaPrologArgs& a) {
                        a["tokenX"] = make_view(reinterpret_cast<void*>(uintptr_t{1} << 44), DType::kBFloat16,
                                                tok.data(), static_cast<int>(tok.size()));
                      }));
    }
  };
  every_row(table::kValues, false);
  every_row(table::kVendorRanges, false);
  every_row(table::kVendorRangesBsh, true);
}

// MP-09: every dim of every shape row changed by one (dims that define a symbol excepted: those
// are the value rows'); MP-13: the NZ storage dims of the weights.
TEST(MlaPrologTables, ShapeRows) {
  auto every_row = [](std::span<const check::ShapeRow<table::Sym>> rows, const MlaPrologCase* fixed) {
    for (const auto& row : rows) {
      const MlaPrologCase& c = fixed != nullptr ? *fixed : vendor_case(scenario_with(row.param));
      const std::vector<int64_t> dims = dims_of(args_of(c)[row.param]);
      for (size_t i = 0; i < dims.size(); ++i) {
        bool defines = false;
        for (const auto& s : table::kDimSources)
          defines |= std::string(s.param) == row.param && (s.dim < 0 ? dims.size() - 1 : static_cast<size_t>(s.dim)) == i;
        if (defines) continue;
        std::vector<int64_t> bad = dims;
        bad[i] = dims[i] > 1 ? dims[i] - 1 : 2;
        SCOPED_TRACE(std::string(row.param) + " dim " + std::to_string(i));
        expect_rejected(c, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dims(row.param, bad));
      }
    }
  };
  every_row(table::kShapesTnd, &vendor_case(NQ));
  every_row(table::kShapesBsh, &vendor_case(NQ, true));
  every_row(table::kShapes, nullptr);
  every_row(table::kQuantScaleCkv, nullptr);
  for (const auto& row : table::kWeightShapes)
    for (size_t i : {size_t{0}, size_t{1}}) {  // [C1, R1, 16, c0]: C1 and R1 follow the logical shape
      std::vector<int64_t> bad = dims_of(args_of(vendor_case(NQ))[row.param]);
      bad[i] -= 1;
      SCOPED_TRACE(std::string(row.param) + " storage dim " + std::to_string(i));
      expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, row.param, "MP-13 FRACTAL_NZ storage", set_dims(row.param, bad));
    }
}

// MP-09 for ND weights (C++ API): the logical [K, N] of each weight row.
TEST(MlaPrologTables, CppWeightShapeRows) {
  MlaPrologCaseConfig cfg;
  cfg.weight_form = WeightForm::kNd;
  MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  for (const auto& row : table::kWeightShapes)
    for (int i = 0; i < 2; ++i) {
      MlaPrologParams p = c.params();
      for (const check::Named& n : mla_prolog_tensors(p))
        if (std::string(n.name) == row.param) {
          TensorView& w = *const_cast<TensorView*>(n.t);
          int64_t dims[2] = {w.dims[0], w.dims[1]};
          dims[i] -= 1;
          w = make_view(w.data, w.dtype, dims, 2);
        }
      uint64_t ws = 0;
      EXPECT_EQ(mla_prolog_workspace_size(p, &ws), kParamInvalid) << row.param << " dim " << i;
      const std::string msg = last_error_message();
      EXPECT_NE(msg.find(std::string("mla_prolog: ") + row.param + ": " + row.rule), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace mlaops::testing
