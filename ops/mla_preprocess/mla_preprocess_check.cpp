// MlaPreprocess: the validation rules of docs/ops/mla_preprocess.md, each with its rule id MPP-xx,
// grouped single parameter / existence / cross-feature / consistency, then the pointer rules (also
// run by every phase 2). The support sets are the tables of ops/mla_preprocess/mla_preprocess_check.h. Nothing
// here reads tensor contents or writes anything.
#include "ops/mla_preprocess/mla_preprocess_check.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "core/error.h"

namespace mlaops {
namespace {

using namespace mla_preprocess_table;  // NOLINT(google-build-using-namespace): the tables and their dtype names
using CacheMode = MlaPreprocessCacheMode;

// The value of every symbol, indexed by Sym.
using SymValues = std::array<int64_t, static_cast<size_t>(Sym::k32) + 1>;
int64_t& at(SymValues& v, Sym s) { return v[static_cast<size_t>(s)]; }

// A transposed projection weight W [rows = output channels, cols = K] in FRACTAL_NZ
// (docs/numerics.md): the 4-D storage view [C1, R1, 16, c0], the ATB view [1, C1, R1*16, c0] or the
// 2-D logical view with 4-D storage dims; dense storage in every case.
Status nz_weight(const char* op, const char* name, const TensorView& w, int64_t rows, int64_t cols) {
  const int64_t es = dtype_size(w.dtype), c0 = 32 / es;
  const int64_t R1 = ceil_div(rows, 16), C1 = ceil_div(cols, c0);
  int64_t elems = 0;
  MLAOPS_CHECK(product_ok({C1, R1, 16, c0, es}, &elems), kParamInvalid, "%s: %s: MPP-15 FRACTAL_NZ weight storage too large", op, name);
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
    return kSuccess;
  }
  MLAOPS_TRY(check::shape_eq(op, name, "MPP-09 logical", w, {rows, cols}));
  const int64_t* s = w.storage_dims;
  MLAOPS_CHECK(w.storage_rank == 4 && s[0] == C1 && s[1] == R1 && s[2] == 16 && s[3] == c0, kParamInvalid,
               "%s: %s: MPP-09 storage shape of a 2-D FRACTAL_NZ view; allowed [%lld, %lld, 16, %lld], got %d storage "
               "dims",
               op, name, (long long)C1, (long long)R1, (long long)c0, w.storage_rank);
  return kSuccess;
}

// Elements from a cache's first element to the end of its last block, or false on overflow.
bool cache_span(const TensorView& t, int64_t* span) {
  const int64_t* d = t.dims;
  int64_t block = 0, sp = 0, bytes = 0;
  if (!product_ok({d[1], d[2], d[3]}, &block)) return false;
  if (d[0] > 0 && !(mul_ok(d[0] - 1, d[0] > 1 ? t.strides[0] : block, &sp) && add_ok(sp, block, &sp) &&
                    mul_ok(sp, dtype_size(t.dtype), &bytes)))
    return false;
  *span = sp;
  return true;
}

// A cache [BlockNum, a, b, c]: the last three dims dense, the block axis any stride >= one block
// (only the first axis may be non-contiguous).
Status cache_layout(const char* op, const char* name, const TensorView& t) {
  const int64_t* d = t.dims;
  const int64_t* s = t.strides;
  int64_t block = 0, span = 0;
  MLAOPS_CHECK(product_ok({d[1], d[2], d[3]}, &block) && cache_span(t, &span), kParamInvalid,
               "%s: %s: MPP-15 cache extent too large", op, name);
  const bool inner_dense = (d[3] == 1 || s[3] == 1) && (d[2] == 1 || s[2] == d[3]) && (d[1] == 1 || s[1] == d[2] * d[3]);
  MLAOPS_CHECK(inner_dense && (d[0] <= 1 || s[0] >= block), kParamInvalid,
               "%s: %s: MPP-05 the last three dims must be dense and the block axis may only be padded (stride >= %lld); "
               "got strides [%lld, %lld, %lld, %lld]",
               op, name, (long long)block, (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3]);
  return kSuccess;
}

// A kPrefixShapes row (MPP-09): the rank of the row, dim 0 at least the first symbol's value (the
// rows the kernel reads), the other dims exact.
Status prefix_shape(const char* op, const check::ShapeRow<Sym>& row, const TensorView& t, const SymValues& v) {
  const int n = row.dims.n;
  bool ok = t.rank == n && t.dims[0] >= v[static_cast<size_t>(row.dims.v[0])];
  std::string allowed = "[>= " + std::to_string(v[static_cast<size_t>(row.dims.v[0])]);
  for (int i = 1; i < n; ++i) {
    const int64_t want = v[static_cast<size_t>(row.dims.v[i])];
    ok = ok && t.dims[i] == want;
    allowed += ", " + std::to_string(want);
  }
  MLAOPS_CHECK(ok, kParamInvalid, "%s: %s: %s shape (the kernel reads the first rows of dim 0, a longer tensor is "
               "accepted); allowed %s], got %s",
               op, row.param, row.rule, allowed.c_str(), check::shape_str(t).c_str());
  return kSuccess;
}

// The bytes a view reaches (the cache outputs, for the aliasing rule).
TensorView span_view(const TensorView& t) {
  int64_t span = 0;
  mla_preprocess_view_span(t, &span);  // checked in phase 1
  return make_view(t.data, t.dtype, {span});
}

bool feature_on(Feature f, const CacheModeRow& mode, bool int8_weights, bool per_token) {
  switch (f) {
    case Feature::kRopeOutputs: return mode.rope_outputs;
    case Feature::kInt8Cache: return mode.int8;
    case Feature::kInt8Weights: return int8_weights;
    case Feature::kPerTensorQuant: return int8_weights && !per_token;
  }
  return false;
}

}  // namespace

std::array<check::Named, 29> mla_preprocess_tensors(const MlaPreprocessParams& p) {
  return {{{"input", &p.input},
           {"gamma0", &p.gamma0},
           {"beta0", &p.beta0},
           {"quantScale0", p.quant_scale0},
           {"quantOffset0", p.quant_offset0},
           {"wdqkv", &p.wdqkv},
           {"deScale0", p.de_scale0},
           {"bias0", p.bias0},
           {"gamma1", &p.gamma1},
           {"beta1", &p.beta1},
           {"quantScale1", p.quant_scale1},
           {"quantOffset1", p.quant_offset1},
           {"wuq", &p.wuq},
           {"deScale1", p.de_scale1},
           {"bias1", p.bias1},
           {"gamma2", &p.gamma2},
           {"cos", &p.cos},
           {"sin", &p.sin},
           {"wuk", &p.wuk},
           {"kvCache", &p.kv_cache},
           {"kvCacheRope", p.kv_cache_rope},
           {"slotMapping", &p.slot_mapping},
           {"ctkvScale", p.ctkv_scale},
           {"qNopeScale", p.q_nope_scale},
           {"qOut", &p.q_out},
           {"kvCacheOut", &p.kv_cache_out},
           {"qRopeOut", p.q_rope_out},
           {"krCacheOut", p.kr_cache_out},
           {"qDownOut", p.q_down_out}}};
}

bool mla_preprocess_feature_on(const MlaPreprocessParams& p, Feature f) {
  const CacheModeRow* mode = nullptr;
  for (const CacheModeRow& r : kCacheModes)
    if (r.mode == p.cache_mode) mode = &r;
  if (mode == nullptr) return true;  // an invalid cacheMode drops nothing (MPP-06 rejects it)
  return feature_on(f, *mode, p.wdqkv.dtype == I8, p.quant_mode == MlaPreprocessQuantMode::kPerTokenSymm);
}

MlaPreprocessParams mla_preprocess_unread_dropped(const MlaPreprocessParams& p) {
  using P = MlaPreprocessParams;
  static constexpr struct {
    const char* name;
    const TensorView* P::*field;
  } kOptional[] = {{"quantScale0", &P::quant_scale0}, {"quantOffset0", &P::quant_offset0}, {"deScale0", &P::de_scale0},
                   {"bias0", &P::bias0},              {"quantScale1", &P::quant_scale1},   {"quantOffset1", &P::quant_offset1},
                   {"deScale1", &P::de_scale1},       {"bias1", &P::bias1},                {"kvCacheRope", &P::kv_cache_rope},
                   {"ctkvScale", &P::ctkv_scale},     {"qNopeScale", &P::q_nope_scale},    {"qRopeOut", &P::q_rope_out},
                   {"krCacheOut", &P::kr_cache_out}};
  MlaPreprocessParams q = p;
  for (std::span<const PresenceRow> rows : {std::span<const PresenceRow>(kPresence), std::span<const PresenceRow>(kIgnoredOutputs)})
    for (const PresenceRow& r : rows)
      if (!mla_preprocess_feature_on(p, r.needs))
        for (const auto& o : kOptional)
          if (std::strcmp(o.name, r.param) == 0) q.*o.field = nullptr;
  return q;
}

const TensorView& mla_preprocess_kv_out(const MlaPreprocessParams& p) {
  const bool dflt = p.kv_cache_out.rank == 0 && p.kv_cache_out.data == nullptr;
  return dflt ? p.kv_cache : p.kv_cache_out;
}

const TensorView* mla_preprocess_kr_out(const MlaPreprocessParams& p) {
  if (p.kv_cache_rope == nullptr) return nullptr;
  return p.kr_cache_out != nullptr ? p.kr_cache_out : p.kv_cache_rope;
}

bool mla_preprocess_view_span(const TensorView& t, int64_t* span) {
  int64_t s = 1;
  for (int i = 0; i < t.rank; ++i) {
    if (t.dims[i] == 0) {
      *span = 0;
      return true;
    }
    int64_t step = 0;
    if (t.strides[i] < 0 || !mul_ok(t.dims[i] - 1, t.strides[i], &step) || !add_ok(s, step, &s)) return false;
  }
  int64_t bytes = 0;
  if (!mul_ok(s, dtype_size(t.dtype), &bytes)) return false;
  *span = s;
  return true;
}

Status mla_preprocess_check_modes(const char* op, int64_t cache_mode, int64_t quant_mode) {
  MLAOPS_TRY(check::value_range(op, "cacheMode", "MPP-06", cache_mode, 0, static_cast<int64_t>(std::size(kCacheModes)) - 1));
  for (const QuantModeRow& q : kQuantModes) {
    if (q.value != quant_mode) continue;
    MLAOPS_CHECK(q.implemented, kParamInvalid,
                 "%s: quantMode: MPP-07 %s is not implemented (rejected by the vendor); allowed {0 "
                 "(PER_TENSOR_QUANT_ASYMM), 1 (PER_TOKEN_QUANT_SYMM)}, got %lld",
                 op, q.name, (long long)quant_mode);
    return kSuccess;
  }
  return check::value_in(op, "quantMode", "MPP-07", quant_mode, {0, 1});
}

Status mla_preprocess_check(const MlaPreprocessParams& p, const MlaPreprocessCheckOptions& o, MlaPreprocessShape* dims) {
  const char* op = o.op;
  const auto ts = mla_preprocess_tensors(p);

  // ==== single parameter: each tensor's dtype, format, dim count, density; the attributes ====
  MLAOPS_TRY(check::check_rows(op, kDtypes, ts));
  MLAOPS_TRY(check::check_rows(op, o.vendor_ranges ? std::span<const check::DtypeRow>(kSlotDtypeAclnn)
                                                   : std::span<const check::DtypeRow>(kSlotDtypeCpp),
                               ts));
  MLAOPS_TRY(check::check_rows(op, kFormats, ts));
  MLAOPS_TRY(check::check_rows(op, kRanks, ts));
  for (const check::Named& n : ts) {  // MPP-15, MPP-05; the NZ weights and the caches: with their shapes
    const bool own_layout = n.t == &p.wdqkv || n.t == &p.wuq || n.t == &p.kv_cache || n.t == p.kv_cache_rope;
    if (own_layout || check::given(ts, n.name) == nullptr) continue;
    if (n.t == &p.kv_cache_out || n.t == p.kr_cache_out) {  // written through the input cache's geometry
      int64_t span = 0;
      MLAOPS_CHECK(mla_preprocess_view_span(*n.t, &span), kParamInvalid,
                   "%s: %s: MPP-15 the view's extent; allowed non-negative strides and a size that fits int64, got "
                   "shape %s",
                   op, n.name, check::shape_str(*n.t).c_str());
      continue;
    }
    MLAOPS_TRY(check::fits(op, n.name, "MPP-15", *n.t));
    MLAOPS_TRY(check::contiguous(op, n.name, "MPP-05", *n.t));
  }
  MLAOPS_TRY(mla_preprocess_check_modes(op, static_cast<int64_t>(p.cache_mode), static_cast<int64_t>(p.quant_mode)));
  for (const IntAttrRow& a : kIntAttrs) MLAOPS_TRY(check::value_in(op, a.name, a.rule, p.*a.field, a.allowed.values()));
  for (const BoolAttrRow& a : kTransposeAttrs)
    MLAOPS_CHECK(p.*a.field, kParamInvalid,
                 "%s: %s: MPP-12 value (the weights are always the transposed (N, K) form); allowed true, got false", op,
                 a.name);
  MLAOPS_TRY(check::finite_f32(op, "epsilon", "MPP-16", p.epsilon, true));

  // ==== existence: required tensors (MPP-01), optional ones by feature (MPP-10) ====
  for (const char* name : o.mlapo ? std::span<const char* const>(kRequiredMlapo) : std::span<const char* const>(kRequired))
    MLAOPS_CHECK(check::given(ts, name) != nullptr, kParamNullptr, "%s: %s: MPP-01 required tensor is null", op, name);
  const bool rope = check::given(ts, "cos") != nullptr;
  if (o.mlapo)  // MPP-20 cos and sin together: both absent skips the RoPE rotation
    MLAOPS_CHECK(rope == (check::given(ts, "sin") != nullptr), kParamNullptr,
                 "%s: %s: MPP-20 cos and sin are given together (both absent: no RoPE rotation); allowed both or "
                 "neither, got %s without %s",
                 op, rope ? "sin" : "cos", rope ? "cos" : "sin", rope ? "sin" : "cos");
  const CacheModeRow* found = kCacheModes;
  while (found->mode != p.cache_mode) ++found;  // every cache mode has its row (MPP-06 passed)
  const CacheModeRow& mode = *found;
  const bool int8_weights = p.wdqkv.dtype == I8;
  const bool per_token = p.quant_mode == MlaPreprocessQuantMode::kPerTokenSymm;
  char in_mode[96];
  std::snprintf(in_mode, sizeof in_mode, "in cacheMode %d (%s)", static_cast<int>(p.cache_mode),
                mla_preprocess_cache_mode_name(p.cache_mode));
  for (const PresenceRow& r : kPresence) {  // the ones a mode does not read were dropped (ignored)
    if (!feature_on(r.needs, mode, int8_weights, per_token)) continue;
    const char* why = r.needs == Feature::kInt8Weights      ? "with INT8 weights"
                      : r.needs == Feature::kPerTensorQuant ? "in quantMode 0 with INT8 weights"
                                                            : in_mode;
    MLAOPS_TRY(check::present(op, r.param, "MPP-10", check::given(ts, r.param), why));
  }

  // ==== cross-feature: dtypes by input dtype and cache mode (MPP-02), combinations (MPP-11), cache
  // formats ====
  const DType dt = p.input.dtype;
  for (const char* name : kInputDtype)
    if (const TensorView* t = check::given(ts, name)) MLAOPS_TRY(check::dtype_in(op, name, "MPP-02", *t, {dt}));
  for (const char* name : kCacheModeDtype)
    MLAOPS_TRY(check::dtype_in(op, name, "MPP-02", *check::given(ts, name), {mode.int8 ? I8 : dt}));
  // MPP-13 the cache outputs take the input caches' elements
  MLAOPS_TRY(check::dtype_in(op, "kvCacheOut", "MPP-13 (the dtype of kvCache)", mla_preprocess_kv_out(p),
                             {p.kv_cache.dtype}));
  if (mode.rope_outputs && p.kv_cache_rope != nullptr)
    MLAOPS_TRY(check::dtype_in(op, "krCacheOut", "MPP-13 (the dtype of kvCacheRope)", *mla_preprocess_kr_out(p),
                               {p.kv_cache_rope->dtype}));
  MLAOPS_TRY(check::dtype_in(op, "wdqkv", "MPP-02", p.wdqkv, {I8, dt}));
  MLAOPS_CHECK(p.wuq.dtype == p.wdqkv.dtype, kParamInvalid, "%s: wuq: MPP-11 dtype must equal wdqkv's; allowed %s, got %s",
               op, dtype_name(p.wdqkv.dtype), dtype_name(p.wuq.dtype));
  MLAOPS_CHECK(p.do_rms_norm == int8_weights, kParamInvalid,
               "%s: doRmsNorm: MPP-11 value with %s weights; allowed %s, got %s", op, dtype_name(p.wdqkv.dtype),
               int8_weights ? "true" : "false", p.do_rms_norm ? "true" : "false");
  const DType ds_dt = dt == F16 ? I64 : F32;  // fp16: fp32 bits in the low 32 bits of an INT64
  for (const char* name : {"deScale0", "deScale1"})  // the serving op: either encoding with either dtype
    if (const TensorView* t = check::given(ts, name))
      MLAOPS_TRY(o.mlapo ? check::dtype_in(op, name, "MPP-11", *t, {I64, F32})
                         : check::dtype_in(op, name, "MPP-11", *t, {ds_dt}));
  if (o.vendor_ranges && !int8_weights) {
    MLAOPS_CHECK(dt == BF16, kParamInvalid,
                 "%s: input: MPP-11 the weights in the input dtype (doRmsNorm false) need BF16 input; allowed BF16, got %s",
                 op, dtype_name(dt));
    MLAOPS_CHECK(!mode.nz, kParamInvalid, "%s: cacheMode: MPP-11 value with BF16 weights; allowed {0, 1}, got %d", op,
                 static_cast<int>(p.cache_mode));
  }
  MLAOPS_TRY(check::check_rows(op, mode.nz ? std::span<const check::FormatRow>(kCacheFormatsNz)
                                           : std::span<const check::FormatRow>(kCacheFormatsNd),
                               ts));
  const bool wuk_nz = p.wuk.format == Format::kFractalNZ;
  MLAOPS_TRY(check::rank_in(op, "wuk", wuk_nz ? "MPP-04 (FRACTAL_NZ [N, Hckv/16, D, 16])" : "MPP-04 ([N, D, Hckv])", p.wuk,
                            {wuk_nz ? 4 : 3}));

  // ==== consistency: the dims, their ranges, every shape, the caches' layout, MPP-13 ====
  MlaPreprocessShape d;
  d.T = p.input.dims[0];
  d.He = p.input.dims[1];
  d.Hckv = p.gamma2.dims[0];
  d.Hcq = p.gamma1.dims[0];
  // Dr: cos's last dim; without RoPE (the serving op) the rope cache's row width, or kvCache's
  // width beyond Hckv in cacheMode 0
  const TensorView* kr = mode.rope_outputs ? p.kv_cache_rope : nullptr;
  d.Dr = rope ? p.cos.dims[1]
         : kr  ? (mode.nz ? kr->dims[1] * kr->dims[3] : kr->dims[3])
               : p.kv_cache.dims[3] - d.Hckv;
  d.N = p.wuk.dims[0];
  d.D = wuk_nz ? p.wuk.dims[2] : p.wuk.dims[1];
  d.block_num = p.kv_cache.dims[0];
  d.block_size = mode.nz ? p.kv_cache.dims[2] : p.kv_cache.dims[1];
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
  int64_t slots = 0, head_width = 0, hckv_dr = 0;
  MLAOPS_CHECK(add_ok(d.Hckv, d.Dr, &hckv_dr) && add_ok(hckv_dr, d.Hcq, &d.m1_cols) && add_ok(d.D, d.Dr, &head_width) &&
                   product_ok({d.N, head_width}, &d.m2_cols) && product_ok({d.block_num, d.block_size}, &slots),
               kParamInvalid, "%s: MPP-15 size overflows int64", op);
  SymValues v{};
  at(v, Sym::kOne) = 1;
  at(v, Sym::kT) = d.T;
  at(v, Sym::kHe) = d.He;
  at(v, Sym::kHckv) = d.Hckv;
  at(v, Sym::kDr) = d.Dr;
  at(v, Sym::kHcq) = d.Hcq;
  at(v, Sym::kN) = d.N;
  at(v, Sym::kD) = d.D;
  at(v, Sym::kBlockNum) = d.block_num;
  at(v, Sym::kBlockSize) = d.block_size;
  at(v, Sym::kM1) = d.m1_cols;
  at(v, Sym::kM2) = d.m2_cols;
  at(v, Sym::kHckvDr) = hckv_dr;
  at(v, Sym::kHckv16) = d.Hckv / 16;
  at(v, Sym::kHckv32) = d.Hckv / 32;
  at(v, Sym::kDr16) = d.Dr / 16;
  at(v, Sym::k16) = 16;
  at(v, Sym::k32) = 32;

  if (o.vendor_ranges) {  // MPP-08 the vendor's ranges (aclnn doc / ATB op)
    MLAOPS_TRY(o.v2 ? check::check_values(op, kVendorRangesV2, v) : check::check_values(op, kVendorRanges, v));
    MLAOPS_CHECK(d.He % 256 == 0, kParamInvalid,
                 "%s: input: MPP-08 hiddenSize step; allowed a multiple of 256, got %lld", op, (long long)d.He);
    if (!int8_weights) MLAOPS_TRY(check::value_in(op, "input", "MPP-08 hiddenSize with BF16 weights", d.He, {6144}));
    if (mode.nz)
      MLAOPS_TRY(check::value_in(op, "kvCache", "MPP-08 blockSize in the NZ cache modes", d.block_size, {128}));
    else if (d.block_size != 256)
      MLAOPS_TRY(check::value_range(op, "kvCache", "MPP-08 blockSize (or 256)", d.block_size, 1, 128));
  }

  // MPP-09 every tensor's shape
  MLAOPS_TRY(nz_weight(op, "wdqkv", p.wdqkv, d.m1_cols, d.He));
  MLAOPS_TRY(nz_weight(op, "wuq", p.wuq, d.m2_cols, d.Hcq));
  if (wuk_nz)
    MLAOPS_CHECK(d.Hckv % 16 == 0 && d.D % 16 == 0, kParamInvalid,
                 "%s: wuk: MPP-09 FRACTAL_NZ needs Hckv (%lld) and D (%lld) multiples of 16", op, (long long)d.Hckv,
                 (long long)d.D);
  MLAOPS_TRY(wuk_nz ? check::check_shapes(op, kWukNz, ts, v) : check::check_shapes(op, kWukNd, ts, v));
  MLAOPS_TRY(check::check_shapes(op, kShapes, ts, v));
  for (const auto& row : kPrefixShapes)
    if (const TensorView* t = check::given(ts, row.param)) MLAOPS_TRY(prefix_shape(op, row, *t, v));
  const int64_t c0_kv = 32 / dtype_size(mode.int8 ? I8 : dt), c0_r = 32 / dtype_size(dt);
  if (mode.nz)
    MLAOPS_CHECK(d.Hckv % c0_kv == 0 && d.Dr % c0_r == 0, kParamInvalid,
                 "%s: kvCache / kvCacheRope: MPP-09 the NZ caches need Hckv (%lld) a multiple of %lld and Dr (%lld) a "
                 "multiple of %lld",
                 op, (long long)d.Hckv, (long long)c0_kv, (long long)d.Dr, (long long)c0_r);
  MLAOPS_TRY(check::check_shapes(op, kModeShapes[static_cast<int>(p.cache_mode)], ts, v));
  if (p.q_nope_scale != nullptr) {  // [N], (1, N, 1), ... or [1] (broadcast; the doc table's shape)
    int64_t n = 0;
    MLAOPS_CHECK(checked_numel(*p.q_nope_scale, &n) && (n >= d.N || n == 1), kParamInvalid,
                 "%s: qNopeScale: MPP-09 element count (the first headNum are read); allowed >= headNum (%lld) or 1, "
                 "got shape %s",
                 op, (long long)d.N, check::shape_str(*p.q_nope_scale).c_str());
  }
  MLAOPS_TRY(cache_layout(op, "kvCache", p.kv_cache));
  if (mode.rope_outputs) MLAOPS_TRY(cache_layout(op, "kvCacheRope", *p.kv_cache_rope));
  if (o.v2) {  // V2 makes the caches contiguous before its kernel reads their geometry
    MLAOPS_TRY(check::contiguous(op, "kvCache", "MPP-05 (aclnnMlaPreprocessV2: contiguous caches)", p.kv_cache));
    if (mode.rope_outputs)
      MLAOPS_TRY(check::contiguous(op, "kvCacheRope", "MPP-05 (aclnnMlaPreprocessV2: contiguous caches)",
                                   *p.kv_cache_rope));
  }

  *dims = d;
  return kSuccess;
}

// ==== pointers (phase 1 and every run) ====
Status mla_preprocess_check_pointers(const MlaPreprocessParams& p, const char* op, const void* workspace,
                                     uint64_t workspace_bytes) {
  const auto ts = mla_preprocess_tensors(p);
  for (const check::Named& n : ts) {
    if (check::given(ts, n.name) == nullptr) continue;
    MLAOPS_TRY(check::has_data(op, n.name, "MPP-05", *n.t));
    MLAOPS_TRY(check::aligned(op, n.name, "MPP-05", *n.t));
  }
  // MPP-14 outputs disjoint from each other and from every input the call reads; the NZ weights
  // and the cache outputs compared as the bytes they span
  const TensorView* kr_out = mla_preprocess_kr_out(p);
  const TensorView spans[] = {span_view(mla_preprocess_kv_out(p)), kr_out != nullptr ? span_view(*kr_out) : TensorView{},
                              check::flat_storage(p.wdqkv), check::flat_storage(p.wuq)};
  auto region = [&](const check::Named& n) -> check::Region {
    const bool kv_out = std::strcmp(n.name, "kvCacheOut") == 0, kr_out_named = std::strcmp(n.name, "krCacheOut") == 0;
    const TensorView* t = kv_out                          ? &spans[0]
                          : kr_out_named                  ? (kr_out != nullptr ? &spans[1] : nullptr)
                          : n.t == &p.wdqkv               ? &spans[2]
                          : n.t == &p.wuq                 ? &spans[3]
                                                          : n.t;
    return {n.name, t};
  };
  const auto listed = [](std::span<const char* const> names, const char* name) {
    for (const char* x : names)
      if (std::strcmp(x, name) == 0) return true;
    return false;
  };
  std::vector<check::Region> outputs, inputs;
  for (const char* name : kOutputs)
    for (const check::Named& n : ts)
      if (std::strcmp(name, n.name) == 0) outputs.push_back(region(n));
  for (const check::Named& n : ts)
    if (!listed(kOutputs, n.name) && !listed(kNotRead, n.name)) inputs.push_back(region(n));
  MLAOPS_TRY(check::no_overlap(op, "MPP-14", outputs, inputs));
  // MPP-14 in phase 2: the workspace overlaps no bound tensor (read or not)
  std::vector<check::Region> bound;
  for (const check::Named& n : ts)
    if (check::given(ts, n.name) != nullptr) bound.push_back(region(n));
  return check::workspace_disjoint(op, "MPP-14", workspace, workspace_bytes, bound);
}

}  // namespace mlaops
