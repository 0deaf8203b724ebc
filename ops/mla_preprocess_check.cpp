// MlaPreprocess phase 1: the validation rules of docs/ops/mla_preprocess.md (spec mla-prolog.md
// §C.1, §C.2, §C.4, §C.5), each with its rule id MPP-xx, and the plan (chunking, workspace).
// Nothing here reads tensor contents or writes anything.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/workspace.h"
#include "mlaops/runtime.h"
#include "ops/check_util.h"
#include "ops/mla_preprocess.h"

namespace mlaops {
namespace {

using check::absent;
using check::dense;
using check::dtype_in;
using check::format_in;
using check::present;
using check::rank_in;
using check::shape_eq;
using check::value_in;
using check::value_range;

using CacheMode = MlaPreprocessCacheMode;

constexpr DType F16 = DType::kFloat16;
constexpr DType BF16 = DType::kBFloat16;
constexpr DType I8 = DType::kInt8;
constexpr DType I32 = DType::kInt32;
constexpr DType I64 = DType::kInt64;
constexpr DType F32 = DType::kFloat32;

bool given(const TensorView& t) { return t.dtype != DType::kUndefined; }

Status aligned(const char* op, const char* name, const char* rule, const TensorView& t) {
  const int64_t es = dtype_size(t.dtype);
  MLAOPS_CHECK(es <= 0 || reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(es) == 0, kParamInvalid,
               "%s: %s: %s data pointer must be aligned to the element size (%lld bytes); got %p", op, name, rule,
               (long long)es, t.data);
  return kSuccess;
}

// A transposed projection weight W [rows = output channels, cols = K] in FRACTAL_NZ (§B): the
// 4-D storage view [C1, R1, 16, c0], the ATB view [1, C1, R1*16, c0] or the 2-D logical view with
// 4-D storage dims; dense storage in every case. Returns R1 and the storage element count.
Status nz_weight(const char* op, const char* name, const TensorView& w, int64_t rows, int64_t cols, int64_t* r1,
                 int64_t* storage_elems) {
  MLAOPS_TRY(format_in(op, name, "MPP-03 (wdqkv / wuq are passed transposed in FRACTAL_NZ)", w, {Format::kFractalNZ}));
  MLAOPS_TRY(rank_in(op, name, "MPP-04", w, {2, 4}));
  const int64_t es = dtype_size(w.dtype), c0 = 32 / es;
  const int64_t R1 = ceil_div(rows, 16), C1 = ceil_div(cols, c0);
  int64_t elems = 0;
  MLAOPS_CHECK(product_ok({C1, R1, 16, c0, es}, &elems), kParamInvalid, "%s: %s: MPP-15 tensor too large", op, name);
  if (w.rank == 4) {
    const int64_t* d = w.dims;
    const bool storage = d[0] == C1 && d[1] == R1 && d[2] == 16 && d[3] == c0;
    const bool atb = d[0] == 1 && d[1] == C1 && d[2] == R1 * 16 && d[3] == c0;
    if (!storage && !atb)
      return fail(kParamInvalid,
                  "%s: %s: MPP-09 FRACTAL_NZ shape of logical [%lld, %lld]; allowed [%lld, %lld, 16, %lld] or [1, %lld, "
                  "%lld, %lld], got %s",
                  op, name, (long long)rows, (long long)cols, (long long)C1, (long long)R1, (long long)c0,
                  (long long)C1, (long long)(R1 * 16), (long long)c0, check::shape_str(w).c_str());
    MLAOPS_CHECK(w.is_contiguous(), kParamInvalid, "%s: %s: MPP-05 must be contiguous (dense NZ storage)", op, name);
  } else {
    MLAOPS_TRY(shape_eq(op, name, "MPP-09 logical", w, {rows, cols}));
    const int64_t* s = w.storage_dims;
    MLAOPS_CHECK(w.storage_rank == 4 && s[0] == C1 && s[1] == R1 && s[2] == 16 && s[3] == c0, kParamInvalid,
                 "%s: %s: MPP-09 storage shape of a 2-D FRACTAL_NZ view; allowed [%lld, %lld, 16, %lld], got %d storage "
                 "dims",
                 op, name, (long long)C1, (long long)R1, (long long)c0, w.storage_rank);
  }
  MLAOPS_TRY(aligned(op, name, "MPP-05", w));
  *r1 = R1;
  *storage_elems = elems / es;
  return kSuccess;
}

// A cache [BlockNum, a, b, c]: the last three dims dense, the block axis any stride >= one block
// (§C.4: only the first axis may be non-contiguous). Returns the geometry and the span in elements.
Status cache_geom(const char* op, const char* name, const TensorView& t, bool nz, int64_t width,
                  MlaPreprocessCacheGeom* g, int64_t* span) {
  const int64_t* d = t.dims;
  const int64_t* s = t.strides;
  int64_t block = 0;
  MLAOPS_CHECK(product_ok({d[1], d[2], d[3]}, &block), kParamInvalid, "%s: %s: MPP-15 tensor too large", op, name);
  const bool inner_dense = (d[3] == 1 || s[3] == 1) && (d[2] == 1 || s[2] == d[3]) && (d[1] == 1 || s[1] == d[2] * d[3]);
  MLAOPS_CHECK(inner_dense && (d[0] <= 1 || s[0] >= block), kParamInvalid,
               "%s: %s: MPP-05 the last three dims must be dense and the block axis may only be padded (stride >= %lld); "
               "got strides [%lld, %lld, %lld, %lld]",
               op, name, (long long)block, (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3]);
  MLAOPS_TRY(aligned(op, name, "MPP-05", t));
  int64_t sp = 0;
  if (d[0] > 0) {
    const int64_t stride0 = d[0] > 1 ? s[0] : block;
    int64_t es_span;
    MLAOPS_CHECK(mul_ok(d[0] - 1, stride0, &sp) && add_ok(sp, block, &sp) && mul_ok(sp, dtype_size(t.dtype), &es_span),
                 kParamInvalid, "%s: %s: MPP-15 tensor too large", op, name);
  }
  g->width = width;
  g->nz = nz;
  g->c0 = nz ? d[3] : 0;
  g->block_stride = d[0] > 1 ? s[0] : block;
  g->elem_size = dtype_size(t.dtype);
  *span = sp;
  return kSuccess;
}

bool same_view(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.dims[i] != b.dims[i] || (a.dims[i] != 1 && a.strides[i] != b.strides[i])) return false;
  return true;
}

}  // namespace

Status mla_preprocess_check(const MlaPreprocessParams& p, const MlaPreprocessCheckOptions& o, MlaPreprocessPlan* plan) {
  const char* op = o.op;
  // ---- MPP-01 required tensors ----
  const struct {
    const char* name;
    const TensorView* t;
  } required[] = {{"input", &p.input},   {"gamma0", &p.gamma0}, {"beta0", &p.beta0}, {"wdqkv", &p.wdqkv},
                  {"gamma1", &p.gamma1}, {"beta1", &p.beta1},   {"wuq", &p.wuq},     {"gamma2", &p.gamma2},
                  {"cos", &p.cos},       {"sin", &p.sin},       {"wuk", &p.wuk},     {"kvCache", &p.kv_cache},
                  {"slotMapping", &p.slot_mapping},             {"qOut", &p.q_out}};
  for (const auto& r : required)
    MLAOPS_CHECK(given(*r.t), kParamNullptr, "%s: %s: MPP-01 required tensor is null", op, r.name);

  // ---- MPP-06 / MPP-07 modes, MPP-12 reserved attributes, MPP-16 epsilon ----
  const int64_t cm_value = static_cast<int64_t>(p.cache_mode), qm_value = static_cast<int64_t>(p.quant_mode);
  MLAOPS_TRY(value_range(op, "cacheMode", "MPP-06", cm_value, 0, 3));
  MLAOPS_CHECK(qm_value != 2 && qm_value != 3, kParamInvalid,
               "%s: quantMode: MPP-07 %s is not implemented (rejected by the vendor); allowed {0 "
               "(PER_TENSOR_QUANT_ASYMM), 1 (PER_TOKEN_QUANT_SYMM)}, got %lld",
               op, qm_value == 2 ? "PER_TOKEN_QUANT_ASYMM" : "UNQUANT", (long long)qm_value);
  MLAOPS_TRY(value_in(op, "quantMode", "MPP-07", qm_value, {0, 1}));
  const CacheMode cm = p.cache_mode;
  const bool per_token = p.quant_mode == MlaPreprocessQuantMode::kPerTokenSymm;
  const bool nz_cache = mla_preprocess_is_nz_cache(cm), rope_outputs = mla_preprocess_has_rope_outputs(cm);
  const bool cm2 = cm == CacheMode::kInt8NzCache;
  // wdqDim / qRopeDim / kRopeDim are reserved and ignored (the sizes come from the tensors; the
  // doc example passes 128 / 0 / 0). The others would select behaviour that is not implemented.
  MLAOPS_TRY(value_in(op, "qRotaryCoeff", "MPP-12 (half-rotation RoPE only)", p.q_rotary_coeff, {2}));
  MLAOPS_TRY(value_in(op, "kRotaryCoeff", "MPP-12 (half-rotation RoPE only)", p.k_rotary_coeff, {2}));
  MLAOPS_TRY(value_in(op, "wdkvSplitCount", "MPP-12", p.wdkv_split_count, {1}));
  const struct {
    const char* name;
    bool v;
  } transposes[] = {{"transposeWdq", p.transpose_wdq}, {"transposeWuq", p.transpose_wuq}, {"transposeWuk", p.transpose_wuk}};
  for (const auto& x : transposes)
    MLAOPS_CHECK(x.v, kParamInvalid, "%s: %s: MPP-12 value (the weights are always the transposed (N, K) form); "
                 "allowed true, got false", op, x.name);
  MLAOPS_CHECK(std::isfinite(p.epsilon) && p.epsilon >= 0, kParamInvalid,
               "%s: epsilon: MPP-16 value; allowed finite and >= 0, got %g", op, p.epsilon);

  // ---- MPP-02 / 03 / 04 single-tensor dtype, format, rank ----
  MLAOPS_TRY(dtype_in(op, "input", "MPP-02", p.input, {F16, BF16}));
  const DType dt = p.input.dtype;
  const struct {
    const char* name;
    const TensorView* t;
    int rank;
  } activations[] = {{"input", &p.input, 2},   {"gamma0", &p.gamma0, 1}, {"beta0", &p.beta0, 1},
                     {"gamma1", &p.gamma1, 1}, {"beta1", &p.beta1, 1},   {"gamma2", &p.gamma2, 1},
                     {"cos", &p.cos, 2},       {"sin", &p.sin, 2},       {"slotMapping", &p.slot_mapping, 1},
                     {"qOut", &p.q_out, 3}};
  for (const auto& a : activations) {
    MLAOPS_TRY(format_in(op, a.name, "MPP-03", *a.t, {Format::kND, Format::kNCHW}));
    MLAOPS_TRY(rank_in(op, a.name, "MPP-04", *a.t, {a.rank}));
    if (a.t != &p.slot_mapping && a.t != &p.q_out) MLAOPS_TRY(dtype_in(op, a.name, "MPP-02", *a.t, {dt}));
  }
  if (o.vendor_ranges)
    MLAOPS_TRY(dtype_in(op, "slotMapping", "MPP-02", p.slot_mapping, {I32}));
  else
    MLAOPS_TRY(dtype_in(op, "slotMapping", "MPP-02", p.slot_mapping, {I32, I64}));
  MLAOPS_TRY(dtype_in(op, "wdqkv", "MPP-02", p.wdqkv, {I8, dt}));
  MLAOPS_TRY(dtype_in(op, "wuq", "MPP-02", p.wuq, {I8, dt}));
  MLAOPS_TRY(dtype_in(op, "wuk", "MPP-02", p.wuk, {dt}));
  MLAOPS_TRY(format_in(op, "wuk", "MPP-03", p.wuk, {Format::kND, Format::kNCHW, Format::kFractalNZ}));
  const bool wuk_nz = p.wuk.format == Format::kFractalNZ;
  MLAOPS_TRY(rank_in(op, "wuk", wuk_nz ? "MPP-04 (FRACTAL_NZ [N, Hckv/16, D, 16])" : "MPP-04 ([N, D, Hckv])", p.wuk,
                     {wuk_nz ? 4 : 3}));
  const DType kv_dt = cm2 ? I8 : dt;
  MLAOPS_TRY(dtype_in(op, "kvCache", "MPP-02", p.kv_cache, {kv_dt}));
  MLAOPS_TRY(rank_in(op, "kvCache", "MPP-04", p.kv_cache, {4}));
  if (nz_cache)
    MLAOPS_TRY(format_in(op, "kvCache", "MPP-03", p.kv_cache, {Format::kND, Format::kNCHW, Format::kFractalNZ}));
  else
    MLAOPS_TRY(format_in(op, "kvCache", "MPP-03", p.kv_cache, {Format::kND, Format::kNCHW}));
  MLAOPS_TRY(dtype_in(op, "qOut", "MPP-02", p.q_out, {cm2 ? I8 : dt}));

  // ---- MPP-10 presence by mode (tensors a mode does not read must be absent) ----
  const bool quant = p.wdqkv.dtype == I8;
  const bool per_tensor_q = quant && !per_token;
  char why[96];
  std::snprintf(why, sizeof why, "in cacheMode %lld (%s)", (long long)cm_value, mla_preprocess_cache_mode_name(cm));
  const char* w_int8 = "with INT8 weights";
  const char* w_dtype = "with weights in the input dtype";
  const char* qm0 = "in quantMode 0 with INT8 weights";
  const char* not_qm0 = "outside quantMode 0 with INT8 weights";
  const struct {
    const char* name;
    const TensorView* t;
    bool needed;
    const char* required_when;
    const char* absent_when;
  } opts[] = {
      {"kvCacheRope", p.kv_cache_rope, rope_outputs, why, why}, {"qRopeOut", p.q_rope_out, rope_outputs, why, why},
      {"ctkvScale", p.ctkv_scale, cm2, why, why},               {"qNopeScale", p.q_nope_scale, cm2, why, why},
      {"deScale0", p.de_scale0, quant, w_int8, w_dtype},         {"deScale1", p.de_scale1, quant, w_int8, w_dtype},
      {"quantScale0", p.quant_scale0, per_tensor_q, qm0, not_qm0}, {"quantOffset0", p.quant_offset0, per_tensor_q, qm0, not_qm0},
      {"bias0", p.bias0, per_tensor_q, qm0, not_qm0},           {"quantScale1", p.quant_scale1, per_tensor_q, qm0, not_qm0},
      {"quantOffset1", p.quant_offset1, per_tensor_q, qm0, not_qm0}, {"bias1", p.bias1, per_tensor_q, qm0, not_qm0},
  };
  for (const auto& x : opts) {
    if (x.needed)
      MLAOPS_TRY(present(op, x.name, "MPP-10", x.t, x.required_when));
    else
      MLAOPS_TRY(absent(op, x.name, "MPP-10", x.t, x.absent_when));
  }
  if (!rope_outputs) MLAOPS_TRY(absent(op, "krCacheOut", "MPP-10", p.kr_cache_out, why));

  // ---- MPP-11 dtype combinations ----
  MLAOPS_CHECK(p.wuq.dtype == p.wdqkv.dtype, kParamInvalid, "%s: wuq: MPP-11 dtype must equal wdqkv's; allowed %s, got %s",
               op, dtype_name(p.wdqkv.dtype), dtype_name(p.wuq.dtype));
  MLAOPS_CHECK(p.do_rms_norm == quant, kParamInvalid,
               "%s: doRmsNorm: MPP-11 value with %s weights; allowed %s, got %s", op, dtype_name(p.wdqkv.dtype),
               quant ? "true" : "false", p.do_rms_norm ? "true" : "false");
  if (o.vendor_ranges && !quant) {
    MLAOPS_CHECK(dt == BF16, kParamInvalid,
                 "%s: input: MPP-11 the weights in the input dtype (doRmsNorm false) need BF16 input; allowed BF16, got %s",
                 op, dtype_name(dt));
    MLAOPS_CHECK(cm_value <= 1, kParamInvalid,
                 "%s: cacheMode: MPP-11 value with BF16 weights; allowed {0, 1}, got %lld", op, (long long)cm_value);
  }

  // ---- dims ----
  MlaPreprocessShape d;
  d.T = p.input.dims[0];
  d.He = p.input.dims[1];
  d.Hckv = p.gamma2.dims[0];
  d.Hcq = p.gamma1.dims[0];
  d.Dr = p.cos.dims[1];
  d.N = p.wuk.dims[0];
  d.D = wuk_nz ? p.wuk.dims[2] : p.wuk.dims[1];
  d.block_num = p.kv_cache.dims[0];
  d.block_size = nz_cache ? p.kv_cache.dims[2] : p.kv_cache.dims[1];
  MLAOPS_CHECK(d.T >= 0 && d.block_num >= 0, kParamInvalid, "%s: input / kvCache: MPP-09 negative dim", op);
  const struct {
    const char* what;
    int64_t v;
  } positive[] = {{"hiddenSize (input dim 1)", d.He}, {"Hckv (gamma2)", d.Hckv},        {"Hcq (gamma1)", d.Hcq},
                  {"Dr (cos dim 1)", d.Dr},           {"headNum (wuk dim 0)", d.N},     {"D (wuk)", d.D},
                  {"blockSize (kvCache)", d.block_size}};
  for (const auto& x : positive)
    MLAOPS_CHECK(x.v > 0, kParamInvalid, "%s: %s: MPP-09 must be positive; allowed >= 1, got %lld", op, x.what,
                 (long long)x.v);
  MLAOPS_CHECK(d.Dr % 2 == 0, kParamInvalid, "%s: cos: MPP-09 the rope dim must be even; got %lld", op, (long long)d.Dr);
  int64_t slots = 0;
  int64_t head_width = 0;
  MLAOPS_CHECK(add_ok(d.Hckv, d.Dr, &d.m1_cols) && add_ok(d.m1_cols, d.Hcq, &d.m1_cols) &&
                   add_ok(d.D, d.Dr, &head_width) && product_ok({d.N, head_width}, &d.m2_cols) &&
                   product_ok({d.block_num, d.block_size}, &slots),
               kParamInvalid, "%s: MPP-15 size overflows int64", op);

  if (o.vendor_ranges) {  // ---- MPP-08 the vendor's ranges (aclnn doc / ATB op, §C.5) ----
    MLAOPS_TRY(value_range(op, "input", "MPP-08 tokenNum", d.T, 0, 1024));
    MLAOPS_TRY(value_range(op, "input", "MPP-08 hiddenSize", d.He, 2048, 10240));
    MLAOPS_CHECK(d.He % 256 == 0, kParamInvalid,
                 "%s: input: MPP-08 hiddenSize value; allowed a multiple of 256, got %lld", op, (long long)d.He);
    if (!quant) MLAOPS_TRY(value_in(op, "input", "MPP-08 hiddenSize with BF16 weights", d.He, {6144}));
    MLAOPS_TRY(value_in(op, "wuk", "MPP-08 headNum", d.N, {16, 32, 64, 128}));
    MLAOPS_TRY(value_in(op, "gamma2", "MPP-08 Hckv", d.Hckv, {512}));
    MLAOPS_TRY(value_in(op, "gamma1", "MPP-08 Hcq (wdqDim)", d.Hcq, {1536}));
    MLAOPS_TRY(value_in(op, "cos", "MPP-08 rope dim", d.Dr, {64}));
    MLAOPS_TRY(value_in(op, "wuk", "MPP-08 D", d.D, {128}));
    if (nz_cache)
      MLAOPS_TRY(value_in(op, "kvCache", "MPP-08 blockSize in the NZ cache modes", d.block_size, {128}));
    else if (d.block_size != 256)
      MLAOPS_TRY(value_range(op, "kvCache", "MPP-08 blockSize (or 256)", d.block_size, 1, 128));
  }

  // ---- MPP-09 every tensor's shape (§C.2, §C.4) ----
  int64_t wdqkv_elems = 0, wuq_elems = 0;
  MLAOPS_TRY(nz_weight(op, "wdqkv", p.wdqkv, d.m1_cols, d.He, &plan->wdqkv_r1, &wdqkv_elems));
  MLAOPS_TRY(nz_weight(op, "wuq", p.wuq, d.m2_cols, d.Hcq, &plan->wuq_r1, &wuq_elems));
  if (wuk_nz) {
    MLAOPS_CHECK(d.Hckv % 16 == 0 && d.D % 16 == 0, kParamInvalid,
                 "%s: wuk: MPP-09 FRACTAL_NZ needs Hckv (%lld) and D (%lld) multiples of 16", op, (long long)d.Hckv,
                 (long long)d.D);
    MLAOPS_TRY(shape_eq(op, "wuk", "MPP-09", p.wuk, {d.N, d.Hckv / 16, d.D, 16}));
  } else {
    MLAOPS_TRY(shape_eq(op, "wuk", "MPP-09", p.wuk, {d.N, d.D, d.Hckv}));
  }
  MLAOPS_TRY(shape_eq(op, "gamma0", "MPP-09", p.gamma0, {d.He}));
  MLAOPS_TRY(shape_eq(op, "beta0", "MPP-09", p.beta0, {d.He}));
  MLAOPS_TRY(shape_eq(op, "beta1", "MPP-09", p.beta1, {d.Hcq}));
  MLAOPS_TRY(shape_eq(op, "cos", "MPP-09", p.cos, {d.T, d.Dr}));
  MLAOPS_TRY(shape_eq(op, "sin", "MPP-09", p.sin, {d.T, d.Dr}));
  MLAOPS_TRY(shape_eq(op, "slotMapping", "MPP-09", p.slot_mapping, {d.T}));
  MLAOPS_TRY(shape_eq(op, "qOut", "MPP-09", p.q_out, {d.T, d.N, cm == CacheMode::kKvCache ? d.Hckv + d.Dr : d.Hckv}));
  const int64_t bn = d.block_num, bs = d.block_size;
  const int64_t c0_kv = 32 / dtype_size(kv_dt), c0_r = 32 / dtype_size(dt);
  if (nz_cache)
    MLAOPS_CHECK(d.Hckv % c0_kv == 0 && d.Dr % c0_r == 0, kParamInvalid,
                 "%s: kvCache / kvCacheRope: MPP-09 the NZ caches need Hckv (%lld) a multiple of %lld and Dr (%lld) a "
                 "multiple of %lld",
                 op, (long long)d.Hckv, (long long)c0_kv, (long long)d.Dr, (long long)c0_r);
  switch (cm) {
    case CacheMode::kKvCache: MLAOPS_TRY(shape_eq(op, "kvCache", "MPP-09", p.kv_cache, {bn, bs, 1, d.Hckv + d.Dr})); break;
    case CacheMode::kKropeCtkv: MLAOPS_TRY(shape_eq(op, "kvCache", "MPP-09", p.kv_cache, {bn, bs, 1, d.Hckv})); break;
    case CacheMode::kInt8NzCache:
    case CacheMode::kNzCache:
      MLAOPS_TRY(shape_eq(op, "kvCache", "MPP-09", p.kv_cache, {bn, d.Hckv / c0_kv, bs, c0_kv}));
      break;
  }
  int64_t kv_span = 0, kr_span = 0;
  MLAOPS_TRY(cache_geom(op, "kvCache", p.kv_cache, nz_cache, cm == CacheMode::kKvCache ? d.Hckv + d.Dr : d.Hckv,
                        &plan->kv, &kv_span));
  if (rope_outputs) {
    const TensorView& r = *p.kv_cache_rope;
    MLAOPS_TRY(dtype_in(op, "kvCacheRope", "MPP-02", r, {dt}));
    MLAOPS_TRY(rank_in(op, "kvCacheRope", "MPP-04", r, {4}));
    if (nz_cache) {
      MLAOPS_TRY(format_in(op, "kvCacheRope", "MPP-03", r, {Format::kND, Format::kNCHW, Format::kFractalNZ}));
      MLAOPS_TRY(shape_eq(op, "kvCacheRope", "MPP-09", r, {bn, d.Dr / c0_r, bs, c0_r}));
    } else {
      MLAOPS_TRY(format_in(op, "kvCacheRope", "MPP-03", r, {Format::kND, Format::kNCHW}));
      MLAOPS_TRY(shape_eq(op, "kvCacheRope", "MPP-09", r, {bn, bs, 1, d.Dr}));
    }
    MLAOPS_TRY(cache_geom(op, "kvCacheRope", r, nz_cache, d.Dr, &plan->kr, &kr_span));
    const TensorView& qr = *p.q_rope_out;
    MLAOPS_TRY(dtype_in(op, "qRopeOut", "MPP-02", qr, {dt}));
    MLAOPS_TRY(format_in(op, "qRopeOut", "MPP-03", qr, {Format::kND, Format::kNCHW}));
    MLAOPS_TRY(shape_eq(op, "qRopeOut", "MPP-09", qr, {d.T, d.N, d.Dr}));
    MLAOPS_TRY(dense(op, "qRopeOut", "MPP-05", qr));
  }

  // ---- the optional inputs: dtype, shape, density ----
  const DType ds_dt = dt == F16 ? I64 : F32;  // fp16: fp32 bits in the low 32 bits of an INT64
  const struct {
    const char* name;
    const TensorView* t;
    DType dtype;
    int64_t n;
    const char* rule;
  } vecs[] = {{"quantScale0", p.quant_scale0, dt, 1, "MPP-02"},    {"quantOffset0", p.quant_offset0, I8, 1, "MPP-02"},
              {"deScale0", p.de_scale0, ds_dt, d.m1_cols, "MPP-11"}, {"bias0", p.bias0, I32, d.m1_cols, "MPP-02"},
              {"quantScale1", p.quant_scale1, dt, 1, "MPP-02"},    {"quantOffset1", p.quant_offset1, I8, 1, "MPP-02"},
              {"deScale1", p.de_scale1, ds_dt, d.m2_cols, "MPP-11"}, {"bias1", p.bias1, I32, d.m2_cols, "MPP-02"},
              {"ctkvScale", p.ctkv_scale, dt, 1, "MPP-02"}};
  for (const auto& v : vecs) {
    if (v.t == nullptr) continue;
    MLAOPS_TRY(dtype_in(op, v.name, v.rule, *v.t, {v.dtype}));
    MLAOPS_TRY(format_in(op, v.name, "MPP-03", *v.t, {Format::kND, Format::kNCHW}));
    MLAOPS_TRY(shape_eq(op, v.name, "MPP-09", *v.t, {v.n}));
    MLAOPS_TRY(dense(op, v.name, "MPP-05", *v.t));
  }
  plan->q_nope_scale_n = 0;
  if (p.q_nope_scale != nullptr) {  // [N], (1, N, 1), ... or [1] (broadcast; the doc table's shape)
    const TensorView& s = *p.q_nope_scale;
    MLAOPS_TRY(dtype_in(op, "qNopeScale", "MPP-02", s, {dt}));
    MLAOPS_TRY(format_in(op, "qNopeScale", "MPP-03", s, {Format::kND, Format::kNCHW}));
    MLAOPS_TRY(rank_in(op, "qNopeScale", "MPP-04", s, {1, 2, 3}));
    int64_t n = 0;
    MLAOPS_CHECK(checked_numel(s, &n) && (n == d.N || n == 1), kParamInvalid,
                 "%s: qNopeScale: MPP-09 element count; allowed headNum (%lld) or 1, got shape %s", op, (long long)d.N,
                 check::shape_str(s).c_str());
    MLAOPS_TRY(dense(op, "qNopeScale", "MPP-05", s));
    plan->q_nope_scale_n = n;
  }

  // ---- MPP-13 kvCacheOut / krCacheOut are the caches (in-place update) ----
  const bool kv_out_default = p.kv_cache_out.rank == 0 && p.kv_cache_out.data == nullptr;
  MLAOPS_CHECK(kv_out_default || same_view(p.kv_cache_out, p.kv_cache), kParamInvalid,
               "%s: kvCacheOut: MPP-13 must describe the same memory as kvCache (in-place update); allowed data %p shape "
               "%s, got data %p shape %s",
               op, p.kv_cache.data, check::shape_str(p.kv_cache).c_str(), p.kv_cache_out.data,
               check::shape_str(p.kv_cache_out).c_str());
  if (rope_outputs && p.kr_cache_out != nullptr)
    MLAOPS_CHECK(same_view(*p.kr_cache_out, *p.kv_cache_rope), kParamInvalid,
                 "%s: krCacheOut: MPP-13 must describe the same memory as kvCacheRope (in-place update); allowed data %p "
                 "shape %s, got data %p shape %s",
                 op, p.kv_cache_rope->data, check::shape_str(*p.kv_cache_rope).c_str(), p.kr_cache_out->data,
                 check::shape_str(*p.kr_cache_out).c_str());

  // ---- MPP-05 density / alignment ----
  for (const auto& a : activations) MLAOPS_TRY(dense(op, a.name, "MPP-05", *a.t));
  MLAOPS_TRY(dense(op, "wuk", "MPP-05", p.wuk));

  // ---- MPP-14 aliasing: outputs and caches disjoint from each other and from every input ----
  TensorView kv_flat = make_view(p.kv_cache.data, p.kv_cache.dtype, {kv_span});
  TensorView kr_flat;
  if (rope_outputs) kr_flat = make_view(p.kv_cache_rope->data, p.kv_cache_rope->dtype, {kr_span});
  TensorView wdqkv_flat = make_view(p.wdqkv.data, p.wdqkv.dtype, {wdqkv_elems});
  TensorView wuq_flat = make_view(p.wuq.data, p.wuq.dtype, {wuq_elems});
  MLAOPS_TRY(check::no_overlap(
      op, "MPP-14",
      {{"qOut", &p.q_out}, {"qRopeOut", p.q_rope_out}, {"kvCache", &kv_flat}, {"kvCacheRope", rope_outputs ? &kr_flat : nullptr}},
      {{"input", &p.input},         {"gamma0", &p.gamma0},         {"beta0", &p.beta0},
       {"quantScale0", p.quant_scale0}, {"quantOffset0", p.quant_offset0}, {"wdqkv", &wdqkv_flat},
       {"deScale0", p.de_scale0},   {"bias0", p.bias0},            {"gamma1", &p.gamma1},
       {"beta1", &p.beta1},         {"quantScale1", p.quant_scale1}, {"quantOffset1", p.quant_offset1},
       {"wuq", &wuq_flat},          {"deScale1", p.de_scale1},     {"bias1", p.bias1},
       {"gamma2", &p.gamma2},       {"cos", &p.cos},               {"sin", &p.sin},
       {"wuk", &p.wuk},             {"slotMapping", &p.slot_mapping}, {"ctkvScale", p.ctkv_scale},
       {"qNopeScale", p.q_nope_scale}}));

  // ---- the plan: chunking, threads, workspace ----
  plan->dims = d;
  plan->quant = quant;
  plan->per_token = per_token;
  plan->fp16 = dt == F16;
  plan->wuk_nz = wuk_nz;
  plan->cache_mode = cm;
  if (wuk_nz) {  // head h: [D, Hckv] NZ with c0 16: (i, k) at (k/16)*D*16 + i*16 + k%16
    plan->wuk_ldb = 16;
    plan->wuk_panel_stride = d.D * 16;
  } else {       // head h: row-major [D, Hckv]
    plan->wuk_ldb = d.Hckv;
    plan->wuk_panel_stride = 16;
  }
  plan->wuk_head_stride = d.D * d.Hckv;
  plan->threads = num_threads();
  plan->chunk = std::min<int64_t>(std::max<int64_t>(d.T, 1), 256);
  plan->head_cols = round_up(d.D + d.Dr, 16) + 16;
  const int64_t c = plan->chunk;
  const int64_t kv_es = dtype_size(kv_dt);
  int64_t a0 = 0, acc1 = 0, m1 = 0, a1 = 0, kv = 0, kr = 0, t1 = 0, t2 = 0, t3 = 0, per_thread = 0, threads_total = 0;
  MLAOPS_CHECK(product_ok({c, quant ? d.He : 0}, &a0) && product_ok({c, d.m1_cols, 4}, &acc1) &&
                   product_ok({c, d.m1_cols, 4}, &m1) && product_ok({c, d.Hcq, 2}, &a1) &&
                   product_ok({c, plan->kv.width, kv_es}, &kv) && product_ok({c, d.Dr, 2}, &kr) &&
                   product_ok({c, plan->head_cols, 4}, &t1) && product_ok({c, d.D, 2}, &t2) &&
                   product_ok({c, d.Hckv, 4}, &t3) && add_ok(t1, t2, &per_thread) && add_ok(per_thread, t3, &per_thread) &&
                   add_ok(per_thread, 4 * kWorkspaceAlign, &per_thread),
               kParamInvalid, "%s: MPP-15 workspace size overflows int64", op);
  per_thread = round_up(per_thread, kWorkspaceAlign);
  MLAOPS_CHECK(mul_ok(per_thread, plan->threads, &threads_total), kParamInvalid, "%s: MPP-15 workspace overflow", op);
  WorkspaceLayout l;
  MLAOPS_TRY(l.add(a0, &plan->off_a0, op));
  MLAOPS_TRY(l.add(c * 16, &plan->off_scale, op));
  MLAOPS_TRY(l.add(acc1, &plan->off_acc1, op));
  MLAOPS_TRY(l.add(m1, &plan->off_m1, op));
  MLAOPS_TRY(l.add(a1, &plan->off_a1, op));
  MLAOPS_TRY(l.add(kv, &plan->off_kv, op));
  MLAOPS_TRY(l.add(rope_outputs ? kr : 0, &plan->off_kr, op));
  MLAOPS_TRY(l.add(threads_total, &plan->off_thread, op));
  plan->thread_bytes = per_thread;
  plan->workspace_bytes = d.T == 0 ? 0 : l.total();
  return kSuccess;
}

}  // namespace mlaops
