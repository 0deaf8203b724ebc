// Float64 reference of MlaPreprocess (docs/ops/mla_preprocess.md).
//
// Plain, single-threaded double arithmetic written straight from the vendor's golden. Values are
// carried in double where the vendor kernel carries fp32 and rounded exactly where the kernel
// rounds:
//   * the input dtype (fp16 / bf16, round to nearest even, once from the double): the two
//     projection outputs m1 = [ckv | kpe | cq] and m2 = [qn | qp] per head, qNope (fp32
//     accumulation of qn @ wuk[h], cast at the end), qRope, kN = RmsNorm(ckv, gamma2), kR;
//   * the activation quant of both RmsNormQuant stages and of the cm2 kv cache goes through
//     fp16 twice, as the kernel does (mla_preprocess_quant_int8): v -> fp16 (round to nearest
//     even) -> clamp to [-128, 127] in fp16 -> int8 (round half to even). v is the double the
//     kernel holds in fp32, rounded directly to fp16 (for any fp32-representable v the same as
//     rounding the fp32 value). The reference's own helpers (ref_util.h) do the rounding, the
//     element access and the FRACTAL_NZ index.
//
// Pipeline per token t (quantMode 0):
//   a0 = RmsNormQuant(input[t], gamma0, beta0, quantScale0, quantOffset0)            int8 [He]
//   m1 = dtype((int32(a0 @ wdqkv^T) + bias0) * deScale0)                            [Hckv+Dr+Hcq]
//   ckv = m1[0:Hckv], kpe = m1[Hckv:Hckv+Dr], cq = m1[Hckv+Dr:]                     (KV FIRST)
//   a1 = RmsNormQuant(cq, gamma1, beta1, quantScale1, quantOffset1)                  int8 [Hcq]
//   m2 = dtype((int32(a1 @ wuq^T) + bias1) * deScale1) as [N, D+Dr]; qn = [:, :D], qp = [:, D:]
//   qNope[h] = dtype(qn[h] @ wuk[h]); qRope[h] = dtype(rope(qp[h]))
//   kN = dtype(RmsNorm(ckv, gamma2)); kR = dtype(rope(kpe))
//   rope(v) = v * cos[t] + rotate_half(v) * sin[t], rotate_half(v) = [-v[Dr/2:], v[:Dr/2]]
//   cm0: kvCache[slot] = [kN | kR], qOut[t, h] = [qNope | qRope]
//   cm1: kvCache[slot] = kN, kvCacheRope[slot] = kR, qOut = qNope, qRopeOut = qRope
//   cm2: kvCache (INT8 NZ)[slot] = quant_int8(RmsNorm(ckv, gamma2) (the fp32 value, not kN) *
//        (1 / ctkvScale)); kvCacheRope (NZ)[slot] = kR; qOut (INT8) = clamp(rint(qNope *
//        qNopeScale[h])) — DIVIDE for the cache, MULTIPLY for the query, as the vendor does;
//        qRopeOut = qRope
//   cm3: kvCache (NZ)[slot] = kN, kvCacheRope (NZ)[slot] = kR, qOut = qNope, qRopeOut = qRope
// quantMode 1 (both stages): y = RmsNorm(v, gamma) + beta, s = max|y| / 127 (from the unrounded
// y), q = quant_int8(y * (1 / s)), m = dtype(int32(q @ W^T) * deScale[ch] * s); quantScale,
// quantOffset and bias are not used (ignored if given).
// The int32 accumulations of the int8 matmuls are carried exactly in double; int32 overflow (out
// of reach for the vendor's shapes: 10240 * 128 * 128 < 2^31) is not emulated.
// deScale: INT64 / UINT64 tensors hold an fp32 bit pattern in their low 32 bits (the vendor's fp16
// path; the high bits are ignored), FP32 tensors the value (bf16 path). Either encoding is
// accepted with either input dtype.
//
// Behaviour where the vendor material is silent or UNCONFIRMED (choices of this reference):
//   * Split sizes are derived, not fixed: Hckv = numel(gamma2), Dr = last dim of cos, Hcq =
//     numel(gamma1), N and D from wuk, He from input; the weights, caches and outputs must agree
//     with them. The vendor values are 512 / 64 / 1536 / 128; any consistent sizes are accepted
//     (Dr even; NZ caches need Hckv and Dr multiples of their c0). BlockSize is taken from
//     kvCache and may be any size (the vendor requires 128 for the NZ modes).
//   * Unquantized path (weights in the input dtype; ATB: BF16 weights, doRmsNorm = false),
//     UNCONFIRMED; this is the documented best guess: stage 1 skips RmsNormQuant (a0 = input),
//     m1 = dtype(a0 @ wdqkv^T) (plain matmul, fp32 accumulation, no bias, no deScale);
//     stage 3 still applies RmsNorm with gamma1 / beta1 to cq, the result rounded to the dtype
//     (the matmul operand) and m2 = dtype(a1 @ wuq^T); everything after m2 as above. quantScale,
//     quantOffset, deScale and bias are ignored. INT8 weights with doRmsNorm = false ("quant
//     only") and dtype weights with doRmsNorm = true are rejected (kParamInvalid): unconfirmed
//     combinations that the vendor (ATB) never builds.
//   * cm2 qOut rounding: "round" is taken as round half to even (torch.round of the ATB golden),
//     applied once to the double product of the dtype-rounded qNope and qNopeScale[h], then
//     saturated to [-128, 127] (no fp16 intermediate: the kernel path is unconfirmed).
//   * qNopeScale: numel N (per head: [N], (1, N, 1), ...) or numel 1 (broadcast to every head;
//     the doc table's [1]).
//   * quantMode 1 on an all-zero y row (max|y| = 0): scale 0, q = 0, so the projection row is
//     0 (UNCONFIRMED).
//   * quantScale = 0 or NaN / Inf data are not errors: IEEE arithmetic, then NaN -> int8 0 and
//     +-Inf saturated (never UB).
//   * slotMapping (INT32 or INT64): -1 skips the token's cache writes in every mode (its qOut /
//     qRopeOut rows are still written). Any other negative value, or a slot >= BlockNum *
//     BlockSize, fails the whole call with kParamInvalid naming slotMapping[t], found by a
//     read-only pre-pass before any write. Duplicate slots: tokens are processed in order, the
//     last token wins. T == 0: success, nothing written.
//   * The vectors the kernel reads a prefix of (gamma0 / beta0 / beta1, the quant scales and
//     offsets, deScale*, bias*, ctkvScale, qNopeScale, slotMapping, and cos / sin by rows) may hold
//     more elements than read; the first ones (linear order) are used. gamma1 / gamma2 define Hcq /
//     Hckv and are read whole.
//   * Inputs that are values (gamma, beta, scales, cos, sin, wuk, ctkvScale, qNopeScale) are
//     read exactly in any float dtype (FP16 / BF16 / FP32); outputs and caches must have the
//     dtypes of the tensor table. Optional tensors a mode does not use are ignored; required ones that are
//     null give kParamNullptr. Reserved attributes (wdqDim, q/kRopeDim, rotary coeffs,
//     transpose*, wdkvSplitCount) are ignored.
//   * The cache rows are written into kv_cache_out / kr_cache_out (kv_cache / kv_cache_rope when
//     left default / null) at the offsets the INPUT caches' dims and strides give (the vendor
//     kernel's addressing); the input caches are neither read nor written. An output must have
//     the input cache's dtype and reach every written element (checked per slot in the pre-pass,
//     kParamInvalid before any write).
//   * q_down_out (optional): dtype(RmsNorm(cq) * gamma1 + beta1) per token, [T, Hcq], rounded
//     once from the double (round half to even).
//   * Every tensor is read and written through its view's dims and strides (the NZ caches as
//     4-D views too, so a non-contiguous block axis is honoured); the 2-D logical form of an NZ
//     weight is read as dense storage. Every shape is checked against the derived sizes before
//     anything is read beyond the dims, so no access leaves a view's declared extent.
#pragma once

#include <cstdint>

#include "mlaops/mla_preprocess.h"
#include "mlaops/mlapo.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"

namespace mlaops {

// The sizes of one call as the reference derives them (see above).
struct MlaPreprocessDims {
  int64_t T = 0;       // tokens: input dim 0
  int64_t He = 0;      // hidden: input dim 1
  int64_t Hckv = 0;    // numel(gamma2)                         (vendor 512)
  int64_t Dr = 0;      // last dim of cos                       (vendor 64)
  int64_t Hcq = 0;     // numel(gamma1)                         (vendor 1536)
  int64_t N = 0;       // heads: wuk dim 0
  int64_t D = 0;       // q nope head dim: wuk dim 1 (ND) or 2 (NZ) (vendor 128)
  int64_t block_num = 0, block_size = 0;  // from kvCache (dims 0 and 1 (ND) or 2 (NZ))
};

// Runs the operator on `p` (in place on the caches). Inconsistent shapes or dtypes, missing
// mode tensors and out-of-range slots return an error (kParamInvalid / kParamNullptr, with
// last_error_message()) before anything is written.
Status mla_preprocess_ref(const MlaPreprocessParams& p);

// The serving stacks' MLAPO op (mlaops/mlapo.h) the same way: the pipeline above with stage 1
//   quantMode 0: a0 = quant_int8(input * (1 / quantScale0) + quantOffset0)   (no RmsNorm)
//   quantMode 1: s0 = max|input| / 127, a0 = quant_int8(input * (1 / s0))
//   weights in the input dtype: m1 = dtype(input @ wdqkv^T) as above;
// beta1 absent: no bias in the q RmsNorm; cos / sin absent (both): no rotation, q_rope = qp and
// k_rope = kpe as computed; Dr then from kvCacheRope (or kvCache's width beyond Hckv in
// cacheMode 0); epsilon 1e-6.
Status mlapo_ref(const MlapoParams& p);

// The reference's derivation of the sizes (no consistency checks beyond what it reads). Without
// cos (the MLAPO op without RoPE) Dr comes from the caches as in mlapo_ref.
Status mla_preprocess_dims(const MlaPreprocessParams& p, MlaPreprocessDims* out);

// ---- the pieces, exposed for hand-checked tests ----

// The kernel's activation quant: v -> fp16 (round to nearest even) -> clamp [-128, 127] in fp16
// -> int8 (round half to even). NaN gives 0.
int8_t mla_preprocess_quant_int8(double v);

// y[i] = v[i] / sqrt(sum(v*v)/n + eps) * gamma[i] (+ beta[i] when beta is non-null).
void mla_preprocess_rms_norm(const double* v, const double* gamma, const double* beta, int64_t n, double eps,
                             double* y);

// quantMode 0 RmsNormQuant: q[i] = quant_int8(y[i] * (1 / qs) + qo), y = RmsNorm(v)*gamma + beta.
void mla_preprocess_rms_norm_quant_per_tensor(const double* v, const double* gamma, const double* beta, int64_t n,
                                              double eps, double qs, double qo, int8_t* q);

// quantMode 1 RmsNormQuant: y as above, s = max|y| / 127, q[i] = quant_int8(y[i] * (1 / s));
// returns s. An all-zero y: returns 0 and writes q = 0.
double mla_preprocess_rms_norm_quant_per_token(const double* v, const double* gamma, const double* beta, int64_t n,
                                               double eps, int8_t* q);

// The MLAPO op's first stage (no RmsNorm): quantMode 0 q[i] = quant_int8(x[i] * (1 / qs) + qo);
// quantMode 1 s = max|x| / 127, q[i] = quant_int8(x[i] * (1 / s)), returns s (0 and q = 0 for an
// all-zero row). The RmsNormQuant pieces above are RmsNorm followed by these.
void mla_preprocess_quant_per_tensor(const double* x, int64_t n, double qs, double qo, int8_t* q);
double mla_preprocess_quant_per_token(const double* x, int64_t n, int8_t* q);

// Half-rotation RoPE (no de-interleave): out[i] = v[i]*cos[i] + r[i]*sin[i], r = [-v[h:], v[:h]],
// h = dr / 2 (dr even). out must not alias v.
void mla_preprocess_rope(const double* v, const double* cos, const double* sin, int64_t dr, double* out);

// Element i of a deScale tensor (linear order): INT64 / UINT64 -> the fp32 whose bits are the low
// 32 bits; float dtypes -> the value.
double mla_preprocess_load_descale(const TensorView& t, int64_t i);

// Element offset (through the view's strides) of element j of flat slot `slot` in a cache:
// ND [BlockNum, BlockSize, 1, W]: (slot / BlockSize, slot % BlockSize, 0, j);
// NZ [BlockNum, W/c0, BlockSize, c0] (nz = true): (slot / BlockSize, j / c0, slot % BlockSize, j % c0).
// For a contiguous NZ cache this is b*BlockSize*W + (j/c0)*BlockSize*c0 + o*c0 + j%c0.
int64_t mla_preprocess_cache_offset(const TensorView& cache, bool nz, int64_t slot, int64_t j);

}  // namespace mlaops
