// Strided inputs read as their logical tensors (ops/common/auto_contiguous.h, docs/c-api.md "Strided
// inputs"): the copy itself against a plain gather, then FusedInferAttentionScore, MlaProlog and
// MlaPreprocess with every input replaced by a strided twin (padded rows, reversed storage order,
// zero strides), through the C++ API and the C API, under every ISA level and 1 / 2 threads: the
// outputs and caches must be bit-identical to the call with dense inputs. Then what stays
// refused (a strided output, a strided NZ weight, a negative stride, PromptFlashAttention's
// other inputs) with its rule id and nothing written, and the workspace phase 1 reports.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "core/error.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"
#include "ops/common/auto_contiguous.h"
#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"
#include "ops/fia/fia.h"
#include "ops/mla_preprocess/mla_preprocess.h"
#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog.h"
#include "ops/mla_prolog/mla_prolog_aclnn_call.h"
#include "ops/strided_twins.h"
#include "testkit/mla_preprocess_test_data.h"
#include "testkit/mla_prolog_test_data.h"
#include "tests/support/isa_list.h"

namespace mlaops::testing {
namespace {

std::vector<uint8_t> bytes_of(const TensorView& v) {
  const auto* p = static_cast<const uint8_t*>(v.data);
  return std::vector<uint8_t>(p, p + v.numel() * dtype_size(v.dtype));
}

// ---------------------------------------------------------------------------------------------
// The copy: stage_plan + stage_run against a plain element-by-element gather.
// ---------------------------------------------------------------------------------------------

TEST(AutoContiguous, CopiesEveryViewAsItsLogicalTensor) {
  std::mt19937 rng(5);
  const DType kTypes[] = {DType::kInt8, DType::kBFloat16, DType::kFloat32, DType::kInt64};
  for (int trial = 0; trial < 300; ++trial) {
    const DType dt = kTypes[trial % 4];
    const int64_t es = dtype_size(dt);
    const int rank = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (int64_t& d : dims) d = 1 + static_cast<int64_t>(rng() % 5);
    if (trial % 7 == 0) dims.back() = 300;  // long rows: memcpy runs and parallel chunks
    // strides: a random permutation of a padded row-major order, some dims broadcast (0)
    std::vector<int> order(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i) order[static_cast<size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int64_t> strides(static_cast<size_t>(rank));
    int64_t s = 1 + static_cast<int64_t>(rng() % 2);
    for (int k = rank - 1; k >= 0; --k) {
      const int i = order[static_cast<size_t>(k)];
      strides[static_cast<size_t>(i)] = rng() % 6 == 0 ? 0 : s;
      s *= dims[static_cast<size_t>(i)] + static_cast<int64_t>(rng() % 3);
    }
    const int64_t offset = static_cast<int64_t>(rng() % 4);
    std::vector<uint8_t> storage(static_cast<size_t>((offset + s + 1) * es));
    for (uint8_t& b : storage) b = static_cast<uint8_t>(rng());
    TensorView v = make_view(storage.data() + offset * es, dt, dims.data(), rank);
    for (int i = 0; i < rank; ++i) v.strides[i] = strides[static_cast<size_t>(i)];
    const bool dense = v.is_contiguous();
    // the expected bytes: element i (row-major logical index) gathered through the strides
    std::vector<uint8_t> want(static_cast<size_t>(v.numel() * es));
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    for (int64_t i = 0; i < v.numel(); ++i) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) off += idx[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
      std::memcpy(want.data() + i * es, static_cast<const uint8_t*>(v.data) + off * es, static_cast<size_t>(es));
      for (int d = rank - 1; d >= 0; --d) {
        if (++idx[static_cast<size_t>(d)] < dims[static_cast<size_t>(d)]) break;
        idx[static_cast<size_t>(d)] = 0;
      }
    }
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      TensorView planned = v, run = v;
      std::vector<StageSlot> slots = {{"x", &planned}};
      StagePlan plan;
      ASSERT_EQ(stage_plan("op", "R-1", slots, &plan), kSuccess) << last_error_string();
      EXPECT_TRUE(planned.is_contiguous());
      EXPECT_EQ(planned.data, v.data);
      ASSERT_EQ(plan.entries.size(), dense ? 0u : 1u) << trial;
      std::vector<uint64_t> ws(static_cast<size_t>(plan.bytes / 8 + 1), 0);
      slots = {{"x", &run}};
      ASSERT_EQ(stage_run("op", "R-1", slots, plan, ws.data(), ws.size() * 8), kSuccess) << last_error_string();
      EXPECT_TRUE(run.is_contiguous());
      EXPECT_EQ(bytes_of(run), want) << "trial " << trial << " threads " << threads;
      EXPECT_EQ(run.data, dense ? v.data : static_cast<void*>(ws.data()));
    }
  }
  set_num_threads(0);
}

TEST(AutoContiguous, RefusesWhatCannotBeReadAsALogicalTensor) {
  std::vector<uint16_t> buf(256);
  // a negative stride (the C++ API can be given one; aclCreateTensor refuses it, ACL-25)
  TensorView neg = make_view(buf.data() + 100, DType::kBFloat16, {4, 8});
  neg.strides[0] = -8;
  {
    std::vector<StageSlot> slots = {{"x", &neg}};
    StagePlan plan;
    EXPECT_EQ(stage_plan("op", "R-1", slots, &plan), kParamInvalid);
    EXPECT_NE(last_error_string().find("op: x: R-1 strides; allowed >= 0"), std::string::npos) << last_error_string();
  }
  // a FRACTAL_NZ tensor is read as its storage, under the operator's own rules: never copied
  TensorView nz = make_view(buf.data(), DType::kBFloat16, {1, 2, 16, 16}, Format::kFractalNZ);
  nz.strides[1] = 512;
  {
    std::vector<StageSlot> slots = {{"x", &nz}};
    StagePlan plan;
    EXPECT_EQ(stage_plan("op", "R-1", slots, &plan), kSuccess);
    EXPECT_TRUE(plan.entries.empty());
    EXPECT_EQ(nz.strides[1], 512);
    EXPECT_EQ(stage_run("op", "R-1", slots, plan, nullptr, 0), kSuccess);
  }
  // phase 2 with a view the plan has no buffer for (its strides changed): refused, nothing copied
  TensorView dense = make_view(buf.data(), DType::kBFloat16, {4, 8});
  std::vector<StageSlot> slots = {{"x", &dense}};
  StagePlan plan;
  ASSERT_EQ(stage_plan("op", "R-1", slots, &plan), kSuccess);
  TensorView now = make_view(buf.data(), DType::kBFloat16, {4, 8});
  now.strides[0] = 16;
  slots = {{"x", &now}};
  EXPECT_EQ(stage_run("op", "R-1", slots, plan, nullptr, 0), kParamInvalid);
  EXPECT_NE(last_error_string().find("strides differ from the planned call"), std::string::npos);
  EXPECT_EQ(now.data, static_cast<void*>(buf.data()));
}

// ---------------------------------------------------------------------------------------------
// FusedInferAttentionScore
// ---------------------------------------------------------------------------------------------

// The cases: MLA decode over a paged cache, MLA-style prefill in TND (sparse 3, lse), GQA BSND
// with an explicit mask and pseShift (C++ API: with a sink too), FP16 BNSD_BSND. `vendor`: the
// case keeps the vendor's ranges and exclusions, so that the C API runs it too.
struct FiaTwinCase {
  FiaCase c;
  bool vendor = true;
};

std::vector<FiaTwinCase> fia_cases() {
  std::vector<FiaTwinCase> v;
  FiaCase mla;
  mla.name = "mla decode paged BNSD";
  mla.B = 2, mla.N = 8, mla.KVN = 1, mla.Sq = 1, mla.Skv = 40, mla.D = 512, mla.Dv = 512, mla.Dr = 64;
  mla.act_kv = {40, 23};
  mla.cfg.layout = "BNSD";
  mla.cfg.paged = true;
  mla.cfg.block_size = 16;
  mla.cfg.value_is_key = true;
  mla.cfg.scale = 0.04;
  v.push_back({mla});
  FiaCase pre;
  pre.name = "prefill TND sparse 3 rope";
  pre.B = 2, pre.N = 4, pre.KVN = 4, pre.Sq = 9, pre.Skv = 9, pre.D = 32, pre.Dv = 32, pre.Dr = 16;
  pre.act_q = {5, 9}, pre.act_kv = {5, 9};
  pre.cfg.layout = "TND";
  pre.cfg.sparse_mode = 3;
  pre.mask = MaskForm::kTemplate;
  pre.cfg.scale = 0.15;
  v.push_back({pre, false});  // rope head dim 16 (the vendor's: 64)
  FiaCase gqa;
  gqa.name = "gqa BSND mask pse";
  gqa.B = 2, gqa.N = 8, gqa.KVN = 2, gqa.Sq = 3, gqa.Skv = 20, gqa.D = 32, gqa.Dv = 32;
  gqa.cfg.layout = "BSND";
  gqa.mask = MaskForm::kRank4;
  gqa.pse = PseForm::kRandom;
  gqa.cfg.scale = 0.2;
  v.push_back({gqa});
  gqa.name = "gqa BSND mask pse sink";
  gqa.sink = true;
  v.push_back({gqa, false});  // the vendor excludes pseShift with learnableSink (FIA-24)
  FiaCase f16;
  f16.name = "fp16 BNSD_BSND";
  f16.dtype = DType::kFloat16;
  f16.B = 1, f16.N = 4, f16.KVN = 4, f16.Sq = 17, f16.Skv = 33, f16.D = 16, f16.Dv = 16;
  f16.cfg.layout = "BNSD_BSND";
  f16.cfg.scale = 0.25;
  v.push_back({f16});
  return v;
}

// Outputs of one FIA call (attentionOut, softmaxLse bytes).
struct FiaOutputs {
  std::vector<uint8_t> out, lse;
  bool operator==(const FiaOutputs&) const = default;
};

FiaOutputs fia_outputs(const FiaParams& p) {
  return {bytes_of(p.attention_out), p.softmax_lse ? bytes_of(*p.softmax_lse) : std::vector<uint8_t>{}};
}

// Runs p through the C++ API (C API when `c_api`); outputs or an error.
FiaOutputs fia_call(const FiaParams& p, bool c_api) {
  std::memset(p.attention_out.data, 0x7F, p.attention_out.numel() * dtype_size(p.attention_out.dtype));
  if (c_api) {
    EXPECT_EQ(fia_aclnn_call(acl_args_of_params(p)), ACLNN_SUCCESS) << last_error_string();
  } else {
    uint64_t ws = 0;
    EXPECT_EQ(fused_infer_attention_score_v4_workspace_size(p, &ws), kSuccess) << last_error_string();
    std::vector<uint64_t> w(static_cast<size_t>(ws / 8 + 1));
    EXPECT_EQ(fused_infer_attention_score_v4(p, w.data(), ws), kSuccess) << last_error_string();
  }
  return fia_outputs(p);
}

TEST(AutoContiguous, FiaStridedInputsAreBitIdentical) {
  for (const FiaTwinCase& tc : fia_cases()) {
    const FiaCase& fc = tc.c;
    const auto data = make_case_data(fc);
    for (bool c_api : {false, true})
      for (TwinLayout layout : {TwinLayout::kPadded, TwinLayout::kReversed})
        for_each_isa_and_threads([&](Isa isa, int threads) {
          if (c_api && !tc.vendor) return;
          const std::string what = fc.name + std::string(c_api ? " C API " : " C++ API ") + twin_name(layout) + " " +
                                   isa_name(isa) + " " + std::to_string(threads) + " thread(s)";
          auto dense = fia_test::build_fia_run(data->canon, data->cfg);
          const FiaOutputs want = fia_call(dense->params, c_api);
          auto run = fia_test::build_fia_run(data->canon, data->cfg);
          FiaParams p = run->params;
          std::vector<TensorView> store;
          TwinStore twins;
          int strided = 0;
          for (const StageSlot& s : fia_stage_slots(&p, FiaStageSet::kAllInputs, &store)) {
            twins.twin(s.view, layout);
            strided += s.view->is_contiguous() ? 0 : 1;
          }
          ASSERT_GE(strided, 3) << what;
          EXPECT_TRUE(fia_call(p, c_api) == want) << what;
        });
  }
}

// vllm-ascend's prefill: query and key as slices of wider projections, value a slice of the same
// split, keyRope [T, N, Dr] expanded from [T, 1, Dr] (stride 0 over the heads).
TEST(AutoContiguous, FiaPrefillSlicesAndExpandedKeyRope) {
  FiaCase c;
  c.B = 2, c.N = 4, c.KVN = 4, c.Sq = 7, c.Skv = 7, c.D = 128, c.Dv = 128, c.Dr = 64;
  c.act_q = {3, 7}, c.act_kv = {3, 7};
  c.cfg.layout = "TND";
  c.cfg.sparse_mode = 3;
  c.mask = MaskForm::kTemplate;
  c.cfg.scale = 0.07;
  auto data = make_case_data(c);
  // keyRope equal over the heads (so that the expanded view holds the same logical values)
  fia_test::HostTensor& kr = data->canon.kr;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t n = 1; n < c.N; ++n)
      for (int64_t s = 0; s < c.Skv; ++s)
        for (int64_t d = 0; d < c.Dr; ++d) kr.set({b, n, s, d}, kr.get({b, 0, s, d}));
  for_each_isa_and_threads([&](Isa isa, int threads) {
    auto dense = fia_test::build_fia_run(*&data->canon, data->cfg);
    const FiaOutputs want = fia_call(dense->params, false);
    auto run = fia_test::build_fia_run(data->canon, data->cfg);
    FiaParams p = run->params;
    TwinStore twins;
    // query / key / value: slices [T, N, D] of a [T, N, D + Dr + 8] projection
    const int64_t T = p.query.dims[0], w = c.D + c.Dr + 8;
    std::vector<uint16_t> qproj(static_cast<size_t>(T * c.N * w), 0xFFFF), kproj(qproj), vproj(qproj);
    auto slice = [&](const TensorView& src, std::vector<uint16_t>* proj) {
      TensorView v = src;
      v.data = proj->data() + 3;
      v.strides[0] = c.N * w, v.strides[1] = w, v.strides[2] = 1;
      TwinStore::set_storage(&v, T * c.N * w - 3);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < c.N; ++n)
          std::memcpy(proj->data() + 3 + t * c.N * w + n * w, static_cast<const uint16_t*>(src.data) + (t * c.N + n) * c.D,
                      static_cast<size_t>(c.D * 2));
      return v;
    };
    p.query = slice(p.query, &qproj);
    p.key = {slice(p.key[0], &kproj)};
    p.value = {slice(p.value[0], &vproj)};
    // keyRope [T, N, Dr] from [T, 1, Dr]
    std::vector<uint16_t> kr1(static_cast<size_t>(T * c.Dr));
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(kr1.data() + t * c.Dr, static_cast<const uint16_t*>(p.key_rope->data) + t * c.N * c.Dr,
                  static_cast<size_t>(c.Dr * 2));
    const TensorView kr_src = make_view(kr1.data(), p.key_rope->dtype, {T, c.Dr});
    const TensorView kr_view = twins.broadcast(kr_src, {T, c.N, c.Dr}, 1);
    p.key_rope = &kr_view;
    EXPECT_TRUE(fia_call(p, false) == want) << isa_name(isa) << " " << threads;
    EXPECT_TRUE(fia_call(p, true) == want) << isa_name(isa) << " " << threads;
  });
}

// The workspace phase 1 reports grows by the dense copies, and a shorter one is refused before
// anything is written.
TEST(AutoContiguous, FiaWorkspaceHoldsTheCopies) {
  const auto data = make_case_data(fia_cases()[2].c);
  auto run = fia_test::build_fia_run(data->canon, data->cfg);
  uint64_t dense_ws = 0, strided_ws = 0;
  ASSERT_EQ(fused_infer_attention_score_v4_workspace_size(run->params, &dense_ws), kSuccess);
  FiaParams p = run->params;
  std::vector<TensorView> store;
  TwinStore twins;
  twins.twin(&p.query, TwinLayout::kReversed);
  ASSERT_EQ(fused_infer_attention_score_v4_workspace_size(p, &strided_ws), kSuccess) << last_error_string();
  EXPECT_GE(strided_ws, dense_ws + static_cast<uint64_t>(p.query.numel() * 2));
  OpPlan plan;
  ASSERT_EQ(fused_infer_attention_score_v4_plan(p, &plan), kSuccess);
  EXPECT_NE(plan.explain().find("inputs copied to dense buffers"), std::string::npos) << plan.explain();
  EXPECT_NE(plan.explain().find("query"), std::string::npos);
  std::vector<uint8_t> ws(static_cast<size_t>(strided_ws), 0x5A);
  const FiaOutputs before = fia_outputs(p);
  EXPECT_EQ(fused_infer_attention_score_v4_run(plan, p, ws.data(), strided_ws - 1), kParamInvalid);
  EXPECT_NE(last_error_string().find("FIA-20"), std::string::npos) << last_error_string();
  EXPECT_TRUE(fia_outputs(p) == before);
  for (uint8_t b : ws) ASSERT_EQ(b, 0x5A);
}

// What stays refused: a strided attentionOut (FIA-17), and on PromptFlashAttention (whose wrapper
// makes only query, key, value, pseShift and attenMask contiguous) a strided other input; nothing
// written.
TEST(AutoContiguous, FiaRefusesStridedOutputsAndPfaOtherInputs) {
  const auto data = make_case_data(fia_cases()[2].c);
  auto run = fia_test::build_fia_run(data->canon, data->cfg);
  FiaParams p = run->params;
  TwinStore twins;
  twins.twin(&p.attention_out, TwinLayout::kPadded);
  const FiaOutputs before = fia_outputs(p);
  uint64_t ws = 0;
  EXPECT_EQ(fused_infer_attention_score_v4_workspace_size(p, &ws), kParamInvalid);
  EXPECT_NE(last_error_string().find("attentionOut: FIA-17 must be contiguous"), std::string::npos) << last_error_string();
  EXPECT_EQ(fia_aclnn_call(acl_args_of_params(p)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(fia_outputs(p) == before);

  // PromptFlashAttentionV2 (BSH, INT8 output with a per-channel quantScale2 [N * V_D]): a strided
  // query is read as its logical tensor; a strided quantScale2 is refused (FIA-17), nothing written.
  FiaCase c;
  c.B = 1, c.N = 2, c.KVN = 2, c.Sq = 4, c.Skv = 6, c.D = 32, c.Dv = 32;
  c.cfg.layout = "BSH";
  c.cfg.lse = false;
  c.cfg.out_dtype = DType::kInt8;
  const auto pd = make_case_data(c);
  auto pr = fia_test::build_fia_run(pd->canon, pd->cfg);
  const int64_t channels = c.N * c.Dv;
  std::vector<float> scale(static_cast<size_t>(channels), 20.0f), spread(static_cast<size_t>(2 * channels), 20.0f);
  const TensorView qs2 = make_view(scale.data(), DType::kFloat32, {channels});
  TensorView qs2_strided = make_view(spread.data(), DType::kFloat32, {channels});
  qs2_strided.strides[0] = 2;
  TwinStore::set_storage(&qs2_strided, 2 * channels);
  auto pfa = [&](const TensorView& query, const TensorView& qs) {
    AclTensor q(query), k(pr->params.key[0]), v(pr->params.value[0]), s(qs), out(pr->params.attention_out);
    uint64_t size = 0;
    aclOpExecutor* ex = nullptr;
    aclnnStatus st = aclnnPromptFlashAttentionV2GetWorkspaceSize(
        q, k, v, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, s, nullptr, c.N, 0.25, 2147483647,
        2147483647, const_cast<char*>("BSH"), c.KVN, 0, out, &size, &ex);
    if (st != ACLNN_SUCCESS) return st;
    std::vector<uint64_t> w(static_cast<size_t>(size / 8 + 1));
    return aclnnPromptFlashAttentionV2(w.data(), size, ex, nullptr);
  };
  ASSERT_EQ(pfa(pr->params.query, qs2), ACLNN_SUCCESS) << last_error_string();
  const std::vector<uint8_t> want = bytes_of(pr->params.attention_out);
  TwinStore pt;
  TensorView query_twin = pr->params.query;
  pt.twin(&query_twin, TwinLayout::kReversed);
  std::memset(pr->params.attention_out.data, 0x11, want.size());
  ASSERT_EQ(pfa(query_twin, qs2), ACLNN_SUCCESS) << last_error_string();
  EXPECT_EQ(bytes_of(pr->params.attention_out), want);
  std::memset(pr->params.attention_out.data, 0x11, want.size());
  const std::vector<uint8_t> canary = bytes_of(pr->params.attention_out);
  EXPECT_EQ(pfa(pr->params.query, qs2_strided), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(last_error_string().find("quantScale2: FIA-17 must be contiguous"), std::string::npos) << last_error_string();
  EXPECT_EQ(bytes_of(pr->params.attention_out), canary);
}

// ---------------------------------------------------------------------------------------------
// MlaProlog
// ---------------------------------------------------------------------------------------------

using testdata::MlaPrologCase;
using testdata::MlaPrologCaseConfig;

// Small cases for the C++ API (ND weights where the scenario allows them: BF16), the vendor's
// sizes for the C API (its ranges; FRACTAL_NZ weights, read in place).
std::vector<MlaPrologCaseConfig> prolog_cases(bool c_api) {
  std::vector<MlaPrologCaseConfig> v;
  for (MlaPrologScenario sc : {MlaPrologScenario::kNoQuant, MlaPrologScenario::kPartialQuantKvQuant,
                               MlaPrologScenario::kFullQuantKvQuant}) {
    MlaPrologCaseConfig c = c_api ? testdata::vendor_small_cfg(sc, true, MlaPrologCacheMode::kPaBsnd) : MlaPrologCaseConfig{};
    c.scenario = sc;
    c.weight_form = sc == MlaPrologScenario::kNoQuant && !c_api ? testdata::WeightForm::kNd : testdata::WeightForm::kNz4d;
    c.smooth = sc != MlaPrologScenario::kNoQuant;
    c.seed = 3 + static_cast<uint64_t>(sc);
    v.push_back(c);
  }
  if (!c_api) {
    MlaPrologCaseConfig nz;  // TND tokens, NZ cache
    nz.bsh = false;
    nz.cache_mode = MlaPrologCacheMode::kPaNz;
    v.push_back(nz);
  }
  return v;
}

std::vector<std::vector<uint8_t>> prolog_outputs(const MlaPrologCase& c) {
  std::vector<std::vector<uint8_t>> o;
  for (const mlaops::HostTensor* h : {&c.query_out, &c.query_rope_out, &c.kv_cache, &c.kr_cache,
                                      &c.dequant_scale_q_nope_out})
    o.push_back(h->bytes);
  return o;
}

TEST(AutoContiguous, MlaPrologStridedInputsAreBitIdentical) {
  for (bool c_api : {false, true})
    for (const MlaPrologCaseConfig& cfg : prolog_cases(c_api)) {
      const MlaPrologCase base = testdata::make_mla_prolog_case(cfg);
      for (TwinLayout layout : {TwinLayout::kPadded, TwinLayout::kReversed})
        for_each_isa_and_threads([&](Isa isa, int threads) {
          const std::string what = std::string(mla_prolog_scenario_name(cfg.scenario)) + (c_api ? " C API " : " C++ API ") +
                                   twin_name(layout) + " " + isa_name(isa) + " " + std::to_string(threads);
          MlaPrologCase dense = base.clone(), strided = base.clone();
          std::vector<TensorView> store;
          TwinStore twins;
          MlaPrologParams p = strided.params();
          int n = 0;
          for (const StageSlot& s : mla_prolog_stage_slots(&p, &store)) {
            twins.twin(s.view, layout);
            n += s.view->is_contiguous() ? 0 : 1;
          }
          ASSERT_GE(n, 4) << what;
          if (c_api) {
            ASSERT_EQ(mla_prolog_call(dense), ACLNN_SUCCESS) << last_error_string();
            MlaPrologCall call;
            call.mutate = [&](MlaPrologArgs& a) {  // every input as in p
              const std::pair<const char*, const TensorView*> in[] = {
                  {"tokenX", &p.token_x},         {"weightDq", &p.weight_dq},
                  {"weightUqQr", &p.weight_uq_qr}, {"weightUk", &p.weight_uk},
                  {"weightDkvKr", &p.weight_dkv_kr}, {"rmsnormGammaCq", &p.rmsnorm_gamma_cq},
                  {"rmsnormGammaCkv", &p.rmsnorm_gamma_ckv}, {"ropeSin", &p.rope_sin},
                  {"ropeCos", &p.rope_cos},       {"cacheIndex", &p.cache_index},
                  {"dequantScaleXOptional", p.dequant_scale_x}, {"dequantScaleWDqOptional", p.dequant_scale_w_dq},
                  {"dequantScaleWUqQrOptional", p.dequant_scale_w_uq_qr},
                  {"dequantScaleWDkvKrOptional", p.dequant_scale_w_dkv_kr},
                  {"quantScaleCkvOptional", p.quant_scale_ckv}, {"quantScaleCkrOptional", p.quant_scale_ckr},
                  {"smoothScalesCqOptional", p.smooth_scales_cq}};
              for (const auto& [name, view] : in)
                if (view != nullptr && a.index(name) >= 0 && a.passed[a.index(name)]) a[name] = *view;
            };
            ASSERT_EQ(mla_prolog_call(strided, call), ACLNN_SUCCESS) << what << ": " << last_error_string();
          } else {
            uint64_t ws = 0;
            MlaPrologParams d = dense.params();
            ASSERT_EQ(mla_prolog_workspace_size(d, &ws), kSuccess) << last_error_string();
            std::vector<uint64_t> w(static_cast<size_t>(ws / 8 + 1));
            ASSERT_EQ(mla_prolog(d, w.data(), ws), kSuccess) << last_error_string();
            ASSERT_EQ(mla_prolog_workspace_size(p, &ws), kSuccess) << what << ": " << last_error_string();
            w.assign(static_cast<size_t>(ws / 8 + 1), 0);
            ASSERT_EQ(mla_prolog(p, w.data(), ws), kSuccess) << what << ": " << last_error_string();
          }
          EXPECT_TRUE(prolog_outputs(dense) == prolog_outputs(strided)) << what;
        });
  }
}

// SGLang's npu_mla_prolog_v3 call passes a transposed ND weight (strides [1, He]); a row-padded
// one is a slice of a wider buffer. Both read as their logical matrices; a strided cache or output
// stays refused (MP-05), nothing written.
TEST(AutoContiguous, MlaPrologTransposedWeightAndRefusals) {
  MlaPrologCaseConfig cfg;
  cfg.weight_form = testdata::WeightForm::kNd;
  const MlaPrologCase base = testdata::make_mla_prolog_case(cfg);
  const TensorView& wdq = base.weight_dq.view;  // [He, Hcq]
  const int64_t He = wdq.dims[0], Hcq = wdq.dims[1];
  std::vector<uint16_t> wt(static_cast<size_t>(He * Hcq));  // stored as [Hcq, He]
  for (int64_t r = 0; r < He; ++r)
    for (int64_t c = 0; c < Hcq; ++c)
      wt[static_cast<size_t>(c * He + r)] = static_cast<const uint16_t*>(wdq.data)[r * Hcq + c];
  TensorView wtv = wdq;
  wtv.data = wt.data();
  wtv.strides[0] = 1, wtv.strides[1] = He;
  for_each_isa_and_threads([&](Isa isa, int threads) {
    MlaPrologCase d = base.clone(), t = base.clone();
    MlaPrologParams pd = d.params(), pt = t.params();
    pt.weight_dq = wtv;
    for (MlaPrologParams* p : {&pd, &pt}) {
      uint64_t ws = 0;
      ASSERT_EQ(mla_prolog_workspace_size(*p, &ws), kSuccess) << last_error_string();
      std::vector<uint64_t> w(static_cast<size_t>(ws / 8 + 1));
      ASSERT_EQ(mla_prolog(*p, w.data(), ws), kSuccess) << last_error_string();
    }
    EXPECT_TRUE(prolog_outputs(d) == prolog_outputs(t)) << isa_name(isa) << " " << threads;
  });

  const MlaPrologCase vendor = testdata::make_mla_prolog_case(
      testdata::vendor_small_cfg(MlaPrologScenario::kNoQuant, true, MlaPrologCacheMode::kPaBsnd));
  for (const char* name : {"kvCacheRef", "queryOut"}) {
    MlaPrologCase bad = vendor.clone();
    TwinStore twins;
    MlaPrologCall c2;
    c2.mutate = [&](MlaPrologArgs& a) { twins.twin(&a[name], TwinLayout::kPadded); };
    const auto before = prolog_outputs(bad);
    EXPECT_EQ(mla_prolog_call(bad, c2), ACLNN_ERR_PARAM_INVALID) << name;
    EXPECT_NE(last_error_string().find(std::string(name) + ": MP-05"), std::string::npos) << last_error_string();
    EXPECT_TRUE(prolog_outputs(bad) == before) << name;
  }
}

// ---------------------------------------------------------------------------------------------
// MlaPreprocess
// ---------------------------------------------------------------------------------------------

using testdata::MlaPreprocessCase;
using testdata::MlaPreprocessCaseConfig;

std::vector<MlaPreprocessCaseConfig> preprocess_cases() {
  std::vector<MlaPreprocessCaseConfig> v;
  for (MlaPreprocessCacheMode cm : {MlaPreprocessCacheMode::kKvCache, MlaPreprocessCacheMode::kKropeCtkv,
                                    MlaPreprocessCacheMode::kInt8NzCache, MlaPreprocessCacheMode::kNzCache}) {
    MlaPreprocessCaseConfig c;
    c.cache_mode = cm;
    c.dtype = cm == MlaPreprocessCacheMode::kKropeCtkv ? DType::kBFloat16 : DType::kFloat16;
    c.seed = 11 + static_cast<uint64_t>(cm);
    v.push_back(c);
  }
  MlaPreprocessCaseConfig fw;  // weights in the input dtype
  fw.float_weights = true;
  fw.cache_mode = MlaPreprocessCacheMode::kKropeCtkv;
  fw.dtype = DType::kBFloat16;
  v.push_back(fw);
  return v;
}

std::vector<std::vector<uint8_t>> preprocess_outputs(const MlaPreprocessCase& c) {
  std::vector<std::vector<uint8_t>> o;
  for (const mlaops::HostTensor* h : {&c.q_out, &c.q_rope_out, &c.kv_cache, &c.kv_cache_rope}) o.push_back(h->bytes);
  return o;
}

TEST(AutoContiguous, MlaPreprocessStridedInputsAreBitIdentical) {
  for (const MlaPreprocessCaseConfig& cfg : preprocess_cases()) {
    for (TwinLayout layout : {TwinLayout::kPadded, TwinLayout::kReversed})
      for_each_isa_and_threads([&](Isa isa, int threads) {
        const std::string what = std::string(mla_preprocess_cache_mode_name(cfg.cache_mode)) + " " + twin_name(layout) +
                                 " " + isa_name(isa) + " " + std::to_string(threads);
        MlaPreprocessCase dense = testdata::make_mla_preprocess_case(cfg), strided = testdata::make_mla_preprocess_case(cfg);
        std::vector<TensorView> store;
        TwinStore twins;
        MlaPreprocessParams p = strided.params();
        int n = 0;
        for (const StageSlot& s : mla_preprocess_stage_slots(&p, &store)) {
          twins.twin(s.view, layout);
          n += s.view->is_contiguous() ? 0 : 1;
        }
        ASSERT_GE(n, 4) << what;
        uint64_t ws = 0;
        {
          const MlaPreprocessParams pd = dense.params();
          ASSERT_EQ(mla_preprocess_workspace_size(pd, &ws), kSuccess) << last_error_string();
          std::vector<uint64_t> w(static_cast<size_t>(ws / 8 + 1));
          ASSERT_EQ(mla_preprocess(pd, w.data(), ws), kSuccess) << last_error_string();
        }
        ASSERT_EQ(mla_preprocess_workspace_size(p, &ws), kSuccess) << what << ": " << last_error_string();
        std::vector<uint64_t> w(static_cast<size_t>(ws / 8 + 1));
        ASSERT_EQ(mla_preprocess(p, w.data(), ws), kSuccess) << what << ": " << last_error_string();
        EXPECT_TRUE(preprocess_outputs(dense) == preprocess_outputs(strided)) << what;
      });
  }
}

// Through the C API at the vendor's sizes (its ranges): cacheMode 1 with the doc example's
// shapes but 2 tokens, and cacheMode 2 (INT8 NZ caches, per-token quant).
TEST(AutoContiguous, MlaPreprocessCApiStridedInputs) {
  using CM = MlaPreprocessCacheMode;
  using QM = MlaPreprocessQuantMode;
  const testdata::MlaPreprocessVendorCase kCases[] = {
      {DType::kFloat16, 2, 16, CM::kKropeCtkv, QM::kPerTensorAsymm, false, testdata::MlaPreprocessWeightForm::kNz4d, false},
      {DType::kBFloat16, 1, 16, CM::kInt8NzCache, QM::kPerTokenSymm, true, testdata::MlaPreprocessWeightForm::kNz4d, false}};
  for (const auto& vc : kCases) {
    const MlaPreprocessCaseConfig cfg = testdata::vendor_cfg(vc, 5);
    MlaPreprocessCase dense = testdata::make_mla_preprocess_case(cfg);
    MlaPreprocessCase strided = testdata::make_mla_preprocess_case(cfg);  // its outputs reset per run
    ASSERT_EQ(mla_preprocess_call(dense), ACLNN_SUCCESS) << last_error_string();
    for (TwinLayout layout : {TwinLayout::kPadded, TwinLayout::kReversed})
      for_each_isa_and_threads([&](Isa isa, int threads) {  // vendor-sized weights: one layout per thread count
        if ((layout == TwinLayout::kPadded) != (threads == 1)) return;
        strided.reset_outputs();
        TwinStore twins;
        const aclnnStatus st = mla_preprocess_call(strided, [&](MlaPreprocessArgs& a) {
          for (const char* name : {"input", "gamma0", "beta0", "quantScale0", "quantOffset0", "deScale0", "bias0",
                                   "gamma1", "beta1", "quantScale1", "quantOffset1", "deScale1", "bias1", "gamma2",
                                   "cos", "sin", "wuk", "slotMapping", "ctkvScale", "qNopeScale"})
            if (a.index(name) >= 0 && a.passed[a.index(name)]) twins.twin(&a[name], layout);
        });
        ASSERT_EQ(st, ACLNN_SUCCESS) << last_error_string();
        EXPECT_TRUE(preprocess_outputs(dense) == preprocess_outputs(strided))
            << mla_preprocess_cache_mode_name(cfg.cache_mode) << " " << twin_name(layout) << " " << isa_name(isa) << " "
            << threads;
      });
  }
}

}  // namespace
}  // namespace mlaops::testing
