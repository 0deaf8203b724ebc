#include "ops/operators.h"

namespace mlaops {

const OperatorInfo* operator_table() {
  static const OperatorInfo kRows[] = {
      {"MlaPrologV2WeightNz", "aclnnMlaPrologV2WeightNzGetWorkspaceSize, aclnnMlaPrologV2WeightNz",
       "aclnnop/aclnn_mla_prolog_v2_weight_nz.h", true},
      {"MlaProlog", "aclnnMlaPrologGetWorkspaceSize, aclnnMlaProlog", "aclnnop/aclnn_mla_prolog.h", true},
      {"MlaPreprocess", "aclnnMlaPreprocessGetWorkspaceSize, aclnnMlaPreprocess", "aclnnop/aclnn_mla_preprocess.h",
       true},
      {"MlaPreprocessV2", "aclnnMlaPreprocessV2GetWorkspaceSize, aclnnMlaPreprocessV2",
       "aclnnop/aclnn_mla_preprocess_v2.h", true},
      {"FusedInferAttentionScoreV4",
       "aclnnFusedInferAttentionScoreV4GetWorkspaceSize, aclnnFusedInferAttentionScoreV4",
       "aclnnop/aclnn_fused_infer_attention_score_v4.h", true},
      {nullptr, nullptr, nullptr, false},
  };
  return kRows;
}

}  // namespace mlaops
