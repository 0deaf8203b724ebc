// FusedInferAttentionScoreV4 phase 1, the rules of docs/ops/fused_infer_attention_score.md, each
// with its rule id FIA-xx, in four groups:
//   existence       required tensors and pairs, inputs of features outside this build
//   single          each parameter alone: dtypes, formats (tables in _check.h), layout string,
//                   attributes, sizes and density
//   consistency     shapes across tensors, lengths, paged geometry, masks, pseShift, learnableSink,
//                   KV antiquant (fia_antiquant.cpp), output and lse shapes
//   cross-feature   the vendor's exclusions between features (aclnn layer only; ops/fia/fia_exclusions.h)
// and the pointer rules (null data, alignment, overlaps) that a plan re-checks on new tensors.
// Nothing here reads tensor data (the host int arrays are attributes) and nothing is written.
#include <algorithm>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia_check_masks.h"
#include "ops/fia/fia_exclusions.h"
#include "ops/fia/fia_full_quant.h"
#include "ops/fia/fia.h"
#include "ops/fia/fia_check.h"

namespace mlaops {

// ------------------------------------------------------------------------------------------
// Rules.
// ------------------------------------------------------------------------------------------

namespace {

using check::dense;
using check::dtype_in;
using check::format_in;
using check::rank_in;
using check::shape_str;
using fia_checks::check_mask;  // mask, pseShift, learnableSink: ops/fia/fia_check_masks.h
using fia_checks::check_pse;
using fia_checks::check_sink;

bool given(const TensorView& t) { return t.dtype != DType::kUndefined; }
// Tensor lists: every element is checked by ops/fia/fia_tensor_list.cpp (an element may be empty).
const TensorView* key_of(const FiaParams& p) { return p.key.empty() || fia_tensor_list_requested(p) ? nullptr : &p.key[0]; }
const TensorView* value_of(const FiaParams& p) {
  return p.value.empty() || fia_tensor_list_requested(p) ? nullptr : &p.value[0];
}
const TensorView* lse_of(const FiaParams& p) { return p.softmax_lse_flag ? p.softmax_lse : nullptr; }
constexpr DType F16 = DType::kFloat16;
constexpr DType I32 = DType::kInt32;
constexpr DType I8 = DType::kInt8;

// Every tensor the call reads or writes, with its name (null entries: not given).
struct Named {
  const char* name;
  const TensorView* t;
};
std::vector<Named> all_tensors(const FiaParams& p) {
  const TensorView* lse = p.softmax_lse_flag ? p.softmax_lse : nullptr;
  return {{"query", &p.query},          {"key", key_of(p)},
          {"value", value_of(p)},       {"attentionOut", &p.attention_out},
          {"softmaxLse", lse},          {"queryRopeOptional", p.query_rope},
          {"keyRopeOptional", p.key_rope}, {"attenMaskOptional", p.atten_mask},
          {"blockTableOptional", p.block_table}, {"pseShiftOptional", p.pse_shift},
          {"learnableSinkOptional", p.learnable_sink}, {"quantScale2Optional", p.quant_scale2},
          {"quantOffset2Optional", p.quant_offset2}, {"deqScale1Optional", p.deq_scale1},
          {"quantScale1Optional", p.quant_scale1}, {"deqScale2Optional", p.deq_scale2},
          {"keySharedPrefixOptional", p.key_shared_prefix}, {"valueSharedPrefixOptional", p.value_shared_prefix}};
}

// Non-paged sequence tensor of layout l with `heads` heads: batch (-1 packed), S (T packed), D.
struct Seq {
  int64_t b = -1, s = 0, d = 0;
};

Status parse_seq(const char* op, const char* name, const TensorView& t, FiaLayout l, int64_t heads, Seq* out) {
  const int want = (l == FiaLayout::kBSND || l == FiaLayout::kBNSD) ? 4 : 3;
  MLAOPS_CHECK(t.rank == want, kParamInvalid, "%s: %s: FIA-07 dim count for layout %s; allowed %d, got %d (shape %s)", op,
               name, fia_layout_name(l), want, t.rank, shape_str(t).c_str());
  int64_t n = heads;
  switch (l) {
    case FiaLayout::kBSH:
      MLAOPS_CHECK(t.dims[2] % heads == 0, kParamInvalid,
                   "%s: %s: FIA-08 BSH hidden dim must be a multiple of the head count; allowed a multiple of %lld, "
                   "got %lld",
                   op, name, (long long)heads, (long long)t.dims[2]);
      *out = {t.dims[0], t.dims[1], t.dims[2] / heads};
      break;
    case FiaLayout::kBSND: *out = {t.dims[0], t.dims[1], t.dims[3]}; n = t.dims[2]; break;
    case FiaLayout::kBNSD: *out = {t.dims[0], t.dims[2], t.dims[3]}; n = t.dims[1]; break;
    case FiaLayout::kTND: *out = {-1, t.dims[0], t.dims[2]}; n = t.dims[1]; break;
    case FiaLayout::kNTD: *out = {-1, t.dims[1], t.dims[2]}; n = t.dims[0]; break;
    case FiaLayout::kNBSD: return fail(kParamInvalid, "%s: %s: FIA-05 NBSD is an output layout only", op, name);
  }
  MLAOPS_CHECK(n == heads, kParamInvalid, "%s: %s: FIA-08 head count in the shape; allowed %lld, got %lld (shape %s)", op,
               name, (long long)heads, (long long)n, shape_str(t).c_str());
  return kSuccess;
}

FiaSeqStrides seq_strides(const TensorView& t, FiaLayout l, int64_t d) {
  FiaSeqStrides s;
  switch (l) {
    case FiaLayout::kBSH: s.b = t.strides[0]; s.s = t.strides[1]; s.n = d * t.strides[2]; break;
    case FiaLayout::kBSND: s.b = t.strides[0]; s.s = t.strides[1]; s.n = t.strides[2]; break;
    case FiaLayout::kBNSD: s.b = t.strides[0]; s.n = t.strides[1]; s.s = t.strides[2]; break;
    case FiaLayout::kNBSD: s.n = t.strides[0]; s.b = t.strides[1]; s.s = t.strides[2]; break;
    case FiaLayout::kTND: s.s = t.strides[0]; s.n = t.strides[1]; break;
    case FiaLayout::kNTD: s.n = t.strides[0]; s.s = t.strides[1]; break;
  }
  return s;
}

// A paged pool, layout by rank: 3 BnBsH, 4 BnNBsD, 5 NZ.
struct Pool {
  int64_t block_num = 0, block_size = 0, d = 0;
  FiaKvStrides st;
};

Status parse_pool(const char* op, const char* name, const TensorView& t, int64_t kvn, Pool* out) {
  MLAOPS_TRY(rank_in(op, name, "FIA-07 paged cache (3 BnBsH, 4 BnNBsD, 5 NZ)", t, {3, 4, 5}));
  Pool p;
  p.block_num = t.dims[0];
  int64_t n = kvn;
  if (t.rank == 3) {
    p.block_size = t.dims[1];
    MLAOPS_CHECK(t.dims[2] % kvn == 0, kParamInvalid,
                 "%s: %s: FIA-08 BnBsH hidden dim must be a multiple of numKeyValueHeads; allowed a multiple of %lld, "
                 "got %lld",
                 op, name, (long long)kvn, (long long)t.dims[2]);
    p.d = t.dims[2] / kvn;
    p.st = {0, p.d * t.strides[2], t.strides[0], t.strides[1], std::max<int64_t>(p.d, 1), 0};
  } else if (t.rank == 4) {
    n = t.dims[1];
    p.block_size = t.dims[2];
    p.d = t.dims[3];
    p.st = {0, t.strides[1], t.strides[0], t.strides[2], std::max<int64_t>(p.d, 1), 0};
  } else {
    n = t.dims[1];
    p.block_size = t.dims[3];
    const int64_t c0 = t.dtype == I8 ? 32 : 16;  // 32 bytes per chunk
    MLAOPS_CHECK(t.dims[4] == c0, kParamInvalid,
                 "%s: %s: FIA-08 NZ cache last dim (c0: 16 for FP16/BF16, 32 for INT8); allowed %lld, got %lld", op, name,
                 (long long)c0, (long long)t.dims[4]);
    MLAOPS_CHECK(mul_ok(t.dims[2], c0, &p.d), kParamInvalid, "%s: %s: FIA-17 head dim overflows int64", op, name);
    p.st = {0, t.strides[1], t.strides[0], t.strides[3], c0, t.strides[2]};
  }
  MLAOPS_CHECK(n == kvn, kParamInvalid, "%s: %s: FIA-08 KV_N of the cache shape; allowed %lld, got %lld (shape %s)", op,
               name, (long long)kvn, (long long)n, shape_str(t).c_str());
  *out = p;
  return kSuccess;
}

// (1) broadcast / (B) / (>B) per-batch lengths in [0, extent]; null = extent.
Status decode_lengths(const char* op, const char* name, const char* rule, const std::vector<int64_t>* a, int64_t B,
                      int64_t extent, const char* extent_what, std::vector<int64_t>* out) {
  out->assign(static_cast<size_t>(B), extent);
  if (a == nullptr) return kSuccess;
  const int64_t len = static_cast<int64_t>(a->size());
  MLAOPS_CHECK(len == 1 || len >= B, kParamInvalid, "%s: %s: %s length; allowed 1 or >= B (%lld), got %lld", op, name,
               rule, (long long)B, (long long)len);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = len == 1 ? 0 : b;
    const int64_t v = (*a)[static_cast<size_t>(i)];
    MLAOPS_CHECK(v >= 0 && v <= extent, kParamInvalid, "%s: %s: %s value [%lld]; allowed [0, %lld] (%s), got %lld", op,
                 name, rule, (long long)i, (long long)extent, extent_what, (long long)v);
    (*out)[static_cast<size_t>(b)] = v;
  }
  return kSuccess;
}

// Cumulative (TND / NTD) lengths: length B, non-decreasing from >= 0, last == total.
Status decode_cumulative(const char* op, const char* name, const char* rule, const std::vector<int64_t>* a, int64_t B,
                         int64_t total, std::vector<int64_t>* len, std::vector<int64_t>* start) {
  MLAOPS_CHECK(a != nullptr, kParamInvalid, "%s: %s: %s is required for TND/NTD layouts; allowed an array, got null", op,
               name, rule);
  MLAOPS_CHECK(static_cast<int64_t>(a->size()) == B, kParamInvalid,
               "%s: %s: %s length of the cumulative array; allowed %lld (B), got %zu", op, name, rule, (long long)B,
               a->size());
  len->assign(static_cast<size_t>(B), 0);
  start->assign(static_cast<size_t>(B), 0);
  int64_t prev = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t v = (*a)[static_cast<size_t>(b)];
    MLAOPS_CHECK(v >= prev, kParamInvalid,
                 "%s: %s: %s cumulative values must be non-decreasing and >= 0; allowed >= %lld at [%lld], got %lld", op,
                 name, rule, (long long)prev, (long long)b, (long long)v);
    (*start)[static_cast<size_t>(b)] = prev;
    (*len)[static_cast<size_t>(b)] = v - prev;
    prev = v;
  }
  MLAOPS_CHECK(prev == total, kParamInvalid, "%s: %s: %s last cumulative value must equal T; allowed %lld, got %lld", op,
               name, rule, (long long)total, (long long)prev);
  return kSuccess;
}

// ---- existence ----

Status check_existence(const FiaParams& p, const char* op) {
  // FIA-01 required tensors
  MLAOPS_CHECK(given(p.query), kParamNullptr, "%s: query: FIA-01 required tensor is null", op);
  MLAOPS_CHECK(!p.key.empty(), kParamNullptr, "%s: key: FIA-01 required tensor list is null or empty", op);
  MLAOPS_CHECK(!p.value.empty(), kParamNullptr, "%s: value: FIA-01 required tensor list is null or empty", op);
  MLAOPS_CHECK(given(p.attention_out), kParamNullptr, "%s: attentionOut: FIA-01 required tensor is null", op);
  MLAOPS_CHECK(!p.softmax_lse_flag || p.softmax_lse != nullptr, kParamNullptr,
               "%s: softmaxLse: FIA-01 required when softmaxLseFlag is true; allowed a tensor, got null", op);
  // FIA-02 features outside this build's scope
  const struct {
    const void* t;
    const char* name;
    const char* feature;
  } scope[] = {
      {p.key_rope_antiquant_scale, "keyRopeAntiquantScaleOptional", "keyRope antiquant (reserved)"},
  };
  for (const auto& s : scope)
    MLAOPS_CHECK(s.t == nullptr, kParamInvalid,
                 "%s: %s: FIA-02 %s is not supported yet; allowed null, got a value", op, s.name, s.feature);
  MLAOPS_TRY(fia_tensor_list_check_existence(p, op));  // tensor-list key / value (ops/fia/fia_tensor_list.h)
  // An INT8 query is MLA full quant (dequantScaleQuery or queryRope: FIA-27..29, ops/fia/fia_mla_quant.h)
  // or GQA / MHA full quantisation (FIA-30..32, ops/fia/fia_full_quant.h).
  for (const auto& [t, name] : {std::pair{&p.key[0], "key"}, std::pair{&p.value[0], "value"}})
    MLAOPS_CHECK(t->dtype != DType::kInt4, kParamInvalid,
                 "%s: %s: FIA-33 INT4 key/value are passed as INT32 (8 nibbles per word, last dim D / 8); allowed "
                 "{%s, INT8, INT32}, got INT4",
                 op, name, dtype_name(p.query.dtype));
  // FIA-15 queryRope and keyRope come together
  const bool rope = p.query_rope != nullptr || p.key_rope != nullptr;
  MLAOPS_CHECK(!rope || (p.query_rope != nullptr && p.key_rope != nullptr), kParamInvalid,
               "%s: %s: FIA-15 queryRope and keyRope must be given together; got only %s", op,
               p.query_rope ? "keyRopeOptional" : "queryRopeOptional", p.query_rope ? "queryRope" : "keyRope");
  return kSuccess;
}

// ---- single parameter ----

Status check_dtypes_and_formats(const FiaParams& p, const char* op) {
  const bool mlaq = fia_mla_quant_requested(p);  // MLA full quant: its own dtype rule (FIA-27)
  if (mlaq) MLAOPS_TRY(fia_mla_quant_check_dtypes(p, op));
  for (const FiaDtypeRow& r : fia_dtype_rows()) {
    const TensorView* t = r.tensor(p);
    if (t == nullptr || mlaq) continue;
    const std::vector<DType> set = fia_dtype_set(r.set, p);
    if (std::find(set.begin(), set.end(), t->dtype) != set.end()) continue;
    std::string allowed;
    for (DType d : set) allowed += std::string(allowed.empty() ? "" : ", ") + dtype_name(d);
    return fail(kParamInvalid, "%s: %s: %s dtype; allowed {%s}, got %s", op, r.param, r.rule, allowed.c_str(),
                dtype_name(t->dtype));
  }
  const bool paged = p.block_table != nullptr;
  for (const FiaFormatRow& r : fia_format_rows()) {
    const TensorView* t = r.tensor(p);
    if (t == nullptr) continue;
    if (r.nz_paged && paged && t->rank == 5)
      MLAOPS_TRY(format_in(op, r.param, "FIA-04", *t, {Format::kND, Format::kNCHW, Format::kFractalNZ}));
    else
      MLAOPS_TRY(format_in(op, r.param, "FIA-04", *t, {Format::kND, Format::kNCHW}));
  }
  for (const Named& x : all_tensors(p)) {  // FIA-17 every extent fits int64 bytes
    if (x.t == nullptr) continue;
    int64_t bytes;
    MLAOPS_CHECK(checked_nbytes(*x.t, &bytes), kParamInvalid, "%s: %s: FIA-17 byte size overflows int64, shape %s",
                 op, x.name, shape_str(*x.t).c_str());
  }
  return kSuccess;
}

constexpr const char* kLayoutList =
    "{BSH, BSND, BNSD, TND, NTD, BSH_BNSD, BSND_BNSD, BNSD_BSND, NTD_TND, TND_NTD, BSH_NBSD, BSND_NBSD, BNSD_NBSD}";

Status check_attributes(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c) {
  const char* op = o.op;
  if (!parse_fia_layout(p.input_layout, &c->in_l, &c->out_l))
    return fail(kParamInvalid,
                "%s: inputLayout: FIA-05 value; allowed %s, got \"%.64s\"", op, kLayoutList, p.input_layout.c_str());
  const int64_t N = p.num_heads;
  MLAOPS_CHECK(N > 0, kParamInvalid, "%s: numHeads: FIA-06 value; allowed >= 1, got %lld", op, (long long)N);
  MLAOPS_CHECK(p.num_key_value_heads >= 0, kParamInvalid, "%s: numKeyValueHeads: FIA-06 value; allowed >= 0, got %lld",
               op, (long long)p.num_key_value_heads);
  const int64_t KVN = p.num_key_value_heads == 0 ? N : p.num_key_value_heads;
  MLAOPS_CHECK(N % KVN == 0, kParamInvalid,
               "%s: numHeads: FIA-06 must be a multiple of numKeyValueHeads; allowed a multiple of %lld, got %lld", op,
               (long long)KVN, (long long)N);
  if (o.vendor_ranges) {
    MLAOPS_TRY(check::value_range(op, "numHeads", "FIA-19", N, 1, 256));
    MLAOPS_TRY(check::value_range(op, "numKeyValueHeads", "FIA-19", KVN, 1, 256));
  }
  MLAOPS_TRY(check::value_in(op, "sparseMode", "FIA-09", p.sparse_mode, {0, 1, 2, 3, 4, 9}));
  MLAOPS_TRY(check::value_in(op, "innerPrecise", "FIA-09", p.inner_precise, {0, 1, 2, 3}));
  c->N = N;
  c->KVN = KVN;
  c->G = N / KVN;
  c->packed = fia_layout_is_packed(c->in_l);
  for (const Named& x : all_tensors(p))  // FIA-17 density
    if (x.t != nullptr) MLAOPS_TRY(dense(op, x.name, "FIA-17", *x.t));
  return kSuccess;
}

// ---- consistency ----

Status check_query(const FiaParams& p, const FiaCheckOptions& o, FiaCall* c, Seq* qs) {
  const char* op = o.op;
  MLAOPS_TRY(parse_seq(op, "query", p.query, c->in_l, c->N, qs));
  c->QS = qs->s;
  c->QD = qs->d;
  if (c->rope) {
    Seq rs;
    MLAOPS_TRY(parse_seq(op, "queryRopeOptional", *p.query_rope, c->in_l, c->N, &rs));
    MLAOPS_CHECK(rs.b == qs->b && rs.s == qs->s, kParamInvalid,
                 "%s: queryRopeOptional: FIA-15 batch/sequence must equal the query's; allowed %s with D -> DR, got %s",
                 op, shape_str(p.query).c_str(), shape_str(*p.query_rope).c_str());
    c->DR = rs.d;
    MLAOPS_CHECK(c->DR > 0, kParamInvalid, "%s: queryRopeOptional: FIA-15 rope head dim; allowed >= 1, got 0", op);
  }
  MLAOPS_CHECK(c->QD > 0, kParamInvalid, "%s: query: FIA-08 head dim; allowed >= 1, got 0", op);
  // FIA-10 batch and query lengths
  if (c->packed) {
    MLAOPS_CHECK(p.actual_seq_lengths != nullptr, kParamInvalid,
                 "%s: actualSeqLengthsOptional: FIA-10 needed by the TND/NTD layouts; allowed an array, got null", op);
    c->B = static_cast<int64_t>(p.actual_seq_lengths->size());
    if (o.vendor_ranges) MLAOPS_TRY(check::value_range(op, "actualSeqLengthsOptional", "FIA-19 TND batch", c->B, 1, 4096));
    MLAOPS_TRY(decode_cumulative(op, "actualSeqLengthsOptional", "FIA-10", p.actual_seq_lengths, c->B, c->QS, &c->act_q,
                                 &c->q_start));
  } else {
    c->B = qs->b;
    if (c->QS == 1) {
      c->act_q.assign(static_cast<size_t>(c->B), 1);  // Q_S == 1 (IFA path): actualSeqLengths ignored
    } else {
      MLAOPS_TRY(decode_lengths(op, "actualSeqLengthsOptional", "FIA-10", p.actual_seq_lengths, c->B, c->QS, "Q_S",
                                &c->act_q));
    }
    c->q_start.assign(static_cast<size_t>(c->B), 0);
  }
  if (o.vendor_ranges) MLAOPS_TRY(check::value_range(op, "query", "FIA-19 B", c->B, 0, 65536));
  return kSuccess;
}

// FIA-07/08/11/12/15: key, value, keyRope (contiguous or paged); sets K_D in *kd.
Status check_kv(const FiaParams& p, const FiaCheckOptions& o, const Seq& qs, FiaCall* c, int64_t* kd) {
  const char* op = o.op;
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  const int64_t B = c->B, KVN = c->KVN;
  if (fia_tensor_list_requested(p)) return fia_tensor_list_check_kv(p, o, qs.b, c, kd);  // ops/fia/fia_tensor_list.h
  c->kv_start.assign(static_cast<size_t>(B), 0);
  if (c->paged) {
    Pool kp, vp, rp;
    MLAOPS_TRY(parse_pool(op, "key", key, KVN, &kp));
    MLAOPS_TRY(parse_pool(op, "value", value, KVN, &vp));
    MLAOPS_CHECK(vp.block_num == kp.block_num && vp.block_size == kp.block_size, kParamInvalid,
                 "%s: value: FIA-12 paged blockNum/blockSize must equal key's; allowed [%lld, %lld], got [%lld, %lld]", op,
                 (long long)kp.block_num, (long long)kp.block_size, (long long)vp.block_num, (long long)vp.block_size);
    *kd = kp.d;
    c->VD = vp.d;
    c->k = kp.st;
    c->v = vp.st;
    if (c->rope) {
      MLAOPS_TRY(parse_pool(op, "keyRopeOptional", *p.key_rope, KVN, &rp));
      MLAOPS_CHECK(rp.block_num == kp.block_num && rp.block_size == kp.block_size, kParamInvalid,
                   "%s: keyRopeOptional: FIA-15 paged blockNum/blockSize must equal key's; allowed [%lld, %lld], got "
                   "[%lld, %lld]",
                   op, (long long)kp.block_num, (long long)kp.block_size, (long long)rp.block_num,
                   (long long)rp.block_size);
      MLAOPS_CHECK(rp.d == c->DR, kParamInvalid,
                   "%s: keyRopeOptional: FIA-15 head dim must equal queryRope's; allowed %lld, got %lld", op,
                   (long long)c->DR, (long long)rp.d);
      c->kr = rp.st;
    }
    MLAOPS_CHECK(p.block_size > 0 && p.block_size == kp.block_size, kParamInvalid,
                 "%s: blockSize: FIA-12 must equal the cache block size; allowed %lld, got %lld", op,
                 (long long)kp.block_size, (long long)p.block_size);
    if (o.vendor_ranges)
      MLAOPS_CHECK(p.block_size % 16 == 0 && p.block_size <= 1024, kParamInvalid,
                   "%s: blockSize: FIA-19 blockSize value; allowed a multiple of 16 in [16, 1024], got %lld", op,
                   (long long)p.block_size);
    const TensorView& bt = *p.block_table;
    MLAOPS_TRY(rank_in(op, "blockTableOptional", "FIA-12 block table", bt, {2}));
    MLAOPS_CHECK(bt.dims[0] == B, kParamInvalid, "%s: blockTableOptional: FIA-12 dim 0; allowed B = %lld, got %lld", op,
                 (long long)B, (long long)bt.dims[0]);
    int64_t kv_extent;
    MLAOPS_CHECK(mul_ok(bt.dims[1], kp.block_size, &kv_extent), kParamInvalid,
                 "%s: blockTableOptional: FIA-17 width * blockSize overflows int64", op);
    MLAOPS_CHECK(p.actual_seq_lengths_kv != nullptr, kParamInvalid,
                 "%s: actualSeqLengthsKvOptional: FIA-11 needed with paged attention; allowed an array, got null",
                 op);
    MLAOPS_TRY(decode_lengths(op, "actualSeqLengthsKvOptional", "FIA-11", p.actual_seq_lengths_kv, B, kv_extent,
                              "blockTable width * blockSize", &c->act_kv));
    c->block_size = kp.block_size;
    c->block_num = kp.block_num;
    c->kv_s = kv_extent;
    c->bt_row_stride = bt.strides[0];
    return kSuccess;
  }
  Seq ks, vs;
  MLAOPS_TRY(parse_seq(op, "key", key, c->in_l, KVN, &ks));
  MLAOPS_TRY(parse_seq(op, "value", value, c->in_l, KVN, &vs));
  MLAOPS_CHECK(ks.b == qs.b && vs.b == qs.b, kParamInvalid,
               "%s: key: FIA-08 key/value batch must equal the query batch; allowed %lld, got %lld / %lld", op,
               (long long)qs.b, (long long)ks.b, (long long)vs.b);
  MLAOPS_CHECK(vs.s == ks.s, kParamInvalid, "%s: value: FIA-08 sequence extent must equal key's; allowed %lld, got %lld",
               op, (long long)ks.s, (long long)vs.s);
  *kd = ks.d;
  c->VD = vs.d;
  c->kv_s = ks.s;
  const FiaSeqStrides kst = seq_strides(key, c->in_l, ks.d), vst = seq_strides(value, c->in_l, vs.d);
  c->k = {kst.b, kst.n, 0, kst.s, std::max<int64_t>(ks.d, 1), 0};
  c->v = {vst.b, vst.n, 0, vst.s, std::max<int64_t>(vs.d, 1), 0};
  if (c->rope) {
    Seq rs;
    MLAOPS_TRY(parse_seq(op, "keyRopeOptional", *p.key_rope, c->in_l, KVN, &rs));
    MLAOPS_CHECK(rs.b == ks.b && rs.s == ks.s, kParamInvalid,
                 "%s: keyRopeOptional: FIA-15 batch/sequence must equal the key's; allowed %s with D -> DR, got %s", op,
                 shape_str(key).c_str(), shape_str(*p.key_rope).c_str());
    MLAOPS_CHECK(rs.d == c->DR, kParamInvalid,
                 "%s: keyRopeOptional: FIA-15 head dim must equal queryRope's; allowed %lld, got %lld", op,
                 (long long)c->DR, (long long)rs.d);
    const FiaSeqStrides rst = seq_strides(*p.key_rope, c->in_l, rs.d);
    c->kr = {rst.b, rst.n, 0, rst.s, std::max<int64_t>(rs.d, 1), 0};
  }
  if (c->packed)
    return decode_cumulative(op, "actualSeqLengthsKvOptional", "FIA-11", p.actual_seq_lengths_kv, B, ks.s, &c->act_kv,
                             &c->kv_start);
  return decode_lengths(op, "actualSeqLengthsKvOptional", "FIA-11", p.actual_seq_lengths_kv, B, ks.s, "KV_S",
                        &c->act_kv);
}

// FIA-08 attentionOut, FIA-16 softmaxLse.
Status check_outputs(const FiaParams& p, const char* op, FiaCall* c) {
  const TensorView& out = p.attention_out;
  const int64_t B = c->B, N = c->N;
  int64_t nvd;
  MLAOPS_CHECK(mul_ok(N, c->VD, &nvd), kParamInvalid, "%s: attentionOut: FIA-17 N * V_D overflows int64", op);
  std::vector<int64_t> want;
  switch (c->out_l) {
    case FiaLayout::kBSH: want = {B, c->QS, nvd}; break;
    case FiaLayout::kBSND: want = {B, c->QS, N, c->VD}; break;
    case FiaLayout::kBNSD: want = {B, N, c->QS, c->VD}; break;
    case FiaLayout::kNBSD: want = {N, B, c->QS, c->VD}; break;
    case FiaLayout::kTND: want = {c->QS, N, c->VD}; break;
    case FiaLayout::kNTD: want = {N, c->QS, c->VD}; break;
  }
  bool ok = out.rank == static_cast<int>(want.size());
  for (int i = 0; ok && i < out.rank; ++i) ok = out.dims[i] == want[static_cast<size_t>(i)];
  std::string ws = "[";
  for (size_t i = 0; i < want.size(); ++i) ws += (i ? ", " : "") + std::to_string(want[i]);
  MLAOPS_CHECK(ok, kParamInvalid, "%s: attentionOut: FIA-08 shape for output layout %s; allowed %s], got %s", op,
               fia_layout_name(c->out_l), ws.c_str(), shape_str(out).c_str());
  c->out = seq_strides(out, c->out_l, c->VD);
  const TensorView* lse = lse_of(p);
  if (lse == nullptr) return kSuccess;
  bool lok;
  if (c->packed) {
    lok = lse->rank == 3 && lse->dims[0] == c->QS && lse->dims[1] == N && lse->dims[2] == 1;
    c->lse_st = {0, lse->strides[1], lse->strides[0]};
  } else {
    lok = lse->rank == 4 && lse->dims[0] == B && lse->dims[1] == N && lse->dims[2] == c->QS && lse->dims[3] == 1;
    if (lok) c->lse_st = {lse->strides[0], lse->strides[1], lse->strides[2]};
  }
  MLAOPS_CHECK(lok, kParamInvalid, "%s: softmaxLse: FIA-16 shape; allowed %s, got %s", op,
               c->packed ? check::dims_str({c->QS, N, 1}).c_str() : check::dims_str({B, N, c->QS, 1}).c_str(),
               shape_str(*lse).c_str());
  c->lse = true;
  return kSuccess;
}

// FIA-26 post-quant INT8 output (quantScale2 / quantOffset2), docs/ops/fused_infer_attention_score.md
// "Post-quant INT8 output". Runs after the outputs, mask and sink are known.
// The pairing part (offset needs scale, INT8 attentionOut exactly with quantScale2) runs before
// the empty-tensor early returns, so an INT8 output is never written as FP16 rows.
Status check_post_quant_pairing(const FiaParams& p, const char* op) {
  const TensorView* sc = p.quant_scale2;
  const TensorView* of = p.quant_offset2;
  const bool i8 = p.attention_out.dtype == I8;
  MLAOPS_CHECK(of == nullptr || sc != nullptr, kParamInvalid,
               "%s: quantOffset2Optional: FIA-26 only with quantScale2; allowed null without quantScale2, got a tensor",
               op);
  MLAOPS_CHECK(i8 == (sc != nullptr), kParamInvalid,
               "%s: attentionOut: FIA-26 dtype is INT8 exactly when quantScale2 is given; allowed %s, got %s", op,
               sc != nullptr ? "INT8" : (p.query.dtype == I8 ? "FLOAT16" : dtype_name(p.query.dtype)),
               dtype_name(p.attention_out.dtype));
  return kSuccess;
}

Status check_post_quant(const FiaParams& p, const char* op, FiaCall* c) {
  const TensorView* sc = p.quant_scale2;
  const TensorView* of = p.quant_offset2;
  if (sc == nullptr) return kSuccess;
  const bool bf16_ok = p.query.dtype == DType::kBFloat16;
  MLAOPS_CHECK(sc->dtype == DType::kFloat32 || (bf16_ok && sc->dtype == DType::kBFloat16), kParamInvalid,
               "%s: quantScale2Optional: FIA-26 dtype; allowed {%s}, got %s", op, bf16_ok ? "FLOAT, BF16" : "FLOAT",
               dtype_name(sc->dtype));
  if (of != nullptr) {
    bool same = of->dtype == sc->dtype && of->rank == sc->rank;
    for (int i = 0; same && i < sc->rank; ++i) same = of->dims[i] == sc->dims[i];
    MLAOPS_CHECK(same, kParamInvalid,
                 "%s: quantOffset2Optional: FIA-26 dtype and shape must equal quantScale2's; allowed %s %s, got %s %s", op,
                 dtype_name(sc->dtype), shape_str(*sc).c_str(), dtype_name(of->dtype), shape_str(*of).c_str());
  }
  // Exclusions (the vendor's) and what this build does not cover.
  MLAOPS_CHECK(!c->sink, kParamInvalid,
               "%s: quantScale2Optional: FIA-26 post-quant is not allowed with learnableSink; allowed null, got a tensor", op);
  MLAOPS_CHECK(!c->rope, kParamInvalid,
               "%s: quantScale2Optional: FIA-26 post-quant is not allowed with MLA (queryRope); allowed null, got a tensor",
               op);
  MLAOPS_CHECK(!c->packed, kParamInvalid,
               "%s: quantScale2Optional: FIA-26 post-quant is not allowed with layout %s; allowed BSH, BSND, BNSD, got %s",
               op, fia_layout_name(c->in_l), fia_layout_name(c->in_l));
  // Shape: (1) per tensor, or N * V_D elements per channel: the recommended shapes of BSH, BSND,
  // BNSD and BNSD_BSND (whose output is BSND-shaped: both forms), [N, V_D] for every layout.
  const int64_t N = c->N, VD = c->VD;
  const auto is = [&](std::initializer_list<int64_t> d) {
    if (sc->rank != static_cast<int>(d.size())) return false;
    int i = 0;
    for (int64_t x : d)
      if (sc->dims[i++] != x) return false;
    return true;
  };
  const std::string nv = std::to_string(N * VD), n = std::to_string(N), d = std::to_string(VD);
  const std::string bsh = "[1, 1, " + nv + "], [" + nv + "], ", bsnd = "[1, 1, " + n + ", " + d + "], ",
                    bnsd = "[1, " + n + ", 1, " + d + "], ";
  std::string shapes;  // the layout's recommended shapes besides [1] and [N, V_D]
  bool channel = is({N, VD});
  if (c->out_l == c->in_l && c->in_l == FiaLayout::kBSH) {
    channel = channel || is({1, 1, N * VD}) || is({N * VD});
    shapes = bsh;
  } else if (c->out_l == c->in_l && c->in_l == FiaLayout::kBSND) {
    channel = channel || is({1, 1, N, VD});
    shapes = bsnd;
  } else if (c->in_l == FiaLayout::kBNSD && (c->out_l == FiaLayout::kBNSD || c->out_l == FiaLayout::kBSND)) {
    channel = channel || is({1, N, 1, VD}) || (c->out_l == FiaLayout::kBSND && is({1, 1, N, VD}));
    shapes = c->out_l == FiaLayout::kBSND ? bnsd + bsnd : bnsd;
  }
  const bool ok = channel || is({1});
  const std::string allowed = "[1], " + shapes + "[" + n + ", " + d + "]";
  MLAOPS_CHECK(ok, kParamInvalid, "%s: quantScale2Optional: FIA-26 shape for layout %s; allowed %s, got %s", op,
               p.input_layout.c_str(), allowed.c_str(), shape_str(*sc).c_str());
  if (channel) {
    MLAOPS_CHECK(!c->lse, kParamInvalid,
                 "%s: softmaxLse: FIA-26 per-channel post-quant is not allowed with softmaxLse; allowed "
                 "softmaxLseFlag false, got true",
                 op);
    // The vendor's "32-byte aligned D" holds for the prefill path; its decode takes any V_D (its
    // system test 230: per-channel post-quant at V_D 127, tests/ops/fia/data).
    MLAOPS_CHECK(c->QS == 1 || VD % 32 == 0, kParamInvalid,
                 "%s: quantScale2Optional: FIA-26 per-channel post-quant with Q_S > 1 needs V_D %% 32 == 0; allowed a "
                 "multiple of 32, got %lld",
                 op, (long long)VD);
  }
  // With quantOffset2, configurations that can produce fully masked rows (per batch, host lengths).
  if (of != nullptr) {
    const int64_t pre = p.pre_tokens, next = p.next_tokens;
    MLAOPS_CHECK(!(c->mode == 4 && (pre < 0 || next < 0)), kParamInvalid,
                 "%s: preTokens/nextTokens: FIA-26 with quantOffset2 and sparseMode 4 must be >= 0; allowed >= 0, "
                 "got %lld / %lld",
                 op, (long long)pre, (long long)next);
    for (int64_t b = 0; b < c->B; ++b) {
      const int64_t q = c->act_q[static_cast<size_t>(b)], kv = c->act_kv[static_cast<size_t>(b)] + c->prefix.len;
      bool bad = false;
      if (c->mode == 0 && c->explicit_mask) bad = static_cast<__int128>(q) - kv - pre > 0 || next < 0;
      if (c->mode == 3) bad = kv - q < 0;
      if (c->mode == 4) bad = static_cast<__int128>(next) + kv - q < 0;  // attributes: no int64 overflow
      MLAOPS_CHECK(!bad, kParamInvalid,
                   "%s: actualSeqLengths: FIA-26 with quantOffset2 batch %lld can have fully masked rows (sparseMode "
                   "%lld, actQ %lld, actKV %lld, preTokens %lld, nextTokens %lld); allowed no fully masked row",
                   op, (long long)b, (long long)c->mode, (long long)q, (long long)kv, (long long)pre, (long long)next);
    }
  }
  c->post_quant = true;
  c->pq_channel = channel;
  return kSuccess;
}

// Post-quant with an empty key / value: every output row is empty, each element its channel's
// quantised 0 (clamp(round(offset))). The channel of an element needs the output layout, numHeads
// and V_D (the output's last dim; BSH: divided by numHeads); the FIA-26 rules then apply as usual.
Status check_post_quant_empty_kv(const FiaParams& p, const char* op, FiaCall* c) {
  if (!parse_fia_layout(p.input_layout, &c->in_l, &c->out_l))
    return fail(kParamInvalid, "%s: inputLayout: FIA-05 value; allowed %s, got \"%.64s\"", op, kLayoutList,
                p.input_layout.c_str());
  const TensorView& out = p.attention_out;
  const int64_t N = p.num_heads;
  MLAOPS_CHECK(N > 0, kParamInvalid, "%s: numHeads: FIA-06 value; allowed >= 1, got %lld", op, (long long)N);
  const FiaLayout ol = c->out_l;
  const int rank = ol == FiaLayout::kBSH || ol == FiaLayout::kTND || ol == FiaLayout::kNTD ? 3 : 4;
  const int n_dim = ol == FiaLayout::kBSND ? 2 : ol == FiaLayout::kBNSD || ol == FiaLayout::kTND ? 1 : 0;
  MLAOPS_CHECK(out.rank == rank && (ol == FiaLayout::kBSH ? out.dim(-1) % N == 0 : out.dims[n_dim] == N), kParamInvalid,
               "%s: attentionOut: FIA-08 shape for output layout %s with numHeads %lld; allowed rank %d with %s, got %s",
               op, fia_layout_name(ol), (long long)N, rank, ol == FiaLayout::kBSH ? "H % N == 0" : "N at its place",
               shape_str(out).c_str());
  c->N = N;
  c->VD = ol == FiaLayout::kBSH ? out.dim(-1) / N : out.dim(-1);
  c->packed = fia_layout_is_packed(c->in_l);
  c->sink = p.learnable_sink != nullptr;
  return check_post_quant(p, op, c);
}

// FIA-21 KV antiquant (rules in fia_antiquant.cpp).
Status check_antiquant(const FiaParams& p, const FiaCheckOptions& o, int64_t kd, FiaCall* c) {
  FiaAntiquantShape as;
  as.op = o.op;
  as.vendor_ranges = o.vendor_ranges;
  as.q_dtype = p.query.dtype;
  as.B = c->B;
  as.KVN = c->KVN;
  as.QS = c->QS;
  as.KD = kd;
  as.VD = c->VD;
  as.kv_s = c->kv_s;
  as.paged = c->paged;
  as.packed = c->packed;
  as.rope = c->rope;
  as.nz = c->paged && p.key[0].rank == 5;
  as.in_l = c->in_l;
  as.N = c->N;
  as.max_q = c->packed ? (c->act_q.empty() ? 0 : *std::max_element(c->act_q.begin(), c->act_q.end())) : c->QS;
  as.block_num = c->block_num;
  as.block_size = c->block_size;
  as.prefix_len = c->prefix.len;
  return fia_check_antiquant(p, as, &c->aq);
}

// ---- cross-feature ----

// FIA-19: the vendor's limits that depend on the call's shape (aclnn layer only; the C++ API
// computes these calls): the head dim of a prefill (Q_S > 1) in BSH / BSND / BNSD a multiple of
// 16 for FP16 / BF16; innerPrecise 0 / 1 for a decode without rope; the decode KV_S <= 262144;
// MLA with D 512 (the latent cache) only sparse modes 0, 3, 4, 9; Q_D != V_D without rope only
// sparse modes 0, 2, 3 and no softmaxLse.
Status check_vendor_limits(const FiaParams& p, const char* op, const FiaCall& c) {
  const bool half = p.query.dtype == F16 || p.query.dtype == DType::kBFloat16;
  if (half && !c.packed && c.QS > 1) {
    MLAOPS_CHECK(c.QD % 16 == 0, kParamInvalid,
                 "%s: query: FIA-19 head dim with Q_S > 1 (layout %s); allowed a multiple of 16, got %lld", op,
                 fia_layout_name(c.in_l), (long long)c.QD);
    MLAOPS_CHECK(c.VD % 16 == 0, kParamInvalid,
                 "%s: value: FIA-19 head dim with Q_S > 1 (layout %s); allowed a multiple of 16, got %lld", op,
                 fia_layout_name(c.in_l), (long long)c.VD);
  }
  if (!c.packed && c.QS == 1 && !c.rope) {
    MLAOPS_TRY(check::value_in(op, "innerPrecise", "FIA-19 with Q_S = 1", p.inner_precise, {0, 1}));
    MLAOPS_TRY(check::value_range(op, "key", "FIA-19 decode KV_S", c.kv_s, 0, 262144));
  }
  if (c.rope && c.QD == 512)
    MLAOPS_TRY(check::value_in(op, "sparseMode", "FIA-19 MLA with D 512", p.sparse_mode, {0, 3, 4, 9}));
  if (!c.rope && c.QD != c.VD) {
    MLAOPS_TRY(check::value_in(op, "sparseMode", "FIA-19 with Q_D != V_D", p.sparse_mode, {0, 2, 3}));
    MLAOPS_CHECK(!c.lse, kParamInvalid,
                 "%s: softmaxLse: FIA-19 with Q_D != V_D (%lld / %lld); allowed softmaxLseFlag false, got true", op,
                 (long long)c.QD, (long long)c.VD);
  }
  return kSuccess;
}

// FIA-24: the vendor's exclusions (aclnn layer only).
Status check_exclusions(const FiaParams& p, const char* op) {
  for (const FiaExclusion& x : fia_exclusions())
    MLAOPS_CHECK(!fia_has_feature(p, x.a) || !fia_has_feature(p, x.b), kParamInvalid,
                 "%s: %s: FIA-24 %s is not allowed with %s (the vendor's exclusion; the C++ API accepts the pair); "
                 "allowed one of them, got both",
                 op, x.param, fia_feature_name(x.a), fia_feature_name(x.b));
  return kSuccess;
}

}  // namespace

Status fia_check(const FiaParams& caller, const FiaCheckOptions& o, FiaCall* call) {
  const char* op = o.op;
  FiaCall& c = *call;
  c = FiaCall();
  MLAOPS_TRY(check_existence(caller, op));
  // Strided inputs (ops/common/auto_contiguous.h): planned here; every rule below sees their dense shapes.
  FiaParams p = caller;
  std::vector<TensorView> store;
  c.stage_set = o.stage_set;
  MLAOPS_TRY(stage_plan(op, "FIA-17", fia_stage_slots(&p, o.stage_set, &store), &c.stage));
  MLAOPS_TRY(check_dtypes_and_formats(p, op));
  MLAOPS_TRY(check_post_quant_pairing(p, op));
  MLAOPS_TRY(check::finite_f32(op, "scaleValue", "FIA-58", p.scale_value));  // docs/numerics.md
  MLAOPS_TRY(fia_full_quant_check_params(p, op, &c.full_quant));  // FIA-30/31 INT8 full quantisation
  c.fp16 = p.query.dtype == F16 || c.full_quant;         // full quantisation: FP16 output and pse
  c.rope = p.query_rope != nullptr;
  c.paged = p.block_table != nullptr;
  // Empty tensors: an empty query or output is a no-op; empty key/value give zeros / +inf.
  if (p.query.empty() || p.attention_out.empty()) {
    c.noop = true;
    c.stage = StagePlan();  // nothing is read
    return kSuccess;
  }
  if (!fia_tensor_list_requested(p) && (p.key[0].empty() || p.value[0].empty())) {  // lists: zero-length batches
    // FIA-11: an empty key / value (a paged cache of blockNum 0 too) holds no position
    if (p.actual_seq_lengths_kv != nullptr)
      for (size_t b = 0; b < p.actual_seq_lengths_kv->size(); ++b)
        MLAOPS_CHECK((*p.actual_seq_lengths_kv)[b] <= 0, kParamInvalid,
                     "%s: actualSeqLengthsKvOptional: FIA-11 value with an empty key / value; allowed 0, got "
                     "actualSeqLengthsKv[%zu] = %lld (%s %s)",
                     op, b, (long long)(*p.actual_seq_lengths_kv)[b],
                     p.block_table != nullptr ? "a paged cache of shape" : "key of shape", shape_str(p.key[0]).c_str());
    MLAOPS_TRY(dense(op, "attentionOut", "FIA-17", p.attention_out));
    if (lse_of(p) != nullptr) MLAOPS_TRY(dense(op, "softmaxLse", "FIA-17", *p.softmax_lse));
    MLAOPS_TRY(fia_prefix_check_empty(p, op));
    c.empty_kv = true;
    c.lse = lse_of(p) != nullptr;
    if (p.quant_scale2 != nullptr) MLAOPS_TRY(check_post_quant_empty_kv(p, op, &c));
    return kSuccess;
  }
  MLAOPS_TRY(check_attributes(p, o, &c));
  Seq qs;
  MLAOPS_TRY(check_query(p, o, &c, &qs));
  int64_t kd = 0;
  MLAOPS_TRY(check_kv(p, o, qs, &c, &kd));
  if (p.key[0].dtype == I32) fia_antiquant_int4_dims(&kd, &c.VD, &c.k, &c.v);  // FIA-33 INT4 in INT32: nibble units
  MLAOPS_CHECK(kd == c.QD, kParamInvalid, "%s: key: FIA-08 head dim must equal the query head dim; allowed %lld, got %lld",
               op, (long long)c.QD, (long long)kd);
  MLAOPS_CHECK(c.VD > 0, kParamInvalid, "%s: value: FIA-08 head dim; allowed >= 1, got 0", op);
  MLAOPS_TRY(fia_prefix_check(p, op, &c));  // shared prefix (ops/fia/fia_prefix.h): Lp before the per-token extents
  if (fia_mla_quant_requested(p))
    MLAOPS_TRY(fia_mla_quant_check(p, o, &c));
  else if (c.full_quant)
    MLAOPS_TRY(fia_full_quant_check_call(p, op, c));  // FIA-32
  else
    MLAOPS_TRY(check_antiquant(p, o, kd, &c));
  if (o.vendor_ranges) {
    MLAOPS_TRY(check::value_range(op, "query", "FIA-19 head dim D", c.QD, 1, 512));
    MLAOPS_TRY(check::value_range(op, "value", "FIA-19 head dim V_D", c.VD, 1, 512));
    if (c.rope) MLAOPS_TRY(check::value_in(op, "queryRopeOptional", "FIA-19 rope head dim", c.DR, {64}));
  }
  MLAOPS_TRY(check_outputs(p, op, &c));
  c.q = seq_strides(p.query, c.in_l, c.QD);
  if (c.rope) c.qr = seq_strides(*p.query_rope, c.in_l, c.DR);
  MLAOPS_TRY(check_mask(p, op, &c));
  MLAOPS_TRY(check_pse(p, o, &c));
  MLAOPS_TRY(check_sink(p, op, &c));
  MLAOPS_TRY(check_post_quant(p, op, &c));
  if (o.vendor_ranges) {
    MLAOPS_TRY(check_vendor_limits(p, op, c));
    MLAOPS_TRY(check_exclusions(p, op));
    MLAOPS_TRY(fia_check_vendor_rules(p, op, c));  // the audit's rows (ops/fia/fia_exclusions.h)
  }
  MLAOPS_TRY(fia_left_padding_check(p, o, &c));  // left padding (ops/fia/fia_left_padding.h): moves q_start / kv_start
  MLAOPS_TRY(fia_inner_precise_check(p, o, &c));  // innerPrecise (ops/fia/fia_inner_precise.h)
  return kSuccess;
}

Status fia_check_pointers(const FiaParams& p, const FiaCall& c, const char* op) {
  if (c.noop) return kSuccess;
  for (const Named& x : all_tensors(p)) {
    if (x.t == nullptr || x.t->empty()) continue;
    MLAOPS_CHECK(x.t->data != nullptr, kParamInvalid,
                 "%s: %s: FIA-17 null data of a non-empty tensor; allowed non-null for a tensor of shape %s, got null", op, x.name,
                 shape_str(*x.t).c_str());
    // outputs dense; inputs may be strided views (fia_check planned their dense copies)
    const bool output = x.t == &p.attention_out || x.t == lse_of(p);
    MLAOPS_TRY(output ? dense(op, x.name, "FIA-17", *x.t) : check::aligned(op, x.name, "FIA-17", *x.t));
  }
  if (c.mq.on) MLAOPS_TRY(fia_mla_quant_check_pointers(p, op));
  MLAOPS_TRY(fia_tensor_list_check_pointers(p, c, op));  // every tensor-list element
  // FIA-18 outputs overlap neither each other nor any input
  const TensorView* lse = lse_of(p);
  return check::no_overlap(op, "FIA-18", {{"attentionOut", &p.attention_out}, {"softmaxLse", lse}},
                           {{"query", &p.query},
                            {"key", key_of(p)},
                            {"value", value_of(p)},
                            {"queryRopeOptional", p.query_rope},
                            {"keyRopeOptional", p.key_rope},
                            {"attenMaskOptional", p.atten_mask},
                            {"blockTableOptional", p.block_table},
                            {"pseShiftOptional", p.pse_shift},
                            {"learnableSinkOptional", p.learnable_sink},
                            {"dequantScaleQueryOptional", p.dequant_scale_query},
                            {"quantScale2Optional", p.quant_scale2},
                            {"quantOffset2Optional", p.quant_offset2},
                            {"deqScale1Optional", p.deq_scale1},
                            {"quantScale1Optional", p.quant_scale1},
                            {"deqScale2Optional", p.deq_scale2},
                            {"keySharedPrefixOptional", p.key_shared_prefix},
                            {"valueSharedPrefixOptional", p.value_shared_prefix},
                            {"antiquantScaleOptional", p.antiquant_scale},
                            {"antiquantOffsetOptional", p.antiquant_offset},
                            {"keyAntiquantScaleOptional", p.key_antiquant_scale},
                            {"keyAntiquantOffsetOptional", p.key_antiquant_offset},
                            {"valueAntiquantScaleOptional", p.value_antiquant_scale},
                            {"valueAntiquantOffsetOptional", p.value_antiquant_offset}});
}

}  // namespace mlaops
