// MlaProlog V1 / V2WeightNz phase 1: the validation rules of docs/ops/mla_prolog.md (spec
// mla-prolog.md §A.3, §A.7), each with its rule id, and the plan (kernels, chunking, workspace).
// Nothing here reads tensor contents or writes anything.
#include <cmath>
#include <cstring>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/fractal_nz.h"
#include "core/workspace.h"
#include "mlaops/runtime.h"
#include "ops/check_util.h"
#include "ops/mla_prolog.h"

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

constexpr DType BF16 = DType::kBFloat16;
constexpr DType I8 = DType::kInt8;
constexpr DType F32 = DType::kFloat32;
constexpr DType I64 = DType::kInt64;

// Resolves a weight (FRACTAL_NZ 4-D / 2-D+storage, or ND 2-D outside the aclnn layer) to its
// panel description and checks its logical shape [rows, cols].
Status weight_panels(const char* op, const char* name, const TensorView& w, int64_t rows, int64_t cols,
                     bool allow_nd, PanelMatrix* out) {
  PanelMatrix m;
  m.data = w.data;
  m.rows = rows;
  m.cols = cols;
  if (w.format == Format::kFractalNZ) {
    NzMatrix nz;
    MLAOPS_TRY(resolve_nz(w, op, name, &nz));
    const bool four_d = w.rank == 4;
    if (four_d) {
      int64_t s[4];
      nz_storage_shape(rows, cols, dtype_size(w.dtype), s);
      MLAOPS_TRY(shape_eq(op, name, "MP-13 FRACTAL_NZ storage", w, {s[0], s[1], s[2], s[3]}));
    } else {
      MLAOPS_CHECK(nz.rows == rows && nz.cols == cols, kParamInvalid,
                   "%s: %s: MP-09 logical shape; allowed [%lld, %lld], got [%lld, %lld]", op, name, (long long)rows,
                   (long long)cols, (long long)nz.rows, (long long)nz.cols);
    }
    int64_t bytes;
    MLAOPS_CHECK(product_ok({nz.c1, nz.r1, 16, nz.c0, dtype_size(w.dtype)}, &bytes), kParamInvalid,
                 "%s: %s: MP-14 tensor too large", op, name);
    MLAOPS_CHECK(four_d ? w.is_contiguous() : true, kParamInvalid, "%s: %s: MP-05 must be contiguous", op, name);
    MLAOPS_CHECK(reinterpret_cast<uintptr_t>(w.data) % static_cast<uintptr_t>(dtype_size(w.dtype)) == 0, kParamInvalid,
                 "%s: %s: MP-05 data pointer must be aligned to the element size", op, name);
    m.panel_width = nz.c0;
    m.ldb = nz.c0;
    m.panel_stride = nz.r1 * 16 * nz.c0;
  } else {
    MLAOPS_CHECK(allow_nd, kParamInvalid, "%s: %s: MP-03 format; allowed {FRACTAL_NZ}, got %s", op, name,
                 format_name(w.format));
    MLAOPS_TRY(format_in(op, name, "MP-03", w, {Format::kND, Format::kNCHW}));
    MLAOPS_TRY(rank_in(op, name, "MP-04", w, {2}));
    MLAOPS_TRY(shape_eq(op, name, "MP-09", w, {rows, cols}));
    MLAOPS_TRY(dense(op, name, "MP-05", w));
    MLAOPS_CHECK(w.dtype == DType::kBFloat16, kParamInvalid,
                 "%s: %s: MP-03 an ND weight must be BF16 (int8 weights must be FRACTAL_NZ); got %s", op, name,
                 dtype_name(w.dtype));
    m.panel_width = 16;
    m.ldb = cols;
    m.panel_stride = 16;
  }
  *out = m;
  return kSuccess;
}

bool given(const TensorView& t) { return t.dtype != DType::kUndefined; }

}  // namespace

Status mla_prolog_check(const MlaPrologParams& p, const MlaPrologCheckOptions& o, MlaPrologPlan* plan) {
  const char* op = o.op;
  // ---- MP-01 required tensors ----
  const struct {
    const char* name;
    const TensorView* t;
  } required[] = {{"tokenX", &p.token_x},           {"weightDq", &p.weight_dq},
                  {"weightUqQr", &p.weight_uq_qr},  {"weightUk", &p.weight_uk},
                  {"weightDkvKr", &p.weight_dkv_kr}, {"rmsnormGammaCq", &p.rmsnorm_gamma_cq},
                  {"rmsnormGammaCkv", &p.rmsnorm_gamma_ckv}, {"ropeSin", &p.rope_sin},
                  {"ropeCos", &p.rope_cos},         {"cacheIndex", &p.cache_index},
                  {"kvCacheRef", &p.kv_cache},      {"krCacheRef", &p.kr_cache},
                  {"queryOut", &p.query_out},       {"queryRopeOut", &p.query_rope_out}};
  for (const auto& r : required)
    MLAOPS_CHECK(given(*r.t), kParamNullptr, "%s: %s: MP-01 required tensor is null", op, r.name);

  // ---- MP-02/03/04 single-tensor dtype, format, rank ----
  MLAOPS_TRY(dtype_in(op, "tokenX", "MP-02", p.token_x, {BF16, I8}));
  MLAOPS_TRY(rank_in(op, "tokenX", "MP-04", p.token_x, {2, 3}));
  MLAOPS_TRY(dtype_in(op, "weightDq", "MP-02", p.weight_dq, {BF16, I8}));
  MLAOPS_TRY(dtype_in(op, "weightUqQr", "MP-02", p.weight_uq_qr, {BF16, I8}));
  MLAOPS_TRY(dtype_in(op, "weightDkvKr", "MP-02", p.weight_dkv_kr, {BF16, I8}));
  MLAOPS_TRY(dtype_in(op, "weightUk", "MP-02", p.weight_uk, {BF16}));
  MLAOPS_TRY(rank_in(op, "weightUk", "MP-04", p.weight_uk, {3}));
  MLAOPS_TRY(dtype_in(op, "rmsnormGammaCq", "MP-02", p.rmsnorm_gamma_cq, {BF16}));
  MLAOPS_TRY(rank_in(op, "rmsnormGammaCq", "MP-04", p.rmsnorm_gamma_cq, {1}));
  MLAOPS_TRY(dtype_in(op, "rmsnormGammaCkv", "MP-02", p.rmsnorm_gamma_ckv, {BF16}));
  MLAOPS_TRY(rank_in(op, "rmsnormGammaCkv", "MP-04", p.rmsnorm_gamma_ckv, {1}));
  MLAOPS_TRY(dtype_in(op, "ropeSin", "MP-02", p.rope_sin, {BF16}));
  MLAOPS_TRY(dtype_in(op, "ropeCos", "MP-02", p.rope_cos, {BF16}));
  MLAOPS_TRY(rank_in(op, "ropeCos", "MP-04", p.rope_cos, {2, 3}));
  MLAOPS_TRY(dtype_in(op, "cacheIndex", "MP-02", p.cache_index, {I64}));
  MLAOPS_TRY(dtype_in(op, "kvCacheRef", "MP-02", p.kv_cache, {BF16, I8}));
  MLAOPS_TRY(rank_in(op, "kvCacheRef", "MP-04", p.kv_cache, {4}));
  MLAOPS_TRY(dtype_in(op, "krCacheRef", "MP-02", p.kr_cache, {BF16, I8}));
  MLAOPS_TRY(rank_in(op, "krCacheRef", "MP-04", p.kr_cache, {4}));
  const struct {
    const char* name;
    const TensorView* t;
  } nd_tensors[] = {{"tokenX", &p.token_x},         {"weightUk", &p.weight_uk},
                    {"rmsnormGammaCq", &p.rmsnorm_gamma_cq}, {"rmsnormGammaCkv", &p.rmsnorm_gamma_ckv},
                    {"ropeSin", &p.rope_sin},       {"ropeCos", &p.rope_cos},
                    {"cacheIndex", &p.cache_index}, {"queryOut", &p.query_out},
                    {"queryRopeOut", &p.query_rope_out}};
  for (const auto& r : nd_tensors) MLAOPS_TRY(format_in(op, r.name, "MP-03", *r.t, {Format::kND, Format::kNCHW}));
  for (const TensorView* c : {&p.kv_cache, &p.kr_cache}) {
    const char* name = c == &p.kv_cache ? "kvCacheRef" : "krCacheRef";
    if (p.cache_mode == MlaPrologCacheMode::kPaNz)
      MLAOPS_TRY(format_in(op, name, "MP-03", *c, {Format::kND, Format::kNCHW, Format::kFractalNZ}));
    else
      MLAOPS_TRY(format_in(op, name, "MP-03", *c, {Format::kND, Format::kNCHW}));
  }
  if (o.vendor_ranges) {
    for (const TensorView* w : {&p.weight_dq, &p.weight_uq_qr, &p.weight_dkv_kr}) {
      const char* name = w == &p.weight_dq ? "weightDq" : w == &p.weight_uq_qr ? "weightUqQr" : "weightDkvKr";
      MLAOPS_TRY(format_in(op, name, "MP-03", *w, {Format::kFractalNZ}));
    }
  }

  // ---- MP-08 the scenario, from dtypes (§A.3) ----
  const MlaPrologScenario sc = mla_prolog_scenario(p.token_x.dtype, p.weight_uq_qr.dtype, p.kv_cache.dtype);
  const bool full = mla_prolog_is_full_quant(sc), partial = mla_prolog_is_partial_quant(sc);
  const bool kvq = mla_prolog_is_kv_quant(sc);
  const char* scn = mla_prolog_scenario_name(sc);
  const DType w_main = full ? I8 : BF16;  // weightDq, weightDkvKr
  const DType w_uq = (full || partial) ? I8 : BF16;
  MLAOPS_CHECK(p.weight_dq.dtype == w_main, kParamInvalid, "%s: weightDq: MP-08 dtype in scenario %s; allowed %s, got %s",
               op, scn, dtype_name(w_main), dtype_name(p.weight_dq.dtype));
  MLAOPS_CHECK(p.weight_dkv_kr.dtype == w_main, kParamInvalid,
               "%s: weightDkvKr: MP-08 dtype in scenario %s; allowed %s, got %s", op, scn, dtype_name(w_main),
               dtype_name(p.weight_dkv_kr.dtype));
  MLAOPS_CHECK(p.weight_uq_qr.dtype == w_uq, kParamInvalid,
               "%s: weightUqQr: MP-08 dtype in scenario %s; allowed %s, got %s", op, scn, dtype_name(w_uq),
               dtype_name(p.weight_uq_qr.dtype));
  if (sc == MlaPrologScenario::kNoQuant)
    MLAOPS_CHECK(p.kv_cache.dtype == BF16, kParamInvalid,
                 "%s: kvCacheRef: MP-08 dtype in scenario NO_QUANT (bf16 weights); allowed BF16, got %s", op,
                 dtype_name(p.kv_cache.dtype));
  const DType kr_dt = sc == MlaPrologScenario::kPartialQuantKvQuant ? I8 : BF16;
  MLAOPS_CHECK(p.kr_cache.dtype == kr_dt, kParamInvalid, "%s: krCacheRef: MP-08 dtype in scenario %s; allowed %s, got %s",
               op, scn, dtype_name(kr_dt), dtype_name(p.kr_cache.dtype));
  const DType q_dt = sc == MlaPrologScenario::kFullQuantKvQuant ? I8 : BF16;
  MLAOPS_TRY(dtype_in(op, "queryOut", "MP-08", p.query_out, {q_dt}));
  MLAOPS_TRY(dtype_in(op, "queryRopeOut", "MP-02", p.query_rope_out, {BF16}));
  MLAOPS_CHECK(o.v2 || sc != MlaPrologScenario::kFullQuantKvQuant, kParamInvalid,
               "%s: kvCacheRef: MP-11 scenario FULL_QUANT_KV_QUANT (int8 tokenX and int8 kvCache) needs the "
               "dequantScaleQNope output; allowed in aclnnMlaPrologV2WeightNz only, got V1", op);

  // ---- dims (§A.7.3) ----
  MlaPrologDims d;
  d.bsh = p.token_x.rank == 3;
  if (d.bsh) {
    d.B = p.token_x.dims[0];
    d.S = p.token_x.dims[1];
    d.He = p.token_x.dims[2];
    MLAOPS_CHECK(mul_ok(d.B, d.S, &d.T), kParamInvalid, "%s: tokenX: MP-14 B*S overflows int64", op);
  } else {
    d.T = p.token_x.dims[0];
    d.B = d.T;
    d.S = 1;
    d.He = p.token_x.dims[1];
  }
  d.Hcq = p.rmsnorm_gamma_cq.dims[0];
  d.N = p.weight_uk.dims[0];
  d.D = p.weight_uk.dims[1];
  d.Hckv = p.kv_cache.dims[3];
  d.Dr = p.rope_cos.dims[p.rope_cos.rank - 1];
  d.block_num = p.kv_cache.dims[0];
  d.block_size = p.kv_cache.dims[1];
  const int64_t nkv = p.kv_cache.dims[2];
  // Only token-count and cache-length dependent extents may be zero (§A.7.6).
  const struct {
    const char* what;
    int64_t v;
  } positive[] = {{"He (tokenX last dim)", d.He}, {"Hcq (rmsnormGammaCq)", d.Hcq}, {"N (weightUk dim 0)", d.N},
                  {"D (weightUk dim 1)", d.D},    {"Hckv (kvCacheRef dim 3)", d.Hckv}, {"Dr (ropeCos last dim)", d.Dr},
                  {"BlockSize (kvCacheRef dim 1)", d.block_size}};
  for (const auto& x : positive)
    MLAOPS_CHECK(x.v > 0, kParamInvalid, "%s: %s: MP-09 must be positive; allowed >= 1, got %lld", op, x.what,
                 (long long)x.v);
  MLAOPS_CHECK(d.Dr % 2 == 0, kParamInvalid, "%s: ropeCos: MP-09 rope dim must be even; got %lld", op, (long long)d.Dr);
  MLAOPS_CHECK(d.B >= 0 && d.S >= 0 && d.T >= 0 && d.block_num >= 0, kParamInvalid, "%s: MP-09 negative dim", op);
  MLAOPS_TRY(value_in(op, "kvCacheRef", "MP-09 Nkv (dim 2)", nkv, {1}));

  if (o.vendor_ranges) {  // ---- MP-07 the vendor's shape ranges (§A.7.4) ----
    MLAOPS_TRY(value_range(op, "tokenX", "MP-07 B", d.bsh ? d.B : 0, 0, 65536));
    MLAOPS_TRY(value_range(op, "tokenX", "MP-07 S", d.bsh ? d.S : 1, 0, 16));
    MLAOPS_TRY(value_range(op, "tokenX", "MP-07 T", d.T, 0, 1048576));
    MLAOPS_TRY(value_in(op, "tokenX", "MP-07 He", d.He, {7168, 7680, 6144}));
    MLAOPS_TRY(value_in(op, "rmsnormGammaCq", "MP-07 Hcq", d.Hcq, {1536}));
    MLAOPS_TRY(value_in(op, "kvCacheRef", "MP-07 Hckv", d.Hckv, {512}));
    MLAOPS_TRY(value_in(op, "weightUk", "MP-07 D", d.D, {128}));
    MLAOPS_TRY(value_in(op, "ropeCos", "MP-07 Dr", d.Dr, {64}));
    MLAOPS_TRY(value_in(op, "weightUk", "MP-07 N", d.N, {1, 2, 4, 8, 16, 32, 64, 128}));
    MLAOPS_TRY(value_in(op, "kvCacheRef", "MP-07 BlockSize", d.block_size, {16, 128}));
  }

  // ---- MP-09 every tensor's shape (§A.3) ----
  int64_t qcols, kcols;
  MLAOPS_CHECK(product_ok({d.N, d.D + d.Dr}, &qcols) && add_ok(d.Hckv, d.Dr, &kcols), kParamInvalid,
               "%s: MP-14 N*(D+Dr) overflows int64", op);
  MLAOPS_TRY(weight_panels(op, "weightDq", p.weight_dq, d.He, d.Hcq, !o.vendor_ranges, &plan->wdq));
  MLAOPS_TRY(weight_panels(op, "weightUqQr", p.weight_uq_qr, d.Hcq, qcols, !o.vendor_ranges, &plan->wuqqr));
  MLAOPS_TRY(weight_panels(op, "weightDkvKr", p.weight_dkv_kr, d.He, kcols, !o.vendor_ranges, &plan->wdkvkr));
  MLAOPS_TRY(shape_eq(op, "weightUk", "MP-09", p.weight_uk, {d.N, d.D, d.Hckv}));
  MLAOPS_TRY(shape_eq(op, "rmsnormGammaCkv", "MP-09", p.rmsnorm_gamma_ckv, {d.Hckv}));
  if (d.bsh) {
    MLAOPS_TRY(shape_eq(op, "ropeSin", "MP-09", p.rope_sin, {d.B, d.S, d.Dr}));
    MLAOPS_TRY(shape_eq(op, "ropeCos", "MP-09", p.rope_cos, {d.B, d.S, d.Dr}));
    MLAOPS_TRY(shape_eq(op, "cacheIndex", "MP-09", p.cache_index, {d.B, d.S}));
    MLAOPS_TRY(shape_eq(op, "queryOut", "MP-09", p.query_out, {d.B, d.S, d.N, d.Hckv}));
    MLAOPS_TRY(shape_eq(op, "queryRopeOut", "MP-09", p.query_rope_out, {d.B, d.S, d.N, d.Dr}));
  } else {
    MLAOPS_TRY(shape_eq(op, "ropeSin", "MP-09", p.rope_sin, {d.T, d.Dr}));
    MLAOPS_TRY(shape_eq(op, "ropeCos", "MP-09", p.rope_cos, {d.T, d.Dr}));
    MLAOPS_TRY(shape_eq(op, "cacheIndex", "MP-09", p.cache_index, {d.T}));
    MLAOPS_TRY(shape_eq(op, "queryOut", "MP-09", p.query_out, {d.T, d.N, d.Hckv}));
    MLAOPS_TRY(shape_eq(op, "queryRopeOut", "MP-09", p.query_rope_out, {d.T, d.N, d.Dr}));
  }
  MLAOPS_TRY(shape_eq(op, "krCacheRef", "MP-09", p.kr_cache, {d.block_num, d.block_size, 1, d.Dr}));
  if (p.cache_mode == MlaPrologCacheMode::kPaNz) {  // MP-16 whole c0 chunks per row
    const int64_t c0kv = 32 / dtype_size(p.kv_cache.dtype), c0kr = 32 / dtype_size(p.kr_cache.dtype);
    MLAOPS_CHECK(d.Hckv % c0kv == 0, kParamInvalid,
                 "%s: kvCacheRef: MP-16 PA_NZ needs Hckv to be a multiple of c0 = %lld; got %lld", op, (long long)c0kv,
                 (long long)d.Hckv);
    MLAOPS_CHECK(d.Dr % c0kr == 0, kParamInvalid,
                 "%s: krCacheRef: MP-16 PA_NZ needs Dr to be a multiple of c0 = %lld; got %lld", op, (long long)c0kr,
                 (long long)d.Dr);
  }

  // ---- MP-10 optional inputs by scenario (§A.3 nullness rule) ----
  struct Opt {
    const char* name;
    const TensorView* t;
    bool needed;
    int64_t d0, d1;
  };
  const int64_t tq = d.T;
  const Opt opts[] = {
      {"dequantScaleXOptional", p.dequant_scale_x, full, tq, 1},
      {"dequantScaleWDqOptional", p.dequant_scale_w_dq, full, 1, d.Hcq},
      {"dequantScaleWUqQrOptional", p.dequant_scale_w_uq_qr, full || partial, 1, qcols},
      {"dequantScaleWDkvKrOptional", p.dequant_scale_w_dkv_kr, full, 1, kcols},
      {"quantScaleCkvOptional", p.quant_scale_ckv, kvq, 1, d.Hckv},
      {"quantScaleCkrOptional", p.quant_scale_ckr, sc == MlaPrologScenario::kPartialQuantKvQuant, 1, d.Dr},
  };
  char why[96];
  for (const Opt& x : opts) {
    std::snprintf(why, sizeof why, "in scenario %s", scn);
    if (!x.needed) {
      MLAOPS_TRY(absent(op, x.name, "MP-10", x.t, why));
      continue;
    }
    MLAOPS_TRY(present(op, x.name, "MP-10", x.t, why));
    MLAOPS_TRY(dtype_in(op, x.name, "MP-02", *x.t, {F32}));
    MLAOPS_TRY(shape_eq(op, x.name, "MP-09", *x.t, {x.d0, x.d1}));
    MLAOPS_TRY(format_in(op, x.name, "MP-03", *x.t, {Format::kND, Format::kNCHW}));
    MLAOPS_TRY(dense(op, x.name, "MP-05", *x.t));
  }
  if (p.smooth_scales_cq != nullptr) {  // always optional; used in the quantized c_Q path only
    MLAOPS_TRY(dtype_in(op, "smoothScalesCqOptional", "MP-02", *p.smooth_scales_cq, {F32}));
    MLAOPS_TRY(shape_eq(op, "smoothScalesCqOptional", "MP-09", *p.smooth_scales_cq, {1, d.Hcq}));
    MLAOPS_TRY(dense(op, "smoothScalesCqOptional", "MP-05", *p.smooth_scales_cq));
  }
  const TensorView* dqs = p.dequant_scale_q_nope_out;
  if (o.v2 && sc == MlaPrologScenario::kFullQuantKvQuant) {
    MLAOPS_CHECK(dqs != nullptr, kParamNullptr,
                 "%s: dequantScaleQNopeOutOptional: MP-01 required in scenario FULL_QUANT_KV_QUANT; got null", op);
    MLAOPS_TRY(dtype_in(op, "dequantScaleQNopeOutOptional", "MP-02", *dqs, {F32}));
    MLAOPS_TRY(shape_eq(op, "dequantScaleQNopeOutOptional", "MP-09", *dqs, {d.T, d.N, 1}));
    MLAOPS_TRY(dense(op, "dequantScaleQNopeOutOptional", "MP-05", *dqs));
  } else if (dqs != nullptr) {  // the vendor's placeholder: shape (1), left untouched
    MLAOPS_TRY(dtype_in(op, "dequantScaleQNopeOutOptional", "MP-02", *dqs, {F32}));
    MLAOPS_TRY(shape_eq(op, "dequantScaleQNopeOutOptional", "MP-09 (placeholder outside FULL_QUANT_KV_QUANT)", *dqs,
                        {1}));
  }

  // ---- MP-05 density / alignment, MP-15 attributes ----
  for (const auto& r : nd_tensors) MLAOPS_TRY(dense(op, r.name, "MP-05", *r.t));
  MLAOPS_TRY(dense(op, "kvCacheRef", "MP-05", p.kv_cache));
  MLAOPS_TRY(dense(op, "krCacheRef", "MP-05", p.kr_cache));
  for (double eps : {p.rmsnorm_epsilon_cq, p.rmsnorm_epsilon_ckv})
    MLAOPS_CHECK(std::isfinite(eps) && eps >= 0, kParamInvalid,
                 "%s: rmsnormEpsilon: MP-15 value; allowed finite and >= 0, got %g", op, eps);

  // ---- MP-12 aliasing: outputs are disjoint from each other and from every input ----
  const TensorView* dqs_region = (sc == MlaPrologScenario::kFullQuantKvQuant) ? dqs : nullptr;
  MLAOPS_TRY(check::no_overlap(
      op, "MP-12",
      {{"queryOut", &p.query_out}, {"queryRopeOut", &p.query_rope_out}, {"dequantScaleQNopeOutOptional", dqs_region},
       {"kvCacheRef", &p.kv_cache}, {"krCacheRef", &p.kr_cache}},
      {{"tokenX", &p.token_x},
       {"weightUk", &p.weight_uk},
       {"rmsnormGammaCq", &p.rmsnorm_gamma_cq},
       {"rmsnormGammaCkv", &p.rmsnorm_gamma_ckv},
       {"ropeSin", &p.rope_sin},
       {"ropeCos", &p.rope_cos},
       {"cacheIndex", &p.cache_index},
       {"dequantScaleXOptional", p.dequant_scale_x},
       {"dequantScaleWDqOptional", p.dequant_scale_w_dq},
       {"dequantScaleWUqQrOptional", p.dequant_scale_w_uq_qr},
       {"dequantScaleWDkvKrOptional", p.dequant_scale_w_dkv_kr},
       {"quantScaleCkvOptional", p.quant_scale_ckv},
       {"quantScaleCkrOptional", p.quant_scale_ckr},
       {"smoothScalesCqOptional", p.smooth_scales_cq}}));
  // The weights are NZ storage (their views may be 2-D logical): compare their storage bytes.
  for (const PanelMatrix* w : {&plan->wdq, &plan->wuqqr, &plan->wdkvkr}) {
    const TensorView& wv = w == &plan->wdq ? p.weight_dq : w == &plan->wuqqr ? p.weight_uq_qr : p.weight_dkv_kr;
    TensorView flat = make_view(wv.data, wv.dtype, {w->panel_stride * ceil_div(w->cols, w->panel_width)});
    if (wv.format != Format::kFractalNZ) flat = make_view(wv.data, wv.dtype, {w->rows * w->cols});
    MLAOPS_TRY(check::no_overlap(op, "MP-12",
                                 {{"queryOut", &p.query_out},
                                  {"queryRopeOut", &p.query_rope_out},
                                  {"dequantScaleQNopeOutOptional", dqs_region},
                                  {"kvCacheRef", &p.kv_cache},
                                  {"krCacheRef", &p.kr_cache}},
                                 {{w == &plan->wdq ? "weightDq" : w == &plan->wuqqr ? "weightUqQr" : "weightDkvKr", &flat}}));
  }

  // ---- the plan: chunking, threads, workspace ----
  plan->dims = d;
  plan->scenario = sc;
  plan->threads = num_threads();
  plan->chunk = std::min<int64_t>(std::max<int64_t>(d.T, 1), 256);
  const int64_t Wq = plan->wuqqr.panel_width;
  // one head's columns [n*(D+Dr), (n+1)*(D+Dr)) widened to panel boundaries
  plan->head_cols = round_up(d.D + d.Dr, Wq) + Wq;
  const int64_t c = plan->chunk;
  int64_t proj_cols;
  MLAOPS_CHECK(add_ok(d.Hcq, kcols, &proj_cols), kParamInvalid, "%s: MP-14 size overflow", op);
  int64_t acc1, a2, kv, kr, per_thread, threads_total;
  MLAOPS_CHECK(product_ok({c, proj_cols, 4}, &acc1) && product_ok({c, d.Hcq, 2}, &a2) &&
                   product_ok({c, d.Hckv, 2}, &kv) && product_ok({c, d.Dr, 2}, &kr),
               kParamInvalid, "%s: MP-14 workspace size overflows int64", op);
  int64_t t1, t2, t3;
  MLAOPS_CHECK(product_ok({c, plan->head_cols, 4}, &t1) && product_ok({c, d.D, 2}, &t2) &&
                   product_ok({c, d.Hckv, 4}, &t3) && add_ok(t1, t2, &per_thread) && add_ok(per_thread, t3, &per_thread),
               kParamInvalid, "%s: MP-14 workspace size overflows int64", op);
  per_thread = round_up(per_thread + 3 * kWorkspaceAlign, kWorkspaceAlign);
  MLAOPS_CHECK(mul_ok(per_thread, plan->threads, &threads_total), kParamInvalid, "%s: MP-14 workspace overflow", op);
  WorkspaceLayout l;
  MLAOPS_TRY(l.add(acc1, &plan->off_acc1, op));
  MLAOPS_TRY(l.add(a2, &plan->off_a2, op));
  MLAOPS_TRY(l.add(c * 4, &plan->off_scale, op));
  MLAOPS_TRY(l.add(kv, &plan->off_kv, op));
  MLAOPS_TRY(l.add(kr, &plan->off_kr, op));
  MLAOPS_TRY(l.add(threads_total, &plan->off_thread, op));
  plan->thread_bytes = per_thread;
  plan->workspace_bytes = d.T == 0 ? 0 : l.total();
  return kSuccess;
}

}  // namespace mlaops
