#include "ops/operators.h"

namespace mlaops {

const OperatorInfo* operator_table() {
  static const OperatorInfo kRows[] = {
      {"MlaPrologV3WeightNz", "aclnnMlaPrologV3WeightNzGetWorkspaceSize, aclnnMlaPrologV3WeightNz",
       "aclnnop/aclnn_mla_prolog_v3_weight_nz.h", true},
      {"MlaPrologV2WeightNz", "aclnnMlaPrologV2WeightNzGetWorkspaceSize, aclnnMlaPrologV2WeightNz",
       "aclnnop/aclnn_mla_prolog_v2_weight_nz.h", true},
      {"MlaProlog", "aclnnMlaPrologGetWorkspaceSize, aclnnMlaProlog", "aclnnop/aclnn_mla_prolog.h", true},
      {"MlaPreprocess", "aclnnMlaPreprocessGetWorkspaceSize, aclnnMlaPreprocess", "aclnnop/aclnn_mla_preprocess.h",
       true},
      {"FusedInferAttentionScoreV4",
       "aclnnFusedInferAttentionScoreV4GetWorkspaceSize, aclnnFusedInferAttentionScoreV4",
       "aclnnop/aclnn_fused_infer_attention_score_v4.h", true},
      {nullptr, nullptr, nullptr, false},
  };
  return kRows;
}

}  // namespace mlaops
