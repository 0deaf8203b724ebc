// Negative tests of MlaProlog: every validation rule (docs/ops/mla_prolog.md, ids MP-01..MP-17)
// with its status code and message, and proof that no output or cache byte changed.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>

#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_harness.h"

namespace mlaops::testing {
namespace {

using testdata::MlaPrologCase;
using testdata::WeightForm;

// One vendor-shaped case per scenario, built once (He 7168, N 2, T 2, PA_BSND, NZ 4-D weights).
const MlaPrologCase& vendor_case(MlaPrologScenario sc) {
  static MlaPrologCase* cases[5] = {};
  const int i = static_cast<int>(sc);
  if (cases[i] == nullptr) {
    MlaPrologCaseConfig c;
    c.scenario = sc;
    c.N = 2;
    c.He = 7168;
    c.Hcq = 1536;
    c.Hckv = 512;
    c.D = 128;
    c.Dr = 64;
    c.B = 2;
    c.S = 1;
    c.bsh = false;
    c.block_num = 2;
    c.block_size = 16;
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
void expect_rejected(MlaPrologScenario sc, aclnnStatus code, const char* param, const char* rule,
                     const MlaPrologCall& call) {
  const MlaPrologCase& c = vendor_case(sc);
  const Snapshot before(c);
  const aclnnStatus s = mla_prolog_call(c, call);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, code) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << "message does not name " << param << ": " << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << "message does not name " << rule << ": " << msg;
  EXPECT_NE(msg.find("aclnnMlaProlog"), std::string::npos) << msg;  // the operator's entry point
  EXPECT_TRUE(before.same(c)) << "a rejected call changed an output or cache byte (" << rule << ")";
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
  expect_rejected(FKV, ACLNN_ERR_PARAM_NULLPTR, "dequantScaleQNopeOutOptional", "MP-01",
                  mutate([](MlaPrologArgs& a) { a.passed[a.index("dequantScaleQNopeOutOptional")] = false; }));
  const MlaPrologCase& c = vendor_case(NQ);
  aclOpExecutor* ex = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(mla_prolog_phase1(c, {}, nullptr, &ex), ACLNN_ERR_PARAM_NULLPTR);
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
    expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "cacheModeOptional", "MP-06", call);
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
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightDq", "MP-08", mutate([](MlaPrologArgs& a) {
    a["weightDq"].dtype = DType::kInt8;  // int8 weightDq needs int8 tokenX (full quant)
    a["weightDq"].dims[3] = 32;
    a["weightDq"].dims[0] /= 2;
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-08", mutate([](MlaPrologArgs& a) { a["kvCacheRef"].dtype = DType::kInt8; }));
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "krCacheRef", "MP-08", mutate([](MlaPrologArgs& a) { a["krCacheRef"].dtype = DType::kInt8; }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-08", mutate([](MlaPrologArgs& a) { a["queryOut"].dtype = DType::kInt8; }));
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "queryOut", "MP-08", mutate([](MlaPrologArgs& a) { a["queryOut"].dtype = DType::kBFloat16; }));
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
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-09 Nkv", reshape("kvCacheRef", {1, 16, 2, 512}));
  expect_rejected(FQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleXOptional", "MP-09", reshape("dequantScaleXOptional", {1, 2}));
  expect_rejected(PKV, ACLNN_ERR_PARAM_INVALID, "quantScaleCkrOptional", "MP-09", reshape("quantScaleCkrOptional", {1, 32}));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "dequantScaleQNopeOutOptional", "MP-09",
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
  expect_rejected(FKV, ACLNN_ERR_PARAM_INVALID, "kvCacheRef", "MP-11", call);
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
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightDq", "MP-13", mutate([](MlaPrologArgs& a) {
    a["weightDq"].dims[1] = 447;  // [96, 447, 16, 16] does not match He 7168
  }));
  expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "weightUqQr", "FRACTAL_NZ storage must be", mutate([](MlaPrologArgs& a) {
    TensorView& w = a["weightUqQr"];
    w.dims[0] /= 2;
    w.dims[3] = 32;  // c0 32 is the int8 tile, not bf16's
  }));
}

TEST(MlaPrologErrors, MP14_SizeOverflowInTheCppApi) {
  // through the C++ API a view can describe sizes no aclTensor could: overflow is an error
  MlaPrologCase c = testdata::make_mla_prolog_case(MlaPrologCaseConfig{});
  MlaPrologParams p = c.params();
  p.weight_uk.dims[0] = int64_t{1} << 62;  // N * (D + Dr) overflows
  MlaPrologCheckOptions o;
  MlaPrologPlan plan;
  EXPECT_EQ(mla_prolog_check(p, o, &plan), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("MP-14"), std::string::npos) << last_error_message();
}

TEST(MlaPrologErrors, MP15_Epsilon) {
  for (double eps : {-1e-5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    MlaPrologCall call;
    call.eps_ckv = eps;
    expect_rejected(NQ, ACLNN_ERR_PARAM_INVALID, "rmsnormEpsilon", "MP-15", call);
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

}  // namespace
}  // namespace mlaops::testing
