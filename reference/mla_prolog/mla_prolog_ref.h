// Float64 reference of MlaProlog V1 / V2WeightNz / V3WeightNz (docs/ops/mla_prolog.md).
//
// Plain, single-threaded double arithmetic written straight from the vendor's step-by-step
// golden (Q1..Q6, K1..K4). V3 adds: Q2 and K2 multiplied by qcQrScale / kcScale (narrowed to
// float32; skipped when |α - 1| < FLT_EPSILON), and queryNormOut = the A operand of Q3 (bf16, or
// the int8 dynamic quant with its scale in dequantScaleQNormOut). Values are carried in double where the kernel carries fp32 and rounded
// exactly where the kernel rounds (the per-scenario type table):
//   * bf16 (round to nearest even, once, from the double): the non-full MatmulCq and
//     MatmulCkvKr outputs, the NO_QUANT MatmulQcQr input and output, q nope before W_UK, the
//     query / query_rope outputs, the bf16 kv / kr cache rows, the kr row before its int8 quant;
//   * int8 dynamic per-token quant of Cq (partial / full) and the KV / KR cache quant:
//     clamp(rint(v), -128, 127), ties to even (ref::int8_rint);
//   * the full + KV-quant query quant: clamp(round(q / dqs)), ties AWAY from zero
//     (ref::int8_round). The vendor kernel rounds twice (fp32 -> fp16 -> int8, both ties-away),
//     which can differ from this by 1; the vendor test (and ours) tolerate +-1 on the int8 query.
//
// Behaviour where the vendor material is silent or UNCONFIRMED (choices of this reference):
//   * DynQuantRow / the query quant of an all-zero row (max|v| == 0): scale 0 and every q = 0.
//     For the query this also makes the rescaled query_rope row 0 (instead of x * qs / 0).
//   * cacheIndex: every p < 0 skips the token's kv and kr writes (-1 is the documented skip
//     value). Any p >= BlockNum*BlockSize fails the whole call with kParamInvalid naming
//     cacheIndex[t], found by a read-only pre-pass: nothing (outputs or caches) is written.
//     Duplicate indices: tokens are processed in order, so the last token wins.
//   * BlockNum*BlockSize == 0: outputs are computed, caches untouched, cacheIndex not read.
//     T == 0: nothing is written.
//   * dequant_scale_q_nope_out: written ([T, N, 1] FP32) in full + KV quant, where it is
//     required (kParamNullptr if null, e.g. a V1 call); in every other scenario it is left
//     untouched whatever its shape.
//   * smooth_scales_cq is used only where the golden applies it (partial / full quant, before
//     the dynamic quant); it is ignored in NO_QUANT. Optional tensors that the scenario does
//     not use are ignored (rejecting them is the operator's validation layer's job).
//   * Inputs are read exactly whatever their dtype; outputs and caches must have the
//     scenario's dtypes (BF16 / INT8 as in the tensor table; dequant_scale_q_nope_out any float
//     type).
//   * The scenario is derived by the reference itself from the dtypes (INT8 tokenX: full quant;
//     else INT8 weightUqQr: partial quant; else no quant; INT8 kvCache: the KV-quant variant).
//     Its own helpers (ref_util.h) do the rounding, the element access and the FRACTAL_NZ index.
//   * Shapes: any consistent shape is accepted (vendor ranges are not enforced); Dr must be
//     even, Nkv must be 1, and in PA_NZ the cache row width must be a multiple of c0.
//     Token-major tensors (rope_sin/cos, cache_index, dequant_scale_x, query outputs) may use
//     either token layout as long as their leading dims multiply to T.
#pragma once

#include <cstdint>

#include "mlaops/mla_prolog.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// Runs the operator on `p` (in place on the caches). Inconsistent shapes, missing scenario
// tensors or an out-of-range cache index return an error (kParamInvalid / kParamNullptr, with
// last_error_message()) before anything is written.
Status mla_prolog_ref(const MlaPrologParams& p);

// The reference's own derivation of the shape symbols (as the vendor tiling does):
// B, S, He from token_x (3-D) or T, He (2-D); Hcq from weight_dq (dim 1 of a 2-D view, or
// rmsnorm_gamma_cq for a padded 4-D NZ view); N, D from weight_uk; Dr from rope_cos; BlockNum,
// BlockSize, Hckv from kv_cache.
Status mla_prolog_dims(const MlaPrologParams& p, MlaPrologDims* out);

// ---- the pieces, exposed for hand-checked tests ----

// RmsNorm(v[n], gamma[n], eps) = v / sqrt(sum(v*v)/n + eps) * gamma.
void mla_prolog_rms_norm(const double* v, const double* gamma, int64_t n, double eps, double* out);

// MlaProlog RoPE: de-interleave v (even elements, then odd elements), then rotate-half
// with cos / sin exactly as supplied; the output stays in the de-interleaved order. dr is even.
void mla_prolog_rope(const double* v, const double* cos, const double* sin, int64_t dr, double* out);

// DynQuantRow: m = max|v|, returns the scale m / 127 and writes q[j] = clamp(rint(v[j] * (127/m))).
// m == 0: returns 0 and writes q = 0 (choice; the vendor behaviour is unconfirmed).
double mla_prolog_dyn_quant_row(const double* v, int64_t n, int8_t* q);

// Full + KV-quant query quant of one (token, head) row: dqs = max|v| / 127, returns dqs and
// writes q[j] = clamp(round(v[j] / dqs)) with ties away from zero. dqs == 0: q = 0.
double mla_prolog_quant_query_row(const double* v, int64_t n, int8_t* q);

// Element offset in `cache` ([BlockNum, BlockSize, 1, H]) of element j of flat slot p:
// PA_BSND through the view's strides; PA_NZ: block b = p / BlockSize through strides[0], then
// (j / c0) * BlockSize * c0 + (p % BlockSize) * c0 + j % c0 inside the block.
int64_t mla_prolog_cache_offset(const TensorView& cache, MlaPrologCacheMode mode, int64_t p, int64_t j);

}  // namespace mlaops
