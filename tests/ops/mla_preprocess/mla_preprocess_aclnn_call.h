// Calls aclnnMlaPreprocess (or aclnnMlaPreprocessV2) on a test case through the C API, with an
// optional mutation of the tensor descriptions and attributes first (negative tests). As the
// vendor's op definition requires every tensor, a tensor the case's modes do not use is passed as
// a one-element placeholder, except the ones CANN's documentation lets callers leave null
// (bias*, the rope tensors in cacheMode 0, ctkvScale / qNopeScale outside cacheMode 2).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mla_preprocess.h"
#include "aclnnop/aclnn_mla_preprocess_v2.h"
#include "ops/acl_tensor_util.h"
#include "ops/aclnn_phase2.h"
#include "testkit/mla_preprocess_test_data.h"
#include "tests/support/guarded_alloc.h"

namespace mlaops::testing {

// Every tensor argument in prototype order (24 inputs, then the 4 outputs and V2's qDownOut), as
// (view, passed) pairs, and the attributes, which a test may edit.
struct MlaPreprocessArgs : NamedTensorArgs<MlaPreprocessArgs, 29> {
  int64_t wdq_dim = 1536, q_rope_dim = 64, k_rope_dim = 64;
  double epsilon = 1e-6;
  int64_t q_rotary_coeff = 2, k_rotary_coeff = 2;
  bool transpose_wdq = true, transpose_wuq = true, transpose_wuk = true;
  int64_t cache_mode = 0, quant_mode = 0;
  bool do_rms_norm = true;
  int64_t wdkv_split_count = 1;
  bool v2 = false;               // call aclnnMlaPreprocessV2
  bool q_down_out_flag = true;   // V2

  static const char* name(int i) {
    static const char* const names[kCount] = {
        "input",       "gamma0",    "beta0",      "quantScale0", "quantOffset0", "wdqkv",    "deScale0",
        "bias0",       "gamma1",    "beta1",      "quantScale1", "quantOffset1", "wuq",      "deScale1",
        "bias1",       "gamma2",    "cos",        "sin",         "wuk",          "kvCache",  "kvCacheRope",
        "slotMapping", "ctkvScale", "qNopeScale", "qOut",        "kvCacheOut",   "qRopeOut", "krCacheOut",
        "qDownOut"};
    return names[i];
  }
};

// The one-element tensor passed for a tensor the case does not use.
inline TensorView placeholder_view() {
  alignas(64) static uint8_t storage[64] = {};
  return make_view(storage, DType::kFloat16, {1});
}
inline bool nullable_in_aclnn(const std::string& n) {
  for (const char* x : {"bias0", "bias1", "kvCacheRope", "qRopeOut", "krCacheOut", "ctkvScale", "qNopeScale"})
    if (n == x) return true;
  return false;
}

inline MlaPreprocessArgs args_of(const testdata::MlaPreprocessCase& c) {
  MlaPreprocessArgs a;
  const testdata::HostTensor* hs[MlaPreprocessArgs::kCount] = {
      &c.input,   &c.gamma0,        &c.beta0,        &c.quant_scale0, &c.quant_offset0, &c.wdqkv,
      &c.de_scale0, &c.bias0,       &c.gamma1,       &c.beta1,        &c.quant_scale1,  &c.quant_offset1,
      &c.wuq,     &c.de_scale1,     &c.bias1,        &c.gamma2,       &c.cos,           &c.sin,
      &c.wuk,     &c.kv_cache,      &c.kv_cache_rope, &c.slot_mapping, &c.ctkv_scale,   &c.q_nope_scale,
      &c.q_out,   &c.kv_cache,      &c.q_rope_out,   &c.kv_cache_rope, &c.q_down_out};
  a.set_from(hs);
  for (int i = 0; i < MlaPreprocessArgs::kCount; ++i) {
    if (!a.passed[i] && !nullable_in_aclnn(MlaPreprocessArgs::name(i))) {
      a.v[i] = placeholder_view();
      a.passed[i] = true;
    }
  }
  a.v2 = c.q_down_out.present();
  a.epsilon = c.cfg.epsilon;
  a.cache_mode = static_cast<int64_t>(c.cfg.cache_mode);
  a.quant_mode = static_cast<int64_t>(c.cfg.quant_mode);
  a.do_rms_norm = !c.cfg.float_weights;
  return a;
}

using MlaPreprocessMutation = std::function<void(MlaPreprocessArgs&)>;

// Phase 1 only. On success *executor and *workspace_size are set.
inline aclnnStatus mla_preprocess_phase1(const testdata::MlaPreprocessCase& c, const MlaPreprocessMutation& mutate,
                                         uint64_t* workspace_size, aclOpExecutor** executor) {
  MlaPreprocessArgs a = args_of(c);
  if (mutate) mutate(a);
  const std::vector<AclTensor> t = a.guarded_tensors();
  if (a.v2)
    return aclnnMlaPreprocessV2GetWorkspaceSize(
        t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15], t[16],
        t[17], t[18], t[19], t[20], t[21], t[22], t[23], a.wdq_dim, a.q_rope_dim, a.k_rope_dim, a.epsilon,
        a.q_rotary_coeff, a.k_rotary_coeff, a.transpose_wdq, a.transpose_wuq, a.transpose_wuk, a.cache_mode,
        a.quant_mode, a.do_rms_norm, a.wdkv_split_count, a.q_down_out_flag, t[24], t[25], t[26], t[27], t[28],
        workspace_size, executor);
  return aclnnMlaPreprocessGetWorkspaceSize(
      t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15], t[16],
      t[17], t[18], t[19], t[20], t[21], t[22], t[23], a.wdq_dim, a.q_rope_dim, a.k_rope_dim, a.epsilon,
      a.q_rotary_coeff, a.k_rotary_coeff, a.transpose_wdq, a.transpose_wuq, a.transpose_wuk, a.cache_mode,
      a.quant_mode, a.do_rms_norm, a.wdkv_split_count, t[24], t[25], t[26], t[27], workspace_size, executor);
}

// Both phases on `stream` (nullptr: synchronous), then synchronize. Returns the first error.
inline aclnnStatus mla_preprocess_call(const testdata::MlaPreprocessCase& c, const MlaPreprocessMutation& mutate = {},
                                       aclrtStream stream = nullptr) {
  GuardScope guard;
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus s = mla_preprocess_phase1(c, mutate, &ws_size, &ex);
  if (s != ACLNN_SUCCESS) return s;
  MlaPreprocessArgs a = args_of(c);
  if (mutate) mutate(a);
  return aclnn_phase2(a.v2 ? aclnnMlaPreprocessV2 : aclnnMlaPreprocess, ws_size, ex, stream);
}

}  // namespace mlaops::testing
