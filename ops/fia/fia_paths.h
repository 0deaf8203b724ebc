// FusedInferAttentionScoreV4 execution paths (docs/architecture.md "FIA paths"): one ordered
// table, most specific first, as the kernel registry's families are. A row says whether it runs
// a call (why_not: null, or the reason it does not), plans it and runs the plan. fia_plan takes
// the first row that runs the call and records it (FiaPlan::path; fia_explain names it with the
// reasons of the rows before it); fia_run calls that row's run after the shared pre-pass and
// decides nothing. The attention family's rows for each kind of item are chosen inside a path's
// plan (kernels/cpu/attention/attn.h).
#pragma once

#include <cstdint>
#include <string>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;
struct FiaPlan;

// What a path's run gets after the pre-pass (fia_run): the call's tensors (strided inputs already
// read from their dense copies), the plan, the plan's own workspace (after those copies) and the
// post-quant floats (null without post-quant).
struct FiaRunArgs {
  const FiaParams* p = nullptr;
  const FiaPlan* plan = nullptr;
  void* workspace = nullptr;
  uint64_t workspace_size = 0;
  const float* pq = nullptr;
};

struct FiaPath {
  const char* name;
  // Null when the path runs the call at `threads` threads, else why not.
  const char* (*why_not)(const FiaCall& call, int threads);
  // Fills the plan (FiaPlan::isa, threads and the call's facts already set).
  Status (*plan)(FiaPlan* plan, const char* op);
  Status (*run)(const FiaRunArgs& a);
};

// The rows in order; the last (attention) runs every call.
int fia_path_count();
const FiaPath& fia_path(int i);
// The index of the first row that runs `call`; *skipped (optional) receives "name: reason" of the
// rows before it, "; " separated.
int fia_path_choose(const FiaCall& call, int threads, std::string* skipped);

// The sizes the attention paths plan with (fia_plan.cpp), also what
// the prefix rows' why_not read: query rows per item, KV positions per panel block, the number
// of work items, the longest KV the splits see and the KV splits per item before the shared
// prefix doubles them (`pgroup`: the prefix work range, whose splits cover the own rows only).
// With left padding the lengths before the windows bound the KV (a run may move the windows,
// ops/fia/fia_left_padding.h), so a plan fits every padding value.
struct FiaAttnSizes {
  int64_t R = 1, tile = 64, n_items = 0, max_kv = 0, split_kv = 0, splits = 1;
};
FiaAttnSizes fia_attn_sizes(const FiaCall& call, int threads, bool pgroup);

// The attention paths' plan: items, KV splits, tasks, the attention family's rows, workspace;
// the prefix work range (FiaPlan::pgroup) when the path set it before.
Status fia_attn_plan(FiaPlan* plan, const char* op);

// The runs of the attention paths (fia_run.cpp): every task's KV splits
// then the merges (attention); a shared prefix in one region, each task its prefix split, its own
// split and the merge (prefix_pair); the prefix work range (prefix_group); INT8 full
// quantisation, one item per task (full_quant).
Status fia_run_attention(const FiaRunArgs& a);
Status fia_run_prefix_pair(const FiaRunArgs& a);
Status fia_run_prefix_group(const FiaRunArgs& a);
Status fia_run_full_quant(const FiaRunArgs& a);

}  // namespace mlaops
