// FusedInferAttentionScoreV4 innerPrecise (docs/ops/fused_infer_attention_score.md "innerPrecise"):
//
//   bit 0  0 high precision: FP32 softmax intermediates (every path);
//          1 high performance: with FP16 query, key and value on the vendor's prefill path, the
//            FP16 softmax intermediates of its general prefill template, emulated per block of
//            128 KV positions (kernels/cpu/attention/attn_fp16_softmax.h); BF16, INT8 query (full quant),
//            INT8 / INT4 key / value (there bit 0 rounds the dequantised values, ops/fia/fia_antiquant.h),
//            the decode rule (the vendor's decode kernels compute in FP32), MLA rope, pseShift (the
//            vendor forces high precision), learnableSink and a shared prefix keep high precision.
//   bit 1  the row-invalid correction: rows whose every position is masked give output 0 and lse
//          +inf. mlaops applies it to every row (the vendor golden's policy); with
//          FiaParams::legacy_uniform_invalid_rows and bit 1 == 0, rows the explicit mask (sparse
//          0 / 1 or the decode mask) empties inside a non-empty rule range give the NPU's
//          uncorrected result instead: the mean of V over the rule range, lse = fill + log(count)
//          (FP16 / BF16 key / value without a shared prefix, no learnableSink, not the tree mask).
//
// Rules (aclnn layer, FIA-19): TND / NTD without rope over FP16 / BF16 key / value: GQA / MQA only
// innerPrecise 0, MHA FP16 0 / 1, MHA BF16 0. The others of the vendor's list are FIA-19 (decode
// 0 / 1), FIA-24 (learnableSink only 0) and FIA-34 (the INT8 NZ cache only 1); the ALiBi full
// bias is a pseShift (nothing tells it apart), which FP16 runs in high precision anyway.
#pragma once

#include <cstdint>
#include <string>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/status.h"

namespace mlaops {

struct FiaCall;
struct FiaPlan;
struct FiaCheckOptions;

struct FiaInnerPrecise {
  bool fp16_softmax = false;    // bit 0 = 1 takes effect: the FP16 high-performance emulation
  const char* kept = nullptr;   // bit 0 = 1 without effect: why high precision is kept (explain)
  bool legacy_rows = false;     // legacy_uniform_invalid_rows takes effect (bit 1 == 0, explicit mask)
};

// The lse of a legacy row is fill + log(count): the vendor's mask value of the softmax dtype.
inline constexpr float kFiaFp16MaskFill = -65504.0f;              // FP16 softmax (0xFBFF)
inline constexpr float kFiaFp32MaskFill = -3.40282346638528859811704183484516925e+38f;  // 0xFF7FFFFF

// The rules above (vendor ranges only) and the resolution of c->ip. Call after every other rule
// (it reads the layouts, masks, features and left padding fia_check resolved).
Status fia_inner_precise_check(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c);

// What innerPrecise does in this plan, one line (empty when nothing to say).
std::string fia_inner_precise_explain(const FiaCall& c, int64_t inner_precise);

// Phase 2, after every task: the legacy rows (FiaInnerPrecise::legacy_rows). For each batch row
// whose rule range is non-empty and fully masked by the explicit mask, every head's row is
// recomputed on the panel path as uniform attention over the rule range (the item's scores all
// 0: the mean of V, paged / NZ caches and layouts as every item) and its lse moved by the fill
// value. `pq` the run's post-quant floats (null without post-quant).
void fia_legacy_rows_run(const FiaParams& p, const FiaPlan& plan, void* workspace, const float* pq);

}  // namespace mlaops
