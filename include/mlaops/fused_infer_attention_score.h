// Public C++ parameters of FusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md).
//
// FiaParams mirrors the aclnnFusedInferAttentionScoreV4GetWorkspaceSize prototype field by field,
// in prototype order: tensors as TensorView, tensor lists as std::vector<TensorView>, optional
// tensors / int arrays as pointers (nullptr = absent), attributes with the aclnn defaults.
//
// Shape symbols: B batch, N = numHeads, KV_N = numKeyValueHeads (0 => N),
// Q_S / KV_S sequence extents, Q_D / K_D / V_D head dims, DR rope head dim, H = N*D (BSH),
// T total tokens of a packed (TND/NTD) tensor, blockNum / blockSize paged-cache geometry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/export.h"
#include "mlaops/plan.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// One side (input or output) of the inputLayout attribute "IN" or "IN_OUT".
enum class FiaLayout : int32_t {
  kBSH = 0,   // [B, S, N*D]
  kBSND = 1,  // [B, S, N, D]
  kBNSD = 2,  // [B, N, S, D]
  kTND = 3,   // [T, N, D]   (packed, cumulative actual lengths)
  kNTD = 4,   // [N, T, D]   (packed, cumulative actual lengths)
  kNBSD = 5,  // [N, B, S, D] (output only: BSH_NBSD, BSND_NBSD, BNSD_NBSD)
};

// Parses an inputLayout string of the A2/A3 V4 checker list: BSH, BSND, BNSD, TND, NTD,
// BSH_BNSD, BSND_BNSD, BNSD_BSND, NTD_TND, TND_NTD, BSH_NBSD, BSND_NBSD, BNSD_NBSD.
// On success writes the input layout to *in and the output layout to *out (= *in when the
// string has no "_OUT" part) and returns true; returns false (writing nothing) otherwise.
// Either pointer may be null.
MLAOPS_API bool parse_fia_layout(const std::string& layout, FiaLayout* in, FiaLayout* out);
// "BSH", "BSND", "BNSD", "TND", "NTD", "NBSD"; "?" for an unknown value.
MLAOPS_API const char* fia_layout_name(FiaLayout layout);
// True for TND and NTD.
inline bool fia_layout_is_packed(FiaLayout layout) {
  return layout == FiaLayout::kTND || layout == FiaLayout::kNTD;
}

struct FiaParams {
  // ---- tensors, in aclnn prototype order ----
  // BSH [B, Q_S, N*Q_D] | BSND [B, Q_S, N, Q_D] | BNSD [B, N, Q_S, Q_D] | TND [T_q, N, Q_D] |
  // NTD [N, T_q, Q_D]; FP16 / BF16 / INT8.
  TensorView query;
  // Tensor list (one tensor for contiguous or paged KV; B tensors of batch 1 for per-batch KV).
  // Contiguous: BSH [B, KV_S, KV_N*K_D] | BSND [B, KV_S, KV_N, K_D] | BNSD [B, KV_N, KV_S, K_D] |
  // TND [T_kv, KV_N, K_D] | NTD [KV_N, T_kv, K_D].
  // Paged (block_table given; independent of the layout, decided by rank):
  // BnBsH [blockNum, blockSize, KV_N*K_D] | BnNBsD [blockNum, KV_N, blockSize, K_D] |
  // NZ [blockNum, KV_N, K_D/16, blockSize, 16] (FP16/BF16; INT8: /32 and 32).
  // FP16 / BF16 / INT8 / INT4 (as INT32).
  std::vector<TensorView> key;
  // As key with K_D -> V_D (MLA: usually the same latent tensor as key).
  std::vector<TensorView> value;
  // [B or 1, N, >= max actQ, >= max actKV] of the query dtype, added to the scaled scores
  const TensorView* pse_shift = nullptr;
  // Sparse 0/1: [B or 1, >=Q_S, >=KV_S], [B or 1, 1, >=Q_S, >=KV_S], 2-D [Q_S, KV_S] (Q_S > 1) or
  // [B, KV_S] (Q_S == 1); sparse 2/3/4: [2048, 2048], [1, 2048, 2048], [1, 1, 2048, 2048].
  // BOOL / INT8 / UINT8, 1 = masked.
  const TensorView* atten_mask = nullptr;
  // (1) broadcast, (B) or (>B) per-batch query lengths; TND/NTD: (B) cumulative (last = T_q).
  const std::vector<int64_t>* actual_seq_lengths = nullptr;
  // (1), (B) or (>B) per-batch KV lengths; TND/NTD contiguous: (B) cumulative (last = T_kv);
  // paged: per batch (not cumulative), mandatory.
  const std::vector<int64_t>* actual_seq_lengths_kv = nullptr;
  const TensorView* deq_scale1 = nullptr;       // (1) UINT64 / FP32 (INT8 full quant)
  const TensorView* quant_scale1 = nullptr;     // (1) FP32
  const TensorView* deq_scale2 = nullptr;       // (1) UINT64 / FP32
  const TensorView* quant_scale2 = nullptr;     // (1) or per-channel N*V_D; FP32 / BF16
  const TensorView* quant_offset2 = nullptr;    // as quant_scale2
  const TensorView* antiquant_scale = nullptr;  // (2, ...) combined K/V antiquant scale
  const TensorView* antiquant_offset = nullptr; // as antiquant_scale
  const TensorView* block_table = nullptr;      // [B, >=ceil(max actKV / blockSize)] INT32
  const TensorView* query_padding_size = nullptr;  // (1) INT64
  const TensorView* kv_padding_size = nullptr;     // (1) INT64
  const TensorView* key_antiquant_scale = nullptr;     // per mode (docs/ops/fused_infer_attention_score.md)
  const TensorView* key_antiquant_offset = nullptr;    // as key_antiquant_scale
  const TensorView* value_antiquant_scale = nullptr;   // per mode (docs/ops/fused_infer_attention_score.md)
  const TensorView* value_antiquant_offset = nullptr;  // as value_antiquant_scale
  // BSH [1, Sp, KV_N*K_D] | BSND [1, Sp, KV_N, K_D] | BNSD [1, KV_N, Sp, K_D]
  const TensorView* key_shared_prefix = nullptr;
  const TensorView* value_shared_prefix = nullptr;     // as key_shared_prefix with V_D
  const std::vector<int64_t>* actual_shared_prefix_len = nullptr;  // (1)
  const TensorView* query_rope = nullptr;  // query shape with D -> DR (e.g. 64); FP16 / BF16
  const TensorView* key_rope = nullptr;    // key shape (contiguous or paged) with D -> DR
  const TensorView* key_rope_antiquant_scale = nullptr;  // reserved, must be null
  // Query shape without D: BSH/BSND [B, Q_S, N], TND [T, N], BNSD [B, N, Q_S]; FP32
  const TensorView* dequant_scale_query = nullptr;
  const TensorView* learnable_sink = nullptr;  // [N] FP16 / BF16: one softmax logit per query head

  // ---- attributes (aclnn defaults) ----
  int64_t num_heads = 1;  // N (required by aclnn; 1 = the torch default)
  double scale_value = 1.0;
  int64_t pre_tokens = 2147483647;
  int64_t next_tokens = 2147483647;
  std::string input_layout = "BSH";
  int64_t num_key_value_heads = 0;  // 0 => num_heads
  int64_t sparse_mode = 0;          // 0..4 (+9)
  int64_t inner_precise = 0;        // 0..3
  int64_t block_size = 0;           // 0 = no paged attention
  int64_t antiquant_mode = 0;
  bool softmax_lse_flag = false;
  int64_t key_antiquant_mode = 0;
  int64_t value_antiquant_mode = 0;
  int64_t query_quant_mode = 0;

  // ---- mlaops extension (not an aclnn parameter) ----
  // Rows that the explicit mask (sparseMode 0 / 1 attenMask, the decode mask) masks at every
  // position the sparse rule keeps give output 0 and lse +inf (the vendor golden's policy, the
  // default). true: with innerPrecise bit 1 == 0 such rows give what the NPU computes without its
  // row-invalid correction instead: the mean of V over the positions the rule keeps, with lse =
  // fill + log(count) (fill -65504 under the FP16 high-performance softmax, else -FLT_MAX); FP16 /
  // BF16 key / value without a shared prefix, learnableSink or the tree mask (else 0 / +inf).
  // docs/ops/fused_infer_attention_score.md "innerPrecise"; the aclnn entry points take it from
  // the environment variable MLAOPS_FIA_LEGACY_INVALID_ROWS=1 (docs/c-api.md).
  bool legacy_uniform_invalid_rows = false;

  // ---- outputs ----
  // Query shape with D -> V_D, re-laid-out per the output layout: BSH [B, Q_S, N*V_D] |
  // BSND [B, Q_S, N, V_D] | BNSD [B, N, Q_S, V_D] | NBSD [N, B, Q_S, V_D] | TND [T_q, N, V_D] |
  // NTD [N, T_q, V_D]; FP16 / BF16 / INT8.
  TensorView attention_out;
  // FP32 [B, N, Q_S, 1] (also for *_NBSD outputs); TND and NTD_TND: [T_q, N, 1] (the mlaops
  // reference also uses [T_q, N, 1] for NTD and TND_NTD, as the torch v2 glue does).
  // Written only when softmax_lse_flag.
  const TensorView* softmax_lse = nullptr;
};

// ---- C++ API (docs/ops/fused_infer_attention_score.md) ----
//
// The operator of aclnnFusedInferAttentionScoreV4 on FiaParams, in the scope of this build:
// FP16 / BF16 query, key, value (and MLA queryRope / keyRope) with attention_out of the query
// dtype, or INT8 key / value with KV antiquant, every layout, contiguous or paged (BnBsH,
// BnNBsD, NZ) KV, sparse modes 0..4 and 9 (the tree mask), pseShift (the ALiBi full bias too),
// learnableSink, softmaxLse, tensor-list key / value (one tensor of batch 1 per batch). Inputs
// of features outside the build (docs/ops/fused_infer_attention_score.md, "Not yet") are
// rejected with kParamInvalid ("... is not supported yet").
//
// Unlike the aclnn layer, the C++ API accepts any consistent shape: any head dims (odd ones
// too), any numHeads / numKeyValueHeads ratio, any block size, any rope dim, and the feature
// pairs the vendor excludes (e.g. a sink with MLA); the aclnn entry points additionally enforce
// the vendor's ranges and exclusions (rules FIA-19, FIA-24). Tensors must be dense (row-major
// contiguous).
//
// Workspace bytes the call needs (0 when nothing is computed). Validates like the call itself.
MLAOPS_API Status fused_infer_attention_score_v4_workspace_size(const FiaParams& p, uint64_t* workspace_size);
// Validates, then computes attention_out (and softmax_lse when softmax_lse_flag) using
// `workspace` (>= the size above). On any error nothing is written.
MLAOPS_API Status fused_infer_attention_score_v4(const FiaParams& p, void* workspace, uint64_t workspace_size);

// The same call in two phases (include/mlaops/plan.h): validate and plan once, then run the plan
// on tensors of the planned shapes, dtypes, attributes and host arrays (e.g. every layer of a
// decode step) any number of times. _run refuses tensors that differ from the planned call
// (rule FIA-25) and re-checks their pointers (FIA-17, FIA-18) and the block ids (FIA-13).
MLAOPS_API Status fused_infer_attention_score_v4_plan(const FiaParams& p, OpPlan* plan);
MLAOPS_API Status fused_infer_attention_score_v4_run(const OpPlan& plan, const FiaParams& p, void* workspace,
                                                     uint64_t workspace_size);

}  // namespace mlaops
