// aclnnMlaPrologV3WeightNz's cache modes (BSND, TND, PA_BLK_BSND, PA_BLK_NZ) and per-tile KV
// quant through the C API against the float64 reference; per-tensor KV quant with
// quantScaleCkvOptional (1) against the reference and bitwise V2; their rules (MP-09, MP-17,
// MP-26..MP-28, the per-tile scenario rows) with status, message and proof that no output or
// cache byte changed. Every forced ISA.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/mla_prolog/mla_prolog_v3_cases.h"

namespace mlaops::testing {
namespace {

using namespace mla_prolog_v3;

// ---- the V3 cache modes and per-tile KV quant ----

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

}  // namespace
}  // namespace mlaops::testing
