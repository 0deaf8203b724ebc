// Float64 reference of MlaPreprocess; see mla_preprocess_ref.h for the conventions and the
// choices made where the vendor material is silent or UNCONFIRMED.
#include "reference/mla_preprocess/mla_preprocess_ref.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/error.h"
#include "mlaops/dtype.h"
#include "reference/common/ref_checks.h"
#include "reference/common/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "mla_preprocess_ref";

using CacheMode = MlaPreprocessCacheMode;
using QuantMode = MlaPreprocessQuantMode;

using ref::load_vector;

// The NZ cache modes (2, 3) and the modes with separate rope outputs (1..3), from the cache
// mode table of docs/ops/mla_preprocess.md.
bool nz_cache_mode(CacheMode cm) { return cm == CacheMode::kInt8NzCache || cm == CacheMode::kNzCache; }
bool rope_output_mode(CacheMode cm) { return cm != CacheMode::kKvCache; }

bool is_int_dtype(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64;
}

Status check_view(const TensorView& t, const char* name, int64_t* numel) { return ref::check_view(kOp, t, name, numel); }

Status require(const TensorView* t, const char* name, const char* when) {
  MLAOPS_CHECK(t != nullptr, kParamNullptr, "%s: %s is required %s", kOp, name, when);
  return kSuccess;
}

// A vector the kernel reads the first n elements of (linear order): at least n elements.
Status check_prefix(const TensorView& t, const char* name, int64_t n) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(t, name, &numel));
  MLAOPS_CHECK(numel >= n, kParamInvalid, "%s: %s: must hold at least %lld elements; got %lld", kOp, name,
               (long long)n, (long long)numel);
  return kSuccess;
}

// [rows, w] read row by row for the first T rows: rows >= T.
Status check_rows_prefix(const TensorView& t, const char* name, int64_t T, int64_t w) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(t, name, &numel));
  MLAOPS_CHECK(t.rank == 2 && t.dims[0] >= T && t.dims[1] == w, kParamInvalid,
               "%s: %s: must be [>= %lld, %lld]; got %s", kOp, name, (long long)T, (long long)w,
               ref::shape_str(t).c_str());
  return kSuccess;
}

Status check_float(const TensorView& t, const char* name) {
  MLAOPS_CHECK(ref::is_float(t.dtype), kParamInvalid, "%s: %s: dtype must be a float type (FLOAT16, BF16, FLOAT); got %s",
               kOp, name, ref::type_name(t.dtype));
  return kSuccess;
}

// A float vector the kernel reads the first n elements of.
Status check_float_vector(const TensorView& t, const char* name, int64_t n) {
  MLAOPS_TRY(check_prefix(t, name, n));
  return check_float(t, name);
}

Status check_dtype(const TensorView& t, const char* name, DType want) {
  MLAOPS_CHECK(t.dtype == want, kParamInvalid, "%s: %s: dtype must be %s; got %s", kOp, name, ref::type_name(want),
               ref::type_name(t.dtype));
  return kSuccess;
}

// A tensor of exactly these dims (rank included).
Status check_dims(const TensorView& t, const char* name, std::initializer_list<int64_t> want) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(t, name, &numel));
  bool ok = t.rank == static_cast<int>(want.size());
  int i = 0;
  for (int64_t w : want) {
    if (ok && t.dims[i] != w) ok = false;
    ++i;
  }
  if (!ok) {
    const std::string got = ref::shape_str(t);
    std::string allowed = "[";
    bool first = true;
    for (int64_t w : want) {
      allowed += (first ? "" : ", ") + std::to_string(w);
      first = false;
    }
    allowed += "]";
    return fail(kParamInvalid, "%s: %s: shape must be %s; got %s", kOp, name, allowed.c_str(), got.c_str());
  }
  return kSuccess;
}

Status check_token_major(const TensorView& t, const char* name, int64_t T, std::initializer_list<int64_t> tail) {
  return ref::check_token_major(kOp, t, name, T, tail);
}

// deScale: at least n elements (the first n read), INT64 / UINT64 (fp32 bits in the low 32 bits) or
// FLOAT.
Status check_descale(const TensorView& t, const char* name, int64_t n) {
  MLAOPS_TRY(check_prefix(t, name, n));
  MLAOPS_CHECK(t.dtype == DType::kInt64 || t.dtype == DType::kUInt64 || t.dtype == DType::kFloat32, kParamInvalid,
               "%s: %s: dtype must be INT64 (fp32 bits in the low 32 bits) or FLOAT; got %s", kOp, name,
               ref::type_name(t.dtype));
  return kSuccess;
}

// Elements a view reaches from its data pointer: 1 + sum (dim - 1) * stride (0 when empty);
// false for a negative stride or an overflow.
bool reach(const TensorView& t, int64_t* out) {
  int64_t r = 1;
  for (int i = 0; i < t.rank; ++i) {
    if (t.dims[i] == 0) {
      *out = 0;
      return true;
    }
    int64_t step = 0;
    if (t.strides[i] < 0 || !ref::mul_ok(t.dims[i] - 1, t.strides[i], &step) || !ref::add_ok(r, step, &r)) return false;
  }
  *out = r;
  return true;
}

// A cache output: the memory of `out` addressed with the input cache's dims and strides.
TensorView cache_target(const TensorView& cache, const TensorView& out) {
  TensorView t = cache;
  t.data = out.data;
  return t;
}

// Element (r, c) of a logical [rows, cols] weight (rows = output channels, cols = K) given in
// one of the accepted forms (mlaops/mla_preprocess.h).
struct Weight {
  const TensorView* v = nullptr;
  enum Form { kNd, kNzView, kNzDense } form = kNd;  // kNzView: 4-D storage or ATB view; kNzDense: 2-D logical
  ref::NzGeometry m;

  double at(int64_t r, int64_t c) const {
    switch (form) {
      case kNd: return ref::load(*v, r * v->strides[0] + c * v->strides[1]);
      case kNzView: return ref::load(*v, ref::linear_offset(*v, m.index(r, c)));
      case kNzDense: return ref::load(*v, m.index(r, c));
    }
    return 0.0;
  }
};

Status make_weight(const TensorView& t, const char* name, int64_t rows, int64_t cols, Weight* out) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(t, name, &numel));
  out->v = &t;
  if (t.format != Format::kFractalNZ) {
    MLAOPS_CHECK(t.format == Format::kND, kParamInvalid, "%s: %s: format must be FRACTAL_NZ or ND; got %s", kOp, name,
                 ref::format_str(t.format));
    MLAOPS_TRY(check_dims(t, name, {rows, cols}));
    out->form = Weight::kNd;
    return kSuccess;
  }
  const int64_t c0 = ref::nz_c0_of(t.dtype);
  MLAOPS_CHECK(c0 > 0, kParamInvalid, "%s: %s: FRACTAL_NZ needs an element size dividing 32 bytes; got %s", kOp, name,
               ref::type_name(t.dtype));
  ref::NzGeometry m;
  m.rows = rows;
  m.cols = cols;
  m.c0 = c0;
  m.r1 = ref::ceil_div(rows, 16);
  m.c1 = ref::ceil_div(cols, c0);
  if (t.rank == 2) {
    MLAOPS_TRY(ref::nz_geometry(t, kOp, name, rows, cols, &m));
    out->form = Weight::kNzDense;
  } else {
    const int64_t* d = t.dims;
    const bool storage = t.rank == 4 && d[0] == m.c1 && d[1] == m.r1 && d[2] == 16 && d[3] == c0;
    const bool atb = t.rank == 4 && d[0] == 1 && d[1] == m.c1 && d[2] == m.r1 * 16 && d[3] == c0;
    if (!storage && !atb) {
      const std::string got = ref::shape_str(t);
      return fail(kParamInvalid,
                  "%s: %s: FRACTAL_NZ view of logical [%lld, %lld] must be [%lld, %lld, 16, %lld] or [1, %lld, %lld, "
                  "%lld] (or 2-D with 4-D storage dims); got %s",
                  kOp, name, (long long)rows, (long long)cols, (long long)m.c1, (long long)m.r1, (long long)c0,
                  (long long)m.c1, (long long)(m.r1 * 16), (long long)c0, got.c_str());
    }
    out->form = Weight::kNzView;
  }
  out->m = m;
  return kSuccess;
}

// Reads n elements of a vector-like tensor (linear order) into a double array.
std::vector<double> load_descale_vector(const TensorView& t, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = mla_preprocess_load_descale(t, i);
  return v;
}

// The input dtype's rounding.
double round_dtype(double v, DType dt) { return ref::to_dtype(v, dt); }

}  // namespace

// ---- the pieces ----

int8_t mla_preprocess_quant_int8(double v) {
  // fp32 -> fp16 (round to nearest even); the reference's double is rounded directly.
  double h = ref::to_fp16(v);
  if (!(h == h)) return 0;  // NaN -> 0 (defined)
  if (h > 127.0) h = 127.0;  // clamp in fp16 (both bounds are fp16 values)
  if (h < -128.0) h = -128.0;
  return static_cast<int8_t>(ref::round_half_even(h));  // fp16 -> int8, round half to even
}

void mla_preprocess_rms_norm(const double* v, const double* gamma, const double* beta, int64_t n, double eps,
                             double* y) {
  if (n <= 0) return;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += v[i] * v[i];
  const double rms = std::sqrt(sum / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = v[i] / rms * gamma[i] + (beta ? beta[i] : 0.0);
}

void mla_preprocess_quant_per_tensor(const double* x, int64_t n, double qs, double qo, int8_t* q) {
  const double inv = 1.0 / qs;
  for (int64_t i = 0; i < n; ++i) q[i] = mla_preprocess_quant_int8(x[i] * inv + qo);
}

double mla_preprocess_quant_per_token(const double* x, int64_t n, int8_t* q) {
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(x[i]));
  if (!(m > 0.0)) {  // all-zero row: scale 0, q = 0 (UNCONFIRMED vendor behaviour)
    for (int64_t i = 0; i < n; ++i) q[i] = 0;
    return 0.0;
  }
  const double inv = 1.0 / (m / 127.0);
  for (int64_t i = 0; i < n; ++i) q[i] = mla_preprocess_quant_int8(x[i] * inv);
  return m / 127.0;
}

void mla_preprocess_rms_norm_quant_per_tensor(const double* v, const double* gamma, const double* beta, int64_t n,
                                              double eps, double qs, double qo, int8_t* q) {
  std::vector<double> y(static_cast<size_t>(n > 0 ? n : 0));
  mla_preprocess_rms_norm(v, gamma, beta, n, eps, y.data());
  mla_preprocess_quant_per_tensor(y.data(), n, qs, qo, q);
}

double mla_preprocess_rms_norm_quant_per_token(const double* v, const double* gamma, const double* beta, int64_t n,
                                               double eps, int8_t* q) {
  std::vector<double> y(static_cast<size_t>(n > 0 ? n : 0));
  mla_preprocess_rms_norm(v, gamma, beta, n, eps, y.data());
  return mla_preprocess_quant_per_token(y.data(), n, q);
}

void mla_preprocess_rope(const double* v, const double* cos, const double* sin, int64_t dr, double* out) {
  const int64_t h = dr / 2;
  for (int64_t i = 0; i < h; ++i) {
    out[i] = v[i] * cos[i] - v[h + i] * sin[i];          // rotate_half(v)[i] = -v[h + i]
    out[h + i] = v[h + i] * cos[h + i] + v[i] * sin[h + i];  // rotate_half(v)[h + i] = v[i]
  }
}

double mla_preprocess_load_descale(const TensorView& t, int64_t i) {
  const int64_t off = ref::linear_offset(t, i);
  if (t.dtype == DType::kInt64 || t.dtype == DType::kUInt64) {
    const uint64_t bits = static_cast<uint64_t>(ref::load_int(t, off));
    const uint32_t low = static_cast<uint32_t>(bits & 0xffffffffu);
    float f;
    std::memcpy(&f, &low, sizeof f);
    return f;
  }
  return ref::load(t, off);
}

int64_t mla_preprocess_cache_offset(const TensorView& cache, bool nz, int64_t slot, int64_t j) {
  if (nz) {
    const int64_t block_size = cache.dims[2], c0 = cache.dims[3];
    const int64_t idx[4] = {slot / block_size, j / c0, slot % block_size, j % c0};
    return ref::offset(cache, idx);
  }
  const int64_t block_size = cache.dims[1];
  const int64_t idx[4] = {slot / block_size, slot % block_size, 0, j};
  return ref::offset(cache, idx);
}

// ---- dims ----

Status mla_preprocess_dims(const MlaPreprocessParams& p, MlaPreprocessDims* out) {
  MlaPreprocessDims d;
  int64_t numel = 0;
  MLAOPS_TRY(check_view(p.input, "input", &numel));
  MLAOPS_CHECK(p.input.rank == 2, kParamInvalid, "%s: input: must be 2-D [tokenNum, hiddenSize]; got rank %d", kOp,
               p.input.rank);
  d.T = p.input.dims[0];
  d.He = p.input.dims[1];
  MLAOPS_TRY(check_view(p.gamma2, "gamma2", &d.Hckv));
  MLAOPS_TRY(check_view(p.gamma1, "gamma1", &d.Hcq));
  const bool rope = p.cos.dtype != DType::kUndefined;  // absent only in the MLAPO op (no rotation)
  if (rope) {
    MLAOPS_TRY(check_view(p.cos, "cos", &numel));
    MLAOPS_CHECK(p.cos.rank >= 1, kParamInvalid, "%s: cos: must be [tokenNum, Dr]; got rank 0", kOp);
    d.Dr = p.cos.dims[p.cos.rank - 1];
  }

  MLAOPS_TRY(check_view(p.wuk, "wuk", &numel));
  if (p.wuk.format == Format::kFractalNZ) {
    MLAOPS_CHECK(p.wuk.rank == 4, kParamInvalid, "%s: wuk: FRACTAL_NZ must be [N, Hckv/16, D, 16]; got rank %d", kOp,
                 p.wuk.rank);
    d.N = p.wuk.dims[0];
    d.D = p.wuk.dims[2];
  } else {
    MLAOPS_CHECK(p.wuk.rank == 3, kParamInvalid, "%s: wuk: must be [N, D, Hckv]; got rank %d", kOp, p.wuk.rank);
    d.N = p.wuk.dims[0];
    d.D = p.wuk.dims[1];
  }

  const bool nz = nz_cache_mode(p.cache_mode);
  MLAOPS_TRY(check_view(p.kv_cache, "kvCache", &numel));
  MLAOPS_CHECK(p.kv_cache.rank == 4, kParamInvalid,
               "%s: kvCache: must be 4-D (%s); got rank %d", kOp,
               nz ? "[blockNum, Hckv/c0, blockSize, c0]" : "[blockNum, blockSize, 1, width]", p.kv_cache.rank);
  d.block_num = p.kv_cache.dims[0];
  d.block_size = nz ? p.kv_cache.dims[2] : p.kv_cache.dims[1];
  if (!rope) {  // Dr from the rope cache's row (NZ: Dr/c0 * c0), or kvCache's width beyond Hckv (cacheMode 0)
    const TensorView* kr = rope_output_mode(p.cache_mode) ? p.kv_cache_rope : nullptr;
    if (kr != nullptr) {
      MLAOPS_TRY(check_view(*kr, "kvCacheRope", &numel));
      MLAOPS_CHECK(kr->rank == 4, kParamInvalid, "%s: kvCacheRope: must be 4-D; got rank %d", kOp, kr->rank);
    }
    MLAOPS_CHECK(kr != nullptr || !rope_output_mode(p.cache_mode), kParamNullptr,
                 "%s: kvCacheRope is required in cacheMode 1..3", kOp);
    d.Dr = kr != nullptr ? (nz ? kr->dims[1] * kr->dims[3] : kr->dims[3]) : p.kv_cache.dims[3] - d.Hckv;
  }
  *out = d;
  return kSuccess;
}

// ---- the operator ----

namespace {

// MlaPreprocess (first_norm: stage 1 RmsNormQuant) or the MLAPO op (stage 1 the quant alone;
// beta1 and cos / sin may be absent).
Status run_ref(const MlaPreprocessParams& p, bool first_norm) {
  const bool mlapo = !first_norm;
  // ---- attributes ----
  const int32_t cm_value = static_cast<int32_t>(p.cache_mode);
  const int32_t qm_value = static_cast<int32_t>(p.quant_mode);
  MLAOPS_CHECK(cm_value >= 0 && cm_value <= 3, kParamInvalid, "%s: cacheMode: must be in [0, 3]; got %d", kOp,
               cm_value);
  MLAOPS_CHECK(qm_value == 0 || qm_value == 1, kParamInvalid,
               "%s: quantMode: must be 0 (PER_TENSOR_QUANT_ASYMM) or 1 (PER_TOKEN_QUANT_SYMM); got %d", kOp, qm_value);
  const CacheMode cm = p.cache_mode;
  const bool per_token = p.quant_mode == QuantMode::kPerTokenSymm;
  const bool nz_cache = nz_cache_mode(cm);
  const bool rope_outputs = rope_output_mode(cm);

  MlaPreprocessDims d;
  MLAOPS_TRY(mla_preprocess_dims(p, &d));
  const int64_t T = d.T, He = d.He, Hckv = d.Hckv, Dr = d.Dr, Hcq = d.Hcq, N = d.N, D = d.D;
  const DType dt = p.input.dtype;
  MLAOPS_CHECK(dt == DType::kFloat16 || dt == DType::kBFloat16, kParamInvalid,
               "%s: input: dtype must be FLOAT16 or BF16; got %s", kOp, ref::type_name(dt));
  MLAOPS_CHECK(Dr % 2 == 0, kParamInvalid, "%s: cos: the rope dim Dr must be even; got %lld", kOp, (long long)Dr);

  // ---- derived sizes (checked int64) ----
  int64_t m1_cols = 0, head_cols = 0, m2_cols = 0, kv_row = 0, slots = 0;
  MLAOPS_CHECK(ref::add_ok(Hckv, Dr, &kv_row) && ref::add_ok(kv_row, Hcq, &m1_cols) && ref::add_ok(D, Dr, &head_cols) &&
                   ref::mul_ok(N, head_cols, &m2_cols),
               kParamInvalid, "%s: wdqkv / wuq: the derived sizes overflow int64", kOp);
  MLAOPS_CHECK(ref::mul_ok(d.block_num, d.block_size, &slots), kParamInvalid,
               "%s: kvCache: blockNum*blockSize overflows int64", kOp);

  // ---- weights and the path they select ----
  const bool quant = p.wdqkv.dtype == DType::kInt8;
  MLAOPS_CHECK(quant || p.wdqkv.dtype == dt, kParamInvalid, "%s: wdqkv: dtype must be INT8 or the input dtype %s; got %s",
               kOp, ref::type_name(dt), ref::type_name(p.wdqkv.dtype));
  MLAOPS_TRY(check_dtype(p.wuq, "wuq", p.wdqkv.dtype));
  MLAOPS_CHECK(p.do_rms_norm == quant, kParamInvalid,
               "%s: doRmsNorm: must be %s with %s weights (the other combination is not supported); got %s", kOp,
               quant ? "true" : "false", ref::type_name(p.wdqkv.dtype), p.do_rms_norm ? "true" : "false");
  Weight w_dqkv, w_uq;
  MLAOPS_TRY(make_weight(p.wdqkv, "wdqkv", m1_cols, He, &w_dqkv));
  MLAOPS_TRY(make_weight(p.wuq, "wuq", m2_cols, Hcq, &w_uq));

  // wuk: ND [N, D, Hckv] or NZ per head [N, Hckv/c0, D, c0]
  const bool wuk_nz = p.wuk.format == Format::kFractalNZ;
  MLAOPS_TRY(check_float(p.wuk, "wuk"));
  if (wuk_nz) {
    const int64_t c0 = ref::nz_c0_of(p.wuk.dtype);
    MLAOPS_CHECK(c0 > 0 && Hckv % c0 == 0 && D % 16 == 0, kParamInvalid,
                 "%s: wuk: FRACTAL_NZ needs Hckv (%lld) a multiple of c0 (%lld) and D (%lld) a multiple of 16", kOp,
                 (long long)Hckv, (long long)c0, (long long)D);
    MLAOPS_TRY(check_dims(p.wuk, "wuk", {N, Hckv / c0, D, c0}));
  } else {
    MLAOPS_CHECK(p.wuk.format == Format::kND, kParamInvalid, "%s: wuk: format must be ND or FRACTAL_NZ; got %s", kOp,
                 ref::format_str(p.wuk.format));
    MLAOPS_TRY(check_dims(p.wuk, "wuk", {N, D, Hckv}));
  }

  // ---- the other inputs ----
  if (first_norm) {
    MLAOPS_TRY(check_float_vector(p.gamma0, "gamma0", He));
    MLAOPS_TRY(check_float_vector(p.beta0, "beta0", He));
  }
  MLAOPS_TRY(check_float_vector(p.gamma1, "gamma1", Hcq));
  const bool has_beta1 = !mlapo || p.beta1.dtype != DType::kUndefined;  // optional in the MLAPO op
  if (has_beta1) MLAOPS_TRY(check_float_vector(p.beta1, "beta1", Hcq));
  MLAOPS_TRY(check_float_vector(p.gamma2, "gamma2", Hckv));
  const bool rope = !mlapo || p.cos.dtype != DType::kUndefined;
  MLAOPS_CHECK(rope == (!mlapo || p.sin.dtype != DType::kUndefined), kParamNullptr,
               "%s: cos / sin: both given or both absent (no RoPE rotation); got only %s", kOp, rope ? "cos" : "sin");
  if (rope) {
    MLAOPS_TRY(check_rows_prefix(p.cos, "cos", T, Dr));
    MLAOPS_TRY(check_rows_prefix(p.sin, "sin", T, Dr));
    MLAOPS_TRY(check_float(p.cos, "cos"));
    MLAOPS_TRY(check_float(p.sin, "sin"));
  }
  MLAOPS_TRY(check_prefix(p.slot_mapping, "slotMapping", T));
  MLAOPS_CHECK(p.slot_mapping.dtype == DType::kInt32 || p.slot_mapping.dtype == DType::kInt64, kParamInvalid,
               "%s: slotMapping: dtype must be INT32 or INT64; got %s", kOp, ref::type_name(p.slot_mapping.dtype));
  if (quant) {
    const char* when = "with INT8 weights";
    MLAOPS_TRY(require(p.de_scale0, "deScale0", when));
    MLAOPS_TRY(require(p.de_scale1, "deScale1", when));
    MLAOPS_TRY(check_descale(*p.de_scale0, "deScale0", m1_cols));
    MLAOPS_TRY(check_descale(*p.de_scale1, "deScale1", m2_cols));
    if (!per_token) {
      const char* when0 = "in quantMode 0 (PER_TENSOR_QUANT_ASYMM)";
      MLAOPS_TRY(require(p.quant_scale0, "quantScale0", when0));
      MLAOPS_TRY(require(p.quant_offset0, "quantOffset0", when0));
      MLAOPS_TRY(require(p.bias0, "bias0", when0));
      MLAOPS_TRY(require(p.quant_scale1, "quantScale1", when0));
      MLAOPS_TRY(require(p.quant_offset1, "quantOffset1", when0));
      MLAOPS_TRY(require(p.bias1, "bias1", when0));
      MLAOPS_TRY(check_float_vector(*p.quant_scale0, "quantScale0", 1));
      MLAOPS_TRY(check_float_vector(*p.quant_scale1, "quantScale1", 1));
      MLAOPS_TRY(check_prefix(*p.quant_offset0, "quantOffset0", 1));
      MLAOPS_TRY(check_prefix(*p.quant_offset1, "quantOffset1", 1));
      MLAOPS_TRY(check_dtype(*p.quant_offset0, "quantOffset0", DType::kInt8));
      MLAOPS_TRY(check_dtype(*p.quant_offset1, "quantOffset1", DType::kInt8));
      MLAOPS_TRY(check_prefix(*p.bias0, "bias0", m1_cols));
      MLAOPS_TRY(check_prefix(*p.bias1, "bias1", m2_cols));
      MLAOPS_CHECK(is_int_dtype(p.bias0->dtype) && is_int_dtype(p.bias1->dtype), kParamInvalid,
                   "%s: bias0 / bias1: dtype must be INT32; got %s / %s", kOp, ref::type_name(p.bias0->dtype),
                   ref::type_name(p.bias1->dtype));
    }
  }
  const bool cm2 = cm == CacheMode::kInt8NzCache;
  int64_t q_nope_scale_n = 0;
  if (cm2) {
    const char* when = "in cacheMode 2 (INT8_NZCACHE)";
    MLAOPS_TRY(require(p.ctkv_scale, "ctkvScale", when));
    MLAOPS_TRY(require(p.q_nope_scale, "qNopeScale", when));
    MLAOPS_TRY(check_float_vector(*p.ctkv_scale, "ctkvScale", 1));
    MLAOPS_TRY(check_view(*p.q_nope_scale, "qNopeScale", &q_nope_scale_n));
    MLAOPS_CHECK(q_nope_scale_n >= N || q_nope_scale_n == 1, kParamInvalid,
                 "%s: qNopeScale: must hold at least headNum (%lld) elements, or 1; got %lld", kOp, (long long)N,
                 (long long)q_nope_scale_n);
    if (q_nope_scale_n > 1) q_nope_scale_n = N;  // the first headNum are read
    MLAOPS_TRY(check_float(*p.q_nope_scale, "qNopeScale"));
  }

  // ---- caches ----
  const DType kv_dtype = cm2 ? DType::kInt8 : dt;
  const int64_t bn = d.block_num, bs = d.block_size;
  const TensorView* rope_cache = nullptr;
  switch (cm) {
    case CacheMode::kKvCache:
      MLAOPS_TRY(check_dims(p.kv_cache, "kvCache", {bn, bs, 1, kv_row}));
      break;
    case CacheMode::kKropeCtkv:
      MLAOPS_TRY(check_dims(p.kv_cache, "kvCache", {bn, bs, 1, Hckv}));
      MLAOPS_TRY(require(p.kv_cache_rope, "kvCacheRope", "in cacheMode 1 (KROPE_CTKV)"));
      MLAOPS_TRY(check_dims(*p.kv_cache_rope, "kvCacheRope", {bn, bs, 1, Dr}));
      rope_cache = p.kv_cache_rope;
      break;
    case CacheMode::kInt8NzCache:
    case CacheMode::kNzCache: {
      const int64_t c0_kv = ref::nz_c0_of(kv_dtype), c0_rope = ref::nz_c0_of(dt);
      MLAOPS_CHECK(Hckv % c0_kv == 0 && Dr % c0_rope == 0, kParamInvalid,
                   "%s: kvCache / kvCacheRope: the NZ caches need Hckv (%lld) a multiple of %lld and Dr (%lld) a "
                   "multiple of %lld",
                   kOp, (long long)Hckv, (long long)c0_kv, (long long)Dr, (long long)c0_rope);
      MLAOPS_TRY(check_dims(p.kv_cache, "kvCache", {bn, Hckv / c0_kv, bs, c0_kv}));
      MLAOPS_TRY(require(p.kv_cache_rope, "kvCacheRope", "in the NZ cache modes"));
      MLAOPS_TRY(check_dims(*p.kv_cache_rope, "kvCacheRope", {bn, Dr / c0_rope, bs, c0_rope}));
      rope_cache = p.kv_cache_rope;
      break;
    }
  }
  MLAOPS_TRY(check_dtype(p.kv_cache, "kvCache", kv_dtype));
  if (rope_cache) MLAOPS_TRY(check_dtype(*rope_cache, "kvCacheRope", dt));
  // The rows go to kvCacheOut / krCacheOut (the input caches when left default / null), placed by
  // the input caches' dims and strides; the input caches are not read.
  const TensorView& kv_out =
      p.kv_cache_out.rank == 0 && p.kv_cache_out.data == nullptr ? p.kv_cache : p.kv_cache_out;
  const TensorView* kr_out = rope_cache == nullptr ? nullptr : p.kr_cache_out != nullptr ? p.kr_cache_out : rope_cache;
  int64_t kv_out_reach = 0, kr_out_reach = 0;
  MLAOPS_TRY(check_dtype(kv_out, "kvCacheOut", kv_dtype));
  MLAOPS_CHECK(reach(kv_out, &kv_out_reach), kParamInvalid, "%s: kvCacheOut: strides must be >= 0 and fit int64", kOp);
  if (kr_out) {
    MLAOPS_TRY(check_dtype(*kr_out, "krCacheOut", dt));
    MLAOPS_CHECK(reach(*kr_out, &kr_out_reach), kParamInvalid, "%s: krCacheOut: strides must be >= 0 and fit int64",
                 kOp);
  }
  const TensorView kv_dst = cache_target(p.kv_cache, kv_out);
  const TensorView kr_dst = kr_out ? cache_target(*rope_cache, *kr_out) : TensorView{};

  // ---- outputs ----
  MLAOPS_TRY(check_token_major(p.q_out, "qOut", T, {N, cm == CacheMode::kKvCache ? kv_row : Hckv}));
  MLAOPS_TRY(check_dtype(p.q_out, "qOut", cm2 ? DType::kInt8 : dt));
  if (rope_outputs) {
    MLAOPS_TRY(require(p.q_rope_out, "qRopeOut", "in cacheMode 1..3"));
    MLAOPS_TRY(check_token_major(*p.q_rope_out, "qRopeOut", T, {N, Dr}));
    MLAOPS_TRY(check_dtype(*p.q_rope_out, "qRopeOut", dt));
  }
  if (p.q_down_out) {
    MLAOPS_TRY(check_token_major(*p.q_down_out, "qDownOut", T, {Hcq}));
    MLAOPS_TRY(check_dtype(*p.q_down_out, "qDownOut", dt));
  }

  if (T == 0) return kSuccess;  // no token: nothing to write

  // ---- read-only pre-pass over slotMapping: a bad slot fails before any write ----
  for (int64_t t = 0; t < T; ++t) {
    const int64_t slot = ref::load_int(p.slot_mapping, ref::linear_offset(p.slot_mapping, t));
    MLAOPS_CHECK(slot == -1 || (slot >= 0 && slot < slots), kParamInvalid,
                 "%s: slotMapping[%lld] = %lld is out of range [0, %lld) (blockNum*blockSize); -1 skips", kOp,
                 (long long)t, (long long)slot, (long long)slots);
    if (slot == -1) continue;
    const int64_t kv_width = cm == CacheMode::kKvCache ? kv_row : Hckv;
    for (int64_t j = 0; j < kv_width; ++j)
      MLAOPS_CHECK(mla_preprocess_cache_offset(p.kv_cache, nz_cache, slot, j) < kv_out_reach, kParamInvalid,
                   "%s: kvCacheOut: the row of slotMapping[%lld] = %lld lies beyond the output (%lld elements)", kOp,
                   (long long)t, (long long)slot, (long long)kv_out_reach);
    for (int64_t j = 0; kr_out != nullptr && j < Dr; ++j)
      MLAOPS_CHECK(mla_preprocess_cache_offset(*rope_cache, nz_cache, slot, j) < kr_out_reach, kParamInvalid,
                   "%s: krCacheOut: the row of slotMapping[%lld] = %lld lies beyond the output (%lld elements)", kOp,
                   (long long)t, (long long)slot, (long long)kr_out_reach);
  }

  // ---- per-call constants ----
  const auto sz = [](int64_t n) { return static_cast<size_t>(n); };
  const std::vector<double> gamma0 = first_norm ? load_vector(p.gamma0, He) : std::vector<double>();
  const std::vector<double> beta0 = first_norm ? load_vector(p.beta0, He) : std::vector<double>();
  const std::vector<double> gamma1 = load_vector(p.gamma1, Hcq);
  const std::vector<double> beta1 = has_beta1 ? load_vector(p.beta1, Hcq) : std::vector<double>();
  const double* const beta1_or_null = has_beta1 ? beta1.data() : nullptr;
  const std::vector<double> gamma2 = load_vector(p.gamma2, Hckv);
  std::vector<double> ds0, ds1, bias0, bias1;
  double qs0 = 0, qo0 = 0, qs1 = 0, qo1 = 0;
  if (quant) {
    ds0 = load_descale_vector(*p.de_scale0, m1_cols);
    ds1 = load_descale_vector(*p.de_scale1, m2_cols);
    if (!per_token) {
      bias0 = load_vector(*p.bias0, m1_cols);
      bias1 = load_vector(*p.bias1, m2_cols);
      qs0 = ref::load(*p.quant_scale0, ref::linear_offset(*p.quant_scale0, 0));
      qo0 = ref::load(*p.quant_offset0, ref::linear_offset(*p.quant_offset0, 0));
      qs1 = ref::load(*p.quant_scale1, ref::linear_offset(*p.quant_scale1, 0));
      qo1 = ref::load(*p.quant_offset1, ref::linear_offset(*p.quant_offset1, 0));
    }
  }
  double ctkv_scale = 0;
  std::vector<double> q_nope_scale;
  if (cm2) {
    ctkv_scale = ref::load(*p.ctkv_scale, ref::linear_offset(*p.ctkv_scale, 0));
    q_nope_scale = load_vector(*p.q_nope_scale, q_nope_scale_n);
  }

  std::vector<double> x(sz(He)), y0(sz(He)), m1(sz(m1_cols)), y1(sz(Hcq)), m2(sz(m2_cols));
  std::vector<int8_t> a0(sz(He)), a1(sz(Hcq));
  std::vector<double> cos_row(sz(Dr)), sin_row(sz(Dr)), q_nope(sz(Hckv)), q_rope(sz(Dr));
  std::vector<double> kn_f(sz(Hckv)), k_rope(sz(Dr));

  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < He; ++k) x[sz(k)] = ref::load(p.input, ref::linear_offset(p.input, t * He + k));
    for (int64_t i = 0; i < Dr; ++i) {  // no RoPE: the rotation by cos = 1, sin = 0 (exact in double)
      cos_row[sz(i)] = rope ? ref::load(p.cos, ref::linear_offset(p.cos, t * Dr + i)) : 1.0;
      sin_row[sz(i)] = rope ? ref::load(p.sin, ref::linear_offset(p.sin, t * Dr + i)) : 0.0;
    }

    // ---- stage 1: a0 = RmsNormQuant(input) (the MLAPO op: the quant of input), m1 = [ckv | kpe | cq] ----
    if (quant) {
      double s0 = 1.0;
      if (mlapo) {
        s0 = per_token ? mla_preprocess_quant_per_token(x.data(), He, a0.data())
                       : (mla_preprocess_quant_per_tensor(x.data(), He, qs0, qo0, a0.data()), 1.0);
      } else if (per_token) {
        s0 = mla_preprocess_rms_norm_quant_per_token(x.data(), gamma0.data(), beta0.data(), He, p.epsilon, a0.data());
      } else {
        mla_preprocess_rms_norm_quant_per_tensor(x.data(), gamma0.data(), beta0.data(), He, p.epsilon, qs0, qo0,
                                                 a0.data());
      }
      for (int64_t c = 0; c < m1_cols; ++c) {
        double acc = 0.0;  // int32 accumulation: exact in double for every realistic He
        for (int64_t k = 0; k < He; ++k) acc += static_cast<double>(a0[sz(k)]) * w_dqkv.at(c, k);
        m1[sz(c)] = round_dtype(per_token ? acc * ds0[sz(c)] * s0 : (acc + bias0[sz(c)]) * ds0[sz(c)], dt);
      }
    } else {
      // UNCONFIRMED best guess (doRmsNorm = false): no RmsNormQuant, plain matmul of the input.
      for (int64_t c = 0; c < m1_cols; ++c) {
        double acc = 0.0;
        for (int64_t k = 0; k < He; ++k) acc += x[sz(k)] * w_dqkv.at(c, k);
        m1[sz(c)] = round_dtype(acc, dt);
      }
    }
    const double* ckv = m1.data();
    const double* kpe = m1.data() + Hckv;
    const double* cq = m1.data() + kv_row;

    // ---- stage 2: a1 = RmsNormQuant(cq), m2 = [N][qn | qp] ----
    // qDownOut = dtype(RmsNorm(cq) * gamma1 + beta1), round half to even (aclnnMlaPreprocessV2)
    mla_preprocess_rms_norm(cq, gamma1.data(), beta1_or_null, Hcq, p.epsilon, y1.data());
    if (p.q_down_out)
      for (int64_t k = 0; k < Hcq; ++k)
        ref::store(*p.q_down_out, ref::linear_offset(*p.q_down_out, t * Hcq + k), round_dtype(y1[sz(k)], dt));
    if (quant) {
      double s1 = 1.0;
      if (per_token) {
        s1 = mla_preprocess_rms_norm_quant_per_token(cq, gamma1.data(), beta1_or_null, Hcq, p.epsilon, a1.data());
      } else {
        mla_preprocess_rms_norm_quant_per_tensor(cq, gamma1.data(), beta1_or_null, Hcq, p.epsilon, qs1, qo1,
                                                 a1.data());
      }
      for (int64_t c = 0; c < m2_cols; ++c) {
        double acc = 0.0;
        for (int64_t k = 0; k < Hcq; ++k) acc += static_cast<double>(a1[sz(k)]) * w_uq.at(c, k);
        m2[sz(c)] = round_dtype(per_token ? acc * ds1[sz(c)] * s1 : (acc + bias1[sz(c)]) * ds1[sz(c)], dt);
      }
    } else {
      // UNCONFIRMED best guess: RmsNorm with gamma1 / beta1 still applied, rounded to the dtype
      // (the matmul operand), no quantization.
      for (int64_t k = 0; k < Hcq; ++k) y1[sz(k)] = round_dtype(y1[sz(k)], dt);
      for (int64_t c = 0; c < m2_cols; ++c) {
        double acc = 0.0;
        for (int64_t k = 0; k < Hcq; ++k) acc += y1[sz(k)] * w_uq.at(c, k);
        m2[sz(c)] = round_dtype(acc, dt);
      }
    }

    // ---- Q outputs per head ----
    for (int64_t h = 0; h < N; ++h) {
      const double* qn = m2.data() + h * head_cols;
      const double* qp = qn + D;
      for (int64_t k = 0; k < Hckv; ++k) {
        double acc = 0.0;
        for (int64_t i = 0; i < D; ++i) {
          int64_t off;
          if (wuk_nz) {
            const int64_t c0 = p.wuk.dims[3];
            const int64_t idx[4] = {h, k / c0, i, k % c0};
            off = ref::offset(p.wuk, idx);
          } else {
            const int64_t idx[3] = {h, i, k};
            off = ref::offset(p.wuk, idx);
          }
          acc += qn[i] * ref::load(p.wuk, off);
        }
        q_nope[sz(k)] = round_dtype(acc, dt);
      }
      mla_preprocess_rope(qp, cos_row.data(), sin_row.data(), Dr, q_rope.data());
      for (int64_t i = 0; i < Dr; ++i) q_rope[sz(i)] = round_dtype(q_rope[sz(i)], dt);

      const int64_t q_width = cm == CacheMode::kKvCache ? kv_row : Hckv;
      const int64_t q_base = (t * N + h) * q_width;
      for (int64_t k = 0; k < Hckv; ++k) {
        double v = q_nope[sz(k)];
        if (cm2) {  // MULTIPLY by qNopeScale[h]; round half to even, saturate
          const double scale = q_nope_scale[sz(q_nope_scale_n == 1 ? 0 : h)];
          v = static_cast<double>(ref::int8_rint(v * scale));
        }
        ref::store(p.q_out, ref::linear_offset(p.q_out, q_base + k), v);
      }
      if (cm == CacheMode::kKvCache) {
        for (int64_t i = 0; i < Dr; ++i) ref::store(p.q_out, ref::linear_offset(p.q_out, q_base + Hckv + i), q_rope[sz(i)]);
      } else {
        const int64_t r_base = (t * N + h) * Dr;
        for (int64_t i = 0; i < Dr; ++i)
          ref::store(*p.q_rope_out, ref::linear_offset(*p.q_rope_out, r_base + i), q_rope[sz(i)]);
      }
    }

    // ---- KV: kN = dtype(RmsNorm(ckv, gamma2)), kR = dtype(rope(kpe)) ----
    const int64_t slot = ref::load_int(p.slot_mapping, ref::linear_offset(p.slot_mapping, t));
    if (slot == -1) continue;
    mla_preprocess_rms_norm(ckv, gamma2.data(), nullptr, Hckv, p.epsilon, kn_f.data());
    mla_preprocess_rope(kpe, cos_row.data(), sin_row.data(), Dr, k_rope.data());
    const double inv_ctkv = cm2 ? 1.0 / ctkv_scale : 0.0;  // DIVIDE: the kernel's 1 / ctkvScale
    for (int64_t j = 0; j < Hckv; ++j) {
      const double v = cm2 ? static_cast<double>(mla_preprocess_quant_int8(kn_f[sz(j)] * inv_ctkv))
                           : round_dtype(kn_f[sz(j)], dt);
      ref::store(kv_dst, mla_preprocess_cache_offset(p.kv_cache, nz_cache, slot, j), v);
    }
    for (int64_t j = 0; j < Dr; ++j) {
      const double v = round_dtype(k_rope[sz(j)], dt);
      if (cm == CacheMode::kKvCache) {
        ref::store(kv_dst, mla_preprocess_cache_offset(p.kv_cache, false, slot, Hckv + j), v);
      } else {
        ref::store(kr_dst, mla_preprocess_cache_offset(*rope_cache, nz_cache, slot, j), v);
      }
    }
  }
  return kSuccess;
}

}  // namespace

Status mla_preprocess_ref(const MlaPreprocessParams& p) { return run_ref(p, true); }

Status mlapo_ref(const MlapoParams& m) { return run_ref(mlapo_as_mla_preprocess(m), false); }

}  // namespace mlaops
