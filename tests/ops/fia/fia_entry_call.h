// Calls any entry point of the fused-attention family — aclnnFusedInferAttentionScore V1..V4,
// aclnnIncreFlashAttention V1..V4, aclnnPromptFlashAttention V1..V3 — on V4-form arguments
// (FiaAclArgs): the entry point takes the arguments its prototype has (IFA: actualSeqLengths =
// the V4 KV lengths; PFA: key / value = the single tensors of the lists). mapped_v4 gives the V4
// arguments the entry point passes on (its forced values applied), for the bitwise comparison.
#pragma once

#include <string>
#include <vector>

#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "ops/fia/fia_aclnn_call.h"

namespace mlaops::testing {

enum class Entry { kFiaV1, kFiaV2, kFiaV3, kFiaV4, kIfaV1, kIfaV2, kIfaV3, kIfaV4, kPfaV1, kPfaV2, kPfaV3 };

inline const std::vector<Entry>& all_entries() {
  static const std::vector<Entry> v = {Entry::kFiaV1, Entry::kFiaV2, Entry::kFiaV3, Entry::kFiaV4,
                                       Entry::kIfaV1, Entry::kIfaV2, Entry::kIfaV3, Entry::kIfaV4,
                                       Entry::kPfaV1, Entry::kPfaV2, Entry::kPfaV3};
  return v;
}

inline const char* entry_name(Entry e) {
  switch (e) {
    case Entry::kFiaV1: return "aclnnFusedInferAttentionScore";
    case Entry::kFiaV2: return "aclnnFusedInferAttentionScoreV2";
    case Entry::kFiaV3: return "aclnnFusedInferAttentionScoreV3";
    case Entry::kFiaV4: return "aclnnFusedInferAttentionScoreV4";
    case Entry::kIfaV1: return "aclnnIncreFlashAttention";
    case Entry::kIfaV2: return "aclnnIncreFlashAttentionV2";
    case Entry::kIfaV3: return "aclnnIncreFlashAttentionV3";
    case Entry::kIfaV4: return "aclnnIncreFlashAttentionV4";
    case Entry::kPfaV1: return "aclnnPromptFlashAttention";
    case Entry::kPfaV2: return "aclnnPromptFlashAttentionV2";
    case Entry::kPfaV3: return "aclnnPromptFlashAttentionV3";
  }
  return "?";
}

inline bool is_fia(Entry e) { return e <= Entry::kFiaV4; }
inline bool is_ifa(Entry e) { return e >= Entry::kIfaV1 && e <= Entry::kIfaV4; }
inline bool is_pfa(Entry e) { return e >= Entry::kPfaV1; }

// The V4 arguments entry point `e` passes on when called with `a`.
inline FiaAclArgs mapped_v4(Entry e, const FiaAclArgs& a) {
  FiaAclArgs m = a;
  auto keep_only = [&](std::initializer_list<int> slots) {
    for (int i = 3; i < FiaAclArgs::kIn; ++i) {
      bool keep = false;
      for (int s : slots) keep = keep || s == i;
      if (!keep) m.passed[i] = false;
    }
  };
  switch (e) {
    case Entry::kFiaV1:
      for (int i = 17; i < FiaAclArgs::kIn; ++i) m.passed[i] = false;
      m.has_prefix = false;
      m.key_aq_mode = m.value_aq_mode = m.query_quant_mode = 0;
      break;
    case Entry::kFiaV2:
      for (int i = 24; i < FiaAclArgs::kIn; ++i) m.passed[i] = false;
      m.query_quant_mode = 0;
      break;
    case Entry::kFiaV3:
      m.passed[27] = m.passed[28] = false;
      m.query_quant_mode = 0;
      break;
    case Entry::kFiaV4: break;
    default: break;
  }
  if (is_ifa(e)) {
    if (e == Entry::kIfaV1) keep_only({4});
    if (e == Entry::kIfaV2) keep_only({4, 7, 8, 9, 10, 11});
    if (e == Entry::kIfaV3) keep_only({3, 4, 7, 8, 9, 10, 11, 12, 13, 14});
    if (e == Entry::kIfaV4) keep_only({3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 16});
    if (e == Entry::kIfaV1 || e == Entry::kIfaV2) {
      m.inner = 1;
      m.block_size = 0;
    }
    m.has_asl_q = false;
    m.has_prefix = false;
    m.pre = m.next = 2147483647;
    m.sparse = 0;
    m.antiquant_mode = 0;
    m.key_aq_mode = m.value_aq_mode = m.query_quant_mode = 0;
    m.lse_flag = false;
    m.lse_passed = false;
    if (a.null_layout) {
      m.null_layout = false;
      m.layout = "BSH";
    }
  }
  if (is_pfa(e)) {
    if (e == Entry::kPfaV1) keep_only({4});
    if (e == Entry::kPfaV2) keep_only({4, 7, 8, 9, 10, 11});
    if (e == Entry::kPfaV3) keep_only({3, 4, 7, 8, 9, 10, 11});
    if (e == Entry::kPfaV1) {
      m.has_asl_kv = false;
      m.sparse = 0;
    }
    if (e != Entry::kPfaV3) m.inner = 1;
    m.has_prefix = false;
    m.block_size = 0;
    m.antiquant_mode = 0;
    m.key_aq_mode = m.value_aq_mode = m.query_quant_mode = 0;
    m.lse_flag = false;
    m.lse_passed = false;
  }
  return m;
}

// Phase 1 of entry point `e` on `a`.
inline aclnnStatus entry_phase1(Entry e, const FiaAclArgs& args, uint64_t* ws_size, aclOpExecutor** ex) {
  if (e == Entry::kFiaV4) return fia_phase1(args, ws_size, ex);
  const FiaAclObjects o(args);
  const FiaAclArgs& a = o.a;
  const std::vector<AclTensor>& t = o.t;
  const AclTensorListHandle &key = o.key, &value = o.value;
  const AclIntArrayHandle &aq = o.aq, &akv = o.akv, &apre = o.apre;
  const AclTensor &out = o.out, &lse = o.lse;
  char* const lp = o.lp;
  AclTensor key1(a.in[1], !a.key_list_null), value1(a.in[2], !a.value_list_null);  // PFA
  uint64_t* w = a.null_workspace_size ? nullptr : ws_size;
  aclOpExecutor** x = a.null_executor ? nullptr : ex;
  switch (e) {
    case Entry::kFiaV1:
      return aclnnFusedInferAttentionScoreGetWorkspaceSize(
          t[0], key.get(), value.get(), t[3], t[4], aq.get(), akv.get(), t[7], t[8], t[9], t[10], t[11], t[12], t[13],
          t[14], t[15], t[16], a.num_heads, a.scale, a.pre, a.next, lp, a.kvn, a.sparse, a.inner, a.block_size,
          a.antiquant_mode, a.lse_flag, out, lse, w, x);
    case Entry::kFiaV2:
      return aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
          t[0], key.get(), value.get(), t[3], t[4], aq.get(), akv.get(), t[7], t[8], t[9], t[10], t[11], t[12], t[13],
          t[14], t[15], t[16], t[17], t[18], t[19], t[20], t[21], t[22], apre.get(), a.num_heads, a.scale, a.pre,
          a.next, lp, a.kvn, a.sparse, a.inner, a.block_size, a.antiquant_mode, a.lse_flag, a.key_aq_mode,
          a.value_aq_mode, out, lse, w, x);
    case Entry::kFiaV3:
      return aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
          t[0], key.get(), value.get(), t[3], t[4], aq.get(), akv.get(), t[7], t[8], t[9], t[10], t[11], t[12], t[13],
          t[14], t[15], t[16], t[17], t[18], t[19], t[20], t[21], t[22], apre.get(), t[24], t[25], t[26], a.num_heads,
          a.scale, a.pre, a.next, lp, a.kvn, a.sparse, a.inner, a.block_size, a.antiquant_mode, a.lse_flag,
          a.key_aq_mode, a.value_aq_mode, out, lse, w, x);
    case Entry::kIfaV1:
      return aclnnIncreFlashAttentionGetWorkspaceSize(t[0], key.get(), value.get(), t[3], t[4], akv.get(),
                                                      a.num_heads, a.scale, lp, a.kvn, out, w, x);
    case Entry::kIfaV2:
      return aclnnIncreFlashAttentionV2GetWorkspaceSize(t[0], key.get(), value.get(), t[3], t[4], akv.get(), t[7],
                                                        t[8], t[9], t[10], t[11], a.num_heads, a.scale, lp, a.kvn,
                                                        out, w, x);
    case Entry::kIfaV3:
      return aclnnIncreFlashAttentionV3GetWorkspaceSize(t[0], key.get(), value.get(), t[3], t[4], akv.get(), t[7],
                                                        t[8], t[9], t[10], t[11], t[12], t[13], t[14], a.num_heads,
                                                        a.scale, lp, a.kvn, a.block_size, a.inner, out, w, x);
    case Entry::kIfaV4:
      return aclnnIncreFlashAttentionV4GetWorkspaceSize(t[0], key.get(), value.get(), t[3], t[4], akv.get(), t[7],
                                                        t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[16],
                                                        a.num_heads, a.scale, lp, a.kvn, a.block_size, a.inner, out,
                                                        w, x);
    case Entry::kPfaV1:
      return aclnnPromptFlashAttentionGetWorkspaceSize(t[0], key1, value1, t[3], t[4], aq.get(), a.num_heads, a.scale,
                                                       a.pre, a.next, lp, a.kvn, out, w, x);
    case Entry::kPfaV2:
      return aclnnPromptFlashAttentionV2GetWorkspaceSize(t[0], key1, value1, t[3], t[4], aq.get(), akv.get(), t[7],
                                                         t[8], t[9], t[10], t[11], a.num_heads, a.scale, a.pre,
                                                         a.next, lp, a.kvn, a.sparse, out, w, x);
    case Entry::kPfaV3:
      return aclnnPromptFlashAttentionV3GetWorkspaceSize(t[0], key1, value1, t[3], t[4], aq.get(), akv.get(), t[7],
                                                         t[8], t[9], t[10], t[11], a.num_heads, a.scale, a.pre,
                                                         a.next, lp, a.kvn, a.sparse, a.inner, out, w, x);
    case Entry::kFiaV4: break;
  }
  return ACLNN_ERR_RUNTIME_ERROR;
}

inline aclnnStatus entry_phase2(Entry e, void* ws, uint64_t size, aclOpExecutor* ex, aclrtStream stream) {
  switch (e) {
    case Entry::kFiaV1: return aclnnFusedInferAttentionScore(ws, size, ex, stream);
    case Entry::kFiaV2: return aclnnFusedInferAttentionScoreV2(ws, size, ex, stream);
    case Entry::kFiaV3: return aclnnFusedInferAttentionScoreV3(ws, size, ex, stream);
    case Entry::kFiaV4: return aclnnFusedInferAttentionScoreV4(ws, size, ex, stream);
    case Entry::kIfaV1: return aclnnIncreFlashAttention(ws, size, ex, stream);
    case Entry::kIfaV2: return aclnnIncreFlashAttentionV2(ws, size, ex, stream);
    case Entry::kIfaV3: return aclnnIncreFlashAttentionV3(ws, size, ex, stream);
    case Entry::kIfaV4: return aclnnIncreFlashAttentionV4(ws, size, ex, stream);
    case Entry::kPfaV1: return aclnnPromptFlashAttention(ws, size, ex, stream);
    case Entry::kPfaV2: return aclnnPromptFlashAttentionV2(ws, size, ex, stream);
    case Entry::kPfaV3: return aclnnPromptFlashAttentionV3(ws, size, ex, stream);
  }
  return ACLNN_ERR_RUNTIME_ERROR;
}

// Both phases of `e` on `stream` (nullptr: synchronous), then synchronize; the first error.
inline aclnnStatus entry_call(Entry e, const FiaAclArgs& a, aclrtStream stream = nullptr,
                              uint64_t* ws_out = nullptr) {
  GuardScope guard;
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus s = entry_phase1(e, a, &ws_size, &ex);
  if (s != ACLNN_SUCCESS) return s;
  if (ws_out != nullptr) *ws_out = ws_size;
  const auto run = [e](void* ws, uint64_t size, aclOpExecutor* x, aclrtStream st) {
    return entry_phase2(e, ws, size, x, st);
  };
  return aclnn_phase2(run, ws_size, ex, stream);
}

}  // namespace mlaops::testing
