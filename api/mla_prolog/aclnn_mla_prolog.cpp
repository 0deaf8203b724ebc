// C ABI of MlaProlog: aclnnMlaPrologV3WeightNz* (aclnnop/aclnn_mla_prolog_v3_weight_nz.h), the plain
// aclnnMlaPrologV3* (aclnnop/aclnn_mla_prolog_v3.h: the vendor's unsupported entry point),
// aclnnMlaPrologV2WeightNz* (aclnnop/aclnn_mla_prolog_v2_weight_nz.h) and the V1 aclnnMlaProlog*
// (aclnnop/aclnn_mla_prolog.h), one shared phase 1 over the same inner operator. Converts the aclTensor arguments into
// executor slots and plans with the vendor's shape ranges (ops/mla_prolog/mla_prolog_plan.cpp); execute
// runs that plan on the slots as they are then bound (ops/mla_prolog/mla_prolog_run.cpp).
#include <memory>
#include <string>

#include "aclnnop/aclnn_mla_prolog.h"
#include "aclnnop/aclnn_mla_prolog_v2_weight_nz.h"
#include "aclnnop/aclnn_mla_prolog_v3.h"
#include "aclnnop/aclnn_mla_prolog_v3_weight_nz.h"
#include "api/runtime/executor.h"
#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/mla_prolog/mla_prolog.h"

namespace mlaops::api {
namespace {

constexpr const char* kOpV3 = "aclnnMlaPrologV3WeightNz";
constexpr const char* kOpV3Plain = "aclnnMlaPrologV3";
constexpr const char* kOpV2 = "aclnnMlaPrologV2WeightNz";
constexpr const char* kOpV1 = "aclnnMlaProlog";
// ge::GRAPH_FAILED (0xFFFFFFFF) as an int32 aclnnStatus: what the vendor's V3 wrapper returns for
// its own mode checks (MP-19). Returned as is, so that a program written against CANN sees the
// same code; like any non-zero status it fails a comparison with ACLNN_SUCCESS.
constexpr Status kGraphFailed = static_cast<Status>(-1);

// The plain aclnnMlaPrologV3: both functions fail as the vendor's do (not supported, 561000) and
// touch none of their arguments.
Status plain_v3_unsupported(const char* fn) {
  return fail(kInner, "%s: ACL-65 not supported (as in the vendor's release that had it); use aclnnMlaPrologV3WeightNz",
              fn);
}

// The tensor arguments by role; each entry point places them at its own prototype positions.
enum In {
  kTokenX, kWeightDq, kWeightUqQr, kWeightUk, kWeightDkvKr, kGammaCq, kGammaCkv, kRopeSin, kRopeCos, kCacheIndex,
  kKvCache, kKrCache, kDqsX, kDqsWDq, kDqsWUqQr, kDqsWDkvKr, kQsCkv, kQsCkr, kSmooth, kActualSeqLen, kKNopeClipAlpha,
  kNumIn
};
enum Out { kQueryOut, kQueryRopeOut, kDqsQNopeOut, kQueryNormOut, kDqsQNormOut, kNumOut };

// One entry point: its name, its prototype's tensor inputs (slot[role] = prototype position, -1
// = not in this prototype) and outputs, in prototype order.
struct EntryPoint {
  const char* op;
  int version;  // 1, 2, 3
  int num_in, num_out;
  int slot[kNumIn];
  const char* const* in_names;   // by prototype position
  const char* const* out_names;  // by prototype position (= role)
};

const char* const kInNamesV2[] = {
    "tokenX",         "weightDq",         "weightUqQr",   "weightUk",       "weightDkvKr",
    "rmsnormGammaCq", "rmsnormGammaCkv",  "ropeSin",      "ropeCos",        "cacheIndex",
    "kvCacheRef",     "krCacheRef",       "dequantScaleXOptional", "dequantScaleWDqOptional",
    "dequantScaleWUqQrOptional", "dequantScaleWDkvKrOptional", "quantScaleCkvOptional",
    "quantScaleCkrOptional", "smoothScalesCqOptional"};
const char* const kInNamesV3[] = {
    "tokenX",         "weightDq",         "weightUqQr",   "weightUk",       "weightDkvKr",
    "rmsnormGammaCq", "rmsnormGammaCkv",  "ropeSin",      "ropeCos",        "kvCacheRef",
    "krCacheRef",     "cacheIndexOptional", "dequantScaleXOptional", "dequantScaleWDqOptional",
    "dequantScaleWUqQrOptional", "dequantScaleWDkvKrOptional", "quantScaleCkvOptional",
    "quantScaleCkrOptional", "smoothScalesCqOptional", "actualSeqLenOptional", "kNopeClipAlphaOptional"};
const char* const kOutNames[kNumOut] = {"queryOut", "queryRopeOut", "dequantScaleQNopeOutOptional",
                                        "queryNormOutOptional", "dequantScaleQNormOutOptional"};

constexpr EntryPoint kV1{kOpV1, 1, 19, 2, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, -1, -1},
                         kInNamesV2, kOutNames};
constexpr EntryPoint kV2{kOpV2, 2, 19, 3, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, -1, -1},
                         kInNamesV2, kOutNames};
constexpr EntryPoint kV3{kOpV3, 3, 21, 5, {0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 9, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20},
                         kInNamesV3, kOutNames};

// The attributes of one call (the V3 ones keep their V1 / V2 values for the older entry points).
struct Attrs {
  double eps_cq = 1e-5, eps_ckv = 1e-5;
  MlaPrologCacheMode mode = MlaPrologCacheMode::kPaBsnd;
  double qc_qr_scale = 1.0, kc_scale = 1.0;
  bool kv_quant_per_tile = false;  // V3 kvCacheQuantMode 3
};

const TensorView* opt(const TensorSlot& s) { return s.present ? &s.view : nullptr; }

// The params as seen through the executor's (re-bindable) slots.
MlaPrologParams params_from(const EntryPoint& e, const ExecutorState& st, const Attrs& a) {
  auto in = [&](In role) -> const TensorSlot& { return st.inputs[static_cast<size_t>(e.slot[role])]; };
  auto out = [&](Out role) -> const TensorView* {
    return static_cast<size_t>(role) < st.outputs.size() ? opt(st.outputs[role]) : nullptr;
  };
  MlaPrologParams p;
  p.token_x = in(kTokenX).view;
  p.weight_dq = in(kWeightDq).view;
  p.weight_uq_qr = in(kWeightUqQr).view;
  p.weight_uk = in(kWeightUk).view;
  p.weight_dkv_kr = in(kWeightDkvKr).view;
  p.rmsnorm_gamma_cq = in(kGammaCq).view;
  p.rmsnorm_gamma_ckv = in(kGammaCkv).view;
  p.rope_sin = in(kRopeSin).view;
  p.rope_cos = in(kRopeCos).view;
  p.cache_index = in(kCacheIndex).present ? in(kCacheIndex).view : TensorView{};
  p.kv_cache = in(kKvCache).view;
  p.kr_cache = in(kKrCache).view;
  p.dequant_scale_x = opt(in(kDqsX));
  p.dequant_scale_w_dq = opt(in(kDqsWDq));
  p.dequant_scale_w_uq_qr = opt(in(kDqsWUqQr));
  p.dequant_scale_w_dkv_kr = opt(in(kDqsWDkvKr));
  p.quant_scale_ckv = opt(in(kQsCkv));
  p.quant_scale_ckr = opt(in(kQsCkr));
  p.smooth_scales_cq = opt(in(kSmooth));
  p.rmsnorm_epsilon_cq = a.eps_cq;
  p.rmsnorm_epsilon_ckv = a.eps_ckv;
  p.cache_mode = a.mode;
  p.query_out = st.outputs[kQueryOut].view;
  p.query_rope_out = st.outputs[kQueryRopeOut].view;
  p.dequant_scale_q_nope_out = out(kDqsQNopeOut);
  p.qc_qr_scale = a.qc_qr_scale;
  p.kc_scale = a.kc_scale;
  p.query_norm_out = out(kQueryNormOut);
  p.dequant_scale_q_norm_out = out(kDqsQNormOut);
  if (e.slot[kActualSeqLen] >= 0) p.actual_seq_len = opt(in(kActualSeqLen));
  if (e.slot[kKNopeClipAlpha] >= 0) p.k_nope_clip_alpha = opt(in(kKNopeClipAlpha));
  p.kv_quant_per_tile = a.kv_quant_per_tile;
  return p;
}

Status parse_cache_mode(const EntryPoint& e, const char* s, MlaPrologCacheMode* mode) {
  if (s == nullptr) {
    *mode = MlaPrologCacheMode::kPaBsnd;
    return kSuccess;
  }
  bool truncated = false;
  const std::string v = check::bounded_string(s, 16, &truncated);
  for (const auto& row : mla_prolog_table::kCacheModes)
    if (!truncated && v == row.value) {
      *mode = row.mode;
      return kSuccess;
    }
  if (e.version == 3) {
    for (const auto& row : mla_prolog_table::kCacheModesV3)
      if (!truncated && v == row.value) {
        *mode = row.mode;
        return kSuccess;
      }
    return fail(kParamInvalid,
                "%s: cacheModeOptional: MP-06 value; allowed {\"PA_BSND\", \"PA_NZ\", \"PA_BLK_BSND\", \"PA_BLK_NZ\", "
                "\"BSND\", \"TND\"} or null, got \"%s%s\"",
                e.op, v.c_str(), truncated ? "..." : "");
  }
  return fail(kParamInvalid, "%s: cacheModeOptional: MP-06 value; allowed {\"PA_BSND\", \"PA_NZ\"} or null, got \"%s%s\"",
              e.op, v.c_str(), truncated ? "..." : "");
}

// MP-19: the checks of the vendor's V3 wrapper (before the inner operator), status -1.
Status check_v3_wrapper(const MlaPrologV3Modes& m, bool dqs_q_nope, bool query_norm, bool dqs_q_norm) {
  const char* op = kOpV3;
  MLAOPS_CHECK(m.weight_quant_mode >= 0 && m.weight_quant_mode <= 2, kGraphFailed,
               "%s: weightQuantMode: MP-19 value; allowed {0, 1, 2}, got %lld", op, (long long)m.weight_quant_mode);
  static constexpr const char* kAllowedKv[] = {"{0}", "{0, 2, 3}", "{0, 1, 3}"};
  const int64_t w = m.weight_quant_mode, kv = m.kv_cache_quant_mode;
  const bool kv_ok = kv == 0 || (w == 1 && (kv == 2 || kv == 3)) || (w == 2 && (kv == 1 || kv == 3));
  MLAOPS_CHECK(kv_ok, kGraphFailed, "%s: kvCacheQuantMode: MP-19 value with weightQuantMode %lld; allowed %s, got %lld",
               op, (long long)w, kAllowedKv[w], (long long)kv);
  MLAOPS_CHECK(m.query_quant_mode == 0 || m.query_quant_mode == 1, kGraphFailed,
               "%s: queryQuantMode: MP-19 value; allowed {0, 1}, got %lld", op, (long long)m.query_quant_mode);
  const bool need_nope = w == 2 && kv == 1;
  MLAOPS_CHECK(dqs_q_nope == need_nope, kGraphFailed,
               "%s: dequantScaleQNopeOutOptional: MP-19 non-null exactly when weightQuantMode is 2 and "
               "kvCacheQuantMode is 1; allowed %s, got %s",
               op, need_nope ? "a tensor" : "null", dqs_q_nope ? "a tensor" : "null");
  const bool need_norm = w != 0 && query_norm;
  MLAOPS_CHECK(dqs_q_norm == need_norm, kGraphFailed,
               "%s: dequantScaleQNormOutOptional: MP-19 non-null exactly when weightQuantMode is not 0 and "
               "queryNormOutOptional is non-null; allowed %s, got %s",
               op, need_norm ? "a tensor" : "null", dqs_q_norm ? "a tensor" : "null");
  return kSuccess;
}

// Phase 1 of every MlaProlog entry point. `modes`: V3 only.
Status get_workspace_size(const EntryPoint& e, const aclTensor* const* inputs, const aclTensor* const* outputs,
                          const Attrs& a, const char* cache_mode, const MlaPrologV3Modes* modes,
                          uint64_t* workspace_size, aclOpExecutor** executor) {
  const char* op = e.op;
  if (modes != nullptr)
    MLAOPS_TRY(check_v3_wrapper(*modes, outputs[kDqsQNopeOut] != nullptr, outputs[kQueryNormOut] != nullptr,
                                outputs[kDqsQNormOut] != nullptr));
  MLAOPS_CHECK(workspace_size != nullptr && executor != nullptr, kParamNullptr,
               "%s: workspaceSize / executor: MP-01 out-pointer is null", op);
  auto st = std::make_shared<ExecutorState>();
  st->op = op;
  st->inputs.resize(static_cast<size_t>(e.num_in));
  st->outputs.resize(static_cast<size_t>(e.num_out));
  // Required: every input up to krCacheRef (V1/V2 cacheIndex included; V3's cacheIndexOptional
  // comes after the caches and is required by the PA cache modes: MP-01 in the checks).
  const int required_in = e.slot[kKrCache] + 1;
  for (int i = 0; i < e.num_in; ++i)
    MLAOPS_TRY(bind_slot(inputs[i], op, e.in_names[i], i < required_in, &st->inputs[static_cast<size_t>(i)]));
  for (int i = 0; i < e.num_out; ++i)
    MLAOPS_TRY(bind_slot(outputs[i], op, e.out_names[i], i < kDqsQNopeOut, &st->outputs[static_cast<size_t>(i)]));
  Attrs at = a;
  MLAOPS_TRY(parse_cache_mode(e, cache_mode, &at.mode));
  at.kv_quant_per_tile = modes != nullptr && modes->kv_cache_quant_mode == 3;
  const MlaPrologParams p = params_from(e, *st, at);
  MlaPrologCheckOptions o;
  o.op = op;
  o.v2 = e.version >= 2;
  o.vendor_ranges = true;
  if (modes != nullptr) {
    o.v3 = true;
    o.modes = *modes;
  }
  auto plan = std::make_shared<OpPlan>();
  MLAOPS_TRY(mla_prolog_make_plan(p, o, plan.get()));
  st->workspace_bytes = plan->workspace_size();
  const EntryPoint* ep = &e;
  st->run = [plan, ep, at](const ExecutorState& s, void* ws, uint64_t size) {
    return mla_prolog_run(*plan, params_from(*ep, s, at), ws, size);
  };
  st->params = [ep, at](const ExecutorState& s) { return CallParams(params_from(*ep, s, at)); };
  *workspace_size = st->workspace_bytes;
  *executor = register_executor(std::move(st));
  return kSuccess;
}

}  // namespace
}  // namespace mlaops::api

extern "C" {

aclnnStatus aclnnMlaPrologV3WeightNzGetWorkspaceSize(
    const aclTensor* tokenX, const aclTensor* weightDq, const aclTensor* weightUqQr, const aclTensor* weightUk,
    const aclTensor* weightDkvKr, const aclTensor* rmsnormGammaCq, const aclTensor* rmsnormGammaCkv,
    const aclTensor* ropeSin, const aclTensor* ropeCos, aclTensor* kvCacheRef, aclTensor* krCacheRef,
    const aclTensor* cacheIndexOptional, const aclTensor* dequantScaleXOptional,
    const aclTensor* dequantScaleWDqOptional, const aclTensor* dequantScaleWUqQrOptional,
    const aclTensor* dequantScaleWDkvKrOptional, const aclTensor* quantScaleCkvOptional,
    const aclTensor* quantScaleCkrOptional, const aclTensor* smoothScalesCqOptional,
    const aclTensor* actualSeqLenOptional, const aclTensor* kNopeClipAlphaOptional, double rmsnormEpsilonCq,
    double rmsnormEpsilonCkv, char* cacheModeOptional, int64_t weightQuantMode, int64_t kvCacheQuantMode,
    int64_t queryQuantMode, int64_t ckvkrRepoMode, int64_t quantScaleRepoMode, int64_t tileSize, double qcQrScale,
    double kcScale, const aclTensor* queryOut, const aclTensor* queryRopeOut,
    const aclTensor* dequantScaleQNopeOutOptional, const aclTensor* queryNormOutOptional,
    const aclTensor* dequantScaleQNormOutOptional, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT(google-build-using-namespace)
  return guarded(kOpV3, __FILE__, __LINE__, [&]() -> aclnnStatus {
    const aclTensor* in[] = {tokenX,         weightDq,          weightUqQr,
                             weightUk,       weightDkvKr,       rmsnormGammaCq,
                             rmsnormGammaCkv, ropeSin,          ropeCos,
                             kvCacheRef,     krCacheRef,        cacheIndexOptional,
                             dequantScaleXOptional, dequantScaleWDqOptional, dequantScaleWUqQrOptional,
                             dequantScaleWDkvKrOptional, quantScaleCkvOptional, quantScaleCkrOptional,
                             smoothScalesCqOptional, actualSeqLenOptional, kNopeClipAlphaOptional};
    const aclTensor* out[] = {queryOut, queryRopeOut, dequantScaleQNopeOutOptional, queryNormOutOptional,
                              dequantScaleQNormOutOptional};
    mlaops::MlaPrologV3Modes m;
    m.weight_quant_mode = weightQuantMode;
    m.kv_cache_quant_mode = kvCacheQuantMode;
    m.query_quant_mode = queryQuantMode;
    m.ckvkr_repo_mode = ckvkrRepoMode;
    m.quant_scale_repo_mode = quantScaleRepoMode;
    m.tile_size = tileSize;
    Attrs a;
    a.eps_cq = rmsnormEpsilonCq;
    a.eps_ckv = rmsnormEpsilonCkv;
    a.qc_qr_scale = qcQrScale;
    a.kc_scale = kcScale;
    return get_workspace_size(kV3, in, out, a, cacheModeOptional, &m, workspaceSize, executor);
  });
}

aclnnStatus aclnnMlaPrologV3WeightNz(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV3, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMlaPrologV3GetWorkspaceSize(
    const aclTensor* /*tokenX*/, const aclTensor* /*weightDq*/, const aclTensor* /*weightUqQr*/,
    const aclTensor* /*weightUk*/, const aclTensor* /*weightDkvKr*/, const aclTensor* /*rmsnormGammaCq*/,
    const aclTensor* /*rmsnormGammaCkv*/, const aclTensor* /*ropeSin*/, const aclTensor* /*ropeCos*/,
    aclTensor* /*kvCacheRef*/, aclTensor* /*krCacheRef*/, const aclTensor* /*cacheIndexOptional*/,
    const aclTensor* /*dequantScaleXOptional*/, const aclTensor* /*dequantScaleWDqOptional*/,
    const aclTensor* /*dequantScaleWUqQrOptional*/, const aclTensor* /*dequantScaleWDkvKrOptional*/,
    const aclTensor* /*quantScaleCkvOptional*/, const aclTensor* /*quantScaleCkrOptional*/,
    const aclTensor* /*smoothScalesCqOptional*/, const aclTensor* /*actualSeqLenOptional*/,
    const aclTensor* /*kNopeClipAlphaOptional*/, double /*rmsnormEpsilonCq*/, double /*rmsnormEpsilonCkv*/,
    char* /*cacheModeOptional*/, bool /*queryNormFlag*/, int64_t /*weightQuantMode*/, int64_t /*kvCacheQuantMode*/,
    int64_t /*queryQuantMode*/, int64_t /*ckvkrRepoMode*/, int64_t /*quantScaleRepoMode*/, int64_t /*tileSize*/,
    double /*qcQrScale*/, double /*kcScale*/, const aclTensor* /*queryOut*/, const aclTensor* /*queryRopeOut*/,
    const aclTensor* /*dequantScaleQNopeOut*/, const aclTensor* /*queryNormOut*/,
    const aclTensor* /*dequantScaleQNormOut*/, uint64_t* /*workspaceSize*/, aclOpExecutor** /*executor*/) {
  using namespace mlaops::api;  // NOLINT(google-build-using-namespace)
  return guarded("aclnnMlaPrologV3GetWorkspaceSize", __FILE__, __LINE__,
                 []() -> aclnnStatus { return plain_v3_unsupported("aclnnMlaPrologV3GetWorkspaceSize"); });
}

aclnnStatus aclnnMlaPrologV3(void* /*workspace*/, uint64_t /*workspaceSize*/, aclOpExecutor* /*executor*/,
                             const aclrtStream /*stream*/) {
  using namespace mlaops::api;  // NOLINT(google-build-using-namespace)
  return guarded(kOpV3Plain, __FILE__, __LINE__, []() -> aclnnStatus { return plain_v3_unsupported(kOpV3Plain); });
}

aclnnStatus aclnnMlaPrologV2WeightNzGetWorkspaceSize(
    const aclTensor* tokenX, const aclTensor* weightDq, const aclTensor* weightUqQr, const aclTensor* weightUk,
    const aclTensor* weightDkvKr, const aclTensor* rmsnormGammaCq, const aclTensor* rmsnormGammaCkv,
    const aclTensor* ropeSin, const aclTensor* ropeCos, const aclTensor* cacheIndex, aclTensor* kvCacheRef,
    aclTensor* krCacheRef, const aclTensor* dequantScaleXOptional, const aclTensor* dequantScaleWDqOptional,
    const aclTensor* dequantScaleWUqQrOptional, const aclTensor* dequantScaleWDkvKrOptional,
    const aclTensor* quantScaleCkvOptional, const aclTensor* quantScaleCkrOptional,
    const aclTensor* smoothScalesCqOptional, double rmsnormEpsilonCq, double rmsnormEpsilonCkv, char* cacheModeOptional,
    const aclTensor* queryOut, const aclTensor* queryRopeOut, const aclTensor* dequantScaleQNopeOutOptional,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT(google-build-using-namespace)
  return guarded(kOpV2, __FILE__, __LINE__, [&]() -> aclnnStatus {
    warn_deprecated_once(kOpV2, kOpV3);  // the vendor's header marks V2 deprecated
    const aclTensor* in[] = {tokenX,       weightDq,   weightUqQr,           weightUk,
                             weightDkvKr,  rmsnormGammaCq, rmsnormGammaCkv,  ropeSin,
                             ropeCos,      cacheIndex, kvCacheRef,           krCacheRef,
                             dequantScaleXOptional, dequantScaleWDqOptional, dequantScaleWUqQrOptional,
                             dequantScaleWDkvKrOptional, quantScaleCkvOptional, quantScaleCkrOptional,
                             smoothScalesCqOptional};
    const aclTensor* out[] = {queryOut, queryRopeOut, dequantScaleQNopeOutOptional, nullptr, nullptr};
    Attrs a;
    a.eps_cq = rmsnormEpsilonCq;
    a.eps_ckv = rmsnormEpsilonCkv;
    return get_workspace_size(kV2, in, out, a, cacheModeOptional, nullptr, workspaceSize, executor);
  });
}

aclnnStatus aclnnMlaPrologV2WeightNz(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV2, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMlaPrologGetWorkspaceSize(
    const aclTensor* tokenX, const aclTensor* weightDq, const aclTensor* weightUqQr, const aclTensor* weightUk,
    const aclTensor* weightDkvKr, const aclTensor* rmsnormGammaCq, const aclTensor* rmsnormGammaCkv,
    const aclTensor* ropeSin, const aclTensor* ropeCos, const aclTensor* cacheIndex, aclTensor* kvCacheRef,
    aclTensor* krCacheRef, const aclTensor* dequantScaleXOptional, const aclTensor* dequantScaleWDqOptional,
    const aclTensor* dequantScaleWUqQrOptional, const aclTensor* dequantScaleWDkvKrOptional,
    const aclTensor* quantScaleCkvOptional, const aclTensor* quantScaleCkrOptional,
    const aclTensor* smoothScalesCqOptional, double rmsnormEpsilonCq, double rmsnormEpsilonCkv, char* cacheModeOptional,
    const aclTensor* queryOut, const aclTensor* queryRopeOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mlaops::api;  // NOLINT(google-build-using-namespace)
  return guarded(kOpV1, __FILE__, __LINE__, [&]() -> aclnnStatus {
    const aclTensor* in[] = {tokenX,       weightDq,   weightUqQr,           weightUk,
                             weightDkvKr,  rmsnormGammaCq, rmsnormGammaCkv,  ropeSin,
                             ropeCos,      cacheIndex, kvCacheRef,           krCacheRef,
                             dequantScaleXOptional, dequantScaleWDqOptional, dequantScaleWUqQrOptional,
                             dequantScaleWDkvKrOptional, quantScaleCkvOptional, quantScaleCkrOptional,
                             smoothScalesCqOptional};
    const aclTensor* out[] = {queryOut, queryRopeOut, nullptr, nullptr, nullptr};
    Attrs a;
    a.eps_cq = rmsnormEpsilonCq;
    a.eps_ckv = rmsnormEpsilonCkv;
    return get_workspace_size(kV1, in, out, a, cacheModeOptional, nullptr, workspaceSize, executor);
  });
}

aclnnStatus aclnnMlaProlog(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, const aclrtStream stream) {
  return mlaops::api::execute(mlaops::api::kOpV1, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
