// FusedInferAttentionScoreV4: the vendor's rules that the spec audit (docs/ops/fia_rule_audit.md)
// found without a check, as data. Each row is one clause of the spec (§2 / §3 / §4 of
// fused-infer-attention-score.md): a context (feature A) and, inside it, the configuration the
// vendor rejects (feature B), with its rule id, the parameter the message names, the allowed
// values and the actual ones. Like FIA-19 and FIA-24 they apply to the aclnn layer only (the
// C++ API computes every such call; the float64 reference defines the result). The rows reuse
// the family ids where they fit (FIA-19 vendor limits, FIA-21 KV antiquant, FIA-24 feature
// pairs, FIA-28 MLA full quant) and add FIA-56 (layouts) and FIA-57 (sparse modes and tokens).
// The negative tests (tests/ops/fia/test_fia_exclusions.cpp) hit every row.
#pragma once

#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;

struct FiaVendorRule {
  const char* rule;     // rule id, e.g. "FIA-24"
  const char* param;    // the parameter the message names
  const char* context;  // feature A, in words ("MLA with D 512")
  bool (*in_context)(const FiaParams& p, const FiaCall& c);
  const char* what;  // feature B, in words: what the context excludes
  bool (*violates)(const FiaParams& p, const FiaCall& c);  // evaluated only in the context
  const char* allowed;                                     // the allowed values
  std::string (*got)(const FiaParams& p, const FiaCall& c);  // the actual values
};

// The rows, checked in this order.
const std::vector<FiaVendorRule>& fia_vendor_rules();

// The first row whose context holds and which the call violates: 161002, with
// "<op>: <param>: <rule> <context> excludes <what> (...); allowed <allowed>, got <got>".
// Called by fia_check after the other rules, aclnn layer only (FiaCheckOptions::vendor_ranges).
Status fia_check_vendor_rules(const FiaParams& p, const char* op, const FiaCall& c);

}  // namespace mlaops
