// One call of each operator through the C API as a self-contained job for the concurrency tests
// (tests/concurrency/test_concurrency.cpp, docs/reliability/concurrency.md): its own inputs,
// outputs and caches (every job of a kind is built from the same seed, so every job of a kind
// must produce the same bytes), both phases on a given stream, and the bytes it wrote.
#pragma once

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/plan.h"
#include "ops/fia/fia_entry_call.h"
#include "ops/fia/fia_harness.h"
#include "ops/mla_preprocess/mla_preprocess_aclnn_call.h"
#include "ops/mla_prolog/mla_prolog_aclnn_call.h"

namespace mlaops::testing {

enum class JobKind { kMlaPrologV2, kMlaPrologV3, kMlaPreprocess, kFiaV4, kIfaV4, kPfaV3 };

inline const std::vector<JobKind>& all_job_kinds() {
  static const std::vector<JobKind> v = {JobKind::kMlaPrologV2, JobKind::kMlaPrologV3, JobKind::kMlaPreprocess,
                                         JobKind::kFiaV4,       JobKind::kIfaV4,       JobKind::kPfaV3};
  return v;
}

inline const char* job_name(JobKind k) {
  switch (k) {
    case JobKind::kMlaPrologV2: return "aclnnMlaPrologV2WeightNz";
    case JobKind::kMlaPrologV3: return "aclnnMlaPrologV3WeightNz";
    case JobKind::kMlaPreprocess: return "aclnnMlaPreprocess";
    case JobKind::kFiaV4: return "aclnnFusedInferAttentionScoreV4";
    case JobKind::kIfaV4: return "aclnnIncreFlashAttentionV4";
    case JobKind::kPfaV3: return "aclnnPromptFlashAttentionV3";
  }
  return "?";
}

struct Job {
  JobKind kind = JobKind::kMlaPrologV2;
  // Phase 1, then phase 2 on `stream` (nullptr: synchronous), then aclrtSynchronizeStream.
  std::function<aclnnStatus(aclrtStream)> call;
  // Phase 1 only (the misuse tests drive phase 2 themselves through run()).
  std::function<aclnnStatus(uint64_t*, aclOpExecutor**)> phase1;
  std::function<aclnnStatus(void*, uint64_t, aclOpExecutor*, aclrtStream)> run;
  // Every output and cache byte the call may write, concatenated.
  std::function<std::string()> result;
  // The plan's explain() of this call (the tests read its thread count).
  std::function<std::string()> explain;
  void* out0 = nullptr;  // the address of output 0 (aclSetOutputTensorAddr index 0)
};

inline void append_bytes(std::string* s, const testdata::HostTensor& h) {
  s->append(reinterpret_cast<const char*>(h.bytes.data()), h.bytes.size());
}
inline void append_bytes(std::string* s, const fia_test::HostTensor& h) {
  s->append(reinterpret_cast<const char*>(h.storage.data()), h.storage.size() * sizeof(uint64_t));
}

// The thread count a plan's explain() states ("heads on N thread(s)" for MlaProlog /
// MlaPreprocess, ", N threads;" for the attention operators); 0 when it states none.
inline int explained_threads(const std::string& e) {
  size_t at = e.find("heads on ");
  if (at != std::string::npos) return std::atoi(e.c_str() + at + 9);
  at = e.find(" threads;");
  if (at == std::string::npos) return 0;
  size_t b = at;
  while (b > 0 && e[b - 1] >= '0' && e[b - 1] <= '9') --b;
  return std::atoi(e.c_str() + b);
}

// A case of its own for one job: views onto the prototype's read-only inputs (made once per
// kind: drawing the weights is most of the cost under ThreadSanitizer) and copies of everything
// a call writes, and of the cacheIndex (a test edits it).
template <class Case>
std::shared_ptr<Case> copy_case(const Case& proto, std::initializer_list<testdata::HostTensor Case::*> inputs,
                                std::initializer_list<testdata::HostTensor Case::*> owned) {
  auto c = std::make_shared<Case>();
  c->cfg = proto.cfg;
  for (auto m : inputs) ((*c).*m).view = (proto.*m).view;
  for (auto m : owned) (*c).*m = (proto.*m).clone();
  return c;
}

inline std::shared_ptr<testdata::MlaPrologCase> mla_prolog_case(bool v3) {
  using C = testdata::MlaPrologCase;
  static const auto protos = [] {
    std::vector<std::unique_ptr<C>> v;
    for (bool three : {false, true}) {
      // the vendor's sizes (the C API checks them), 2 heads, 2 tokens [2, 1, He]
      testdata::MlaPrologCaseConfig cfg = testdata::vendor_small_cfg(
          three ? MlaPrologScenario::kPartialQuantKvQuant : MlaPrologScenario::kNoQuant, true, MlaPrologCacheMode::kPaBsnd);
      cfg.B = 2;
      cfg.He = three ? 1024 : 6144;  // the smallest hidden size each version accepts
      cfg.seed = three ? 31 : 17;
      v.push_back(std::make_unique<C>(testdata::make_mla_prolog_case(cfg)));
    }
    return v;
  }();
  return copy_case<C>(*protos[v3 ? 1 : 0],
                      {&C::token_x, &C::weight_dq, &C::weight_uq_qr, &C::weight_uk, &C::weight_dkv_kr,
                       &C::rmsnorm_gamma_cq, &C::rmsnorm_gamma_ckv, &C::rope_sin, &C::rope_cos, &C::dequant_scale_x,
                       &C::dequant_scale_w_dq, &C::dequant_scale_w_uq_qr, &C::dequant_scale_w_dkv_kr,
                       &C::quant_scale_ckv, &C::quant_scale_ckr, &C::smooth_scales_cq, &C::actual_seq_len,
                       &C::k_nope_clip_alpha},
                      {&C::cache_index, &C::kv_cache, &C::kr_cache, &C::query_out, &C::query_rope_out,
                       &C::dequant_scale_q_nope_out, &C::query_norm_out, &C::dequant_scale_q_norm_out});
}

inline std::unique_ptr<Job> mla_prolog_job(bool v3) {
  auto c = mla_prolog_case(v3);
  MlaPrologCall call;
  call.v3 = v3;
  auto j = std::make_unique<Job>();
  j->kind = v3 ? JobKind::kMlaPrologV3 : JobKind::kMlaPrologV2;
  j->call = [c, call](aclrtStream s) { return mla_prolog_call(*c, call, s); };
  j->phase1 = [c, call](uint64_t* ws, aclOpExecutor** ex) { return mla_prolog_phase1(*c, call, ws, ex); };
  j->run = [v3](void* ws, uint64_t n, aclOpExecutor* ex, aclrtStream s) {
    return v3 ? aclnnMlaPrologV3WeightNz(ws, n, ex, s) : aclnnMlaPrologV2WeightNz(ws, n, ex, s);
  };
  j->result = [c] {
    std::string s;
    for (const testdata::HostTensor* h : {&c->query_out, &c->query_rope_out, &c->kv_cache, &c->kr_cache,
                                          &c->dequant_scale_q_nope_out, &c->query_norm_out, &c->dequant_scale_q_norm_out})
      append_bytes(&s, *h);
    return s;
  };
  j->out0 = c->query_out.view.data;
  j->explain = [c] {
    OpPlan plan;
    return mla_prolog_plan(c->params(), &plan) == kSuccess ? plan.explain() : std::string();
  };
  return j;
}

inline std::unique_ptr<Job> mla_preprocess_job() {
  using C = testdata::MlaPreprocessCase;
  static const auto proto = [] {
    // the vendor's sizes (the C API checks them), 2 tokens, 16 heads
    return std::make_unique<C>(testdata::make_mla_preprocess_case(testdata::vendor_cfg(
        {DType::kFloat16, 2, 16, MlaPreprocessCacheMode::kKvCache, MlaPreprocessQuantMode::kPerTensorAsymm, false,
         testdata::MlaPreprocessWeightForm::kNz4d, false},
        23)));
  }();
  auto c = copy_case<C>(*proto,
                        {&C::input, &C::gamma0, &C::beta0, &C::quant_scale0, &C::quant_offset0, &C::wdqkv,
                         &C::de_scale0, &C::bias0, &C::gamma1, &C::beta1, &C::quant_scale1, &C::quant_offset1, &C::wuq,
                         &C::de_scale1, &C::bias1, &C::gamma2, &C::cos, &C::sin, &C::wuk, &C::slot_mapping,
                         &C::ctkv_scale, &C::q_nope_scale},
                        {&C::kv_cache, &C::kv_cache_rope, &C::q_out, &C::q_rope_out, &C::q_down_out});
  auto j = std::make_unique<Job>();
  j->kind = JobKind::kMlaPreprocess;
  j->call = [c](aclrtStream s) { return mla_preprocess_call(*c, {}, s); };
  j->phase1 = [c](uint64_t* ws, aclOpExecutor** ex) { return mla_preprocess_phase1(*c, {}, ws, ex); };
  j->run = [](void* ws, uint64_t n, aclOpExecutor* ex, aclrtStream s) { return aclnnMlaPreprocess(ws, n, ex, s); };
  j->result = [c] {
    std::string s;
    for (const testdata::HostTensor* h : {&c->q_out, &c->q_rope_out, &c->kv_cache, &c->kv_cache_rope, &c->q_down_out})
      append_bytes(&s, *h);
    return s;
  };
  j->out0 = c->q_out.view.data;
  j->explain = [c] {
    OpPlan plan;
    return mla_preprocess_plan(c->params(), &plan) == kSuccess ? plan.explain() : std::string();
  };
  return j;
}

// The attention jobs: FIA V4 (GQA prefill, paged KV, lse), IFA V4 (decode, Q_S = 1), PFA V3 (prefill).
inline std::unique_ptr<Job> attention_job(JobKind kind) {
  const bool decode = kind == JobKind::kIfaV4;
  FiaCase fc = fia_case("", DType::kBFloat16, 2, 4, 2, decode ? 1 : 5, 40, 64, "BSH");
  fc.cfg.lse = kind == JobKind::kFiaV4;
  fc.seed = 5 + static_cast<uint32_t>(kind);
  if (kind != JobKind::kPfaV3) paged(fc, 3, 16);
  struct Owned {
    std::unique_ptr<FiaCaseData> data;
    std::unique_ptr<fia_test::FiaRun> run;
    FiaAclArgs args;
  };
  auto o = std::make_shared<Owned>();
  o->data = make_case_data(fc);
  o->run = fia_test::build_fia_run(o->data->canon, o->data->cfg);
  o->args = acl_args_of(*o->run);
  const Entry e = kind == JobKind::kFiaV4 ? Entry::kFiaV4 : decode ? Entry::kIfaV4 : Entry::kPfaV3;
  auto j = std::make_unique<Job>();
  j->kind = kind;
  j->call = [o, e](aclrtStream s) { return entry_call(e, o->args, s); };
  j->phase1 = [o, e](uint64_t* ws, aclOpExecutor** ex) { return entry_phase1(e, o->args, ws, ex); };
  j->run = [e](void* ws, uint64_t n, aclOpExecutor* ex, aclrtStream s) { return entry_phase2(e, ws, n, ex, s); };
  j->result = [o] {
    std::string s;
    append_bytes(&s, o->run->out);
    append_bytes(&s, o->run->lse);
    return s;
  };
  j->out0 = o->run->out.data();
  j->explain = [o] {
    OpPlan plan;
    return fused_infer_attention_score_v4_plan(o->run->params, &plan) == kSuccess ? plan.explain() : std::string();
  };
  return j;
}

inline std::unique_ptr<Job> make_job(JobKind k) {
  switch (k) {
    case JobKind::kMlaPrologV2: return mla_prolog_job(false);
    case JobKind::kMlaPrologV3: return mla_prolog_job(true);
    case JobKind::kMlaPreprocess: return mla_preprocess_job();
    default: return attention_job(k);
  }
}

}  // namespace mlaops::testing
