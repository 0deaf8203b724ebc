// FusedInferAttentionScoreV4 execution paths (ops/fia/fia_paths.h, docs/architecture.md "FIA paths").
#include "ops/fia/fia_paths.h"

#include "ops/fia/fia_full_quant.h"
#include "ops/fia/fia_mla_quant.h"
#include "ops/fia/fia_prefix.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

const char* mla_quant_why_not(const FiaCall& c, int /*threads*/) {
  return c.mq.on ? nullptr : "not MLA full quant (INT8 query and latent cache)";
}

Status mla_quant_run(const FiaRunArgs& a) { return fia_mla_quant_run(*a.p, *a.plan, a.workspace); }

const char* full_quant_why_not(const FiaCall& c, int /*threads*/) {
  return c.full_quant ? nullptr : "not INT8 full quantisation (INT8 query, key and value)";
}

// The prefix work range: units of every batch's rows read the prefix once per KV head.
const char* prefix_group_why_not(const FiaCall& c, int /*threads*/) { return fia_prefix_group_why_not(c); }

Status prefix_group_plan(FiaPlan* plan, const char* op) {
  plan->pgroup = true;
  return fia_attn_plan(plan, op);
}

// A shared prefix with one KV split per source: each task runs its two splits and the merge in
// one parallel region. More splits per source run as the attention path's KV splits.
const char* prefix_pair_why_not(const FiaCall& c, int threads) {
  if (!c.prefix.on) return "no shared prefix";
  if (fia_attn_sizes(c, threads, false).splits > 1) return "more than one KV split per source (fewer items than threads)";
  return nullptr;
}

const char* attention_why_not(const FiaCall& /*c*/, int /*threads*/) { return nullptr; }

// Most specific first; the last runs every call.
const FiaPath kPaths[] = {
    {"mla_quant", mla_quant_why_not, fia_mla_quant_plan, mla_quant_run},
    {"full_quant", full_quant_why_not, fia_full_quant_plan, fia_run_full_quant},
    {"prefix_group", prefix_group_why_not, prefix_group_plan, fia_run_prefix_group},
    {"prefix_pair", prefix_pair_why_not, fia_attn_plan, fia_run_prefix_pair},
    {"attention", attention_why_not, fia_attn_plan, fia_run_attention},
};

constexpr int kCount = static_cast<int>(sizeof(kPaths) / sizeof(kPaths[0]));

}  // namespace

int fia_path_count() { return kCount; }

const FiaPath& fia_path(int i) { return kPaths[i]; }

int fia_path_choose(const FiaCall& call, int threads, std::string* skipped) {
  for (int i = 0; i < kCount; ++i) {
    const char* why = kPaths[i].why_not(call, threads);
    if (why == nullptr) return i;
    if (skipped != nullptr) *skipped += std::string(skipped->empty() ? "" : "; ") + kPaths[i].name + ": " + why;
  }
  return kCount - 1;
}

}  // namespace mlaops
