// Phase 1 shared by every entry point of the fused-attention family: aclnnFusedInferAttentionScore
// V1..V4, aclnnIncreFlashAttention V1..V4 and aclnnPromptFlashAttention V1..V3 (docs/ops/
// fused_infer_attention_score.md, incre_flash_attention.md, prompt_flash_attention.md). Each entry
// point maps its arguments onto FusedInferAttentionScoreV4's slots, forces the values its version
// does not take, names its inner operator's inputs (the executor's input order) and calls
// fia_entry_workspace_size; phase 2 is the shared execute().
#pragma once

#include <cstddef>
#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace mlaops::api {

// FusedInferAttentionScoreV4's argument slots in prototype order (the int-array positions
// kAslQ, kAslKv, kPrefixLen are slots too; they are never bound to a tensor).
enum FiaSlot : int {
  kFiaQuery, kFiaKey, kFiaValue, kFiaPse, kFiaMask, kFiaAslQ, kFiaAslKv, kFiaDeq1, kFiaQs1, kFiaDeq2, kFiaQs2,
  kFiaQo2, kFiaAntiquantScale, kFiaAntiquantOffset, kFiaBlockTable, kFiaQPad, kFiaKvPad, kFiaKAqScale, kFiaKAqOffset,
  kFiaVAqScale, kFiaVAqOffset, kFiaKPrefix, kFiaVPrefix, kFiaPrefixLen, kFiaQRope, kFiaKRope, kFiaKRopeAqScale,
  kFiaDqsQuery, kFiaSink, kFiaNumSlots
};

// One input of an entry point's inner operator, in that operator's order (the executor's input
// index, as aclSetInputTensorAddr counts it): the V4 slot it fills and its name in messages.
struct FiaEntryInput {
  int slot;
  const char* name;
};

// The V4 inputs, in order, with the V4 names (FIA V2..V4 use them; V1 drops "Optional").
extern const FiaEntryInput kFiaV4Inputs[kFiaNumSlots];
extern const FiaEntryInput kFiaV1Inputs[kFiaNumSlots];

// Which operator's aclnn layer the entry point belongs to: the rules its wrapper adds.
//   kFia  inputLayout null -> "BSH" (the op definition's default)
//   kIfa  inputLayout null -> "BSH"; layouts BSH / BSND / BNSD; Q_S must be 1 (IFA-01, IFA-02)
//   kPfa  inputLayout null -> 161001; layouts BSH / BSND / BNSD / BNSD_BSND / TND / NTD (PFA-02);
//         an empty attentionOut -> success, workspace 0, nothing done (PFA-01)
enum class FiaFamily { kFia, kIfa, kPfa };

// One phase-1 call, already mapped onto V4: the entry point's own inputs fill their slots, every
// slot the entry point does not have (or ignores) stays null, forced attributes are set.
struct FiaEntry {
  const char* op = nullptr;
  FiaFamily family = FiaFamily::kFia;
  const FiaEntryInput* inputs = kFiaV4Inputs;
  size_t num_inputs = kFiaNumSlots;
  // FIA V2..V4, IFA V3/V4: an INT32 key / value is packed INT4 (KV antiquant, FIA-33);
  // otherwise INT32 is just a dtype the entry point does not take (FIA-03).
  bool int32_kv_is_int4 = true;
  // Arguments by V4 slot (key / value: the lists below, or single tensors in tensor[] for PFA).
  const aclTensor* tensor[kFiaNumSlots] = {};
  const aclTensorList* key_list = nullptr;
  const aclTensorList* value_list = nullptr;
  const aclIntArray* asl_q = nullptr;
  const aclIntArray* asl_kv = nullptr;
  const aclIntArray* prefix_len = nullptr;
  int64_t num_heads = 0;
  double scale = 1.0;
  int64_t pre = 2147483647, next = 2147483647;
  char* input_layout = nullptr;
  int64_t num_kv_heads = 0, sparse = 0, inner = 1, block_size = 0, antiquant_mode = 0;
  bool lse_flag = false;
  int64_t key_aq_mode = 0, value_aq_mode = 0, query_quant_mode = 0;
  const aclTensor* attention_out = nullptr;
  const aclTensor* softmax_lse = nullptr;
};

// Binds the arguments, copies the host arrays, checks (ops/fia/fia_check.cpp
// plus the family's rules above, messages naming e.op), plans and registers the executor (st->run
// and st->params set). The caller wraps it in guarded().
aclnnStatus fia_entry_workspace_size(const FiaEntry& e, uint64_t* workspaceSize, aclOpExecutor** executor);

}  // namespace mlaops::api
