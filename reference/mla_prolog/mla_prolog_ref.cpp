// Float64 reference of MlaProlog V1 / V2WeightNz / V3WeightNz; see mla_prolog_ref.h for the conventions and
// the choices made where the vendor material is silent.
//
#include "reference/mla_prolog/mla_prolog_ref.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "core/error.h"
#include "mlaops/dtype.h"
#include "reference/common/ref_checks.h"
#include "reference/common/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "mla_prolog_ref";

using ref::load_vector;
Status check_view(const TensorView& t, const char* name, int64_t* numel) { return ref::check_view(kOp, t, name, numel); }
Status check_token_major(const TensorView& t, const char* name, int64_t T, std::initializer_list<int64_t> tail) {
  return ref::check_token_major(kOp, t, name, T, tail);
}
Status check_vector(const TensorView& t, const char* name, int64_t n) { return ref::check_vector(kOp, t, name, n); }

// The quantization scenario, from dtypes only (docs/ops/mla_prolog.md): an INT8 tokenX is full
// quant, else an INT8 weightUqQr is partial quant, else no quant; an INT8 kvCache selects the
// KV-quant variant of full and partial quant.
struct Scenario {
  bool full = false;      // INT8 tokenX and the three NZ weights
  bool partial = false;   // INT8 weightUqQr only
  bool kv_quant = false;  // full / partial with an INT8 kvCache
  bool per_tile = false;  // the KV quant per token and tile (V3 kvCacheQuantMode 3)
  const char* name = "NO_QUANT";
};

Scenario scenario_of(const MlaPrologParams& p) {
  Scenario sc;
  const bool kv_int8 = p.kv_cache.dtype == DType::kInt8;
  if (p.token_x.dtype == DType::kInt8) {
    sc.full = true;
  } else if (p.weight_uq_qr.dtype == DType::kInt8) {
    sc.partial = true;
  }
  sc.kv_quant = (sc.full || sc.partial) && kv_int8;
  sc.per_tile = sc.kv_quant && p.kv_quant_per_tile;
  if (sc.full) sc.name = sc.kv_quant ? "FULL_QUANT_KV_QUANT" : "FULL_QUANT_KV_NO_QUANT";
  if (sc.partial) sc.name = sc.kv_quant ? "PARTIAL_QUANT_KV_QUANT" : "PARTIAL_QUANT_KV_NO_QUANT";
  if (sc.per_tile) sc.name = sc.full ? "FULL_QUANT_KV_QUANT_PER_TILE" : "PARTIAL_QUANT_KV_QUANT_PER_TILE";
  return sc;
}

Status require(const TensorView* t, const char* name, const Scenario& sc) {
  MLAOPS_CHECK(t != nullptr, kParamNullptr, "%s: %s is required in scenario %s", kOp, name, sc.name);
  return kSuccess;
}

Status check_dtype(const TensorView& t, const char* name, DType want, const Scenario& sc) {
  MLAOPS_CHECK(t.dtype == want, kParamInvalid, "%s: %s: dtype must be %s in scenario %s; got %s", kOp, name,
               ref::type_name(want), sc.name, ref::type_name(t.dtype));
  return kSuccess;
}

// Reads element (r, c) of a logical [rows, cols] weight given as FRACTAL_NZ (4-D storage view
// or 2-D logical view over 4-D storage) or as a plain ND 2-D matrix.
struct Weight {
  const TensorView* v = nullptr;
  enum Form { kNd, kNz4d, kNz2d } form = kNd;
  ref::NzGeometry m;

  double at(int64_t r, int64_t c) const {
    switch (form) {
      case kNd: return ref::load(*v, r * v->strides[0] + c * v->strides[1]);
      case kNz4d: return ref::load(*v, ref::linear_offset(*v, m.index(r, c)));
      case kNz2d: return ref::load(*v, m.index(r, c));
    }
    return 0.0;
  }
  // The whole matrix decoded once as float64, transposed: t[c * rows + r] = W[r][c] (so the
  // matmuls below run over contiguous memory).
  std::vector<double> transposed(int64_t rows, int64_t cols) const {
    std::vector<double> t(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = at(r, c);
    return t;
  }
};

double dot(const double* a, const double* b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

Status make_weight(const TensorView& t, const char* name, int64_t rows, int64_t cols, Weight* out) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(t, name, &numel));
  out->v = &t;
  if (t.format == Format::kFractalNZ) {
    ref::NzGeometry m;
    MLAOPS_TRY(ref::nz_geometry(t, kOp, name, rows, cols, &m));
    // A 2-D view's strides do not describe the NZ storage: it is read as dense storage.
    out->form = t.rank == 2 ? Weight::kNz2d : Weight::kNz4d;
    out->m = m;
    return kSuccess;
  }
  MLAOPS_CHECK(t.format == Format::kND || t.format == Format::kNCHW, kParamInvalid,
               "%s: %s: format must be FRACTAL_NZ or ND; got %s", kOp, name, ref::format_str(t.format));
  MLAOPS_CHECK(t.rank == 2 && t.dims[0] == rows && t.dims[1] == cols, kParamInvalid,
               "%s: %s: an ND weight must be [%lld, %lld] (rank 2); got rank %d", kOp, name, (long long)rows,
               (long long)cols, t.rank);
  out->form = Weight::kNd;
  return kSuccess;
}

bool mode_is(MlaPrologCacheMode m, std::initializer_list<MlaPrologCacheMode> set) {
  for (MlaPrologCacheMode x : set)
    if (x == m) return true;
  return false;
}
bool nz_mode(MlaPrologCacheMode m) { return mode_is(m, {MlaPrologCacheMode::kPaNz, MlaPrologCacheMode::kPaBlkNz}); }
bool dense_mode(MlaPrologCacheMode m) { return mode_is(m, {MlaPrologCacheMode::kBsnd, MlaPrologCacheMode::kTnd}); }
bool block_mode(MlaPrologCacheMode m) {
  return mode_is(m, {MlaPrologCacheMode::kPaBlkBsnd, MlaPrologCacheMode::kPaBlkNz});
}

// A cache of rows of `width` elements: [BlockNum, BlockSize, 1, width] (paged; BSND: [B, S, 1,
// width], whose B and S the dims hold as BlockNum and BlockSize) or [T, 1, width] (TND).
Status check_cache(const TensorView& t, const char* name, const MlaPrologDims& d, int64_t width,
                   MlaPrologCacheMode mode) {
  int64_t numel = 0;
  MLAOPS_TRY(check_view(t, name, &numel));
  if (mode == MlaPrologCacheMode::kTnd) {
    MLAOPS_CHECK(t.rank == 3 && t.dims[0] == d.T && t.dims[1] == 1 && t.dims[2] == width, kParamInvalid,
                 "%s: %s: must be [T=%lld, 1, %lld] in cache mode TND", kOp, name, (long long)d.T, (long long)width);
    return kSuccess;
  }
  MLAOPS_CHECK(t.rank == 4 && t.dims[0] == d.block_num && t.dims[1] == d.block_size && t.dims[2] == 1 &&
                   t.dims[3] == width,
               kParamInvalid, "%s: %s: must be [%lld, %lld, 1, %lld] (Nkv = 1)", kOp, name, (long long)d.block_num,
               (long long)d.block_size, (long long)width);
  if (nz_mode(mode)) {
    const int64_t c0 = ref::nz_c0_of(t.dtype);
    MLAOPS_CHECK(c0 > 0 && width % c0 == 0, kParamInvalid,
                 "%s: %s: PA_NZ needs a row width that is a multiple of c0 = %lld (%s); got %lld", kOp, name,
                 (long long)c0, ref::type_name(t.dtype), (long long)width);
  }
  return kSuccess;
}

// The cache row of every token (-1: no write), validating every value it reads first:
// PA_BSND / PA_NZ: the slot cacheIndex[t] (< BlockNum*BlockSize; negative skips); BSND / TND:
// row t; PA_BLK_*: batch b's token s goes to block cacheIndex[first_b + s / BlockSize] (<
// BlockNum; negative skips), row block*BlockSize + s % BlockSize, where first_b counts the block
// ids of the batches before b (ceil(len / BlockSize) each); the batch lengths are S (tokenX
// [B, S, He]) or the differences of actualSeqLen (prefix sums ending at T).
Status token_rows(const MlaPrologParams& p, const MlaPrologDims& d, MlaPrologCacheMode mode, int64_t index_count,
                  std::vector<int64_t>* rows) {
  const int64_t T = d.T;
  auto index_at = [&](int64_t i) { return ref::load_int(p.cache_index, ref::linear_offset(p.cache_index, i)); };
  if (dense_mode(mode)) {
    for (int64_t t = 0; t < T; ++t) (*rows)[static_cast<size_t>(t)] = t;
    return kSuccess;
  }
  if (!block_mode(mode)) {
    const int64_t slots = d.block_num * d.block_size;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t slot = index_at(t);
      MLAOPS_CHECK(slot < slots, kParamInvalid,
                   "%s: cacheIndex[%lld] = %lld is out of range [0, %lld) (BlockNum*BlockSize); negative skips", kOp,
                   (long long)t, (long long)slot, (long long)slots);
      (*rows)[static_cast<size_t>(t)] = slot < 0 ? -1 : slot;
    }
    return kSuccess;
  }
  // the batch lengths
  std::vector<int64_t> lens;
  if (d.bsh) {
    lens.assign(static_cast<size_t>(d.B), d.S);
  } else {
    const TensorView& asl = *p.actual_seq_len;
    int64_t n = 0;
    MLAOPS_TRY(check_view(asl, "actualSeqLenOptional", &n));
    int64_t prev = 0;
    for (int64_t b = 0; b < n; ++b) {
      const int64_t cum = ref::load_int(asl, ref::linear_offset(asl, b));
      MLAOPS_CHECK(cum >= prev && cum <= T, kParamInvalid,
                   "%s: actualSeqLenOptional[%lld] = %lld: prefix sums must be non-decreasing and at most T = %lld",
                   kOp, (long long)b, (long long)cum, (long long)T);
      lens.push_back(cum - prev);
      prev = cum;
    }
    MLAOPS_CHECK(prev == T, kParamInvalid, "%s: actualSeqLenOptional: the last prefix sum must be T = %lld; got %lld",
                 kOp, (long long)T, (long long)prev);
  }
  // the first block id position of every batch, then every token's row
  std::vector<int64_t> first(lens.size() + 1, 0);
  for (size_t b = 0; b < lens.size(); ++b) first[b + 1] = first[b] + (lens[b] + d.block_size - 1) / d.block_size;
  MLAOPS_CHECK(first.back() <= index_count, kParamInvalid,
               "%s: cacheIndex: holds %lld block ids; the batches need %lld", kOp, (long long)index_count,
               (long long)first.back());
  int64_t t = 0;
  for (size_t b = 0; b < lens.size(); ++b)
    for (int64_t s = 0; s < lens[b]; ++s, ++t) {
      const int64_t pos = first[b] + s / d.block_size;
      const int64_t block = index_at(pos);
      MLAOPS_CHECK(block < d.block_num, kParamInvalid,
                   "%s: cacheIndex[%lld] = %lld is out of range [0, %lld) (BlockNum); negative skips", kOp,
                   (long long)pos, (long long)block, (long long)d.block_num);
      (*rows)[static_cast<size_t>(t)] = block < 0 ? -1 : block * d.block_size + s % d.block_size;
    }
  return kSuccess;
}

}  // namespace

// ---- the pieces ----

void mla_prolog_rms_norm(const double* v, const double* gamma, int64_t n, double eps, double* out) {
  if (n <= 0) return;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += v[i] * v[i];
  const double rms = std::sqrt(sum / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = v[i] / rms * gamma[i];
}

void mla_prolog_rope(const double* v, const double* cos, const double* sin, int64_t dr, double* out) {
  const int64_t h = dr / 2;
  std::vector<double> u(static_cast<size_t>(dr));
  for (int64_t i = 0; i < h; ++i) {
    u[static_cast<size_t>(i)] = v[2 * i];          // even elements first
    u[static_cast<size_t>(h + i)] = v[2 * i + 1];  // then odd elements
  }
  for (int64_t i = 0; i < h; ++i) {
    const double lo = u[static_cast<size_t>(i)];
    const double hi = u[static_cast<size_t>(h + i)];
    out[i] = lo * cos[i] - hi * sin[i];
    out[h + i] = hi * cos[h + i] + lo * sin[h + i];
  }
}

double mla_prolog_dyn_quant_row(const double* v, int64_t n, int8_t* q) {
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(v[i]));
  if (m == 0.0) {  // all-zero row: scale 0, q = 0 (UNCONFIRMED vendor behaviour)
    for (int64_t i = 0; i < n; ++i) q[i] = 0;
    return 0.0;
  }
  const double inv = 127.0 / m;  // the kernel computes 127/m once and multiplies
  for (int64_t i = 0; i < n; ++i) q[i] = ref::int8_rint(v[i] * inv);
  return m / 127.0;
}

double mla_prolog_quant_query_row(const double* v, int64_t n, int8_t* q) {
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(v[i]));
  const double dqs = m / 127.0;
  for (int64_t i = 0; i < n; ++i) q[i] = dqs == 0.0 ? int8_t{0} : ref::int8_round(v[i] / dqs);
  return dqs;
}

int64_t mla_prolog_cache_offset(const TensorView& cache, MlaPrologCacheMode mode, int64_t p, int64_t j) {
  if (mode == MlaPrologCacheMode::kTnd) {  // [T, 1, H]: row p = token p
    const int64_t idx[3] = {p, 0, j};
    return ref::offset(cache, idx);
  }
  const int64_t block_size = cache.dims[1];  // BSND: S (row p = token p = b*S + s)
  const int64_t b = p / block_size;
  const int64_t o = p % block_size;
  if (nz_mode(mode)) {
    const int64_t c0 = ref::nz_c0_of(cache.dtype);
    return b * cache.strides[0] + (j / c0) * block_size * c0 + o * c0 + j % c0;
  }
  const int64_t idx[4] = {b, o, 0, j};
  return ref::offset(cache, idx);
}

// ---- dims ----

Status mla_prolog_dims(const MlaPrologParams& p, MlaPrologDims* out) {
  MlaPrologDims d;
  int64_t numel = 0;
  MLAOPS_TRY(check_view(p.token_x, "tokenX", &numel));
  if (p.token_x.rank == 3) {
    d.bsh = true;
    d.B = p.token_x.dims[0];
    d.S = p.token_x.dims[1];
    d.He = p.token_x.dims[2];
    MLAOPS_CHECK(ref::mul_ok(d.B, d.S, &d.T), kParamInvalid, "%s: tokenX: B*S overflows int64", kOp);
  } else if (p.token_x.rank == 2) {
    d.bsh = false;
    d.T = p.token_x.dims[0];
    d.B = d.T;
    d.S = 1;
    d.He = p.token_x.dims[1];
  } else {
    return fail(kParamInvalid, "%s: tokenX: must be [B, S, He] or [T, He]; got rank %d", kOp, p.token_x.rank);
  }

  MLAOPS_TRY(check_view(p.weight_dq, "weightDq", &numel));
  if (p.weight_dq.format == Format::kFractalNZ && p.weight_dq.rank == 4) {
    // The storage's column count c0*C1 is padded: take the exact Hcq from rmsnormGammaCq.
    MLAOPS_TRY(check_view(p.rmsnorm_gamma_cq, "rmsnormGammaCq", &numel));
    MLAOPS_CHECK(p.rmsnorm_gamma_cq.rank >= 1, kParamInvalid, "%s: rmsnormGammaCq: must be [Hcq]; got rank 0", kOp);
    d.Hcq = p.rmsnorm_gamma_cq.dims[p.rmsnorm_gamma_cq.rank - 1];
  } else if (p.weight_dq.rank == 2) {
    d.Hcq = p.weight_dq.dims[1];
  } else {
    return fail(kParamInvalid, "%s: weightDq: must be 2-D [He, Hcq] or a 4-D FRACTAL_NZ storage view; got rank %d",
                kOp, p.weight_dq.rank);
  }

  MLAOPS_TRY(check_view(p.weight_uk, "weightUk", &numel));
  MLAOPS_CHECK(p.weight_uk.rank == 3, kParamInvalid, "%s: weightUk: must be [N, D, Hckv]; got rank %d", kOp,
               p.weight_uk.rank);
  d.N = p.weight_uk.dims[0];
  d.D = p.weight_uk.dims[1];

  MLAOPS_TRY(check_view(p.rope_cos, "ropeCos", &numel));
  MLAOPS_CHECK(p.rope_cos.rank >= 1, kParamInvalid, "%s: ropeCos: must be [T, Dr] or [B, S, Dr]; got rank 0", kOp);
  d.Dr = p.rope_cos.dims[p.rope_cos.rank - 1];

  MLAOPS_TRY(check_view(p.kv_cache, "kvCacheRef", &numel));
  const bool tnd = p.cache_mode == MlaPrologCacheMode::kTnd;
  MLAOPS_CHECK(p.kv_cache.rank == (tnd ? 3 : 4), kParamInvalid,
               "%s: kvCacheRef: must be [BlockNum, BlockSize, 1, H], [B, S, 1, H] (BSND) or [T, 1, H] (TND); got rank "
               "%d",
               kOp, p.kv_cache.rank);
  if (p.cache_mode == MlaPrologCacheMode::kBsnd) {
    MLAOPS_CHECK(d.bsh, kParamInvalid, "%s: tokenX: cache mode BSND needs tokenX [B, S, He]", kOp);
    d.block_num = d.B;
    d.block_size = d.S;
  } else if (tnd) {
    MLAOPS_CHECK(!d.bsh, kParamInvalid, "%s: tokenX: cache mode TND needs tokenX [T, He]", kOp);
    d.block_num = d.T;
    d.block_size = 1;
  } else {
    d.block_num = p.kv_cache.dims[0];
    d.block_size = p.kv_cache.dims[1];
  }
  d.kv_row = p.kv_cache.dims[p.kv_cache.rank - 1];
  if (p.kv_quant_per_tile) {  // the packed row: Hckv from rmsnormGammaCkv
    MLAOPS_TRY(check_view(p.rmsnorm_gamma_ckv, "rmsnormGammaCkv", &numel));
    d.Hckv = numel;
  } else {
    d.Hckv = d.kv_row;
  }

  *out = d;
  return kSuccess;
}

// ---- the operator ----

Status mla_prolog_ref(const MlaPrologParams& p) {
  MlaPrologDims d;
  MLAOPS_TRY(mla_prolog_dims(p, &d));
  const Scenario sc = scenario_of(p);
  const bool full = sc.full;
  const bool quant_q = full || sc.partial;  // MatmulQcQr in int8
  const bool kv_quant = sc.kv_quant;
  const int64_t T = d.T, He = d.He, Hcq = d.Hcq, N = d.N, D = d.D, Dr = d.Dr, Hckv = d.Hckv;
  int64_t head_cols = 0, kv_cols = 0;  // D + Dr, Hckv + Dr
  MLAOPS_CHECK(ref::add_ok(D, Dr, &head_cols) && ref::add_ok(Hckv, Dr, &kv_cols), kParamInvalid, "%s: dims overflow int64",
               kOp);

  // ---- shapes, presence and dtypes: everything is checked before anything is written ----
  MLAOPS_CHECK(Dr % 2 == 0, kParamInvalid, "%s: ropeCos: Dr must be even; got %lld", kOp, (long long)Dr);
  int64_t uq_cols = 0;
  MLAOPS_CHECK(ref::mul_ok(N, head_cols, &uq_cols), kParamInvalid, "%s: weightUqQr: N*(D+Dr) overflows int64", kOp);
  Weight w_dq, w_uq_qr, w_dkv_kr;
  MLAOPS_TRY(make_weight(p.weight_dq, "weightDq", He, Hcq, &w_dq));
  MLAOPS_TRY(make_weight(p.weight_uq_qr, "weightUqQr", Hcq, uq_cols, &w_uq_qr));
  MLAOPS_TRY(make_weight(p.weight_dkv_kr, "weightDkvKr", He, kv_cols, &w_dkv_kr));
  MLAOPS_CHECK(p.weight_uk.dims[2] == Hckv, kParamInvalid, "%s: weightUk: must be [N, D, Hckv=%lld]; got Hckv %lld",
               kOp, (long long)Hckv, (long long)p.weight_uk.dims[2]);
  MLAOPS_TRY(check_vector(p.rmsnorm_gamma_cq, "rmsnormGammaCq", Hcq));
  MLAOPS_TRY(check_vector(p.rmsnorm_gamma_ckv, "rmsnormGammaCkv", Hckv));
  MLAOPS_TRY(check_token_major(p.rope_sin, "ropeSin", T, {Dr}));
  MLAOPS_TRY(check_token_major(p.rope_cos, "ropeCos", T, {Dr}));
  const MlaPrologCacheMode mode = p.cache_mode;
  const bool per_tile = sc.per_tile;
  MLAOPS_CHECK(!p.kv_quant_per_tile || per_tile, kParamInvalid,
               "%s: kvCacheRef: per-tile KV quant needs int8 weightUqQr and an int8 kvCache", kOp);
  constexpr int64_t kTile = 128;
  MLAOPS_CHECK(!per_tile || Hckv % kTile == 0, kParamInvalid, "%s: per-tile KV quant needs Hckv %% 128 == 0", kOp);
  // the per-tile row: Hckv int8 | Dr bf16 (2 bytes each) | Hckv/128 fp32 (4 bytes each)
  const int64_t tiles = per_tile ? Hckv / kTile : 0;
  const int64_t row_width = per_tile ? Hckv + 2 * Dr + 4 * tiles : Hckv;
  MLAOPS_CHECK(!per_tile || mode_is(mode, {MlaPrologCacheMode::kPaBsnd, MlaPrologCacheMode::kBsnd,
                                           MlaPrologCacheMode::kTnd}),
               kParamInvalid, "%s: per-tile KV quant takes the cache modes PA_BSND, BSND, TND", kOp);
  MLAOPS_TRY(check_cache(p.kv_cache, "kvCacheRef", d, row_width, mode));
  if (per_tile) {
    int64_t kr_numel = 0;
    MLAOPS_TRY(check_view(p.kr_cache, "krCacheRef", &kr_numel));
    MLAOPS_CHECK(kr_numel == 0, kParamInvalid, "%s: krCacheRef: must be empty with per-tile KV quant", kOp);
    MLAOPS_CHECK(p.k_nope_clip_alpha != nullptr, kParamNullptr, "%s: kNopeClipAlphaOptional is required", kOp);
    MLAOPS_TRY(check_vector(*p.k_nope_clip_alpha, "kNopeClipAlphaOptional", 1));
  } else {
    MLAOPS_TRY(check_cache(p.kr_cache, "krCacheRef", d, Dr, mode));
  }
  // cacheIndex: slots [T] (PA_BSND, PA_NZ), block ids (PA_BLK_*), none (BSND, TND)
  int64_t index_count = 0;
  if (block_mode(mode)) {
    MLAOPS_TRY(check_view(p.cache_index, "cacheIndex", &index_count));
    if (d.bsh) {
      MLAOPS_CHECK(p.cache_index.rank == 2 && p.cache_index.dims[0] == d.B &&
                       p.cache_index.dims[1] == (d.S + d.block_size - 1) / d.block_size,
                   kParamInvalid, "%s: cacheIndex: must be [B, ceil(S / BlockSize)] block ids", kOp);
    } else {
      MLAOPS_CHECK(p.actual_seq_len != nullptr, kParamNullptr,
                   "%s: actualSeqLenOptional is required in the PA_BLK modes with tokenX [T, He]", kOp);
      int64_t n = 0;
      MLAOPS_TRY(check_view(*p.actual_seq_len, "actualSeqLenOptional", &n));
    }
  } else if (!dense_mode(mode)) {
    MLAOPS_TRY(check_vector(p.cache_index, "cacheIndex", T));
  }
  MLAOPS_TRY(check_token_major(p.query_out, "queryOut", T, {N, Hckv}));
  MLAOPS_TRY(check_token_major(p.query_rope_out, "queryRopeOut", T, {N, Dr}));

  const bool full_kv_quant = sc.full && sc.kv_quant && !per_tile;        // per tensor, int8 query
  const bool partial_kv_quant = sc.partial && sc.kv_quant && !per_tile;  // per channel
  MLAOPS_TRY(check_dtype(p.kv_cache, "kvCacheRef", kv_quant ? DType::kInt8 : DType::kBFloat16, sc));
  if (!per_tile)
    MLAOPS_TRY(check_dtype(p.kr_cache, "krCacheRef", partial_kv_quant ? DType::kInt8 : DType::kBFloat16, sc));
  MLAOPS_TRY(check_dtype(p.query_out, "queryOut", full_kv_quant ? DType::kInt8 : DType::kBFloat16, sc));
  MLAOPS_TRY(check_dtype(p.query_rope_out, "queryRopeOut", DType::kBFloat16, sc));

  if (full) {
    MLAOPS_TRY(require(p.dequant_scale_x, "dequantScaleXOptional", sc));
    MLAOPS_TRY(require(p.dequant_scale_w_dq, "dequantScaleWDqOptional", sc));
    MLAOPS_TRY(require(p.dequant_scale_w_dkv_kr, "dequantScaleWDkvKrOptional", sc));
    MLAOPS_TRY(check_vector(*p.dequant_scale_x, "dequantScaleXOptional", T));
    MLAOPS_TRY(check_vector(*p.dequant_scale_w_dq, "dequantScaleWDqOptional", Hcq));
    MLAOPS_TRY(check_vector(*p.dequant_scale_w_dkv_kr, "dequantScaleWDkvKrOptional", kv_cols));
  }
  if (quant_q) {
    MLAOPS_TRY(require(p.dequant_scale_w_uq_qr, "dequantScaleWUqQrOptional", sc));
    MLAOPS_TRY(check_vector(*p.dequant_scale_w_uq_qr, "dequantScaleWUqQrOptional", uq_cols));
    if (p.smooth_scales_cq) MLAOPS_TRY(check_vector(*p.smooth_scales_cq, "smoothScalesCqOptional", Hcq));
  }
  if (partial_kv_quant) {
    MLAOPS_TRY(require(p.quant_scale_ckv, "quantScaleCkvOptional", sc));
    MLAOPS_TRY(require(p.quant_scale_ckr, "quantScaleCkrOptional", sc));
    MLAOPS_TRY(check_vector(*p.quant_scale_ckv, "quantScaleCkvOptional", Hckv));
    MLAOPS_TRY(check_vector(*p.quant_scale_ckr, "quantScaleCkrOptional", Dr));
  }
  if (full_kv_quant) {
    MLAOPS_TRY(require(p.quant_scale_ckv, "quantScaleCkvOptional", sc));
    int64_t numel = 0;
    MLAOPS_TRY(check_view(*p.quant_scale_ckv, "quantScaleCkvOptional", &numel));
    MLAOPS_CHECK(numel >= 1, kParamInvalid, "%s: quantScaleCkvOptional: needs at least element 0; got empty", kOp);
    MLAOPS_TRY(require(p.dequant_scale_q_nope_out, "dequantScaleQNopeOutOptional", sc));
    MLAOPS_TRY(check_token_major(*p.dequant_scale_q_nope_out, "dequantScaleQNopeOutOptional", T, {N, 1}));
    MLAOPS_CHECK(ref::is_float(p.dequant_scale_q_nope_out->dtype), kParamInvalid,
                 "%s: dequantScaleQNopeOutOptional: dtype must be FLOAT; got %s", kOp,
                 ref::type_name(p.dequant_scale_q_nope_out->dtype));
  }

  // V3 queryNormOut: bf16 (NO_QUANT) or int8 with its per-token FLOAT scale [T, 1].
  if (p.query_norm_out != nullptr) {
    MLAOPS_TRY(check_token_major(*p.query_norm_out, "queryNormOutOptional", T, {Hcq}));
    MLAOPS_TRY(check_dtype(*p.query_norm_out, "queryNormOutOptional", quant_q ? DType::kInt8 : DType::kBFloat16, sc));
    if (quant_q) {
      MLAOPS_TRY(require(p.dequant_scale_q_norm_out, "dequantScaleQNormOutOptional", sc));
      MLAOPS_TRY(check_token_major(*p.dequant_scale_q_norm_out, "dequantScaleQNormOutOptional", T, {1}));
      MLAOPS_CHECK(ref::is_float(p.dequant_scale_q_norm_out->dtype), kParamInvalid,
                   "%s: dequantScaleQNormOutOptional: dtype must be FLOAT; got %s", kOp,
                   ref::type_name(p.dequant_scale_q_norm_out->dtype));
    }
  }
  // V3 α scales: float32 attributes; the multiply is skipped when |α - 1| < FLT_EPSILON.
  const float alpha_q_f = static_cast<float>(p.qc_qr_scale), alpha_kv_f = static_cast<float>(p.kc_scale);
  const bool scale_q = std::fabs(alpha_q_f - 1.0f) >= FLT_EPSILON;
  const bool scale_kv = std::fabs(alpha_kv_f - 1.0f) >= FLT_EPSILON;
  const double alpha_q = alpha_q_f, alpha_kv = alpha_kv_f;

  if (T == 0) return kSuccess;  // empty query: nothing to write

  // ---- read-only pre-pass: each token's cache row; an out-of-range value fails before any write ----
  int64_t slots = 0;
  MLAOPS_CHECK(ref::mul_ok(d.block_num, d.block_size, &slots), kParamInvalid,
               "%s: kvCacheRef: BlockNum*BlockSize overflows int64", kOp);
  const bool write_cache = slots > 0;  // BlockNum == 0: outputs only, caches untouched
  std::vector<int64_t> row_of(static_cast<size_t>(T), -1);  // -1: no write
  if (write_cache) MLAOPS_TRY(token_rows(p, d, mode, index_count, &row_of));
  double clip_alpha = 0.0;
  if (per_tile) {
    clip_alpha = ref::load(*p.k_nope_clip_alpha, ref::linear_offset(*p.k_nope_clip_alpha, 0));
    MLAOPS_CHECK(std::isfinite(clip_alpha) && clip_alpha > 0.0, kParamInvalid,
                 "%s: kNopeClipAlphaOptional must be finite and > 0; got %g", kOp, clip_alpha);
  }

  // ---- small per-call constants ----
  const std::vector<double> gamma_cq = load_vector(p.rmsnorm_gamma_cq, Hcq);
  const std::vector<double> gamma_ckv = load_vector(p.rmsnorm_gamma_ckv, Hckv);
  std::vector<double> ds_w_dq, ds_w_uq_qr, ds_w_dkv_kr, smooth, qs_ckv, qs_ckr;
  if (full) {
    ds_w_dq = load_vector(*p.dequant_scale_w_dq, Hcq);
    ds_w_dkv_kr = load_vector(*p.dequant_scale_w_dkv_kr, kv_cols);
  }
  if (quant_q) {
    ds_w_uq_qr = load_vector(*p.dequant_scale_w_uq_qr, uq_cols);
    if (p.smooth_scales_cq) smooth = load_vector(*p.smooth_scales_cq, Hcq);
  }
  if (partial_kv_quant) {
    qs_ckv = load_vector(*p.quant_scale_ckv, Hckv);
    qs_ckr = load_vector(*p.quant_scale_ckr, Dr);
  }
  if (full_kv_quant) qs_ckv = load_vector(*p.quant_scale_ckv, 1);  // per tensor: element 0

  const auto sz = [](int64_t n) { return static_cast<size_t>(n); };
  // the weights decoded once: wdq_t [Hcq][He], wuq_t [uq_cols][Hcq], wdkv_t [kv_cols][He],
  // wuk_t [N][Hckv][D]
  const std::vector<double> wdq_t = w_dq.transposed(He, Hcq);
  const std::vector<double> wuq_t = w_uq_qr.transposed(Hcq, uq_cols);
  const std::vector<double> wdkv_t = w_dkv_kr.transposed(He, kv_cols);
  std::vector<double> wuk_t(sz(N * Hckv * D));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < D; ++i)
      for (int64_t k = 0; k < Hckv; ++k) {
        const int64_t idx[3] = {n, i, k};
        wuk_t[sz((n * Hckv + k) * D + i)] = ref::load(p.weight_uk, ref::offset(p.weight_uk, idx));
      }
  std::vector<double> x(sz(He)), cq(sz(Hcq)), cn(sz(Hcq)), a(sz(Hcq)), qcqr(sz(uq_cols));
  std::vector<int8_t> a_i8(sz(Hcq)), q_i8(sz(Hckv));
  std::vector<double> cos_row(sz(Dr)), sin_row(sz(Dr)), qn(sz(D)), q(sz(Hckv)), rope_out(sz(Dr));
  std::vector<double> ck(sz(kv_cols)), kvn(sz(Hckv)), kr(sz(Dr));

  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < He; ++k) x[sz(k)] = ref::load(p.token_x, ref::linear_offset(p.token_x, t * He + k));
    for (int64_t i = 0; i < Dr; ++i) {
      cos_row[sz(i)] = ref::load(p.rope_cos, ref::linear_offset(p.rope_cos, t * Dr + i));
      sin_row[sz(i)] = ref::load(p.rope_sin, ref::linear_offset(p.rope_sin, t * Dr + i));
    }
    const double ds_x = full ? ref::load(*p.dequant_scale_x, ref::linear_offset(*p.dequant_scale_x, t)) : 0.0;

    // ---- Q path ----
    // Q1: cq = Dequant(int32(x_i8 @ Wdq_i8), dsx[t], dsWdq[c])  |  bf16(x @ Wdq)
    for (int64_t c = 0; c < Hcq; ++c) {
      double acc = 0.0;
      acc = dot(x.data(), wdq_t.data() + c * He, He);
      cq[sz(c)] = full ? acc * ds_x * ds_w_dq[sz(c)] : ref::to_bf16(acc);
    }
    // Q2: cn = RmsNorm(cq, gammaCq, epsCq)
    mla_prolog_rms_norm(cq.data(), gamma_cq.data(), Hcq, p.rmsnorm_epsilon_cq, cn.data());
    if (scale_q)  // V3: cn *= qcQrScale
      for (int64_t c = 0; c < Hcq; ++c) cn[sz(c)] *= alpha_q;
    // Q3: MatmulQcQr
    if (!quant_q) {
      for (int64_t c = 0; c < Hcq; ++c) a[sz(c)] = ref::to_bf16(cn[sz(c)]);
      if (p.query_norm_out != nullptr)  // V3: the bf16 A operand
        for (int64_t c = 0; c < Hcq; ++c)
          ref::store(*p.query_norm_out, ref::linear_offset(*p.query_norm_out, t * Hcq + c), a[sz(c)]);
      for (int64_t j = 0; j < uq_cols; ++j) {
        double acc = 0.0;
        acc = dot(a.data(), wuq_t.data() + j * Hcq, Hcq);
        qcqr[sz(j)] = ref::to_bf16(acc);
      }
    } else {
      if (!smooth.empty())
        for (int64_t c = 0; c < Hcq; ++c) cn[sz(c)] *= smooth[sz(c)];
      const double s_cq = mla_prolog_dyn_quant_row(cn.data(), Hcq, a_i8.data());
      if (p.query_norm_out != nullptr) {  // V3: the int8 A operand and its scale
        for (int64_t c = 0; c < Hcq; ++c)
          ref::store(*p.query_norm_out, ref::linear_offset(*p.query_norm_out, t * Hcq + c),
                     static_cast<double>(a_i8[sz(c)]));
        ref::store(*p.dequant_scale_q_norm_out, ref::linear_offset(*p.dequant_scale_q_norm_out, t), s_cq);
      }
      for (int64_t j = 0; j < uq_cols; ++j) {
        double acc = 0.0;
        for (int64_t c = 0; c < Hcq; ++c) acc += static_cast<double>(a_i8[sz(c)]) * wuq_t[sz(j * Hcq + c)];
        qcqr[sz(j)] = acc * s_cq * ds_w_uq_qr[sz(j)];  // token scale first, then channel
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      const int64_t base = n * head_cols;
      // Q4: q = bf16(bf16(qcqr nope) @ Wuk[n])
      for (int64_t i = 0; i < D; ++i) qn[sz(i)] = ref::to_bf16(qcqr[sz(base + i)]);
      for (int64_t k = 0; k < Hckv; ++k) {
        q[sz(k)] = ref::to_bf16(dot(qn.data(), wuk_t.data() + (n * Hckv + k) * D, D));
      }
      // Q5: query_rope = bf16(RoPE(qcqr rope))
      mla_prolog_rope(qcqr.data() + base + D, cos_row.data(), sin_row.data(), Dr, rope_out.data());
      for (int64_t i = 0; i < Dr; ++i) rope_out[sz(i)] = ref::to_bf16(rope_out[sz(i)]);
      // Q6 (full + KV quant): int8 query per (token, head), query_rope rescaled by qs_ckv[0] / dqs
      const int64_t q_base = (t * N + n) * Hckv;
      const int64_t r_base = (t * N + n) * Dr;
      if (full_kv_quant) {
        const double dqs = mla_prolog_quant_query_row(q.data(), Hckv, q_i8.data());
        for (int64_t k = 0; k < Hckv; ++k)
          ref::store(p.query_out, ref::linear_offset(p.query_out, q_base + k), static_cast<double>(q_i8[sz(k)]));
        for (int64_t i = 0; i < Dr; ++i) {
          // dqs == 0 (all-zero query row): the rescaled rope row is written as 0 (choice).
          const double v = dqs == 0.0 ? 0.0 : ref::to_bf16(rope_out[sz(i)] * qs_ckv[0] / dqs);
          ref::store(p.query_rope_out, ref::linear_offset(p.query_rope_out, r_base + i), v);
        }
        ref::store(*p.dequant_scale_q_nope_out, ref::linear_offset(*p.dequant_scale_q_nope_out, t * N + n), dqs);
      } else {
        for (int64_t k = 0; k < Hckv; ++k) ref::store(p.query_out, ref::linear_offset(p.query_out, q_base + k), q[sz(k)]);
        for (int64_t i = 0; i < Dr; ++i)
          ref::store(p.query_rope_out, ref::linear_offset(p.query_rope_out, r_base + i), rope_out[sz(i)]);
      }
    }

    // ---- KV path ----
    // K1: ck = Dequant(int32(x_i8 @ Wdkvkr_i8), dsx[t], dsWdkvkr[c])  |  bf16(x @ Wdkvkr)
    for (int64_t c = 0; c < kv_cols; ++c) {
      double acc = 0.0;
      acc = dot(x.data(), wdkv_t.data() + c * He, He);
      ck[sz(c)] = full ? acc * ds_x * ds_w_dkv_kr[sz(c)] : ref::to_bf16(acc);
    }
    // K2: kvn = RmsNorm(ck[:Hckv], gammaCkv, epsCkv); K3: kr = RoPE(ck[Hckv:])
    mla_prolog_rms_norm(ck.data(), gamma_ckv.data(), Hckv, p.rmsnorm_epsilon_ckv, kvn.data());
    if (scale_kv)  // V3: kvn *= kcScale
      for (int64_t j = 0; j < Hckv; ++j) kvn[sz(j)] *= alpha_kv;
    mla_prolog_rope(ck.data() + Hckv, cos_row.data(), sin_row.data(), Dr, kr.data());
    // K4: scatter into the token's row (none: skip)
    const int64_t slot = row_of[sz(t)];
    if (slot < 0) continue;
    if (per_tile) {  // V3 kvCacheQuantMode 3: int8 per tile of 128 | bf16 rope | fp32 scales
      auto put_byte = [&](int64_t j, uint8_t byte) {
        ref::put<uint8_t>(p.kv_cache, mla_prolog_cache_offset(p.kv_cache, mode, slot, j), byte);
      };
      for (int64_t g = 0; g < tiles; ++g) {
        double a_g = 0.0;
        for (int64_t j = g * kTile; j < (g + 1) * kTile; ++j) a_g = std::fmax(a_g, std::fabs(kvn[sz(j)]));
        const double bound = clip_alpha * a_g;
        const double s_g = bound / 127.0;
        for (int64_t j = g * kTile; j < (g + 1) * kTile; ++j) {
          const double clipped = std::fmin(std::fmax(kvn[sz(j)], -bound), bound);
          // a_g = 0: scale 0 and q = 0 (choice; docs/ops/mla_prolog.md)
          const int8_t qv = s_g == 0.0 ? int8_t{0} : ref::int8_rint(clipped * (1.0 / s_g));
          put_byte(j, static_cast<uint8_t>(qv));
        }
        const float s32 = static_cast<float>(s_g);
        uint8_t b4[4];
        std::memcpy(b4, &s32, 4);
        for (int k = 0; k < 4; ++k) put_byte(Hckv + 2 * Dr + 4 * g + k, b4[k]);
      }
      for (int64_t j = 0; j < Dr; ++j) {  // little-endian bf16 bytes
        const uint16_t bits = ref::bf16_bits(kr[sz(j)]);
        put_byte(Hckv + 2 * j, static_cast<uint8_t>(bits & 0xFF));
        put_byte(Hckv + 2 * j + 1, static_cast<uint8_t>(bits >> 8));
      }
      continue;
    }
    for (int64_t j = 0; j < Hckv; ++j) {
      double v;
      if (partial_kv_quant) {
        v = ref::int8_rint(kvn[sz(j)] * qs_ckv[sz(j)]);  // per channel
      } else if (full_kv_quant) {
        v = ref::int8_rint(kvn[sz(j)] * qs_ckv[0]);  // per tensor
      } else {
        v = ref::to_bf16(kvn[sz(j)]);
      }
      ref::store(p.kv_cache, mla_prolog_cache_offset(p.kv_cache, p.cache_mode, slot, j), v);
    }
    for (int64_t j = 0; j < Dr; ++j) {
      const double r = ref::to_bf16(kr[sz(j)]);
      const double v = partial_kv_quant ? static_cast<double>(ref::int8_rint(r * qs_ckr[sz(j)])) : r;
      ref::store(p.kr_cache, mla_prolog_cache_offset(p.kr_cache, p.cache_mode, slot, j), v);
    }
  }
  return kSuccess;
}

}  // namespace mlaops
