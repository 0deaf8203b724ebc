// FusedInferAttentionScoreV4 INT8 full quantisation (GQA / MHA prefill; docs/ops/fused_infer_attention_score.md
// "Full quantisation (INT8 query)"): INT8 query / key / value with the per-tensor scales
// deqScale1, quantScale1, deqScale2, output FP16 or INT8 (post-quant, FIA-26). The online softmax
// over KV chunks (its formulas) is the kernel's, kernels/cpu/attention/flash_quant_loop.h; deq1 / deq2 are
// the 19-bit values (low 13 mantissa bits of the float32 pattern cleared; UINT64: the float32
// pattern in the low 32 bits).
// The rules (FIA-30..32) live here; the operator's check / plan / run call these functions.
#pragma once

#include <cstdint>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

namespace kernels {
struct FlashItem;
}
struct FiaCall;
struct FiaPlan;

// FIA-30 (which scales come with which query dtype) and FIA-31 (their dtype, format and
// element count). Runs before the empty-tensor rules; *on: the call is full quantisation
// (INT8 query without queryRope and dequantScaleQuery; with them it is MLA full quant).
Status fia_full_quant_check_params(const FiaParams& p, const char* op, bool* on);
// FIA-32: what full quantisation does not cover (Q_S = 1, paged KV, TND / NTD, learnableSink, KV
// antiquant parameters) and the head dims (Q_D, V_D multiples of 32).
Status fia_full_quant_check_call(const FiaParams& p, const char* op, const FiaCall& c);

// The scales as the kernels use them: the 19-bit deq1 / deq2, quantScale1 and scaleValue
// rounded to FP16. Read from the tensors at run time.
struct FiaFullQuantScales {
  float deq1 = 0, deq2 = 0, qs1_h = 0, scale_h = 0;
};
FiaFullQuantScales fia_full_quant_scales(const FiaParams& p);
// The 19-bit value of a UINT64 / FLOAT32 dequant scale element (bits & 0xffffe000).
float fia_full_quant_trunc19(const TensorView& t);

// The plan of a full-quantisation call (items of up to 256 query rows x heads, one per task, no
// KV splits, per-thread scratch; the other FiaPlan fields stay as fia_plan set them).
Status fia_full_quant_plan(FiaPlan* plan, const char* op);
// One work item (plan.items[index]) whose output side (`it`: output, lse, mask, pse, post-quant)
// the operator has built; scratch: the thread's plan.thread_bytes.
void fia_full_quant_run_item(const FiaParams& p, const FiaPlan& plan, int64_t index, const kernels::FlashItem& it,
                     const FiaFullQuantScales& sc, void* scratch);

}  // namespace mlaops
