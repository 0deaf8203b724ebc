#include "ops/common/operators.h"

namespace mlaops {

#define MLAOPS_ENTRY(name, header) "aclnn" name "GetWorkspaceSize, aclnn" name, "aclnnop/" header

const OperatorInfo* operator_table() {
  static const OperatorInfo kRows[] = {
      {"MlaProlog", MLAOPS_ENTRY("MlaProlog", "aclnn_mla_prolog.h"), true, "MlaProlog", false,
       "BF16 no quant, partial quant (INT8 W_UQ_QR), BSND / TND tokens, PA_BSND / PA_NZ caches"},
      {"MlaPrologV2WeightNz", MLAOPS_ENTRY("MlaPrologV2WeightNz", "aclnn_mla_prolog_v2_weight_nz.h"), true,
       "MlaProlog", true,
       "FRACTAL_NZ weights; no quant, partial quant (+ per-channel KV quant), full quant (+ per-tensor KV quant, "
       "dequantScaleQNope); PA_BSND / PA_NZ caches"},
      {"MlaPrologV3WeightNz", MLAOPS_ENTRY("MlaPrologV3WeightNz", "aclnn_mla_prolog_v3_weight_nz.h"), true,
       "MlaProlog", false,
       "V2 plus the quant modes as attributes, qcQrScale / kcScale, queryNormOut, the BSND / TND / PA_BLK_BSND / "
       "PA_BLK_NZ cache modes, per-tile KV quant (kvCacheQuantMode 3); the V3 document's shape ranges"},
      {"MlaPrologV3", MLAOPS_ENTRY("MlaPrologV3", "aclnn_mla_prolog_v3.h"), true, "MlaProlog", false,
       "the vendor's unsupported entry point: both functions log \"not supported\" and return 561000 "
       "(ACLNN_ERR_INNER), nothing written; use MlaPrologV3WeightNz"},
      {"MlaPreprocess", MLAOPS_ENTRY("MlaPreprocess", "aclnn_mla_preprocess.h"), true, "MlaPreprocess", false,
       "FP16 / BF16 input, INT8 W_DQKV / W_UQ (per-tensor or per-token quant) or unquantized weights, cache "
       "modes 0..3"},
      {"MlaPreprocessV2", MLAOPS_ENTRY("MlaPreprocessV2", "aclnn_mla_preprocess_v2.h"), true, "MlaPreprocess",
       false, "MlaPreprocess plus qDownOut (the normalised q-LoRA activation)"},
      {"FusedInferAttentionScore", MLAOPS_ENTRY("FusedInferAttentionScore", "aclnn_fused_infer_attention_score.h"),
       true, "FusedInferAttentionScoreV4", true,
       "V4's features on V1's slots: prefill / decode, paged KV, GQA, masks, pseShift, INT8 KV antiquant, "
       "INT8 full quantisation (prefill), post-quant INT8 output, softmaxLse; INT32 KV rejected"},
      {"FusedInferAttentionScoreV2",
       MLAOPS_ENTRY("FusedInferAttentionScoreV2", "aclnn_fused_infer_attention_score_v2.h"), true,
       "FusedInferAttentionScoreV4", true, "V1 plus separate K / V antiquant inputs and the shared prefix"},
      {"FusedInferAttentionScoreV3",
       MLAOPS_ENTRY("FusedInferAttentionScoreV3", "aclnn_fused_infer_attention_score_v3.h"), true,
       "FusedInferAttentionScoreV4", true, "V2 plus queryRope / keyRope (the MLA rope path)"},
      {"FusedInferAttentionScoreV4",
       MLAOPS_ENTRY("FusedInferAttentionScoreV4", "aclnn_fused_infer_attention_score_v4.h"), true,
       "FusedInferAttentionScoreV4", false,
       "prefill and decode, every layout, paged KV, GQA, MLA rope, masks and sparse modes 0..4 and 9 (tree), pseShift / "
       "ALiBi, learnableSink, INT8 KV antiquant, INT8 full quantisation (GQA / MHA prefill: deqScale1 / quantScale1 / "
       "deqScale2), post-quant INT8 output (quantScale2 / quantOffset2), softmaxLse"},
      {"IncreFlashAttention", MLAOPS_ENTRY("IncreFlashAttention", "aclnn_incre_flash_attention.h"), true,
       "FusedInferAttentionScoreV4", true, "decode (Q_S = 1), FP16 / BF16, BSH / BSND / BNSD, GQA, mask; pseShift ignored, innerPrecise 1"},
      {"IncreFlashAttentionV2", MLAOPS_ENTRY("IncreFlashAttentionV2", "aclnn_incre_flash_attention_v2.h"), true,
       "FusedInferAttentionScoreV4", true, "as V1 plus post-quant INT8 output (an INT8 query is rejected as by the vendor: no full-quant "
       "decode); pseShift ignored, innerPrecise 1"},
      {"IncreFlashAttentionV3", MLAOPS_ENTRY("IncreFlashAttentionV3", "aclnn_incre_flash_attention_v3.h"), true,
       "FusedInferAttentionScoreV4", true, "V2 plus pseShift, INT8 KV antiquant, paged KV, innerPrecise"},
      {"IncreFlashAttentionV4", MLAOPS_ENTRY("IncreFlashAttentionV4", "aclnn_incre_flash_attention_v4.h"), true,
       "FusedInferAttentionScoreV4", false, "V3 plus kvPaddingSize (left padding of the KV)"},
      {"PromptFlashAttention", MLAOPS_ENTRY("PromptFlashAttention", "aclnn_prompt_flash_attention.h"), true,
       "FusedInferAttentionScoreV4", true, "prefill, FP16 / BF16, every layout but SH / NSD, mask, GQA; pseShift ignored, innerPrecise 1"},
      {"PromptFlashAttentionV2", MLAOPS_ENTRY("PromptFlashAttentionV2", "aclnn_prompt_flash_attention_v2.h"), true,
       "FusedInferAttentionScoreV4", true, "V1 plus KV lengths, sparse modes and the quant inputs (INT8 full quantisation, INT8 output)"},
      {"PromptFlashAttentionV3", MLAOPS_ENTRY("PromptFlashAttentionV3", "aclnn_prompt_flash_attention_v3.h"), true,
       "FusedInferAttentionScoreV4", false, "V2 plus pseShift and innerPrecise"},
      {nullptr, nullptr, nullptr, false, nullptr, false, nullptr},
  };
  return kRows;
}

#undef MLAOPS_ENTRY

}  // namespace mlaops
