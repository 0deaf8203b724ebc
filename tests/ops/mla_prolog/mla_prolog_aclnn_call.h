// Calls aclnnMlaPrologV3WeightNz / aclnnMlaPrologV2WeightNz / aclnnMlaProlog on a test case through the C API, with an
// optional mutation of the tensor descriptions first (negative tests).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mla_prolog.h"
#include "aclnnop/aclnn_mla_prolog_v2_weight_nz.h"
#include "aclnnop/aclnn_mla_prolog_v3_weight_nz.h"
#include "ops/acl_tensor_util.h"
#include "ops/aclnn_phase2.h"
#include "testkit/mla_prolog_test_data.h"
#include "tests/support/guarded_alloc.h"

namespace mlaops::testing {

// Every tensor argument in prototype order (the 21 V1 / V2 tensors, then the V3 ones), as
// (view, passed) pairs a test may edit.
struct MlaPrologArgs : NamedTensorArgs<MlaPrologArgs, 26> {
  static const char* name(int i) {
    static const char* const names[kCount] = {
        "tokenX", "weightDq", "weightUqQr", "weightUk", "weightDkvKr", "rmsnormGammaCq", "rmsnormGammaCkv",
        "ropeSin", "ropeCos", "cacheIndex", "kvCacheRef", "krCacheRef", "dequantScaleXOptional",
        "dequantScaleWDqOptional", "dequantScaleWUqQrOptional", "dequantScaleWDkvKrOptional",
        "quantScaleCkvOptional", "quantScaleCkrOptional", "smoothScalesCqOptional", "queryOut", "queryRopeOut",
        "dequantScaleQNopeOutOptional", "queryNormOutOptional", "dequantScaleQNormOutOptional",
        "actualSeqLenOptional", "kNopeClipAlphaOptional"};
    return names[i];
  }
};

inline MlaPrologArgs args_of(const testdata::MlaPrologCase& c) {
  MlaPrologArgs a;
  const testdata::HostTensor* hs[MlaPrologArgs::kCount] = {
      &c.token_x, &c.weight_dq, &c.weight_uq_qr, &c.weight_uk, &c.weight_dkv_kr, &c.rmsnorm_gamma_cq,
      &c.rmsnorm_gamma_ckv, &c.rope_sin, &c.rope_cos, &c.cache_index, &c.kv_cache, &c.kr_cache,
      &c.dequant_scale_x, &c.dequant_scale_w_dq, &c.dequant_scale_w_uq_qr, &c.dequant_scale_w_dkv_kr,
      &c.quant_scale_ckv, &c.quant_scale_ckr, &c.smooth_scales_cq, &c.query_out, &c.query_rope_out,
      &c.dequant_scale_q_nope_out, &c.query_norm_out, &c.dequant_scale_q_norm_out, &c.actual_seq_len,
      &c.k_nope_clip_alpha};
  a.set_from(hs);
  return a;
}

// The V3 mode tuple (weightQuantMode, kvCacheQuantMode, queryQuantMode) of a scenario.
inline std::array<int64_t, 3> v3_modes(MlaPrologScenario sc) {
  switch (sc) {
    case MlaPrologScenario::kNoQuant: return {0, 0, 0};
    case MlaPrologScenario::kPartialQuantKvNoQuant: return {1, 0, 0};
    case MlaPrologScenario::kPartialQuantKvQuant: return {1, 2, 0};
    case MlaPrologScenario::kFullQuantKvNoQuant: return {2, 0, 0};
    case MlaPrologScenario::kFullQuantKvQuant: return {2, 1, 1};
    case MlaPrologScenario::kPartialQuantKvQuantPerTile: return {1, 3, 0};
    case MlaPrologScenario::kFullQuantKvQuantPerTile: return {2, 3, 0};
  }
  return {0, 0, 0};
}

struct MlaPrologCall {
  bool v2 = true;
  bool v3 = false;  // aclnnMlaPrologV3WeightNz (v2 ignored)
  // V3 attributes; modes[i] < -100: the case's scenario's tuple (v3_modes); the repo modes < -100:
  // 1 in per-tile KV quant, else 0; qcQrScale / kcScale: the case's
  int64_t modes[3] = {-999, -999, -999};
  int64_t ckvkr_repo_mode = -999, quant_scale_repo_mode = -999, tile_size = 128;
  const char* cache_mode = nullptr;  // null: the case's mode
  double eps_cq = 1e-5, eps_ckv = 1e-5;
  std::function<void(MlaPrologArgs&)> mutate;
};

// Phase 1 only. On success *executor and *workspace_size are set.
inline aclnnStatus mla_prolog_phase1(const testdata::MlaPrologCase& c, const MlaPrologCall& call,
                                     uint64_t* workspace_size, aclOpExecutor** executor) {
  MlaPrologArgs a = args_of(c);
  // V3 takes no (1) placeholder of dequantScaleQNopeOut: null outside FULL_QUANT_KV_QUANT
  if (call.v3 && c.cfg.scenario != MlaPrologScenario::kFullQuantKvQuant) a.passed[21] = false;
  // V3 takes the per-tensor KV quant scale as (1) (kvCacheQuantMode 1): a case made with V1 / V2's
  // (1, Hckv) passes its element 0, the one the operator reads, as a (1) view
  TensorView& qs_ckv = a["quantScaleCkvOptional"];
  if (call.v3 && c.cfg.scenario == MlaPrologScenario::kFullQuantKvQuant && qs_ckv.rank == 2)
    qs_ckv = make_view(qs_ckv.data, qs_ckv.dtype, {1});
  if (call.mutate) call.mutate(a);
  const std::vector<AclTensor> t = a.guarded_tensors();
  std::string mode = mla_prolog_cache_mode_name(c.cfg.cache_mode);
  char* mode_arg = call.cache_mode ? const_cast<char*>(call.cache_mode) : mode.data();
  if (call.v3) {
    const auto m = v3_modes(c.cfg.scenario);
    auto mode_of = [&](int i) { return call.modes[i] < -100 ? m[static_cast<size_t>(i)] : call.modes[i]; };
    const int64_t repo = mla_prolog_is_per_tile(c.cfg.scenario) ? 1 : 0;
    auto repo_of = [&](int64_t v) { return v < -100 ? repo : v; };
    return aclnnMlaPrologV3WeightNzGetWorkspaceSize(
        t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[10], t[11], t[9], t[12], t[13], t[14], t[15], t[16],
        t[17], t[18], t[24], t[25], call.eps_cq, call.eps_ckv, mode_arg, mode_of(0), mode_of(1), mode_of(2),
        repo_of(call.ckvkr_repo_mode), repo_of(call.quant_scale_repo_mode), call.tile_size, c.cfg.qc_qr_scale, c.cfg.kc_scale, t[19],
        t[20], t[21], t[22], t[23], workspace_size, executor);
  }
  if (call.v2)
    return aclnnMlaPrologV2WeightNzGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10],
                                                    t[11], t[12], t[13], t[14], t[15], t[16], t[17], t[18],
                                                    call.eps_cq, call.eps_ckv, mode_arg, t[19], t[20], t[21],
                                                    workspace_size, executor);
  return aclnnMlaPrologGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11],
                                        t[12], t[13], t[14], t[15], t[16], t[17], t[18], call.eps_cq, call.eps_ckv,
                                        mode_arg, t[19], t[20], workspace_size, executor);
}

// Both phases on `stream` (nullptr: synchronous), then synchronize. Returns the first error.
inline aclnnStatus mla_prolog_call(const testdata::MlaPrologCase& c, const MlaPrologCall& call = {},
                                   aclrtStream stream = nullptr) {
  GuardScope guard;
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus s = mla_prolog_phase1(c, call, &ws_size, &ex);
  if (s != ACLNN_SUCCESS) return s;
  return aclnn_phase2(call.v3 ? aclnnMlaPrologV3WeightNz : call.v2 ? aclnnMlaPrologV2WeightNz : aclnnMlaProlog, ws_size,
                      ex, stream);
}

}  // namespace mlaops::testing
