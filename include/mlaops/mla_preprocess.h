// Public C++ parameters of MlaPreprocess (docs/ops/mla_preprocess.md: aclnnMlaPreprocess, ATB
// MlaPreprocessOperation, torch_npu.atb.npu_mla_preprocess).
//
// MlaPreprocessParams mirrors the aclnnMlaPreprocessGetWorkspaceSize prototype field by
// field, in prototype order: tensors as TensorView, tensors that a mode may leave out as pointers
// (nullptr = absent), the attributes with the documented defaults, then the four outputs.
//
// Shape symbols: T tokens (tokenNum), He hidden size (hiddenSize), N heads (headNum), and the
// fixed split sizes of the vendor op, written symbolically because the float64 reference
// derives them from the tensors (see reference/mla_preprocess/mla_preprocess_ref.h):
//   Hckv = 512  (kv LoRA rank: the ckv part of the first projection, gamma2's length)
//   Dr   = 64   (rope dim: kpe, qp, cos / sin, the rope caches)
//   Hcq  = 1536 (q LoRA rank: the cq part of the first projection, gamma1's length; wdqDim)
//   D    = 128  (q nope head dim)
// so the first projection has Hckv + Dr + Hcq = 2112 output channels, ordered KV FIRST:
// [ckv (0:512) | kpe (512:576) | cq (576:2112)], and the second N * (D + Dr) = N * 192,
// per head [qn (D) | qp (Dr)]. BlockNum / BlockSize: paged-cache geometry (one kv head).
//
// Weights. wdqkv and wuq are passed TRANSPOSED, as ATB does: logical (rows = output channels,
// cols = K) matrices, normally FRACTAL_NZ (docs/numerics.md: c0 = 32 bytes / element size, i.e. 32 for INT8,
// 16 for FP16/BF16; R1 = ceil(rows/16), C1 = ceil(cols/c0); zero padding). Accepted views of one
// and the same NZ storage:
//   * 4-D storage view    [C1, R1, 16, c0]           (format kFractalNZ; the aclnn examples)
//   * ATB test form       [1, C1, R1*16, c0]         (format kFractalNZ; transdata + unsqueeze(0))
//   * 2-D logical view    [rows, cols] with storage_dims = [C1, R1, 16, c0] (format kFractalNZ;
//                         the storage is then read densely)
//   * plain ND 2-D        [rows, cols], any strides   (format kND; not a vendor form)
// wuk is ND [N, D, Hckv] (any strides) or FRACTAL_NZ per head [N, Hckv/16, D, 16] (format
// kFractalNZ; each head's [D, Hckv] matrix in NZ with c0 = 16, no padding: D and Hckv multiples
// of 16).
//
// Caches (as the vendor kernel treats them). The new rows are written into kv_cache_out /
// kr_cache_out at the slotMapping slots only (-1 skips), placed by the INPUT caches' geometry
// (kv_cache / kv_cache_rope: block size, block stride, NZ layout); kv_cache / kv_cache_rope are
// neither read nor written and nothing is copied from them. An output that is the input cache
// (the same memory, CANN's documented use) gives the in-place update; a distinct output receives
// only this call's rows and keeps its other bytes. An output needs the input cache's dtype and
// must hold every row written (checked per slot before the first write). A default-constructed
// kv_cache_out (rank 0, null data) and a null kr_cache_out mean "the input cache itself".
//
// The vectors the kernel reads a prefix of (gamma0 / beta0 / beta1, quantScale*, quantOffset*,
// deScale*, bias*, ctkvScale, slotMapping, cos / sin by rows, qNopeScale) may be longer than the
// sizes below, as CANN accepts them (docs/ops/mla_preprocess.md, "Inputs longer than the kernel
// reads"); the first elements are read.
//
// Optional tensors a mode does not read (quantScale*, quantOffset*, bias* outside quantMode 0
// with INT8 weights; deScale* with weights in the input dtype; kvCacheRope, qRopeOut, krCacheOut
// in cacheMode 0; ctkvScale, qNopeScale outside cacheMode 2) may be given: they are ignored, not
// read and not checked.
#pragma once

#include <cstdint>

#include "mlaops/dtype.h"
#include "mlaops/export.h"
#include "mlaops/plan.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// cacheMode (ATB MlaPreprocessParam::CacheMode).
enum class MlaPreprocessCacheMode : int32_t {
  kKvCache = 0,      // kvCache [BlockNum, BlockSize, 1, Hckv+Dr] ND, row = concat(kN, kR); qOut [T, N, Hckv+Dr]
  kKropeCtkv = 1,    // kvCache [..., Hckv] + kvCacheRope [..., Dr] ND; qOut [T, N, Hckv] + qRopeOut [T, N, Dr]
  kInt8NzCache = 2,  // kvCache INT8 NZ [BlockNum, Hckv/32, BlockSize, 32], kvCacheRope NZ; qOut INT8
  kNzCache = 3,      // kvCache NZ [BlockNum, Hckv/16, BlockSize, 16], kvCacheRope NZ, input dtype
};

// "KVCACHE", "KROPE_CTKV", "INT8_NZCACHE", "NZCACHE"; "?" for an unknown value.
inline const char* mla_preprocess_cache_mode_name(MlaPreprocessCacheMode mode) {
  switch (mode) {
    case MlaPreprocessCacheMode::kKvCache: return "KVCACHE";
    case MlaPreprocessCacheMode::kKropeCtkv: return "KROPE_CTKV";
    case MlaPreprocessCacheMode::kInt8NzCache: return "INT8_NZCACHE";
    case MlaPreprocessCacheMode::kNzCache: return "NZCACHE";
  }
  return "?";
}
// The caches of modes 2 and 3 are FRACTAL_NZ per block; modes 1..3 have the separate rope
// outputs (qRopeOut, kvCacheRope / krCacheOut).
inline bool mla_preprocess_is_nz_cache(MlaPreprocessCacheMode mode) {
  return mode == MlaPreprocessCacheMode::kInt8NzCache || mode == MlaPreprocessCacheMode::kNzCache;
}
inline bool mla_preprocess_has_rope_outputs(MlaPreprocessCacheMode mode) {
  return mode != MlaPreprocessCacheMode::kKvCache;
}

// quantMode (ATB MlaPreprocessParam::QuantMode). The vendor rejects PER_TOKEN_QUANT_ASYMM (2)
// and UNQUANT (3), so they are not listed.
enum class MlaPreprocessQuantMode : int32_t {
  kPerTensorAsymm = 0,  // static per-tensor asymmetric: quantScale / quantOffset, int32 bias
  kPerTokenSymm = 1,    // dynamic per-token symmetric: scale = max|y| / 127; no offset, no bias
};

// "PER_TENSOR_QUANT_ASYMM", "PER_TOKEN_QUANT_SYMM"; "?" for an unknown value.
inline const char* mla_preprocess_quant_mode_name(MlaPreprocessQuantMode mode) {
  switch (mode) {
    case MlaPreprocessQuantMode::kPerTensorAsymm: return "PER_TENSOR_QUANT_ASYMM";
    case MlaPreprocessQuantMode::kPerTokenSymm: return "PER_TOKEN_QUANT_SYMM";
  }
  return "?";
}

// "dtype" below is the input dtype (FP16 or BF16). The INT8 weights are the quantized path
// (doRmsNorm = true); weights in the input dtype are the unquantized path (ATB: BF16 weights,
// doRmsNorm = false; its math is UNCONFIRMED, see reference/mla_preprocess/mla_preprocess_ref.h).
struct MlaPreprocessParams {
  // ---- tensors, in aclnn prototype order ----
  TensorView input;                               // [T, He] dtype ND
  TensorView gamma0;                              // [He] dtype
  TensorView beta0;                               // [He] dtype
  const TensorView* quant_scale0 = nullptr;       // [1] dtype; quantMode 0 (the divisor: y * (1/qs) + qo)
  const TensorView* quant_offset0 = nullptr;      // [1] INT8; quantMode 0
  TensorView wdqkv;                               // logical [Hckv+Dr+Hcq (2112), He] NZ; INT8 (or dtype, unquantized)
  const TensorView* de_scale0 = nullptr;          // [Hckv+Dr+Hcq]; fp16 input: INT64 (fp32 bits in the low 32 bits),
                                                  //   bf16 input: FP32; INT8 weights only
  const TensorView* bias0 = nullptr;              // [Hckv+Dr+Hcq] INT32; quantMode 0 only
  TensorView gamma1;                              // [Hcq] dtype
  TensorView beta1;                               // [Hcq] dtype
  const TensorView* quant_scale1 = nullptr;       // [1] dtype; quantMode 0
  const TensorView* quant_offset1 = nullptr;      // [1] INT8; quantMode 0
  TensorView wuq;                                 // logical [N*(D+Dr) (N*192), Hcq] NZ; INT8 (or dtype, unquantized)
  const TensorView* de_scale1 = nullptr;          // [N*(D+Dr)] INT64 (fp16) / FP32 (bf16); INT8 weights only
  const TensorView* bias1 = nullptr;              // [N*(D+Dr)] INT32; quantMode 0 only
  TensorView gamma2;                              // [Hckv] dtype (RmsNorm of ckv; no beta)
  TensorView cos;                                 // [T, Dr] dtype
  TensorView sin;                                 // [T, Dr] dtype
  TensorView wuk;                                 // [N, D, Hckv] dtype ND, or NZ per head [N, Hckv/16, D, 16]
  TensorView kv_cache;                            // in/out; cm0 [BlockNum, BlockSize, 1, Hckv+Dr] dtype ND,
                                                  //   cm1 [BlockNum, BlockSize, 1, Hckv] dtype ND,
                                                  //   cm2 [BlockNum, Hckv/32, BlockSize, 32] INT8 NZ,
                                                  //   cm3 [BlockNum, Hckv/16, BlockSize, 16] dtype NZ
  const TensorView* kv_cache_rope = nullptr;      // in/out; absent in cm0; cm1 [BlockNum, BlockSize, 1, Dr] dtype ND,
                                                  //   cm2/cm3 [BlockNum, Dr/16, BlockSize, 16] dtype NZ
  TensorView slot_mapping;                        // [T] INT32; flat slot in [0, BlockNum*BlockSize), -1 = skip
  const TensorView* ctkv_scale = nullptr;         // [1] dtype; cm2 only (kv int8 = kN_fp32 / ctkvScale)
  const TensorView* q_nope_scale = nullptr;       // [N] (or (1, N, 1), or [1] broadcast) dtype; cm2 only
                                                  //   (qOut int8 = qNope * qNopeScale[h])

  // ---- attributes (defaults as documented) ----
  int64_t wdq_dim = 1536;       // reserved (the vendor ignores it)
  int64_t q_rope_dim = 64;      // reserved
  int64_t k_rope_dim = 64;      // reserved
  double epsilon = 1e-6;        // all three RmsNorms; the aclnn entry points set 1e-6 (the vendor kernel's
                                // constant; they ignore their epsilon attribute)
  int64_t q_rotary_coeff = 2;   // reserved: half rotation only
  int64_t k_rotary_coeff = 2;   // reserved
  bool transpose_wdq = true;    // reserved: wdqkv is always the transposed (N, K) matrix
  bool transpose_wuq = true;    // reserved
  bool transpose_wuk = true;    // reserved
  MlaPreprocessCacheMode cache_mode = MlaPreprocessCacheMode::kKvCache;
  MlaPreprocessQuantMode quant_mode = MlaPreprocessQuantMode::kPerTensorAsymm;
  bool do_rms_norm = true;      // false exactly with weights in the input dtype (ATB: BF16 weights)
  int64_t wdkv_split_count = 1; // reserved

  // ---- outputs ----
  TensorView q_out;                           // cm0 [T, N, Hckv+Dr] dtype; cm1/cm3 [T, N, Hckv] dtype; cm2 [T, N, Hckv] INT8
  TensorView kv_cache_out;                    // receives kv_cache's rows (rank 0 + null data = kv_cache itself)
  const TensorView* q_rope_out = nullptr;     // [T, N, Dr] dtype; cm1..cm3 (ignored in cm0)
  const TensorView* kr_cache_out = nullptr;   // receives kv_cache_rope's rows (null = kv_cache_rope itself); cm1..cm3
  const TensorView* q_down_out = nullptr;     // [T, Hcq] dtype, optional (aclnnMlaPreprocessV2 with qDownOutFlag):
                                              //   dtype(RmsNorm(cq) * gamma1 + beta1), round half to even;
                                              //   written only when given
};

// ---- the C++ API (docs/ops/mla_preprocess.md) ----
// Any consistent shape is accepted here (He, Hcq, N, D, Dr (even), Hckv, BlockSize any positive
// size; the NZ caches need Hckv and Dr multiples of their c0); the aclnn entry point adds the
// vendor's ranges. wdqkv / wuq must be FRACTAL_NZ (any of the three NZ views above; plain ND is
// accepted by the reference only). The cache rows go to kv_cache_out / kr_cache_out (above).
//
// Phase 1: every rule of docs/ops/mla_preprocess.md on shapes, dtypes, formats, strides,
// attributes and the data pointers (alignment, aliasing, the cache outputs); then the plan (the
// kernels of this ISA level, chunking, threads, workspace layout; plan->explain() says what and
// why). Nothing is read from tensor contents and nothing is written. On error *plan is left
// invalid.
MLAOPS_API Status mla_preprocess_plan(const MlaPreprocessParams& p, OpPlan* plan);
// Phase 2: `tensors` must have the planned shapes, dtypes, formats, strides and attributes (data
// pointers and contents may differ). Re-checks the pointer rules, then every slotMapping value
// before the first write, then the workspace (>= plan.workspace_size()), and runs the plan. On
// error nothing is written.
MLAOPS_API Status mla_preprocess_run(const OpPlan& plan, const MlaPreprocessParams& tensors, void* workspace,
                                     uint64_t workspace_size);
// One-shot forms: plan, then workspace size / plan + run.
MLAOPS_API Status mla_preprocess_workspace_size(const MlaPreprocessParams& p, uint64_t* workspace_size);
MLAOPS_API Status mla_preprocess(const MlaPreprocessParams& p, void* workspace, uint64_t workspace_size);

}  // namespace mlaops
