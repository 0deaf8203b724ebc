// Public C++ parameters of the serving stacks' MLAPO operator (docs/ops/mla_preprocess.md,
// "The serving stacks' MLAPO op"): vllm-ascend's custom op `torch.ops._C_ascend.mla_preprocess`
// (csrc/mla_preprocess) and sgl-kernel-npu's `torch.ops.npu.mla_preprocess`, one kernel family.
//
// It is MlaPreprocess (mlaops/mla_preprocess.h) with another first stage: the hidden states are
// quantised WITHOUT a RmsNorm (they arrive normalised by the decoder layer's input RmsNorm), so
// there is no gamma0 / beta0:
//   quantMode 0: a0 = int8(clamp_fp16(fp16(fp32(fp32(input * (1 / quantScale0)) + quantOffset0))))
//   quantMode 1: s = max|input| / 127, a0 = int8(clamp_fp16(fp16(input * (1 / s))))
//   weights in the input dtype (vllm-ascend's "no_quant"): the input itself is the wdqkv operand.
// Everything after a0 (the wdqkv GEMM with bias0 / deScale0, the RmsNormQuant of cq with gamma1 /
// beta1, the wuq and wuk GEMMs, RoPE, the kv RmsNorm with gamma2, the cache writes of the four
// cache modes) is MlaPreprocess's, with the same symbols (T, He, Hcq, Hckv, Dr, N, D) and tensor
// layouts. Differences in what a caller passes:
//   * beta1 is optional (null: the q RmsNorm has no bias);
//   * cos / sin are optional, both or neither (neither: no RoPE rotation; q_rope and k_rope are
//     the projections as computed). Without them Dr comes from the rope cache (cacheMode 1..3)
//     or from kvCache's width minus Hckv (cacheMode 0);
//   * deScale0 / deScale1 may be FP32 or INT64 holding fp32 bits in the low 32 bits with either
//     input dtype (vllm-ascend's op definition declares FP32, its fp16 kernel reads 64-bit words);
//   * every RmsNorm uses epsilon 1e-6, the kernel's constant (there is no epsilon argument);
//   * the vector inputs the kernel reads a prefix of (beta1 [>= Hcq], quantScale* / quantOffset*
//     / ctkvScale [>= 1], deScale* / bias* [>= channels], slotMapping [>= T], cos / sin [>= T
//     rows]) may be longer than that prefix, as in MlaPreprocess.
// quant_mode is not read with weights in the input dtype.
#pragma once

#include <cstdint>

#include "mlaops/dtype.h"
#include "mlaops/export.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/plan.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

struct MlapoParams {
  // ---- tensors, in the kernel's order ----
  TensorView input;                           // [T, He] dtype ND (hiddenState)
  const TensorView* quant_scale0 = nullptr;   // [>= 1] dtype; quantMode 0 with INT8 weights
  const TensorView* quant_offset0 = nullptr;  // [>= 1] INT8; quantMode 0 with INT8 weights
  TensorView wdqkv;                           // logical [Hckv+Dr+Hcq, He] FRACTAL_NZ; INT8 or dtype
  const TensorView* de_scale0 = nullptr;      // [>= Hckv+Dr+Hcq] FP32 or INT64 (fp32 bits); INT8 weights
  const TensorView* bias0 = nullptr;          // [>= Hckv+Dr+Hcq] INT32; quantMode 0 with INT8 weights
  TensorView gamma1;                          // [Hcq] dtype (the q RmsNorm; defines Hcq)
  const TensorView* beta1 = nullptr;          // [>= Hcq] dtype, optional (null: no bias)
  const TensorView* quant_scale1 = nullptr;   // [>= 1] dtype; quantMode 0 with INT8 weights
  const TensorView* quant_offset1 = nullptr;  // [>= 1] INT8; quantMode 0 with INT8 weights
  TensorView wuq;                             // logical [N*(D+Dr), Hcq] FRACTAL_NZ; the wdqkv dtype
  const TensorView* de_scale1 = nullptr;      // [>= N*(D+Dr)] FP32 or INT64; INT8 weights
  const TensorView* bias1 = nullptr;          // [>= N*(D+Dr)] INT32; quantMode 0 with INT8 weights
  TensorView gamma2;                          // [Hckv] dtype (the kv RmsNorm; defines Hckv)
  const TensorView* cos = nullptr;            // [>= T, Dr] dtype, optional with sin
  const TensorView* sin = nullptr;            // [>= T, Dr] dtype, optional with cos
  TensorView wuk;                             // [N, D, Hckv] ND or per-head FRACTAL_NZ [N, Hckv/16, D, 16]
  TensorView kv_cache;                        // geometry of the kv rows (MlaPreprocessParams::kv_cache)
  const TensorView* kv_cache_rope = nullptr;  // cacheMode 1..3 (MlaPreprocessParams::kv_cache_rope)
  TensorView slot_mapping;                    // [>= T] INT32 / INT64; -1 skips a token's cache writes
  const TensorView* ctkv_scale = nullptr;     // [>= 1] dtype; cacheMode 2
  const TensorView* q_nope_scale = nullptr;   // [N] (or more, or [1] broadcast) dtype; cacheMode 2

  // ---- attributes ----
  MlaPreprocessCacheMode cache_mode = MlaPreprocessCacheMode::kKropeCtkv;
  MlaPreprocessQuantMode quant_mode = MlaPreprocessQuantMode::kPerTensorAsymm;

  // ---- outputs (as MlaPreprocessParams) ----
  TensorView q_out;                          // cm0 [T, N, Hckv+Dr]; cm1/cm3 [T, N, Hckv]; cm2 INT8 [T, N, Hckv]
  TensorView kv_cache_out;                   // rank 0 + null data = kv_cache itself
  const TensorView* q_rope_out = nullptr;    // [T, N, Dr]; cacheMode 1..3
  const TensorView* kr_cache_out = nullptr;  // null = kv_cache_rope itself
  const TensorView* q_down_out = nullptr;    // [T, Hcq] dtype, optional (vllm-ascend's inner_out):
                                             //   dtype(RmsNorm(cq) * gamma1 + beta1)
};

// MlaPreprocess's params of the same tensors: the MLAPO op is MlaPreprocess's pipeline on them with
// its own first stage. gamma0 / beta0 are absent (MlaPreprocess's own functions refuse that:
// MPP-01), beta1 / cos / sin absent when null, doRmsNorm = INT8 weights, epsilon 1e-6 (the
// kernel's constant). The operator (ops/mla_preprocess/mla_preprocess_mlapo.cpp) and its reference read the call
// through it.
inline MlaPreprocessParams mlapo_as_mla_preprocess(const MlapoParams& m) {
  const auto view = [](const TensorView* t) { return t != nullptr ? *t : TensorView{}; };
  MlaPreprocessParams p;
  p.input = m.input;
  p.quant_scale0 = m.quant_scale0;
  p.quant_offset0 = m.quant_offset0;
  p.wdqkv = m.wdqkv;
  p.de_scale0 = m.de_scale0;
  p.bias0 = m.bias0;
  p.gamma1 = m.gamma1;
  p.beta1 = view(m.beta1);
  p.quant_scale1 = m.quant_scale1;
  p.quant_offset1 = m.quant_offset1;
  p.wuq = m.wuq;
  p.de_scale1 = m.de_scale1;
  p.bias1 = m.bias1;
  p.gamma2 = m.gamma2;
  p.cos = view(m.cos);
  p.sin = view(m.sin);
  p.wuk = m.wuk;
  p.kv_cache = m.kv_cache;
  p.kv_cache_rope = m.kv_cache_rope;
  p.slot_mapping = m.slot_mapping;
  p.ctkv_scale = m.ctkv_scale;
  p.q_nope_scale = m.q_nope_scale;
  p.epsilon = 1e-6;
  p.cache_mode = m.cache_mode;
  p.quant_mode = m.quant_mode;
  p.do_rms_norm = m.wdqkv.dtype == DType::kInt8;
  p.q_out = m.q_out;
  p.kv_cache_out = m.kv_cache_out;
  p.q_rope_out = m.q_rope_out;
  p.kr_cache_out = m.kr_cache_out;
  p.q_down_out = m.q_down_out;
  return p;
}

// Phase 1: the rules of docs/ops/mla_preprocess.md (MPP-xx, and MPP-20 for cos / sin) and the
// plan; nothing is read from tensor contents or written. On error *plan is left invalid.
MLAOPS_API Status mlapo_plan(const MlapoParams& p, OpPlan* plan);
// Phase 2 on a plan of mlapo_plan (a MlaPreprocess plan is refused): as mla_preprocess_run.
MLAOPS_API Status mlapo_run(const OpPlan& plan, const MlapoParams& tensors, void* workspace, uint64_t workspace_size);
// One-shot forms.
MLAOPS_API Status mlapo_workspace_size(const MlapoParams& p, uint64_t* workspace_size);
MLAOPS_API Status mlapo(const MlapoParams& p, void* workspace, uint64_t workspace_size);

}  // namespace mlaops
