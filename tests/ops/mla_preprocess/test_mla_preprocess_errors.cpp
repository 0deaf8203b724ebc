// Negative tests of aclnnMlaPreprocess: every validation rule (docs/ops/mla_preprocess.md, ids
// MPP-01..MPP-17) with its status code and message, through the C API, every row of the support
// tables (ops/mla_preprocess/mla_preprocess_check.h) with every value it does not allow, and proof that no
// output or cache byte changed (canary snapshots), including slotMapping values made invalid
// between the two phases.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_preprocess/mla_preprocess_harness.h"
#include "ops/mla_prolog/table_values.h"
#include "ops/mla_preprocess/mla_preprocess_check.h"

namespace mlaops::testing {
namespace {

using CM = MlaPreprocessCacheMode;
using QM = MlaPreprocessQuantMode;

enum Base { kFp16Cm1Qm0, kBf16Cm2Qm0, kFp16Cm0Qm1, kBf16Weights, kBf16Cm3Qm1 };

// Vendor-shaped cases (hidden 7168, N 16, T 2, blockSize 128), built once each.
const MlaPreprocessCase& base_case(Base b) {
  static std::unique_ptr<MlaPreprocessCase> cases[5];
  if (cases[b]) return *cases[b];
  testdata::MlaPreprocessVendorCase v{DType::kFloat16, 2, 16, CM::kKvCache, QM::kPerTensorAsymm,
                                      false, testdata::MlaPreprocessWeightForm::kNz4d, false};
  switch (b) {
    case kFp16Cm1Qm0: v.cm = CM::kKropeCtkv; break;
    case kBf16Cm2Qm0: v.dt = DType::kBFloat16; v.cm = CM::kInt8NzCache; break;
    case kFp16Cm0Qm1: v.qm = QM::kPerTokenSymm; break;
    case kBf16Weights: v.dt = DType::kBFloat16; v.cm = CM::kKropeCtkv; v.float_weights = true; break;  // hidden 6144
    case kBf16Cm3Qm1: v.dt = DType::kBFloat16; v.cm = CM::kNzCache; v.qm = QM::kPerTokenSymm; break;
  }
  MlaPreprocessCaseConfig c = testdata::vendor_cfg(v, 77 + static_cast<uint64_t>(b));
  c.block_num = 2;
  c.q_down = b == kBf16Cm3Qm1;  // through aclnnMlaPreprocessV2 (qDownOut)
  cases[b] = std::make_unique<MlaPreprocessCase>(testdata::make_mla_preprocess_case(c));
  return *cases[b];
}

struct Snapshot {
  std::vector<uint8_t> kv, kr, q, qr, qd;
  explicit Snapshot(const MlaPreprocessCase& c)
      : kv(c.kv_cache.bytes), kr(c.kv_cache_rope.bytes), q(c.q_out.bytes), qr(c.q_rope_out.bytes),
        qd(c.q_down_out.bytes) {}
  bool same(const MlaPreprocessCase& c) const {
    return kv == c.kv_cache.bytes && kr == c.kv_cache_rope.bytes && q == c.q_out.bytes && qr == c.q_rope_out.bytes &&
           qd == c.q_down_out.bytes;
  }
};

// Runs both phases with and without the mutation (outputs reset between); expects success and
// identical outputs and caches (a tensor the modes do not read is ignored).
void expect_accepted_same(Base b, const MlaPreprocessMutation& m) {
  SCOPED_TRACE("base case " + std::to_string(b));
  MlaPreprocessCase& c = const_cast<MlaPreprocessCase&>(base_case(b));
  c.reset_outputs();
  ASSERT_EQ(mla_preprocess_call(c), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const Snapshot plain(c);
  c.reset_outputs();
  ASSERT_EQ(mla_preprocess_call(c, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(plain.same(c)) << "an ignored tensor changed the result";
}

// Runs both phases with the mutation; expects `code`, a message naming the operator, the
// parameter and the rule, and every output and cache byte unchanged.
void expect_rejected(Base b, aclnnStatus code, const char* param, const char* rule, const MlaPreprocessMutation& m) {
  SCOPED_TRACE("base case " + std::to_string(b));
  const MlaPreprocessCase& c = base_case(b);
  const Snapshot before(c);
  const aclnnStatus s = mla_preprocess_call(c, m);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, code) << msg;
  EXPECT_NE(msg.find(param), std::string::npos) << "message does not name " << param << ": " << msg;
  EXPECT_NE(msg.find(rule), std::string::npos) << "message does not name " << rule << ": " << msg;
  EXPECT_NE(msg.find("aclnnMlaPreprocess"), std::string::npos) << msg;
  EXPECT_TRUE(before.same(c)) << "a rejected call changed an output or cache byte (" << rule << ")";
}

MlaPreprocessMutation set_dtype(const char* name, DType d) {
  std::string n = name;
  return [n, d](MlaPreprocessArgs& a) { a[n].dtype = d; };
}
MlaPreprocessMutation reshape(const char* name, std::initializer_list<int64_t> dims) {
  std::string n = name;
  std::vector<int64_t> v(dims);
  return [n, v](MlaPreprocessArgs& a) {
    TensorView& t = a[n];
    t = make_view(t.data, t.dtype, v.data(), static_cast<int>(v.size()), t.format);
  };
}
MlaPreprocessMutation drop(const char* name) {
  std::string n = name;
  return [n](MlaPreprocessArgs& a) { a.passed[a.index(n)] = false; };
}
// Passes tensor `name` taken from another base case.
MlaPreprocessMutation add_from(const char* name, Base src) {
  std::string n = name;
  return [n, src](MlaPreprocessArgs& a) {
    const MlaPreprocessArgs other = args_of(base_case(src));
    a.v[a.index(n)] = other.v[a.index(n)];
    a.passed[a.index(n)] = true;
  };
}
// A view whose (huge) extent is never touched: phase 1 rejects it before any access.
void* fake_pointer() { return reinterpret_cast<void*>(uintptr_t{2} << 44); }

TEST(MlaPreprocessErrors, MPP01_RequiredTensorsAndOutPointers) {
  for (const char* n : {"input", "gamma0", "beta0", "wdqkv", "gamma1", "beta1", "wuq", "gamma2", "cos", "sin", "wuk",
                        "kvCache", "slotMapping", "qOut", "kvCacheOut"})
    expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_NULLPTR, n, "MPP-01 required tensor is null", drop(n));
  const MlaPreprocessCase& c = base_case(kFp16Cm1Qm0);
  aclOpExecutor* ex = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(mla_preprocess_phase1(c, {}, nullptr, &ex), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("MPP-01 out-pointer is null"), std::string::npos);
  EXPECT_EQ(mla_preprocess_phase1(c, {}, &ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
}

TEST(MlaPreprocessErrors, MPP02_Dtypes) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "input", "MPP-02", set_dtype("input", DType::kFloat32));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "gamma0", "MPP-02", set_dtype("gamma0", DType::kBFloat16));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "cos", "MPP-02", set_dtype("cos", DType::kFloat32));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "slotMapping", "MPP-02", set_dtype("slotMapping", DType::kInt64));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wdqkv", "MPP-02", set_dtype("wdqkv", DType::kUInt8));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuk", "MPP-02", set_dtype("wuk", DType::kBFloat16));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "bias0", "MPP-02", set_dtype("bias0", DType::kFloat32));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "quantOffset1", "MPP-02", set_dtype("quantOffset1", DType::kUInt8));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "quantScale0", "MPP-02", set_dtype("quantScale0", DType::kFloat32));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-02", set_dtype("kvCache", DType::kBFloat16));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCacheRope", "MPP-02", set_dtype("kvCacheRope", DType::kInt8));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qOut", "MPP-02", set_dtype("qOut", DType::kInt8));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qRopeOut", "MPP-02", set_dtype("qRopeOut", DType::kBFloat16));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "qOut", "MPP-02", set_dtype("qOut", DType::kBFloat16));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-02", set_dtype("kvCache", DType::kBFloat16));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "ctkvScale", "MPP-02", set_dtype("ctkvScale", DType::kFloat32));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "qNopeScale", "MPP-02", set_dtype("qNopeScale", DType::kFloat16));
}

TEST(MlaPreprocessErrors, MPP03_Formats) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wdqkv", "MPP-03 (wdqkv / wuq are passed transposed in FRACTAL_NZ)",
                  [](MlaPreprocessArgs& a) { a["wdqkv"].format = Format::kND; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuq", "MPP-03 (wdqkv / wuq are passed transposed in FRACTAL_NZ)",
                  [](MlaPreprocessArgs& a) { a["wuq"].format = Format::kND; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "input", "MPP-03",
                  [](MlaPreprocessArgs& a) { a["input"].format = Format::kFractalNZ; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-03",
                  [](MlaPreprocessArgs& a) { a["kvCache"].format = Format::kFractalNZ; });  // cacheMode 1 is ND
}

TEST(MlaPreprocessErrors, MPP04_Ranks) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "input", "MPP-04", reshape("input", {1, 2, 7168}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuk", "MPP-04", reshape("wuk", {16, 128 * 512}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-04", reshape("kvCache", {2, 128, 512}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "gamma1", "MPP-04", reshape("gamma1", {1, 1536}));
}

TEST(MlaPreprocessErrors, MPP05_DensityAndAlignment) {
  // outputs must be dense (inputs may be strided views: tests/ops/test_auto_contiguous.cpp)
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qOut", "MPP-05", [](MlaPreprocessArgs& a) {
    a["qOut"].strides[0] = 1;  // column-interleaved inside the same storage
    a["qOut"].strides[1] = a["qOut"].dims[0];
  });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "gamma2", "MPP-05",
                  [](MlaPreprocessArgs& a) { a["gamma2"].data = static_cast<char*>(a["gamma2"].data) + 1; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-05 the last three dims must be dense and the block axis may only be padded (stride >=", [](MlaPreprocessArgs& a) {
    TensorView& t = a["kvCache"];  // block axis stride smaller than a block (blocks would overlap)
    t.strides[0] = 128;
  });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wdqkv", "MPP-05 must be contiguous (dense NZ storage)", [](MlaPreprocessArgs& a) {
    TensorView& t = a["wdqkv"];  // each 16 x 32 fractal read transposed: inside the storage, not dense
    t.strides[2] = 1;
    t.strides[3] = 16;
  });
}

TEST(MlaPreprocessErrors, MPP06_CacheMode) {
  for (int64_t v : {int64_t{-1}, int64_t{4}, int64_t{1} << 40})
    expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "cacheMode", "MPP-06",
                    [v](MlaPreprocessArgs& a) { a.cache_mode = v; });
}

TEST(MlaPreprocessErrors, MPP07_QuantMode) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "quantMode", "MPP-07 PER_TOKEN_QUANT_ASYMM is not implemented",
                  [](MlaPreprocessArgs& a) { a.quant_mode = 2; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "quantMode", "MPP-07 UNQUANT is not implemented",
                  [](MlaPreprocessArgs& a) { a.quant_mode = 3; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "quantMode", "MPP-07",
                  [](MlaPreprocessArgs& a) { a.quant_mode = -5; });
}

TEST(MlaPreprocessErrors, MPP08_VendorRanges) {
  // tokenNum 1025: fake extents, rejected before any access
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "input", "MPP-08 tokenNum", [](MlaPreprocessArgs& a) {
    a["input"] = make_view(fake_pointer(), DType::kFloat16, {1025, 7168});
  });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "input", "MPP-08 hiddenSize", reshape("input", {2, 1792}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "input", "MPP-08 hiddenSize step", reshape("input", {1, 7000}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuk", "MPP-08 headNum", reshape("wuk", {8, 128, 512}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "gamma2", "MPP-08 Hckv", reshape("gamma2", {256}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "gamma1", "MPP-08 Hcq (wdqDim)", reshape("gamma1", {1024}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "cos", "MPP-08 rope dim", reshape("cos", {2, 32}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuk", "MPP-08 D", reshape("wuk", {16, 64, 512}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-08 blockSize (or 256)", reshape("kvCache", {1, 129, 1, 512}));
  expect_rejected(kBf16Cm3Qm1, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-08 blockSize in the NZ cache modes",
                  reshape("kvCache", {4, 32, 64, 16}));
  expect_rejected(kBf16Weights, ACLNN_ERR_PARAM_INVALID, "input", "MPP-08 hiddenSize with BF16 weights",
                  reshape("input", {2, 7168}));
}

TEST(MlaPreprocessErrors, MPP09_Shapes) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "sin", "MPP-09", reshape("sin", {2, 32}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "cos", "MPP-09", reshape("cos", {1, 64}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "slotMapping", "MPP-09", reshape("slotMapping", {1}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qOut", "MPP-09", reshape("qOut", {2, 16, 576}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qRopeOut", "MPP-09", reshape("qRopeOut", {2, 8, 64}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "beta0", "MPP-09", reshape("beta0", {7167}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "beta1", "MPP-09", reshape("beta1", {1535}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "deScale0", "MPP-09", reshape("deScale0", {2111}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "bias1", "MPP-09", reshape("bias1", {16 * 192 - 1}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "quantScale0", "MPP-09", reshape("quantScale0", {0}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "beta1", "MPP-04", reshape("beta1", {1536, 1}));  // rank
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-09", reshape("kvCache", {2, 128, 1, 576}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCacheRope", "MPP-09", reshape("kvCacheRope", {1, 128, 1, 64}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wdqkv", "MPP-09 FRACTAL_NZ shape of logical [", reshape("wdqkv", {224, 133, 16, 32}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuq", "MPP-09 FRACTAL_NZ shape of logical [", reshape("wuq", {48, 191, 16, 32}));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuk", "MPP-09", reshape("wuk", {16, 128, 256}));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "qNopeScale", "MPP-09 element count", reshape("qNopeScale", {8}));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "qNopeScale", "MPP-09 element count", reshape("qNopeScale", {15}));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "kvCacheRope", "MPP-09", reshape("kvCacheRope", {2, 128, 1, 64}));
}

// MPP-01 in the aclnn layer: the tensors the op definition requires are required even where the
// modes do not read them; the ones CANN's documentation lets callers leave out may be null (or
// empty) where the modes do not read them, and are required where they do.
TEST(MlaPreprocessErrors, MPP01_RequiredByTheOpDefinition) {
  for (const char* n : {"quantScale0", "quantOffset0", "deScale0", "quantScale1", "quantOffset1", "deScale1"})
    expect_rejected(kBf16Weights, ACLNN_ERR_PARAM_NULLPTR, n, "MPP-01 required tensor is null", drop(n));  // not read, still required
  expect_rejected(kFp16Cm0Qm1, ACLNN_ERR_PARAM_NULLPTR, "quantScale1", "MPP-01 required tensor is null", drop("quantScale1"));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_NULLPTR, "bias0", "MPP-01 required tensor is null (cacheMode", drop("bias0"));  // read in quantMode 0
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_NULLPTR, "kvCacheRope", "MPP-01 required tensor is null (cacheMode", drop("kvCacheRope"));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_NULLPTR, "krCacheOut", "MPP-01 required tensor is null (cacheMode", drop("krCacheOut"));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_NULLPTR, "qNopeScale", "MPP-01 required tensor is null (cacheMode", drop("qNopeScale"));
  expect_rejected(kBf16Cm3Qm1, ACLNN_ERR_PARAM_NULLPTR, "qRopeOut", "MPP-01 required tensor is null (cacheMode", drop("qRopeOut"));
}

// Tensors the modes do not read are accepted and ignored: real tensors of another mode, one-element
// placeholders, or zero-element tensors give the same result as the call without them.
TEST(MlaPreprocessErrors, UnreadTensorsIgnored) {
  for (const char* n : {"kvCacheRope", "qRopeOut", "krCacheOut", "ctkvScale", "qNopeScale", "bias0", "bias1"})
    expect_accepted_same(kFp16Cm0Qm1, add_from(n, std::string(n).find("Scale") != std::string::npos ? kBf16Cm2Qm0
                                                                                                  : kFp16Cm1Qm0));
  for (const char* n : {"quantScale0", "quantOffset0", "bias0", "quantScale1", "quantOffset1", "bias1"})
    expect_accepted_same(kBf16Cm3Qm1, add_from(n, kFp16Cm1Qm0));  // quantMode 1: quant tensors of quantMode 0
  for (const char* n : {"deScale0", "deScale1", "ctkvScale"})
    expect_accepted_same(kBf16Weights, add_from(n, kBf16Cm2Qm0));  // weights in the input dtype: no deScale
  // zero-element tensors (and any dtype) where the modes do not read them
  expect_accepted_same(kFp16Cm0Qm1, [](MlaPreprocessArgs& a) {
    for (const char* n : {"bias0", "bias1", "kvCacheRope", "qRopeOut", "krCacheOut", "ctkvScale", "qNopeScale",
                          "quantScale0", "quantOffset1"}) {
      a[n] = make_view(a["input"].data, DType::kInt32, {0});
      a.passed[a.index(n)] = true;
    }
  });
}

TEST(MlaPreprocessErrors, MPP11_DtypeCombinations) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wuq", "MPP-11 dtype must equal wdqkv's", set_dtype("wuq", DType::kFloat16));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "deScale0", "MPP-11", set_dtype("deScale0", DType::kFloat32));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "deScale1", "MPP-11", set_dtype("deScale1", DType::kInt64));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "doRmsNorm", "MPP-11 value with",
                  [](MlaPreprocessArgs& a) { a.do_rms_norm = false; });
  expect_rejected(kBf16Weights, ACLNN_ERR_PARAM_INVALID, "doRmsNorm", "MPP-11 value with BF16 weights",
                  [](MlaPreprocessArgs& a) { a.do_rms_norm = true; });
  // weights in the input dtype need BF16 input (fp16 weights with fp16 input)
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "input", "MPP-11 the weights in the input dtype (doRmsNorm false) need BF16 input", [](MlaPreprocessArgs& a) {
    a["wdqkv"].dtype = DType::kFloat16;
    a["wuq"].dtype = DType::kFloat16;
    a.do_rms_norm = false;
  });
  // ... and cacheMode 0 / 1
  expect_rejected(kBf16Weights, ACLNN_ERR_PARAM_INVALID, "cacheMode", "MPP-11 value with BF16 weights", [](MlaPreprocessArgs& a) {
    a.cache_mode = 3;
  });
}

TEST(MlaPreprocessErrors, MPP12_ReservedAttributes) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qRotaryCoeff", "MPP-12 (half-rotation RoPE only)",
                  [](MlaPreprocessArgs& a) { a.q_rotary_coeff = 1; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kRotaryCoeff", "MPP-12 (half-rotation RoPE only)",
                  [](MlaPreprocessArgs& a) { a.k_rotary_coeff = 4; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "transposeWdq", "MPP-12 value (the weights are always the transposed (N, K) form)",
                  [](MlaPreprocessArgs& a) { a.transpose_wdq = false; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "transposeWuk", "MPP-12 value (the weights are always the transposed (N, K) form)",
                  [](MlaPreprocessArgs& a) { a.transpose_wuk = false; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "wdkvSplitCount", "MPP-12",
                  [](MlaPreprocessArgs& a) { a.wdkv_split_count = 2; });
}

TEST(MlaPreprocessErrors, MPP13_CacheOutputDtypes) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCacheOut", "MPP-13 (the dtype of kvCache)", set_dtype("kvCacheOut", DType::kBFloat16));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "kvCacheOut", "MPP-13 (the dtype of kvCache)", set_dtype("kvCacheOut", DType::kBFloat16));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "krCacheOut", "MPP-13 (the dtype of kvCacheRope)", set_dtype("krCacheOut", DType::kInt8));
}

// MPP-19: a cache output smaller than a written row's place (the input cache's geometry) is
// rejected at execute, before any write; one that holds every written row is accepted.
TEST(MlaPreprocessErrors, MPP19_CacheOutputTooSmall) {
  // the base cases write slot(s) in block 1 (slot 0 of token 0 is -1)
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCacheOut", "MPP-19 the row of slotMapping[", reshape("kvCacheOut", {1, 128, 1, 512}));
  expect_rejected(kBf16Cm2Qm0, ACLNN_ERR_PARAM_INVALID, "krCacheOut", "MPP-19 the row of slotMapping[", reshape("krCacheOut", {1, 4, 128, 16}));
  expect_rejected(kFp16Cm0Qm1, ACLNN_ERR_PARAM_INVALID, "kvCacheOut", "MPP-19 the row of slotMapping[", reshape("kvCacheOut", {7}));
  expect_rejected(kBf16Cm3Qm1, ACLNN_ERR_PARAM_INVALID, "kvCacheOut", "MPP-19 the row of slotMapping[", reshape("kvCacheOut", {0}));
}

TEST(MlaPreprocessErrors, MPP14_Aliasing) {
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qOut", "MPP-14",
                  [](MlaPreprocessArgs& a) { a["qOut"].data = a["input"].data; });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "qRopeOut", "MPP-14", [](MlaPreprocessArgs& a) {
    a["qRopeOut"].data = static_cast<char*>(a["kvCache"].data) + 64;
  });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCache", "MPP-14", [](MlaPreprocessArgs& a) {
    a["kvCache"].data = a["kvCacheOut"].data = a["wuk"].data;
  });
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "krCacheOut", "MPP-14", [](MlaPreprocessArgs& a) {
    a["kvCacheRope"].data = a["krCacheOut"].data = static_cast<char*>(a["wdqkv"].data) + 1024;
  });
  // a distinct cache output must not overlap the other outputs either
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "kvCacheOut", "MPP-14",
                  [](MlaPreprocessArgs& a) { a["kvCacheOut"].data = a["qOut"].data; });
  expect_rejected(kBf16Cm3Qm1, ACLNN_ERR_PARAM_INVALID, "qDownOut", "MPP-14",
                  [](MlaPreprocessArgs& a) { a["qDownOut"].data = a["qRopeOut"].data; });
}

// Through the C API aclCreateTensor already refuses views whose extent overflows; the C++ API
// checks the padded cache span itself.
TEST(MlaPreprocessErrors, MPP15_TooLarge) {
  MlaPreprocessCaseConfig cfg;
  cfg.cache_mode = CM::kKropeCtkv;
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  const Snapshot before(c);
  MlaPreprocessParams p = c.params();
  p.kv_cache.dims[0] = int64_t{1} << 40;
  p.kv_cache.strides[0] = int64_t{1} << 30;
  p.kv_cache_out = TensorView{};
  p.kv_cache_rope = nullptr;
  TensorView rope = *c.params().kv_cache_rope;
  rope.dims[0] = int64_t{1} << 40;
  rope.strides[0] = int64_t{1} << 30;
  p.kv_cache_rope = &rope;
  p.kr_cache_out = nullptr;
  uint64_t ws = 0;
  EXPECT_EQ(mla_preprocess_workspace_size(p, &ws), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("MPP-15"), std::string::npos) << last_error_message();
  EXPECT_TRUE(before.same(c));
}

// MPP-16 through the C++ API (the aclnn entry points ignore the attribute and use 1e-6).
TEST(MlaPreprocessErrors, MPP16_Epsilon) {
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(MlaPreprocessCaseConfig{});
  const Snapshot before(c);
  for (double e : {-1e-6, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e300,
                   3.5e38}) {  // the last two overflow the float32 the RmsNorms use
    MlaPreprocessParams p = c.params();
    p.epsilon = e;
    std::vector<uint8_t> ws(1 << 20);
    EXPECT_EQ(mla_preprocess(p, ws.data(), ws.size()), kParamInvalid);
    EXPECT_NE(std::string(last_error_message()).find("mla_preprocess: epsilon: MPP-16"), std::string::npos)
        << last_error_message();
  }
  EXPECT_TRUE(before.same(c));
  // through aclnn any value is accepted and ignored
  for (double e : {-1e-6, std::numeric_limits<double>::quiet_NaN()})
    expect_accepted_same(kFp16Cm1Qm0, [e](MlaPreprocessArgs& a) { a.epsilon = e; });
}

// Slot values are checked at execute time (contents may change after phase 1), before any write.
TEST(MlaPreprocessErrors, MPP17_SlotOutOfRangeAtExecute) {
  for (Base b : {kFp16Cm1Qm0, kBf16Cm2Qm0, kFp16Cm0Qm1}) {
    for (int32_t bad : {2 * 128, -2, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}) {
      MlaPreprocessCase& c = const_cast<MlaPreprocessCase&>(base_case(b));
      uint64_t ws_size = 0;
      aclOpExecutor* ex = nullptr;
      ASSERT_EQ(mla_preprocess_phase1(c, {}, &ws_size, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      int32_t* slots = c.slot_mapping.view.ptr<int32_t>();
      const int32_t saved = slots[1];
      slots[1] = bad;  // after phase 1
      const Snapshot before(c);
      std::vector<uint8_t> ws(static_cast<size_t>(ws_size) + 1);
      const aclnnStatus s = aclnnMlaPreprocess(ws.data(), ws_size, ex, nullptr);
      const std::string msg = aclGetRecentErrMsg();
      slots[1] = saved;
      EXPECT_EQ(s, ACLNN_ERR_PARAM_INVALID) << msg;
      EXPECT_NE(msg.find("MPP-17 slotMapping[1]"), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::to_string(bad)), std::string::npos) << msg;
      EXPECT_TRUE(before.same(c)) << "an out-of-range slot changed an output or cache byte";
    }
  }
  // the C++ API too
  MlaPreprocessCaseConfig cfg;
  cfg.tokens = 3;
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  c.slot_mapping.set(2, static_cast<double>(cfg.block_num * cfg.block_size));
  const Snapshot before(c);
  EXPECT_EQ(run_fast(c), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("MPP-17 slotMapping[2]"), std::string::npos) << last_error_message();
  EXPECT_TRUE(before.same(c));
}

// A short workspace at execute: rejected, nothing written.
TEST(MlaPreprocessErrors, ShortWorkspace) {
  const MlaPreprocessCase& c = base_case(kFp16Cm1Qm0);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(mla_preprocess_phase1(c, {}, &ws_size, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  ASSERT_GT(ws_size, 0u);
  const Snapshot before(c);
  std::vector<uint8_t> ws(static_cast<size_t>(ws_size));
  EXPECT_NE(aclnnMlaPreprocess(ws.data(), ws_size - 1, ex, nullptr), ACLNN_SUCCESS);
  EXPECT_TRUE(before.same(c));
}


// ---- the support tables, row by row ----

namespace table = mla_preprocess_table;

constexpr Base kAllBases[] = {kFp16Cm1Qm0, kBf16Cm2Qm0, kFp16Cm0Qm1, kBf16Weights, kBf16Cm3Qm1};

// Whether base case b passes a real tensor `param` (not a placeholder: one its modes read).
bool reads(Base b, const char* param) {
  const MlaPreprocessArgs a = args_of(base_case(b));
  const int i = a.index(param);
  return a.passed[i] && a.v[i].data != placeholder_view().data;
}
// The first base case that reads `param`.
Base base_with(const char* param) {
  for (Base b : kAllBases)
    if (reads(b, param)) return b;
  ADD_FAILURE() << "no base case passes " << param;
  return kFp16Cm1Qm0;
}
// The base case of a cache mode.
Base base_of(CM cm) {
  for (Base b : kAllBases)
    if (base_case(b).cfg.cache_mode == cm) return b;
  return kFp16Cm1Qm0;
}

MlaPreprocessMutation set_dims(const char* name, std::vector<int64_t> dims) {
  std::string n = name;
  return [n, dims](MlaPreprocessArgs& a) {
    TensorView& t = a[n];
    t = make_view(t.data, t.dtype, dims.data(), static_cast<int>(dims.size()), t.format);
  };
}

TEST(MlaPreprocessTables, DtypeRows) {
  for (std::span<const check::DtypeRow> rows : {std::span<const check::DtypeRow>(table::kDtypes),
                                                std::span<const check::DtypeRow>(table::kSlotDtypeAclnn)})
    for (const auto& row : rows) {
      const Base b = base_with(row.param);
      for (DType d : every_dtype()) {
        if (row.allowed.has(d)) continue;
        SCOPED_TRACE(std::string(row.param) + " " + dtype_name(d));
        expect_rejected(b, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dtype(row.param, d));
      }
    }
}

// The C++ API also takes INT64 slot mappings.
TEST(MlaPreprocessTables, CppSlotDtypeRow) {
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(MlaPreprocessCaseConfig{});
  const Snapshot before(c);
  for (const auto& row : table::kSlotDtypeCpp)
    for (DType d : every_dtype()) {
      if (row.allowed.has(d)) continue;
      MlaPreprocessParams p = c.params();
      p.slot_mapping.dtype = d;
      uint64_t ws = 0;
      EXPECT_EQ(mla_preprocess_workspace_size(p, &ws), kParamInvalid) << dtype_name(d);
      EXPECT_NE(std::string(last_error_message()).find("mla_preprocess: slotMapping: MPP-02"), std::string::npos)
          << last_error_message();
    }
  EXPECT_TRUE(before.same(c));
}

TEST(MlaPreprocessTables, FormatRows) {
  auto every_row = [](std::span<const check::FormatRow> rows, const Base* fixed) {
    for (const auto& row : rows) {
      const Base b = fixed != nullptr ? *fixed : base_with(row.param);
      for (Format f : every_format()) {
        if (row.allowed.has(f)) continue;
        SCOPED_TRACE(std::string(row.param) + " " + format_name(f));
        const std::string n = row.param;
        expect_rejected(b, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, [n, f](MlaPreprocessArgs& a) {
          a[n].format = f;
          if (n == "kvCache" || n == "kvCacheRope") a[n == "kvCache" ? "kvCacheOut" : "krCacheOut"].format = f;
        });
      }
    }
  };
  every_row(table::kFormats, nullptr);
  const Base nd = base_of(CM::kKropeCtkv), nz = base_of(CM::kInt8NzCache);
  every_row(table::kCacheFormatsNd, &nd);
  every_row(table::kCacheFormatsNz, &nz);
}

TEST(MlaPreprocessTables, RankRows) {
  for (const auto& row : table::kRanks) {
    const Base b = base_with(row.param);
    for (int r = 1; r <= 5; ++r) {
      if (row.allowed.has(r)) continue;
      SCOPED_TRACE(std::string(row.param) + " rank " + std::to_string(r));
      expect_rejected(b, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dims(row.param, std::vector<int64_t>(r, 1)));
    }
  }
}

// MPP-06 / MPP-07: values past the cache-mode table; the quant modes the vendor rejects.
TEST(MlaPreprocessTables, ModeRows) {
  const int64_t past = static_cast<int64_t>(std::size(table::kCacheModes));
  expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "cacheMode", "MPP-06",
                  [=](MlaPreprocessArgs& a) { a.cache_mode = past; });
  for (const auto& row : table::kQuantModes) {
    if (row.implemented) continue;
    const std::string rule = std::string("MPP-07 ") + row.name + " is not implemented";
    const int64_t v = row.value;
    expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, "quantMode", rule.c_str(),
                    [v](MlaPreprocessArgs& a) { a.quant_mode = v; });
  }
}

// MPP-12 through the C++ API (the attributes are fields of MlaPreprocessParams).
TEST(MlaPreprocessTables, ReservedAttributeRows) {
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(MlaPreprocessCaseConfig{});
  const Snapshot before(c);
  auto expect_refused = [](const MlaPreprocessParams& p, const char* name, const char* rule) {
    uint64_t ws = 0;
    EXPECT_EQ(mla_preprocess_workspace_size(p, &ws), kParamInvalid) << name;
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find(std::string("mla_preprocess: ") + name + ": " + rule), std::string::npos) << msg;
  };
  for (const auto& row : table::kIntAttrs) {
    MlaPreprocessParams p = c.params();
    p.*row.field = row.allowed.v[0] + 1;
    expect_refused(p, row.name, row.rule);
  }
  for (const auto& row : table::kTransposeAttrs) {
    MlaPreprocessParams p = c.params();
    p.*row.field = false;
    expect_refused(p, row.name, "MPP-12");
  }
  EXPECT_TRUE(before.same(c));
}

// MPP-10 rows through aclnn: every optional tensor dropped where its feature is on (MPP-01: the op
// definition requires it), added where it is off (ignored: the same result).
TEST(MlaPreprocessTables, PresenceRows) {
  for (const auto& row : table::kPresence)
    for (Base b : kAllBases) {
      SCOPED_TRACE(row.param);
      if (reads(b, row.param))
        expect_rejected(b, ACLNN_ERR_PARAM_NULLPTR, row.param, "MPP-01", drop(row.param));
      else
        expect_accepted_same(b, add_from(row.param, base_with(row.param)));
    }
}

// MPP-10 through the C++ API: a tensor the modes read is required (161002); one they do not read
// is ignored.
TEST(MlaPreprocessTables, CppPresenceRows) {
  for (CM cm : {CM::kKvCache, CM::kInt8NzCache})
    for (QM qm : {QM::kPerTensorAsymm, QM::kPerTokenSymm}) {
      MlaPreprocessCaseConfig cfg;
      cfg.cache_mode = cm;
      cfg.quant_mode = qm;
      MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
      const Snapshot before(c);
      const MlaPreprocessParams base = c.params();
      using P = MlaPreprocessParams;
      const std::pair<const char*, const TensorView* P::*> fields[] = {
          {"quantScale0", &P::quant_scale0}, {"quantOffset0", &P::quant_offset0}, {"deScale0", &P::de_scale0},
          {"bias0", &P::bias0},              {"deScale1", &P::de_scale1},         {"bias1", &P::bias1},
          {"kvCacheRope", &P::kv_cache_rope}, {"qRopeOut", &P::q_rope_out},     {"ctkvScale", &P::ctkv_scale},
          {"qNopeScale", &P::q_nope_scale}};
      for (const auto& [name, field] : fields) {
        if (base.*field == nullptr) continue;
        MlaPreprocessParams p = base;
        p.*field = nullptr;
        uint64_t ws = 0;
        EXPECT_EQ(mla_preprocess_workspace_size(p, &ws), kParamInvalid) << name;
        EXPECT_NE(std::string(last_error_message()).find(std::string("mla_preprocess: ") + name + ": MPP-10"),
                  std::string::npos)
            << last_error_message();
      }
      EXPECT_TRUE(before.same(c));
    }
}

// MPP-02 cross-feature: the tensors in the input dtype, and kvCache / qOut (INT8 in cacheMode 2).
TEST(MlaPreprocessTables, InputDtypeAndCacheModeDtypeRows) {
  for (Base b : kAllBases) {
    const DType dt = base_case(b).cfg.dtype, other = dt == DType::kFloat16 ? DType::kBFloat16 : DType::kFloat16;
    const MlaPreprocessArgs a = args_of(base_case(b));
    for (const char* name : table::kInputDtype)
      if (reads(b, name)) expect_rejected(b, ACLNN_ERR_PARAM_INVALID, name, "MPP-02", set_dtype(name, other));
    for (const char* name : table::kCacheModeDtype)
      for (DType d : {DType::kInt8, DType::kFloat16, DType::kBFloat16}) {
        if (d == a.v[a.index(name)].dtype) continue;
        expect_rejected(b, ACLNN_ERR_PARAM_INVALID, name, "MPP-02", [name, d](MlaPreprocessArgs& m) {
          m[name].dtype = d;
          if (std::string(name) == "kvCache") m["kvCacheOut"].dtype = d;
        });
      }
  }
}

// MPP-08: each symbol set to a value its row does not allow (the largest allowed value + 2, or
// one past the range); tokenNum on a huge input that is described only.
TEST(MlaPreprocessTables, VendorRangeRows) {
  using table::Sym;
  // where each symbol of kVendorRanges is read from (the rows name the tensor): its dim
  auto dim_of = [](Sym s) {
    return s == Sym::kHe || s == Sym::kDr || s == Sym::kD ? 1 : 0;
  };
  for (const auto& row : table::kVendorRanges) {
    int64_t bad = row.hi + 1;
    if (row.set.n > 0) {
      bad = 0;
      for (int64_t v : row.set.values()) bad = std::max(bad, v + 2);
    }
    SCOPED_TRACE(std::string(row.rule) + " = " + std::to_string(bad));
    if (row.sym == Sym::kT) {
      expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, [bad](MlaPreprocessArgs& a) {
        a["input"] = make_view(fake_pointer(), DType::kFloat16, {bad, 7168});
      });
      continue;
    }
    std::vector<int64_t> dims = dims_of(args_of(base_case(kFp16Cm1Qm0))[row.param]);
    dims[static_cast<size_t>(dim_of(row.sym))] = bad;
    expect_rejected(kFp16Cm1Qm0, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dims(row.param, dims));
  }
}

// MPP-09: every dim of every shape row changed by one, except the dims the symbols are read from
// (input, gamma1, gamma2, cos dim 1, wuk's N and D, the caches' BlockNum and BlockSize).
TEST(MlaPreprocessTables, ShapeRows) {
  auto every_row = [](std::span<const check::ShapeRow<table::Sym>> rows, const Base* fixed) {
    for (const auto& row : rows) {
      const Base b = fixed != nullptr ? *fixed : base_with(row.param);
      const bool nz = mla_preprocess_is_nz_cache(base_case(b).cfg.cache_mode);
      const std::string n = row.param;
      const std::vector<int64_t> dims = dims_of(args_of(base_case(b))[n]);
      for (size_t i = 0; i < dims.size(); ++i) {
        const bool defines = (n == "cos" && i == 1) || (n == "wuk" && i <= 1) ||
                             (n == "kvCache" && (i == 0 || i == (nz ? 2u : 1u)));
        if (defines) continue;
        std::vector<int64_t> bad = dims;
        bad[i] = dims[i] > 1 ? dims[i] - 1 : 2;
        SCOPED_TRACE(n + " dim " + std::to_string(i));
        expect_rejected(b, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dims(row.param, bad));
      }
    }
  };
  every_row(table::kShapes, nullptr);
  every_row(table::kWukNd, nullptr);
  for (CM cm : {CM::kKvCache, CM::kKropeCtkv, CM::kInt8NzCache, CM::kNzCache}) {
    const Base b = base_of(cm);
    every_row(table::kModeShapes[static_cast<int>(cm)], &b);
  }
}

// Tensor `name` of the case in a real buffer `extra` rows longer (dim 0), its first rows the case's
// and the rest 0x7F bytes (a large value / NaN that would show if read).
MlaPreprocessMutation longer(Base b, const char* name, int64_t extra) {
  const std::string n = name;
  MlaPreprocessArgs a = args_of(base_case(b));
  const TensorView v = a[n];
  const int64_t es = dtype_size(v.dtype), row = v.numel() / v.dims[0];
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>((v.numel() + extra * row) * es), uint8_t{0x7F});
  std::memcpy(buf->data(), v.data, static_cast<size_t>(v.numel() * es));
  std::vector<int64_t> dims(v.dims, v.dims + v.rank);
  dims[0] += extra;
  const DType dt = v.dtype;
  return [n, buf, dims, dt](MlaPreprocessArgs& m) {
    m[n] = make_view(buf->data(), dt, dims.data(), static_cast<int>(dims.size()));
  };
}

// MPP-09 for the inputs the kernel reads a prefix of (kPrefixShapes): longer by one and by 1000
// rows accepted with the same result (CANN checks none of these shapes and its kernel reads only
// the prefix), dim 0 one short and any other dim changed by one refused.
TEST(MlaPreprocessTables, PrefixShapeRows) {
  for (const auto& row : table::kPrefixShapes) {
    const Base b = base_with(row.param);
    SCOPED_TRACE(row.param);
    for (int64_t extra : {1, 1000}) expect_accepted_same(b, longer(b, row.param, extra));
    const std::vector<int64_t> dims = dims_of(args_of(base_case(b))[row.param]);
    std::vector<int64_t> bad = dims;
    bad[0] -= 1;
    expect_rejected(b, ACLNN_ERR_PARAM_INVALID, row.param, "MPP-09 shape (the kernel reads the first rows",
                    set_dims(row.param, bad));
    for (size_t i = 1; i < dims.size(); ++i) {
      if (std::string(row.param) == "cos") continue;  // its dim 1 defines Dr
      bad = dims;
      bad[i] += 1;
      expect_rejected(b, ACLNN_ERR_PARAM_INVALID, row.param, row.rule, set_dims(row.param, bad));
    }
  }
  // qNopeScale: N or more elements (the first N read), or 1 (broadcast)
  expect_accepted_same(kBf16Cm2Qm0, longer(kBf16Cm2Qm0, "qNopeScale", 5));
}

// MPP-09 for a FRACTAL_NZ wuk [N, Hckv/16, D, 16] (C++ API): dims 1 and 3 (N and D define symbols).
TEST(MlaPreprocessTables, CppWukNzShapeRow) {
  MlaPreprocessCaseConfig cfg;
  cfg.wuk_nz = true;
  MlaPreprocessCase c = testdata::make_mla_preprocess_case(cfg);
  const Snapshot before(c);
  for (const auto& row : table::kWukNz)
    for (int i : {1, 3}) {
      MlaPreprocessParams p = c.params();
      int64_t dims[4] = {p.wuk.dims[0], p.wuk.dims[1], p.wuk.dims[2], p.wuk.dims[3]};
      dims[i] -= 1;
      p.wuk = make_view(p.wuk.data, p.wuk.dtype, dims, 4, Format::kFractalNZ);
      uint64_t ws = 0;
      EXPECT_EQ(mla_preprocess_workspace_size(p, &ws), kParamInvalid) << "dim " << i;
      EXPECT_NE(std::string(last_error_message()).find(std::string("mla_preprocess: wuk: ") + row.rule), std::string::npos)
          << last_error_message();
    }
  EXPECT_TRUE(before.same(c));
}

}  // namespace
}  // namespace mlaops::testing
