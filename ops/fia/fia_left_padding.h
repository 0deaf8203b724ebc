// FusedInferAttentionScoreV4 left padding (queryPaddingSize / kvPaddingSize; rules FIA-40..42,
// docs/ops/fused_infer_attention_score.md "Left padding"): each batch's valid query rows and KV
// positions end `pad` rows before the end of the tensor instead of starting at 0. The feature is an
// addressing change only: it moves FiaCall::q_start / kv_start (the first valid row / position of a
// batch) and shifts the explicit mask and pseShift, which are addressed with the padded (absolute)
// coordinates; every kernel runs unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;
struct FiaPlan;
struct FiaCheckOptions;

struct FiaLeftPad {
  bool on = false;           // a padding applies (sparse 0: pre / next are ignored)
  bool q = false, kv = false;  // query padding (Q_S > 1 with actualSeqLengths), KV padding (with actualSeqLengthsKv)
  int64_t q_pad = 0, kv_pad = 0;  // the values read (negative clamped to 0)
  std::vector<int64_t> act_kv_in;  // actualSeqLengthsKv before the windows (a run may place them again)
};

// Phase 1: rules FIA-40 (tensor form), FIA-41 (exclusions), FIA-42 (windows inside the tensors),
// reads the padding values and moves c->q_start / c->kv_start (Q_S = 1 with a KV window starting
// before 0: that batch has no own position, output 0 / lse +inf, or the shared prefix alone when
// there is one; ops/fia/fia_prefix.h). Call after every other rule.
Status fia_left_padding_check(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c);
// Phase 2: the padding values present at run time (device data the caller may fill after
// planning). The planned values: *moved stays null and the plan runs as it is. Other values: the
// windows are placed again for them (FIA-40 when a window would start before row / position 0
// or pass the mask / pse extents) and *moved is the plan with only its windows (q_start,
// kv_start, act_kv) and padding values replaced: the call is planned once, its items, tasks,
// kernel rows and workspace stay (the plan bounds the KV by the lengths before the windows,
// fia_attn_sizes in ops/fia/fia_paths.h), so the output is bitwise that of a plan made with these
// values. Read only: nothing is written on failure.
Status fia_left_padding_run_windows(const FiaParams& p, const FiaPlan& plan, const char* op, std::unique_ptr<FiaPlan>* moved);

}  // namespace mlaops
