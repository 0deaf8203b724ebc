// FusedInferAttentionScoreV4 MLA full quant (docs/ops/fused_infer_attention_score.md "MLA full
// quant"): INT8 query with dequantScaleQuery (queryQuantMode 3, per token x head), INT8 paged
// FRACTAL_NZ latent cache as key and value with per-tensor FP32 scales, BF16 rope (queryRope,
// keyRope NZ), BF16 output:
//   s = scaleValue * dequantScaleQuery[b,s,n] * keyScale * (q_int8 . k_int8 + queryRope . keyRope)
//   out = softmax(s) . (v_int8 * valueScale)
// The rules (FIA-27 dtypes and presence, FIA-28 shapes, layouts and masks, FIA-29 scales and
// exclusions), the plan (tasks of (batch, heads) rows) and the run on the mlaq kernel family
// (kernels/cpu/attention/flash_mlaq.h).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cpu/attention/flash_mlaq.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;
struct FiaPlan;
struct FiaCheckOptions;

struct FiaMlaQuant {
  bool on = false;
  int64_t dq_b = 0, dq_n = 0, dq_s = 0;  // dequantScaleQuery element (b, n, s): b*dq_b + n*dq_n + s*dq_s (s absolute)
  int64_t heads = 1;                     // query heads per task (plan)
  int64_t rows = 1;                      // the most query rows of a task (heads x tokens)
  kernels::FlashMlaqFn fn = nullptr;     // the kernel row (plan)
  int row = 0;
};

// Whether the call asks for MLA full quant: dequantScaleQuery given, or an INT8 query with queryRope.
bool fia_mla_quant_requested(const FiaParams& p);
// FIA-27: dtypes and presence of every tensor of the feature (in place of the dtype table).
Status fia_mla_quant_check_dtypes(const FiaParams& p, const char* op);
// FIA-28 / FIA-29 (and the vendor ranges under o.vendor_ranges), once fia_check has parsed the
// query, key, value and ropes into c; fills c->mq.
Status fia_mla_quant_check(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c);
// FIA-17: data pointers of the feature's inputs not in the generic list.
Status fia_mla_quant_check_pointers(const FiaParams& p, const char* op);
// Tasks (batch, first head, heads) in P->items as {b, h = first head, r0 = 0, rows = heads},
// the kernel row and the per-thread workspace.
Status fia_mla_quant_plan(FiaPlan* P, const char* op);
std::string fia_mla_quant_explain(const FiaPlan& P);
// Runs the plan's tasks (after fia_run's pre-pass, workspace check and padded rows).
Status fia_mla_quant_run(const FiaParams& p, const FiaPlan& P, void* workspace);

}  // namespace mlaops
