// Public C++ parameters of MlaProlog V1 / V2WeightNz / V3WeightNz (docs/ops/mla_prolog.md).
//
// MlaPrologParams mirrors the aclnnMlaPrologGetWorkspaceSize / aclnnMlaPrologV2WeightNz-
// GetWorkspaceSize prototype field by field, in prototype order: required tensors as TensorView,
// optional tensors as pointers (nullptr = absent), attributes with the aclnn defaults.
// V1 is V2 without the dequantScaleQNope output (dequant_scale_q_nope_out stays null). The V3
// fields (the α scales, queryNormOut) come last; their defaults give the V1 / V2 behaviour.
//
// Shape symbols (spec notation): B batch, S query seq len, T tokens (= B*S, or the token count
// of a TND/"(T, He)" token_x), He hidden size, Hcq q LoRA rank, N query heads, D q nope head
// dim, Dr rope dim, Hckv kv LoRA rank, BlockNum / BlockSize paged-cache geometry (Nkv = 1).
//
// Weights (weight_dq, weight_uq_qr, weight_dkv_kr) are logical (K, N) matrices. They may be
// FRACTAL_NZ (format kFractalNZ: a 4-D storage view [C1, R1, 16, c0], or a 2-D logical view
// [K, N] whose storage_dims are the 4-D shape; docs/numerics.md, core/fractal_nz.h) or plain ND 2-D
// [K, N] (any strides). weight_uk is ND.
#pragma once

#include <cstdint>

#include "mlaops/dtype.h"
#include "mlaops/export.h"
#include "mlaops/plan.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// cacheModeOptional: "PA_BSND" (default) or "PA_NZ"; V3 adds "PA_BLK_BSND", "PA_BLK_NZ",
// "BSND", "TND" (docs/ops/mla_prolog.md).
enum class MlaPrologCacheMode : int32_t {
  kPaBsnd = 0,     // cache (BlockNum, BlockSize, 1, H) dense: elem(p, j) at p*H + j; cacheIndex = slots p
  kPaNz = 1,       // per block [H/c0][BlockSize][c0], c0 = 32 bytes / element size; cacheIndex = slots p
  kPaBlkBsnd = 2,  // as PA_BSND; cacheIndex = block ids per batch (token s of batch b: block s / BlockSize)
  kPaBlkNz = 3,    // as PA_NZ; cacheIndex = block ids per batch
  kBsnd = 4,       // cache (B, S, 1, H): row t = token t (tokenX [B, S, He]); no cacheIndex
  kTnd = 5,        // cache (T, 1, H): row t = token t (tokenX [T, He]); no cacheIndex
};

// "PA_BSND", "PA_NZ", ...; "?" for an unknown value.
inline const char* mla_prolog_cache_mode_name(MlaPrologCacheMode mode) {
  switch (mode) {
    case MlaPrologCacheMode::kPaBsnd: return "PA_BSND";
    case MlaPrologCacheMode::kPaNz: return "PA_NZ";
    case MlaPrologCacheMode::kPaBlkBsnd: return "PA_BLK_BSND";
    case MlaPrologCacheMode::kPaBlkNz: return "PA_BLK_NZ";
    case MlaPrologCacheMode::kBsnd: return "BSND";
    case MlaPrologCacheMode::kTnd: return "TND";
  }
  return "?";
}
// Paged caches addressed through cacheIndex (slots, or block ids in the PA_BLK modes).
inline bool mla_prolog_cache_paged(MlaPrologCacheMode m) {
  return m != MlaPrologCacheMode::kBsnd && m != MlaPrologCacheMode::kTnd;
}
// cacheIndex holds block ids (PA_BLK_BSND, PA_BLK_NZ).
inline bool mla_prolog_cache_blocks(MlaPrologCacheMode m) {
  return m == MlaPrologCacheMode::kPaBlkBsnd || m == MlaPrologCacheMode::kPaBlkNz;
}
// Blocks laid out as FRACTAL_NZ ([H/c0][BlockSize][c0]).
inline bool mla_prolog_cache_nz(MlaPrologCacheMode m) {
  return m == MlaPrologCacheMode::kPaNz || m == MlaPrologCacheMode::kPaBlkNz;
}

// The quantization scenario, implied by dtypes only (as the vendor's tiling GetQuantizationMode
// does).
enum class MlaPrologScenario : int32_t {
  kNoQuant = 0,                // everything bf16
  kPartialQuantKvNoQuant = 1,  // weight_uq_qr int8 (per-channel), Cq dynamically quantized per token
  kPartialQuantKvQuant = 2,    // + kv_cache / kr_cache int8 with per-channel static scales
  kFullQuantKvNoQuant = 3,     // token_x int8 (per token), the three NZ weights int8 (per channel)
  kFullQuantKvQuant = 4,       // + kv_cache int8 per-tensor, query int8 per (token, head)
  // V3 kvCacheQuantMode 3: kv_cache int8 per token and tile of 128 channels (dynamic scales in
  // the row, the rope row in the kv row, kr_cache empty); the query stays bf16.
  kPartialQuantKvQuantPerTile = 5,  // partial quant + per-tile KV quant, mode tuple (1, 3, 0)
  kFullQuantKvQuantPerTile = 6,     // full quant + per-tile KV quant, mode tuple (2, 3, 0)
};

// tokenX INT8 -> full quant; else weightUqQr INT8 -> partial quant; else no quant. The KV-quant
// variants of full / partial are chosen by kvCache INT8 (no-quant ignores the kvCache dtype);
// `per_tile` (V3 kvCacheQuantMode 3) picks their per-tile form.
inline MlaPrologScenario mla_prolog_scenario(DType token_x, DType weight_uq_qr, DType kv_cache, bool per_tile = false) {
  const bool kv_quant = kv_cache == DType::kInt8;
  if (token_x == DType::kInt8)
    return !kv_quant   ? MlaPrologScenario::kFullQuantKvNoQuant
           : per_tile ? MlaPrologScenario::kFullQuantKvQuantPerTile
                      : MlaPrologScenario::kFullQuantKvQuant;
  if (weight_uq_qr == DType::kInt8)
    return !kv_quant   ? MlaPrologScenario::kPartialQuantKvNoQuant
           : per_tile ? MlaPrologScenario::kPartialQuantKvQuantPerTile
                      : MlaPrologScenario::kPartialQuantKvQuant;
  return MlaPrologScenario::kNoQuant;
}
inline bool mla_prolog_is_full_quant(MlaPrologScenario s) {
  return s == MlaPrologScenario::kFullQuantKvNoQuant || s == MlaPrologScenario::kFullQuantKvQuant ||
         s == MlaPrologScenario::kFullQuantKvQuantPerTile;
}
inline bool mla_prolog_is_partial_quant(MlaPrologScenario s) {
  return s == MlaPrologScenario::kPartialQuantKvNoQuant || s == MlaPrologScenario::kPartialQuantKvQuant ||
         s == MlaPrologScenario::kPartialQuantKvQuantPerTile;
}
inline bool mla_prolog_is_per_tile(MlaPrologScenario s) {
  return s == MlaPrologScenario::kPartialQuantKvQuantPerTile || s == MlaPrologScenario::kFullQuantKvQuantPerTile;
}
inline bool mla_prolog_is_kv_quant(MlaPrologScenario s) {
  return s == MlaPrologScenario::kPartialQuantKvQuant || s == MlaPrologScenario::kFullQuantKvQuant ||
         mla_prolog_is_per_tile(s);
}
// "NO_QUANT", "PARTIAL_QUANT_KV_NO_QUANT", ...; "?" for an unknown value.
inline const char* mla_prolog_scenario_name(MlaPrologScenario s) {
  switch (s) {
    case MlaPrologScenario::kNoQuant: return "NO_QUANT";
    case MlaPrologScenario::kPartialQuantKvNoQuant: return "PARTIAL_QUANT_KV_NO_QUANT";
    case MlaPrologScenario::kPartialQuantKvQuant: return "PARTIAL_QUANT_KV_QUANT";
    case MlaPrologScenario::kFullQuantKvNoQuant: return "FULL_QUANT_KV_NO_QUANT";
    case MlaPrologScenario::kFullQuantKvQuant: return "FULL_QUANT_KV_QUANT";
    case MlaPrologScenario::kPartialQuantKvQuantPerTile: return "PARTIAL_QUANT_KV_QUANT_PER_TILE";
    case MlaPrologScenario::kFullQuantKvQuantPerTile: return "FULL_QUANT_KV_QUANT_PER_TILE";
  }
  return "?";
}

struct MlaPrologParams {
  // ---- tensors, in aclnn prototype order ----
  TensorView token_x;          // [T, He] or [B, S, He]; BF16 (no / partial quant), INT8 (full quant)
  TensorView weight_dq;        // logical [He, Hcq]; NZ or ND; BF16, INT8 (full)
  TensorView weight_uq_qr;     // logical [Hcq, N*(D+Dr)] (per head [D nope | Dr rope]); BF16, INT8 (partial, full)
  TensorView weight_uk;        // [N, D, Hckv] ND; BF16
  TensorView weight_dkv_kr;    // logical [He, Hckv+Dr] (cols [Hckv kv | Dr rope]); BF16, INT8 (full)
  TensorView rmsnorm_gamma_cq;   // [Hcq] BF16
  TensorView rmsnorm_gamma_ckv;  // [Hckv] BF16
  TensorView rope_sin;         // [T, Dr] or [B, S, Dr] BF16 (follows the token layout)
  TensorView rope_cos;         // [T, Dr] or [B, S, Dr] BF16
  // [T] or [B, S] INT64; flat slot p in [0, BlockNum*BlockSize), < 0 = skip. PA_BLK modes: block
  // ids in [0, BlockNum), [B, ceil(S/BlockSize)] or [sum_b ceil(S_b/BlockSize)]. BSND / TND: absent
  // (a default TensorView).
  TensorView cache_index;
  // in/out [BlockNum, BlockSize, 1, Hckv] (BSND: [B, S, 1, Hckv], TND: [T, 1, Hckv]); BF16, INT8
  // (KV quant). Per-tile KV quant: INT8 rows of Dtile = Hckv + 2*Dr + 4*Hckv/128 bytes.
  TensorView kv_cache;
  // in/out [BlockNum, BlockSize, 1, Dr] (BSND / TND as kv_cache); BF16, INT8 (partial + KV quant);
  // per-tile KV quant: an empty tensor (the rope row is inside the kv row).
  TensorView kr_cache;
  const TensorView* dequant_scale_x = nullptr;         // [T, 1] or [B*S, 1] FP32; full quant only
  const TensorView* dequant_scale_w_dq = nullptr;      // [1, Hcq] FP32; full quant only
  const TensorView* dequant_scale_w_uq_qr = nullptr;   // [1, N*(D+Dr)] FP32; partial and full quant
  const TensorView* dequant_scale_w_dkv_kr = nullptr;  // [1, Hckv+Dr] FP32; full quant only
  // [1, Hckv] FP32; KV-quant scenarios (partial: per channel; full: element 0 only, per tensor)
  const TensorView* quant_scale_ckv = nullptr;
  const TensorView* quant_scale_ckr = nullptr;         // [1, Dr] FP32; partial + KV quant only
  const TensorView* smooth_scales_cq = nullptr;        // [1, Hcq] FP32; optional (partial / full)

  // ---- attributes (aclnn defaults) ----
  double rmsnorm_epsilon_cq = 1e-5;
  double rmsnorm_epsilon_ckv = 1e-5;
  MlaPrologCacheMode cache_mode = MlaPrologCacheMode::kPaBsnd;

  // ---- outputs ----
  TensorView query_out;       // [T, N, Hckv] or [B, S, N, Hckv]; BF16, INT8 (full + KV quant)
  TensorView query_rope_out;  // [T, N, Dr] or [B, S, N, Dr]; BF16
  // V2 only (null for V1). FP32 [T, N, 1] or [B*S, N, 1], written in full + KV quant only; in
  // every other scenario the vendor passes a (1) placeholder (or null), which is left untouched.
  const TensorView* dequant_scale_q_nope_out = nullptr;

  // ---- V3 (aclnnMlaPrologV3WeightNz) ----
  // qcQrScale (α_q) multiplies RmsNorm(c_Q) before the smooth scale / dynamic quant; kcScale
  // (α_kv) multiplies RmsNorm(c_KV) before its cast or quant. Both are narrowed to float32 (as
  // the aclnn layer does) and the multiply is skipped when |α - 1| < FLT_EPSILON.
  double qc_qr_scale = 1.0;
  double kc_scale = 1.0;
  // queryNormOut: the A operand of the W_UQ_QR matmul, [T, Hcq] or [B, S, Hcq] (follows
  // token_x): BF16 bf16(α_q·RmsNorm(c_Q)) in NO_QUANT, else INT8, the dynamic quant of
  // α_q·RmsNorm(c_Q)·smooth; null = not produced.
  const TensorView* query_norm_out = nullptr;
  // [T, 1] FP32, the per-token scale of that int8 row: given exactly when query_norm_out is
  // given in a quantized scenario.
  const TensorView* dequant_scale_q_norm_out = nullptr;
  // actualSeqLenOptional: INT32 [B], the prefix sums of the batches' token counts (last = T);
  // read only in the PA_BLK cache modes with token_x [T, He] (required there), else ignored.
  const TensorView* actual_seq_len = nullptr;
  // kvCacheQuantMode 3 (per token and tile of 128 channels; int8 weight_uq_qr and kv_cache):
  // per row c = α_kv·RmsNorm(c_KV), per tile g: a_g = max|c_j|, c'_j = clip(c_j, ±α·a_g),
  // s_g = α·a_g/127, q_j = sat_int8(rint(c'_j · (1/s_g))) (a_g = 0: s_g = 0, q = 0); the kv row is
  // q | bf16 RoPE(k_r) | fp32 s_g. α = kNopeClipAlphaOptional[0] (FP32 [1], finite and > 0).
  bool kv_quant_per_tile = false;
  const TensorView* k_nope_clip_alpha = nullptr;
};

// The shape symbols of one call, derived from the params as the vendor tiling does.
struct MlaPrologDims {
  int64_t B = 0, S = 0, T = 0;  // TND token_x [T, He]: B = T, S = 1 (so that B*S == T always)
  int64_t He = 0, Hcq = 0, N = 0, D = 0, Dr = 0, Hckv = 0;
  // PA modes: the cache's; BSND: B and S; TND: T and 1 (row t = slot t)
  int64_t block_num = 0, block_size = 0;
  int64_t kv_row = 0;  // elements of one kv cache row: Hckv, or Dtile bytes with per-tile KV quant
  bool bsh = false;  // token_x is [B, S, He] (true) or [T, He] (false)
};

// ---- the C++ API (docs/ops/mla_prolog.md) ----
// Any consistent shape is accepted here (He, Hcq, N, D, Dr, Hckv, BlockSize any positive size,
// Dr even; bf16 weights FRACTAL_NZ or ND [K, N]; int8 weights FRACTAL_NZ); the aclnn entry points
// add the vendor's shape ranges. V1 is the same call without dequant_scale_q_nope_out.
//
// Phase 1: every rule of docs/ops/mla_prolog.md on shapes, dtypes, formats, strides, attributes
// and the data pointers (alignment, aliasing); then the plan (the kernels of this ISA level,
// chunking, threads, workspace layout; plan->explain() says what and why). Nothing is read from
// tensor contents and nothing is written. On error *plan is left invalid.
MLAOPS_API Status mla_prolog_plan(const MlaPrologParams& p, OpPlan* plan);
// Phase 2: `tensors` must have the planned shapes, dtypes, formats, strides and attributes
// (data pointers and contents may differ: e.g. another layer's weights, the next step's
// tokens). Re-checks the pointer rules, then every cacheIndex value before the first write,
// then the workspace (>= plan.workspace_size()), and runs the plan. On error nothing is written.
MLAOPS_API Status mla_prolog_run(const OpPlan& plan, const MlaPrologParams& tensors, void* workspace,
                                 uint64_t workspace_size);
// One-shot forms: plan, then workspace size / plan + run.
MLAOPS_API Status mla_prolog_workspace_size(const MlaPrologParams& p, uint64_t* workspace_size);
MLAOPS_API Status mla_prolog(const MlaPrologParams& p, void* workspace, uint64_t workspace_size);

}  // namespace mlaops
