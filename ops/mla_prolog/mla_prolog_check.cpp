// MlaProlog V1 / V2WeightNz: the validation rules of docs/ops/mla_prolog.md, each with its rule id,
// grouped single parameter / existence / cross-feature / consistency, then the pointer rules (also
// run by every phase 2). The support sets are the tables of ops/mla_prolog/mla_prolog_check.h. Nothing here
// reads tensor contents or writes anything.
#include "ops/mla_prolog/mla_prolog_check.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/fractal_nz.h"

namespace mlaops {
namespace {

using namespace mla_prolog_table;  // NOLINT(google-build-using-namespace): the tables and their dtype names

// The value of every symbol, indexed by Sym.
using SymValues = std::array<int64_t, static_cast<size_t>(Sym::kKCols) + 1>;
int64_t& at(SymValues& v, Sym s) { return v[static_cast<size_t>(s)]; }

// A LoRA weight of logical shape [rows, cols]: the 4-D FRACTAL_NZ storage shape (MP-13), the
// 2-D logical view of NZ storage, or an ND matrix (C++ API; dense).
Status weight_shape(const char* op, const char* name, const TensorView& w, int64_t rows, int64_t cols) {
  if (w.format != Format::kFractalNZ) {
    MLAOPS_TRY(check::shape_eq(op, name, "MP-09", w, {rows, cols}));
    MLAOPS_TRY(check::fits(op, name, "MP-14 weight", w));
    return check::contiguous(op, name, "MP-05", w);
  }
  NzMatrix nz;
  MLAOPS_TRY(resolve_nz(w, op, name, "MP-13 NZ view", &nz));
  if (w.rank == 4) {
    int64_t s[4];
    nz_storage_shape(rows, cols, dtype_size(w.dtype), s);
    MLAOPS_TRY(check::shape_eq(op, name, "MP-13 FRACTAL_NZ storage", w, {s[0], s[1], s[2], s[3]}));
    MLAOPS_CHECK(w.is_contiguous(), kParamInvalid, "%s: %s: MP-05 FRACTAL_NZ storage must be contiguous", op, name);
  } else {
    MLAOPS_CHECK(nz.rows == rows && nz.cols == cols, kParamInvalid,
                 "%s: %s: MP-09 logical shape; allowed [%lld, %lld], got [%lld, %lld]", op, name, (long long)rows,
                 (long long)cols, (long long)nz.rows, (long long)nz.cols);
  }
  int64_t bytes;
  MLAOPS_CHECK(product_ok({nz.c1, nz.r1, 16, nz.c0, dtype_size(w.dtype)}, &bytes), kParamInvalid,
               "%s: %s: MP-14 FRACTAL_NZ weight storage too large", op, name);
  return kSuccess;
}

// MP-09, V3's per-tensor KV quant (kvCacheQuantMode 1): one scale, element 0 read. The vendor's
// current V3 tiling check (FillFullKVQuantParamInfo) and its doc want (1); vllm-ascend passes
// (1, 1) (its (1, Hckv) quant_kscale sliced [:, :1]) and torch_npu's V3 test the V1 / V2 form
// (1, Hckv): all three are accepted (docs/ops/mla_prolog.md "Per-tensor KV quant").
Status v3_per_tensor_scale(const char* op, const TensorView& t, int64_t hckv) {
  const bool ok = (t.rank == 1 && t.dims[0] == 1) || (t.rank == 2 && t.dims[0] == 1 && (t.dims[1] == 1 || t.dims[1] == hckv));
  MLAOPS_CHECK(ok, kParamInvalid,
               "%s: quantScaleCkvOptional: MP-09 per-tensor KV quant (kvCacheQuantMode 1) shape; allowed [1], [1, 1] or "
               "[1, %lld], got %s",
               op, (long long)hckv, check::shape_str(t).c_str());
  return kSuccess;
}

// MP-20, MP-21: the V3 attributes against the scenario the dtypes choose.
Status check_v3_modes(const char* op, const MlaPrologV3Modes& m, MlaPrologScenario sc) {
  const ModeTupleRow* row = nullptr;
  for (const ModeTupleRow& r : kModeTuples)
    if (r.scenario == sc) row = &r;
  MLAOPS_CHECK(row != nullptr && row->weight == m.weight_quant_mode && row->kv == m.kv_cache_quant_mode &&
                   row->query == m.query_quant_mode,
               kParamInvalid,
               "%s: weightQuantMode/kvCacheQuantMode/queryQuantMode: MP-20 must match the tensors' dtypes (scenario "
               "%s); allowed (%lld, %lld, %lld), got (%lld, %lld, %lld)",
               op, mla_prolog_scenario_name(sc), (long long)(row ? row->weight : -1), (long long)(row ? row->kv : -1),
               (long long)(row ? row->query : -1), (long long)m.weight_quant_mode, (long long)m.kv_cache_quant_mode,
               (long long)m.query_quant_mode);
  MLAOPS_CHECK(m.tile_size == 128, kParamInvalid, "%s: tileSize: MP-21 value; allowed 128, got %lld", op,
               (long long)m.tile_size);
  const int64_t repo = m.kv_cache_quant_mode == 3 ? 1 : 0;  // 1 exactly with kvCacheQuantMode 3
  MLAOPS_CHECK(m.ckvkr_repo_mode == repo, kParamInvalid,
               "%s: ckvkrRepoMode: MP-21 1 exactly with kvCacheQuantMode 3; allowed %lld, got %lld", op,
               (long long)repo, (long long)m.ckvkr_repo_mode);
  MLAOPS_CHECK(m.quant_scale_repo_mode == repo, kParamInvalid,
               "%s: quantScaleRepoMode: MP-21 1 exactly with kvCacheQuantMode 3; allowed %lld, got %lld", op,
               (long long)repo, (long long)m.quant_scale_repo_mode);
  return kSuccess;
}

// The cache geometry by cache mode: Hckv, Nkv, BlockNum, BlockSize (kCacheDimSources; the values
// rules follow).
Status cache_dims(const char* op, const MlaPrologParams& p, bool per_tile, SymValues& v) {
  const bool tnd = p.cache_mode == MlaPrologCacheMode::kTnd;
  const bool paged = mla_prolog_cache_paged(p.cache_mode);
  for (const DimSource& s : kCacheDimSources) {
    if (s.sym == Sym::kHckv && per_tile) continue;  // the packed row: Hckv from rmsnormGammaCkv
    if (!paged && (s.sym == Sym::kBlockSize || s.sym == Sym::kBlockNum)) continue;
    at(v, s.sym) = p.kv_cache.dim(tnd && s.sym == Sym::kNkv ? 1 : s.dim);
    MLAOPS_CHECK(!s.positive || at(v, s.sym) > 0, kParamInvalid, "%s: %s: MP-09 must be positive; allowed >= 1, got %lld",
                 op, s.what, (long long)at(v, s.sym));
  }
  if (per_tile) {
    at(v, Sym::kHckv) = p.rmsnorm_gamma_ckv.dim(0);
    MLAOPS_CHECK(at(v, Sym::kHckv) > 0, kParamInvalid,
                 "%s: Hckv (rmsnormGammaCkv): MP-09 must be positive; allowed >= 1, got %lld", op,
                 (long long)at(v, Sym::kHckv));
  }
  if (!paged) {  // dense rows: token t is row t (BlockNum = B, BlockSize = S; TND: T, 1)
    at(v, Sym::kBlockNum) = tnd ? at(v, Sym::kT) : at(v, Sym::kB);
    at(v, Sym::kBlockSize) = tnd ? 1 : at(v, Sym::kS);
  }
  MLAOPS_CHECK(at(v, Sym::kBlockNum) >= 0, kParamInvalid, "%s: MP-09 negative dim", op);
  return kSuccess;
}

// The caches' shapes by cache mode (MP-26), the per-tile KV quant rows (MP-27), cacheIndex's shape
// and actualSeqLen's presence; *kv_row: the kv row width.
Status check_caches(const char* op, const MlaPrologParams& p, std::span<const check::Named> ts, bool per_tile,
                    SymValues& v, int64_t* kv_row) {
  const MlaPrologCacheMode mode = p.cache_mode;
  const char* mname = mla_prolog_cache_mode_name(mode);
  const TensorView& kv = p.kv_cache;
  const bool bsh = p.token_x.rank == 3;
  const bool tnd = mode == MlaPrologCacheMode::kTnd;
  const bool paged = mla_prolog_cache_paged(mode);
  const int64_t hckv = at(v, Sym::kHckv), dr = at(v, Sym::kDr);
  *kv_row = hckv;
  if (per_tile) {  // MP-27
    bool mode_ok = false;
    for (MlaPrologCacheMode m : kPerTileCacheModes) mode_ok |= m == mode;
    MLAOPS_CHECK(mode_ok, kParamInvalid,
                 "%s: cacheModeOptional: MP-27 per-tile KV quant (kvCacheQuantMode 3) takes the cache modes "
                 "{PA_BSND, BSND, TND}; got %s",
                 op, mname);
    MLAOPS_CHECK(hckv % kKvQuantTile == 0, kParamInvalid,
                 "%s: rmsnormGammaCkv: MP-27 per-tile KV quant needs Hckv to be a multiple of the tile size %lld; got "
                 "%lld",
                 op, (long long)kKvQuantTile, (long long)hckv);
    // the row: Hckv int8 values | Dr bf16 rope values | one fp32 scale per tile (bytes)
    *kv_row = hckv + 2 * dr + 4 * (hckv / kKvQuantTile);  // fits: Hckv and Dr are tensor dims
    MLAOPS_CHECK(kv.dim(-1) == *kv_row, kParamInvalid,
                 "%s: kvCacheRef: MP-27 per-tile KV quant row of Hckv + 2*Dr + 4*Hckv/%lld bytes; allowed %lld, got "
                 "%lld",
                 op, (long long)kKvQuantTile, (long long)*kv_row, (long long)kv.dim(-1));
    const int64_t kr_numel = p.kr_cache.numel();  // fits: MP-14
    MLAOPS_CHECK(kr_numel == 0, kParamInvalid,
                 "%s: krCacheRef: MP-27 per-tile KV quant keeps the rope row in the kv row: krCacheRef must be an "
                 "empty tensor; allowed 0 elements, got %lld",
                 op, (long long)kr_numel);
  }
  // the caches' shapes (kvCacheRef's own dims define the paged geometry: Nkv is MP-09's value rule)
  if (!paged) {
    const int64_t kv_shape[4] = {tnd ? at(v, Sym::kT) : at(v, Sym::kB), tnd ? 1 : at(v, Sym::kS), 1, *kv_row};
    const int64_t kv_shape_tnd[3] = {at(v, Sym::kT), 1, *kv_row};
    MLAOPS_TRY(tnd ? check::shape_eq(op, "kvCacheRef", "MP-26 TND cache [T, 1, H]", kv, kv_shape_tnd)
                   : check::shape_eq(op, "kvCacheRef", "MP-26 BSND cache [B, S, 1, H]", kv, kv_shape));
  }
  if (!per_tile) {
    const int64_t kr4[4] = {at(v, Sym::kBlockNum), at(v, Sym::kBlockSize), 1, dr};
    const int64_t kr3[3] = {at(v, Sym::kT), 1, dr};
    MLAOPS_TRY(tnd ? check::shape_eq(op, "krCacheRef", "MP-09", p.kr_cache, kr3)
                   : check::shape_eq(op, "krCacheRef", "MP-09", p.kr_cache, kr4));
  }
  // cacheIndex: slots (PA_BSND, PA_NZ), block ids (PA_BLK_*), absent (BSND, TND)
  const TensorView* idx = check::given(ts, "cacheIndex");
  if (!paged) {
    MLAOPS_CHECK(idx == nullptr, kParamInvalid,
                 "%s: cacheIndex: MP-26 cache mode %s writes token t to cache row t; allowed null, got a tensor", op,
                 mname);
    return kSuccess;
  }
  MLAOPS_CHECK(idx != nullptr, kParamNullptr, "%s: cacheIndex: MP-01 required in cache mode %s; got null", op, mname);
  if (!mla_prolog_cache_blocks(mode)) {
    const int64_t bs[2] = {at(v, Sym::kB), at(v, Sym::kS)};
    const int64_t t1[1] = {at(v, Sym::kT)};
    return bsh ? check::shape_eq(op, "cacheIndex", "MP-09", *idx, bs) : check::shape_eq(op, "cacheIndex", "MP-09", *idx, t1);
  }
  if (bsh) {  // [B, ceil(S / BlockSize)] block ids
    const int64_t blocks[2] = {at(v, Sym::kB), ceil_div(at(v, Sym::kS), at(v, Sym::kBlockSize))};
    return check::shape_eq(op, "cacheIndex", "MP-26 PA_BLK block ids [B, ceil(S/BlockSize)]", *idx, blocks);
  }
  // tokenX [T, He]: [sum_b ceil(S_b / BlockSize)] block ids, S_b from actualSeqLen (phase 2)
  MLAOPS_CHECK(idx->rank == 1, kParamInvalid,
               "%s: cacheIndex: MP-26 PA_BLK block ids with tokenX [T, He] are 1-D [sum_b ceil(S_b/BlockSize)]; "
               "allowed 1 dim, got %d",
               op, idx->rank);
  MLAOPS_CHECK(check::given(ts, "actualSeqLenOptional") != nullptr, kParamNullptr,
               "%s: actualSeqLenOptional: MP-01 required in cache mode %s with tokenX [T, He]; got null", op, mname);
  return kSuccess;
}

}  // namespace

std::array<check::Named, 26> mla_prolog_tensors(const MlaPrologParams& p) {
  return {{{"tokenX", &p.token_x},
           {"weightDq", &p.weight_dq},
           {"weightUqQr", &p.weight_uq_qr},
           {"weightUk", &p.weight_uk},
           {"weightDkvKr", &p.weight_dkv_kr},
           {"rmsnormGammaCq", &p.rmsnorm_gamma_cq},
           {"rmsnormGammaCkv", &p.rmsnorm_gamma_ckv},
           {"ropeSin", &p.rope_sin},
           {"ropeCos", &p.rope_cos},
           {"cacheIndex", &p.cache_index},
           {"kvCacheRef", &p.kv_cache},
           {"krCacheRef", &p.kr_cache},
           {"dequantScaleXOptional", p.dequant_scale_x},
           {"dequantScaleWDqOptional", p.dequant_scale_w_dq},
           {"dequantScaleWUqQrOptional", p.dequant_scale_w_uq_qr},
           {"dequantScaleWDkvKrOptional", p.dequant_scale_w_dkv_kr},
           {"quantScaleCkvOptional", p.quant_scale_ckv},
           {"quantScaleCkrOptional", p.quant_scale_ckr},
           {"smoothScalesCqOptional", p.smooth_scales_cq},
           {"queryOut", &p.query_out},
           {"queryRopeOut", &p.query_rope_out},
           {"dequantScaleQNopeOutOptional", p.dequant_scale_q_nope_out},
           {"queryNormOutOptional", p.query_norm_out},
           {"dequantScaleQNormOutOptional", p.dequant_scale_q_norm_out},
           {"actualSeqLenOptional", p.actual_seq_len},
           {"kNopeClipAlphaOptional", p.k_nope_clip_alpha}}};
}

Status mla_prolog_check(const MlaPrologParams& p, const MlaPrologCheckOptions& o, MlaPrologDims* dims,
                        MlaPrologScenario* scenario) {
  const char* op = o.op;
  const auto ts = mla_prolog_tensors(p);

  // ==== single parameter: each tensor's dtype, format, dim count, density; the attributes ====
  MLAOPS_TRY(check::check_rows(op, kDtypes, ts));
  MLAOPS_TRY(check::check_rows(op, kFormats, ts));
  MLAOPS_TRY(check::check_rows(op, o.vendor_ranges ? std::span<const check::FormatRow>(kWeightFormatsAclnn)
                                                   : std::span<const check::FormatRow>(kWeightFormatsCpp),
                               ts));
  MLAOPS_TRY(check::check_rows(op, kRanks, ts));
  // MP-26: the dense cache modes follow the token layout (then the caches' dim counts)
  MLAOPS_CHECK(p.cache_mode != MlaPrologCacheMode::kBsnd || p.token_x.rank == 3, kParamInvalid,
               "%s: tokenX: MP-26 cache mode BSND needs tokenX [B, S, He]; allowed 3 dims, got %d", op,
               p.token_x.rank);
  MLAOPS_CHECK(p.cache_mode != MlaPrologCacheMode::kTnd || p.token_x.rank == 2, kParamInvalid,
               "%s: tokenX: MP-26 cache mode TND needs tokenX [T, He]; allowed 2 dims, got %d", op, p.token_x.rank);
  if (p.cache_mode == MlaPrologCacheMode::kTnd)
    MLAOPS_TRY(check::check_rows(op, std::span(kCacheRanks3).first(p.kv_quant_per_tile ? 1 : 2), ts));
  else
    MLAOPS_TRY(check::check_rows(op, std::span(kCacheRanks4).first(p.kv_quant_per_tile ? 1 : 2), ts));
  for (const check::Named& n : ts) {  // MP-14, MP-05; the weights' storage is checked with their shapes
    const bool weight = n.t == &p.weight_dq || n.t == &p.weight_uq_qr || n.t == &p.weight_dkv_kr;
    if (weight || check::given(ts, n.name) == nullptr) continue;
    MLAOPS_TRY(check::fits(op, n.name, "MP-14 tensor", *n.t));
    MLAOPS_TRY(check::contiguous(op, n.name, "MP-05", *n.t));
  }
  MLAOPS_TRY(check::finite_f32(op, "rmsnormEpsilonCq", "MP-15", p.rmsnorm_epsilon_cq, true));
  MLAOPS_TRY(check::finite_f32(op, "rmsnormEpsilonCkv", "MP-15", p.rmsnorm_epsilon_ckv, true));
  MLAOPS_TRY(check::check_rows(op, kDtypesV3, ts));
  MLAOPS_TRY(check::check_rows(op, kFormatsV3, ts));
  MLAOPS_TRY(check::check_rows(op, kRanksV3, ts));
  for (auto [name, alpha] : {std::pair{"qcQrScale", p.qc_qr_scale}, std::pair{"kcScale", p.kc_scale}})
    MLAOPS_TRY(check::finite_f32(op, name, "MP-25", alpha));

  // ==== existence: required tensors (MP-01), optional inputs by scenario (MP-10) ====
  for (const char* name : kRequired)
    MLAOPS_CHECK(check::given(ts, name) != nullptr, kParamNullptr, "%s: %s: MP-01 required tensor is null", op, name);
  const MlaPrologScenario sc =
      mla_prolog_scenario(p.token_x.dtype, p.weight_uq_qr.dtype, p.kv_cache.dtype, p.kv_quant_per_tile);
  const ScenarioRow* found = kScenarios;
  while (found->scenario != sc) ++found;  // every scenario has its row
  const ScenarioRow& row = *found;
  const char* scn = mla_prolog_scenario_name(sc);
  char why[96];
  std::snprintf(why, sizeof why, "in scenario %s", scn);
  for (size_t i = 0; i < row.optionals.size(); ++i) {
    const char* name = kScenarioOptionalParams[i];
    const TensorView* t = check::given(ts, name);
    MLAOPS_TRY(row.optionals[i] ? check::present(op, name, "MP-10", t, why) : check::absent(op, name, "MP-10", t, why));
  }
  if (o.v3) {  // V3: smoothScalesCqOptional only where the V3 tiling check expects it (kSmoothScenariosV3)
    bool smooth_read = false;
    for (MlaPrologScenario s : kSmoothScenariosV3) smooth_read |= s == sc;
    if (!smooth_read)
      MLAOPS_TRY(check::absent(op, "smoothScalesCqOptional", "MP-10", check::given(ts, "smoothScalesCqOptional"), why));
  }
  const TensorView* dqs = p.dequant_scale_q_nope_out;
  if (o.v2 && sc == MlaPrologScenario::kFullQuantKvQuant)
    MLAOPS_CHECK(dqs != nullptr, kParamNullptr,
                 "%s: dequantScaleQNopeOutOptional: MP-01 required in scenario FULL_QUANT_KV_QUANT; got null", op);

  // ==== cross-feature: the scenario's dtypes (MP-08), V1 (MP-11), format x dtype, cache mode ====
  for (size_t i = 0; i < row.dtypes.size(); ++i) {
    const char* name = kScenarioDtypeParams[i];
    const DType got = check::given(ts, name)->dtype;
    MLAOPS_CHECK(got == row.dtypes[i] || row.dtypes[i] == DType::kUndefined, kParamInvalid, "%s: %s: MP-08 dtype in scenario %s; allowed %s, got %s", op,
                 name, scn, dtype_name(row.dtypes[i]), dtype_name(got));
  }
  // MP-24: queryNormOut is the A operand of the W_UQ_QR matmul (bf16 or int8 by scenario), with
  // its per-token scale exactly when it is int8.
  const TensorView* qn = p.query_norm_out;
  const TensorView* qns = p.dequant_scale_q_norm_out;
  if (qn != nullptr) {
    const DType want = sc == MlaPrologScenario::kNoQuant ? BF16 : I8;
    MLAOPS_CHECK(qn->dtype == want, kParamInvalid,
                 "%s: queryNormOutOptional: MP-24 dtype in scenario %s; allowed %s, got %s", op, scn,
                 dtype_name(want), dtype_name(qn->dtype));
  }
  const bool qns_needed = qn != nullptr && sc != MlaPrologScenario::kNoQuant;
  MLAOPS_CHECK((qns != nullptr) == qns_needed, kParamInvalid,
               "%s: dequantScaleQNormOutOptional: MP-24 given exactly when queryNormOutOptional is given in a "
               "quantized scenario; allowed %s, got %s (scenario %s, queryNormOutOptional %s)",
               op, qns_needed ? "a tensor" : "null", qns != nullptr ? "a tensor" : "null", scn,
               qn != nullptr ? "given" : "null");
  if (o.v3) MLAOPS_TRY(check_v3_modes(op, o.modes, sc));
  // MP-27 / MP-22: per-tile KV quant needs a KV-quant scenario (int8 weightUqQr and kvCache) and
  // its clip alpha, FP32 [1]; the alpha is given only then.
  MLAOPS_CHECK(!p.kv_quant_per_tile || mla_prolog_is_per_tile(sc), kParamInvalid,
               "%s: kvCacheRef: MP-27 per-tile KV quant (kvCacheQuantMode 3) needs int8 weightUqQr and an int8 "
               "kvCache; got scenario %s",
               op, scn);
  const TensorView* clip = p.k_nope_clip_alpha;
  MLAOPS_CHECK((clip != nullptr) == p.kv_quant_per_tile, kParamInvalid,
               "%s: kNopeClipAlphaOptional: MP-22 given exactly with per-tile KV quant (kvCacheQuantMode 3); "
               "allowed %s, got %s",
               op, p.kv_quant_per_tile ? "a tensor" : "null", clip != nullptr ? "a tensor" : "null");
  if (clip != nullptr) MLAOPS_TRY(check::shape_eq(op, "kNopeClipAlphaOptional", "MP-22", *clip, {1}));
  MLAOPS_CHECK(o.v2 || sc != MlaPrologScenario::kFullQuantKvQuant, kParamInvalid,
               "%s: kvCacheRef: MP-11 scenario FULL_QUANT_KV_QUANT (int8 tokenX and int8 kvCache) needs the "
               "dequantScaleQNope output; allowed in aclnnMlaPrologV2WeightNz only, got V1", op);
  for (const auto& w : kWeightShapes) {
    const TensorView& t = *check::given(ts, w.param);
    MLAOPS_CHECK(t.format == Format::kFractalNZ || t.dtype == BF16, kParamInvalid,
                 "%s: %s: MP-03 an ND weight must be BF16 (int8 weights must be FRACTAL_NZ); got %s", op, w.param,
                 dtype_name(t.dtype));
  }
  const bool nz_tag = mla_prolog_cache_nz(p.cache_mode) && !o.v3;  // V3: ND / NCHW in every cache mode
  MLAOPS_TRY(check::check_rows(op,
                               nz_tag ? std::span<const check::FormatRow>(kCacheFormatsPaNz)
                                      : std::span<const check::FormatRow>(kCacheFormatsPaBsnd),
                               ts));

  // ==== consistency: the dims, their ranges, every shape ====
  SymValues v{};
  at(v, Sym::kOne) = 1;
  MlaPrologDims d;
  d.bsh = p.token_x.rank == 3;
  if (d.bsh) {
    at(v, Sym::kB) = p.token_x.dims[0];
    at(v, Sym::kS) = p.token_x.dims[1];
    MLAOPS_CHECK(mul_ok(at(v, Sym::kB), at(v, Sym::kS), &at(v, Sym::kT)), kParamInvalid,
                 "%s: tokenX: MP-14 B*S overflows int64", op);
  } else {  // TND: B = T, S = 1 (so that B*S == T always)
    at(v, Sym::kT) = at(v, Sym::kB) = p.token_x.dims[0];
    at(v, Sym::kS) = 1;
  }
  for (const DimSource& s : kDimSources) {
    at(v, s.sym) = check::given(ts, s.param)->dim(s.dim);
    MLAOPS_CHECK(!s.positive || at(v, s.sym) > 0, kParamInvalid, "%s: %s: MP-09 must be positive; allowed >= 1, got %lld",
                 op, s.what, (long long)at(v, s.sym));
  }
  MLAOPS_CHECK(at(v, Sym::kDr) % 2 == 0, kParamInvalid, "%s: ropeCos: MP-09 rope dim must be even; got %lld", op,
               (long long)at(v, Sym::kDr));
  MLAOPS_CHECK(at(v, Sym::kB) >= 0 && at(v, Sym::kS) >= 0, kParamInvalid, "%s: MP-09 negative dim", op);
  MLAOPS_TRY(cache_dims(op, p, mla_prolog_is_per_tile(sc), v));
  MLAOPS_TRY(check::check_values(op, kValues, v));
  if (o.vendor_ranges && o.v3) {
    if (d.bsh) MLAOPS_TRY(check::check_values(op, kVendorRangesV3Bsh, v));
    if (!d.bsh && mla_prolog_cache_blocks(p.cache_mode) && p.actual_seq_len != nullptr)  // B of tokenX [T, He]
      MLAOPS_TRY(check::value_range(op, "actualSeqLenOptional", "MP-07 B", p.actual_seq_len->dim(0), 0, 65536));
    MLAOPS_TRY(check::check_values(op, kVendorRangesV3, v));
    if (mla_prolog_cache_paged(p.cache_mode)) MLAOPS_TRY(check::check_values(op, kVendorRangesV3Paged, v));
  } else if (o.vendor_ranges) {
    if (d.bsh) MLAOPS_TRY(check::check_values(op, kVendorRangesBsh, v));
    MLAOPS_TRY(check::check_values(op, kVendorRanges, v));
    if (mla_prolog_cache_paged(p.cache_mode)) MLAOPS_TRY(check::check_values(op, kVendorRangesPaged, v));
  }
  MLAOPS_CHECK(product_ok({at(v, Sym::kN), at(v, Sym::kD) + at(v, Sym::kDr)}, &at(v, Sym::kQCols)) &&
                   add_ok(at(v, Sym::kHckv), at(v, Sym::kDr), &at(v, Sym::kKCols)),
               kParamInvalid, "%s: MP-14 N*(D+Dr) overflows int64", op);
  for (const auto& w : kWeightShapes)
    MLAOPS_TRY(weight_shape(op, w.param, *check::given(ts, w.param), v[static_cast<size_t>(w.dims.v[0])],
                            v[static_cast<size_t>(w.dims.v[1])]));
  MLAOPS_TRY(d.bsh ? check::check_shapes(op, kShapesBsh, ts, v) : check::check_shapes(op, kShapesTnd, ts, v));
  MLAOPS_TRY(check::check_shapes(op, kShapes, ts, v));
  MLAOPS_TRY(o.v3 && sc == MlaPrologScenario::kFullQuantKvQuant
                 ? v3_per_tensor_scale(op, *check::given(ts, "quantScaleCkvOptional"), at(v, Sym::kHckv))
                 : check::check_shapes(op, kQuantScaleCkv, ts, v));
  int64_t kv_row = 0;
  MLAOPS_TRY(check_caches(op, p, ts, mla_prolog_is_per_tile(sc), v, &kv_row));
  // MP-26 (V3): actualSeqLenOptional only where it is read, the PA_BLK modes with tokenX [T, He]
  // (the V3 tiling check expects it nowhere else; the C++ API ignores it elsewhere)
  if (o.v3 && !(mla_prolog_cache_blocks(p.cache_mode) && !d.bsh))
    MLAOPS_CHECK(check::given(ts, "actualSeqLenOptional") == nullptr, kParamInvalid,
                 "%s: actualSeqLenOptional: MP-26 given only in cache modes PA_BLK_BSND / PA_BLK_NZ with tokenX [T, "
                 "He]; allowed null, got a tensor (cache mode %s, tokenX %d dims)",
                 op, mla_prolog_cache_mode_name(p.cache_mode), p.token_x.rank);
  if (sc == MlaPrologScenario::kFullQuantKvQuant && dqs != nullptr)
    MLAOPS_TRY(check::shape_eq(op, "dequantScaleQNopeOutOptional", "MP-09", *dqs,
                               {at(v, Sym::kT), at(v, Sym::kN), 1}));
  else if (dqs != nullptr)  // the vendor's placeholder: shape (1), left untouched
    MLAOPS_TRY(check::shape_eq(op, "dequantScaleQNopeOutOptional", "MP-09 (placeholder outside FULL_QUANT_KV_QUANT)",
                               *dqs, {1}));
  if (qn != nullptr)
    MLAOPS_TRY(d.bsh ? check::shape_eq(op, "queryNormOutOptional", "MP-24", *qn,
                                       {at(v, Sym::kB), at(v, Sym::kS), at(v, Sym::kHcq)})
                     : check::shape_eq(op, "queryNormOutOptional", "MP-24", *qn, {at(v, Sym::kT), at(v, Sym::kHcq)}));
  if (qns != nullptr) MLAOPS_TRY(check::shape_eq(op, "dequantScaleQNormOutOptional", "MP-24", *qns, {at(v, Sym::kT), 1}));
  if (mla_prolog_cache_nz(p.cache_mode)) {  // MP-16 whole c0 chunks per row
    const int64_t c0kv = 32 / dtype_size(p.kv_cache.dtype), c0kr = 32 / dtype_size(p.kr_cache.dtype);
    MLAOPS_CHECK(at(v, Sym::kHckv) % c0kv == 0, kParamInvalid,
                 "%s: kvCacheRef: MP-16 PA_NZ needs Hckv to be a multiple of c0 = %lld; got %lld", op,
                 (long long)c0kv, (long long)at(v, Sym::kHckv));
    MLAOPS_CHECK(at(v, Sym::kDr) % c0kr == 0, kParamInvalid,
                 "%s: krCacheRef: MP-16 PA_NZ needs Dr to be a multiple of c0 = %lld; got %lld", op, (long long)c0kr,
                 (long long)at(v, Sym::kDr));
  }

  d.B = at(v, Sym::kB);
  d.S = at(v, Sym::kS);
  d.T = at(v, Sym::kT);
  d.He = at(v, Sym::kHe);
  d.Hcq = at(v, Sym::kHcq);
  d.N = at(v, Sym::kN);
  d.D = at(v, Sym::kD);
  d.Dr = at(v, Sym::kDr);
  d.Hckv = at(v, Sym::kHckv);
  d.block_num = at(v, Sym::kBlockNum);
  d.block_size = at(v, Sym::kBlockSize);
  d.kv_row = kv_row;
  *dims = d;
  *scenario = sc;
  return kSuccess;
}

// ==== pointers (phase 1 and every run) ====
Status mla_prolog_check_pointers(const MlaPrologParams& p, MlaPrologScenario scenario, const char* op,
                                 const void* workspace, uint64_t workspace_bytes) {
  const auto ts = mla_prolog_tensors(p);
  for (const check::Named& n : ts) {
    if (check::given(ts, n.name) == nullptr) continue;
    MLAOPS_TRY(check::has_data(op, n.name, "MP-05", *n.t));
    MLAOPS_TRY(check::aligned(op, n.name, "MP-05", *n.t));
  }
  // MP-12: outputs and caches are disjoint from each other and from every input; the weights
  // are compared as the bytes they occupy (their views may be 2-D logical NZ views).
  const TensorView weights[] = {check::flat_storage(p.weight_dq), check::flat_storage(p.weight_uq_qr),
                                check::flat_storage(p.weight_dkv_kr)};
  std::vector<check::Region> outputs, inputs;
  for (const char* name : kOutputs) {  // the dequantScaleQNopeOut placeholder is never written
    const bool placeholder = scenario != MlaPrologScenario::kFullQuantKvQuant &&
                             std::strcmp(name, "dequantScaleQNopeOutOptional") == 0;
    outputs.push_back({name, placeholder ? nullptr : check::given(ts, name)});
  }
  for (const check::Named& n : ts) {
    bool output = false;
    for (const char* name : kOutputs) output |= std::strcmp(name, n.name) == 0;
    const TensorView* w = n.t == &p.weight_dq      ? &weights[0]
                          : n.t == &p.weight_uq_qr  ? &weights[1]
                          : n.t == &p.weight_dkv_kr ? &weights[2]
                                                    : n.t;
    if (!output) inputs.push_back({n.name, w});
  }
  MLAOPS_TRY(check::no_overlap(op, "MP-12", outputs, inputs));
  // MP-12 in phase 2: the workspace overlaps no bound tensor (the placeholder output included)
  std::vector<check::Region> bound = inputs;
  for (const char* name : kOutputs) bound.push_back({name, check::given(ts, name)});
  return check::workspace_disjoint(op, "MP-12", workspace, workspace_bytes, bound);
}

}  // namespace mlaops
