// FusedInferAttentionScoreV4 phase 1, the rules of the score modifiers (docs/ops/fused_infer_attention_score.md):
// the explicit / template mask (FIA-14; the tree mask of sparse 9: ops/fia/fia_tree_mask.h), pseShift
// and learnableSink. Part of fia_check (ops/fia/fia_check.cpp), split by role.
#pragma once

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;
struct FiaCheckOptions;

namespace fia_checks {

Status check_mask(const FiaParams& p, const char* op, FiaCall* c);
Status check_pse(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c);
Status check_sink(const FiaParams& p, const char* op, FiaCall* c);

}  // namespace fia_checks
}  // namespace mlaops
