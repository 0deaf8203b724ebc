// FusedInferAttentionScoreV4 phase 1: the validation rules of docs/ops/fused_infer_attention_score.md
// (spec fused-infer-attention-score.md §3, issue-4 scope), each with its rule id FIA-xx, and the
// plan (per-batch lengths, strides, mask rule, work items, workspace). Nothing here reads tensor
// data (the host int arrays are attributes) and nothing is written.
//
// The rules mirror the float64 reference (reference/fused_infer_attention_score_v4_ref.cpp) so the
// two accept the same inputs; on top of it: density / alignment, aliasing, vendor ranges.
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/workspace.h"
#include "kernels/cpu/flash_attn.h"
#include "mlaops/runtime.h"
#include "ops/check_util.h"
#include "ops/fia_antiquant.h"
#include "ops/fused_infer_attention_score_v4.h"

namespace mlaops {
namespace {

using check::dense;
using check::dtype_in;
using check::format_in;
using check::rank_in;
using check::shape_str;

constexpr DType BF16 = DType::kBFloat16;
constexpr DType F16 = DType::kFloat16;
constexpr DType F32 = DType::kFloat32;
constexpr DType I32 = DType::kInt32;
constexpr DType I8 = DType::kInt8;

bool given(const TensorView& t) { return t.dtype != DType::kUndefined; }

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

// A paged pool (spec §2.9), layout by rank: 3 BnBsH, 4 BnNBsD, 5 NZ.
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
    MLAOPS_CHECK(t.dims[4] == 16, kParamInvalid, "%s: %s: FIA-08 NZ cache last dim (c0) for FP16/BF16; allowed 16, got %lld",
                 op, name, (long long)t.dims[4]);
    MLAOPS_CHECK(mul_ok(t.dims[2], 16, &p.d), kParamInvalid, "%s: %s: FIA-17 head dim overflows int64", op, name);
    p.st = {0, t.strides[1], t.strides[0], t.strides[3], 16, t.strides[2]};
  }
  MLAOPS_CHECK(n == kvn, kParamInvalid, "%s: %s: FIA-08 KV_N of the cache shape; allowed %lld, got %lld (shape %s)", op,
               name, (long long)kvn, (long long)n, shape_str(t).c_str());
  *out = p;
  return kSuccess;
}

// (1) broadcast / (B) / (>B) per-batch lengths in [0, extent]; null = extent (spec §2.3).
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

bool is_2048_template(const TensorView& m) {
  if (m.rank < 2 || m.rank > 4) return false;
  for (int i = 0; i < m.rank - 2; ++i)
    if (m.dims[i] != 1) return false;
  return m.dim(-1) == 2048 && m.dim(-2) == 2048;
}

int64_t clamp62(__int128 v) {
  const __int128 lim = static_cast<__int128>(1) << 62;
  return static_cast<int64_t>(std::max(-lim, std::min(lim, v)));
}

}  // namespace

Status fia_check(const FiaParams& p, const FiaCheckOptions& o, FiaPlan* plan) {
  const char* op = o.op;
  FiaPlan& P = *plan;
  P = FiaPlan();

  // ---- FIA-01 required tensors ----
  MLAOPS_CHECK(given(p.query), kParamNullptr, "%s: query: FIA-01 required tensor is null", op);
  MLAOPS_CHECK(!p.key.empty(), kParamNullptr, "%s: key: FIA-01 required tensor list is null or empty", op);
  MLAOPS_CHECK(!p.value.empty(), kParamNullptr, "%s: value: FIA-01 required tensor list is null or empty", op);
  MLAOPS_CHECK(given(p.attention_out), kParamNullptr, "%s: attentionOut: FIA-01 required tensor is null", op);
  MLAOPS_CHECK(!p.softmax_lse_flag || p.softmax_lse != nullptr, kParamNullptr,
               "%s: softmaxLse: FIA-01 required when softmaxLseFlag is true; allowed a tensor, got null", op);

  // ---- FIA-02 features outside this build's scope ----
  const struct {
    const void* t;
    const char* name;
    const char* feature;
  } scope[] = {
      {p.pse_shift, "pseShiftOptional", "pseShift / ALiBi"},
      {p.deq_scale1, "deqScale1Optional", "INT8 full quantisation"},
      {p.quant_scale1, "quantScale1Optional", "INT8 full quantisation"},
      {p.deq_scale2, "deqScale2Optional", "INT8 full quantisation"},
      {p.quant_scale2, "quantScale2Optional", "post-quant INT8 output"},
      {p.quant_offset2, "quantOffset2Optional", "post-quant INT8 output"},
      {p.query_padding_size, "queryPaddingSizeOptional", "left padding"},
      {p.kv_padding_size, "kvPaddingSizeOptional", "left padding"},
      {p.key_shared_prefix, "keySharedPrefixOptional", "shared prefix"},
      {p.value_shared_prefix, "valueSharedPrefixOptional", "shared prefix"},
      {p.actual_shared_prefix_len, "actualSharedPrefixLenOptional", "shared prefix"},
      {p.key_rope_antiquant_scale, "keyRopeAntiquantScaleOptional", "keyRope antiquant (reserved)"},
      {p.dequant_scale_query, "dequantScaleQueryOptional", "query quantisation (MLA full quant)"},
      {p.learnable_sink, "learnableSinkOptional", "learnable sink"},
  };
  for (const auto& s : scope)
    MLAOPS_CHECK(s.t == nullptr, kParamInvalid,
                 "%s: %s: FIA-02 %s is not supported yet; allowed null, got a value", op, s.name, s.feature);
  MLAOPS_CHECK(p.key.size() == 1 && p.value.size() == 1, kParamInvalid,
               "%s: key/value: FIA-02 tensor lists with more than one tensor (per-batch KV) are not supported yet; "
               "allowed 1 tensor, got %zu / %zu",
               op, p.key.size(), p.value.size());
  MLAOPS_CHECK(p.sparse_mode != 9, kParamInvalid, "%s: sparseMode: FIA-02 tree mask (9) is not supported yet; got 9", op);

  const TensorView& q = p.query;
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  const TensorView& out = p.attention_out;
  const TensorView* lse = p.softmax_lse_flag ? p.softmax_lse : nullptr;

  // ---- FIA-03 dtypes ----
  MLAOPS_CHECK(q.dtype != DType::kInt8, kParamInvalid,
               "%s: query: FIA-02 INT8 query (full quantisation) is not supported yet; allowed {FLOAT16, BF16}, got INT8",
               op);
  MLAOPS_TRY(dtype_in(op, "query", "FIA-03", q, {F16, BF16}));
  if (key.dtype == DType::kInt32 || key.dtype == DType::kInt4)
    return fail(kParamInvalid, "%s: key: FIA-02 INT4 key/value (KV antiquant) is not supported yet; allowed %s or INT8, got %s",
                op, dtype_name(q.dtype), dtype_name(key.dtype));
  const bool kv_int8 = key.dtype == DType::kInt8;  // KV antiquant (§2.11): checked with its parameters below
  MLAOPS_TRY(dtype_in(op, "key", "FIA-03 (= query dtype, or INT8 with KV antiquant)", key, {q.dtype, I8}));
  MLAOPS_TRY(dtype_in(op, "value", kv_int8 ? "FIA-21 (INT8 with an INT8 key)" : "FIA-03 (= query dtype)", value,
                      {kv_int8 ? I8 : q.dtype}));
  MLAOPS_TRY(dtype_in(op, "attentionOut", "FIA-03 (= query dtype)", out, {q.dtype}));
  if (lse != nullptr) MLAOPS_TRY(dtype_in(op, "softmaxLse", "FIA-03", *lse, {F32}));
  const bool rope = p.query_rope != nullptr || p.key_rope != nullptr;
  MLAOPS_CHECK(!rope || (p.query_rope != nullptr && p.key_rope != nullptr), kParamInvalid,
               "%s: %s: FIA-15 queryRope and keyRope must be given together; got only %s", op,
               p.query_rope ? "keyRopeOptional" : "queryRopeOptional", p.query_rope ? "queryRope" : "keyRope");
  if (rope) {
    MLAOPS_TRY(dtype_in(op, "queryRopeOptional", "FIA-03 (= query dtype)", *p.query_rope, {q.dtype}));
    MLAOPS_TRY(dtype_in(op, "keyRopeOptional", "FIA-03 (= query dtype)", *p.key_rope, {q.dtype}));
  }

  // ---- FIA-04 formats ----
  const struct {
    const char* name;
    const TensorView* t;
  } nd[] = {{"query", &q}, {"attentionOut", &out}, {"softmaxLse", lse}, {"attenMaskOptional", p.atten_mask},
            {"blockTableOptional", p.block_table}, {"queryRopeOptional", p.query_rope}};
  for (const auto& x : nd)
    if (x.t != nullptr) MLAOPS_TRY(format_in(op, x.name, "FIA-04", *x.t, {Format::kND, Format::kNCHW}));
  const bool paged = p.block_table != nullptr;
  for (const auto& x : {std::make_pair("key", &key), std::make_pair("value", &value),
                        std::make_pair("keyRopeOptional", p.key_rope)}) {
    if (x.second == nullptr) continue;
    if (paged && x.second->rank == 5)
      MLAOPS_TRY(format_in(op, x.first, "FIA-04", *x.second, {Format::kND, Format::kNCHW, Format::kFractalNZ}));
    else
      MLAOPS_TRY(format_in(op, x.first, "FIA-04", *x.second, {Format::kND, Format::kNCHW}));
  }

  // ---- FIA-17 sizes (every extent fits int64 bytes) ----
  for (const TensorView* t : {&q, &key, &value, &out, lse, p.query_rope, p.key_rope, p.atten_mask, p.block_table}) {
    if (t == nullptr) continue;
    int64_t bytes;
    MLAOPS_CHECK(checked_nbytes(*t, &bytes), kParamInvalid, "%s: FIA-17 tensor too large (size overflows int64), shape %s",
                 op, shape_str(*t).c_str());
  }

  // ---- §2.19 empty tensors ----
  P.fp16 = q.dtype == F16;
  if (q.empty() || out.empty()) {
    P.noop = true;
    return kSuccess;
  }
  if (key.empty() || value.empty()) {
    MLAOPS_TRY(dense(op, "attentionOut", "FIA-17", out));
    if (lse != nullptr) MLAOPS_TRY(dense(op, "softmaxLse", "FIA-17", *lse));
    P.empty_kv = true;
    P.lse = lse != nullptr;
    return kSuccess;
  }

  // ---- FIA-05 layout, FIA-06 heads, FIA-09 attributes ----
  if (!parse_fia_layout(p.input_layout, &P.in_l, &P.out_l))
    return fail(kParamInvalid,
                "%s: inputLayout: FIA-05 value; allowed {BSH, BSND, BNSD, TND, NTD, BSH_BNSD, BSND_BNSD, BNSD_BSND, "
                "NTD_TND, TND_NTD, BSH_NBSD, BSND_NBSD, BNSD_NBSD}, got \"%.64s\"",
                op, p.input_layout.c_str());
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
  MLAOPS_TRY(check::value_in(op, "sparseMode", "FIA-09", p.sparse_mode, {0, 1, 2, 3, 4}));
  MLAOPS_TRY(check::value_in(op, "innerPrecise", "FIA-09", p.inner_precise, {0, 1, 2, 3}));
  P.N = N;
  P.KVN = KVN;
  P.G = N / KVN;
  P.rope = rope;
  P.packed = fia_layout_is_packed(P.in_l);
  P.paged = paged;

  // ---- FIA-17 density ----
  const struct {
    const char* name;
    const TensorView* t;
  } dn[] = {{"query", &q},         {"key", &key},
            {"value", &value},     {"attentionOut", &out},
            {"softmaxLse", lse},   {"queryRopeOptional", p.query_rope},
            {"keyRopeOptional", p.key_rope}, {"attenMaskOptional", p.atten_mask},
            {"blockTableOptional", p.block_table}};
  for (const auto& x : dn)
    if (x.t != nullptr) MLAOPS_TRY(dense(op, x.name, "FIA-17", *x.t));

  // ---- FIA-07/08 query, queryRope ----
  Seq qs;
  MLAOPS_TRY(parse_seq(op, "query", q, P.in_l, N, &qs));
  P.QS = qs.s;
  P.QD = qs.d;
  if (rope) {
    Seq rs;
    MLAOPS_TRY(parse_seq(op, "queryRopeOptional", *p.query_rope, P.in_l, N, &rs));
    MLAOPS_CHECK(rs.b == qs.b && rs.s == qs.s, kParamInvalid,
                 "%s: queryRopeOptional: FIA-15 batch/sequence must equal the query's; allowed %s with D -> DR, got %s",
                 op, shape_str(q).c_str(), shape_str(*p.query_rope).c_str());
    P.DR = rs.d;
    MLAOPS_CHECK(P.DR > 0, kParamInvalid, "%s: queryRopeOptional: FIA-15 rope head dim; allowed >= 1, got 0", op);
  }
  MLAOPS_CHECK(P.QD > 0, kParamInvalid, "%s: query: FIA-08 head dim; allowed >= 1, got 0", op);

  // ---- FIA-10 batch and query lengths ----
  if (P.packed) {
    MLAOPS_CHECK(p.actual_seq_lengths != nullptr, kParamInvalid,
                 "%s: actualSeqLengthsOptional: FIA-10 is required for TND/NTD layouts; allowed an array, got null", op);
    P.B = static_cast<int64_t>(p.actual_seq_lengths->size());
    if (o.vendor_ranges) MLAOPS_TRY(check::value_range(op, "actualSeqLengthsOptional", "FIA-19 TND batch", P.B, 1, 4096));
    MLAOPS_TRY(decode_cumulative(op, "actualSeqLengthsOptional", "FIA-10", p.actual_seq_lengths, P.B, P.QS, &P.act_q,
                                 &P.q_start));
  } else {
    P.B = qs.b;
    if (P.QS == 1) {
      P.act_q.assign(static_cast<size_t>(P.B), 1);  // Q_S == 1 (IFA path): actualSeqLengths ignored
    } else {
      MLAOPS_TRY(decode_lengths(op, "actualSeqLengthsOptional", "FIA-10", p.actual_seq_lengths, P.B, P.QS, "Q_S",
                                &P.act_q));
    }
    P.q_start.assign(static_cast<size_t>(P.B), 0);
  }
  if (o.vendor_ranges) MLAOPS_TRY(check::value_range(op, "query", "FIA-19 B", P.B, 0, 65536));
  const int64_t B = P.B;

  // ---- FIA-07/08/11/12 key, value, keyRope ----
  int64_t KD = 0;
  int64_t kv_s = 0;  // the key's sequence extent (paged: blockTable width * blockSize)
  P.kv_start.assign(static_cast<size_t>(B), 0);
  if (paged) {
    Pool kp, vp, rp;
    MLAOPS_TRY(parse_pool(op, "key", key, KVN, &kp));
    MLAOPS_TRY(parse_pool(op, "value", value, KVN, &vp));
    MLAOPS_CHECK(vp.block_num == kp.block_num && vp.block_size == kp.block_size, kParamInvalid,
                 "%s: value: FIA-12 paged blockNum/blockSize must equal key's; allowed [%lld, %lld], got [%lld, %lld]", op,
                 (long long)kp.block_num, (long long)kp.block_size, (long long)vp.block_num, (long long)vp.block_size);
    KD = kp.d;
    P.VD = vp.d;
    P.k = kp.st;
    P.v = vp.st;
    if (rope) {
      MLAOPS_TRY(parse_pool(op, "keyRopeOptional", *p.key_rope, KVN, &rp));
      MLAOPS_CHECK(rp.block_num == kp.block_num && rp.block_size == kp.block_size, kParamInvalid,
                   "%s: keyRopeOptional: FIA-15 paged blockNum/blockSize must equal key's; allowed [%lld, %lld], got "
                   "[%lld, %lld]",
                   op, (long long)kp.block_num, (long long)kp.block_size, (long long)rp.block_num,
                   (long long)rp.block_size);
      MLAOPS_CHECK(rp.d == P.DR, kParamInvalid,
                   "%s: keyRopeOptional: FIA-15 head dim must equal queryRope's; allowed %lld, got %lld", op,
                   (long long)P.DR, (long long)rp.d);
      P.kr = rp.st;
    }
    MLAOPS_CHECK(p.block_size > 0 && p.block_size == kp.block_size, kParamInvalid,
                 "%s: blockSize: FIA-12 must equal the cache block size; allowed %lld, got %lld", op,
                 (long long)kp.block_size, (long long)p.block_size);
    if (o.vendor_ranges)
      MLAOPS_CHECK(p.block_size % 16 == 0 && p.block_size <= 1024, kParamInvalid,
                   "%s: blockSize: FIA-19 value; allowed a multiple of 16 in [16, 1024], got %lld", op,
                   (long long)p.block_size);
    const TensorView& bt = *p.block_table;
    MLAOPS_TRY(dtype_in(op, "blockTableOptional", "FIA-12", bt, {I32}));
    MLAOPS_TRY(rank_in(op, "blockTableOptional", "FIA-12", bt, {2}));
    MLAOPS_CHECK(bt.dims[0] == B, kParamInvalid, "%s: blockTableOptional: FIA-12 dim 0; allowed B = %lld, got %lld", op,
                 (long long)B, (long long)bt.dims[0]);
    int64_t kv_extent;
    MLAOPS_CHECK(mul_ok(bt.dims[1], kp.block_size, &kv_extent), kParamInvalid,
                 "%s: blockTableOptional: FIA-17 width * blockSize overflows int64", op);
    MLAOPS_CHECK(p.actual_seq_lengths_kv != nullptr, kParamInvalid,
                 "%s: actualSeqLengthsKvOptional: FIA-11 is required with paged attention; allowed an array, got null",
                 op);
    MLAOPS_TRY(decode_lengths(op, "actualSeqLengthsKvOptional", "FIA-11", p.actual_seq_lengths_kv, B, kv_extent,
                              "blockTable width * blockSize", &P.act_kv));
    P.block_size = kp.block_size;
    P.block_num = kp.block_num;
    kv_s = kv_extent;
    P.bt_row_stride = bt.strides[0];
  } else {
    Seq ks, vs;
    MLAOPS_TRY(parse_seq(op, "key", key, P.in_l, KVN, &ks));
    MLAOPS_TRY(parse_seq(op, "value", value, P.in_l, KVN, &vs));
    MLAOPS_CHECK(ks.b == qs.b && vs.b == qs.b, kParamInvalid,
                 "%s: key: FIA-08 key/value batch must equal the query batch; allowed %lld, got %lld / %lld", op,
                 (long long)qs.b, (long long)ks.b, (long long)vs.b);
    MLAOPS_CHECK(vs.s == ks.s, kParamInvalid, "%s: value: FIA-08 sequence extent must equal key's; allowed %lld, got %lld",
                 op, (long long)ks.s, (long long)vs.s);
    KD = ks.d;
    P.VD = vs.d;
    kv_s = ks.s;
    const FiaSeqStrides kst = seq_strides(key, P.in_l, ks.d), vst = seq_strides(value, P.in_l, vs.d);
    P.k = {kst.b, kst.n, 0, kst.s, std::max<int64_t>(ks.d, 1), 0};
    P.v = {vst.b, vst.n, 0, vst.s, std::max<int64_t>(vs.d, 1), 0};
    if (rope) {
      Seq rs;
      MLAOPS_TRY(parse_seq(op, "keyRopeOptional", *p.key_rope, P.in_l, KVN, &rs));
      MLAOPS_CHECK(rs.b == ks.b && rs.s == ks.s, kParamInvalid,
                   "%s: keyRopeOptional: FIA-15 batch/sequence must equal the key's; allowed %s with D -> DR, got %s", op,
                   shape_str(key).c_str(), shape_str(*p.key_rope).c_str());
      MLAOPS_CHECK(rs.d == P.DR, kParamInvalid,
                   "%s: keyRopeOptional: FIA-15 head dim must equal queryRope's; allowed %lld, got %lld", op,
                   (long long)P.DR, (long long)rs.d);
      const FiaSeqStrides rst = seq_strides(*p.key_rope, P.in_l, rs.d);
      P.kr = {rst.b, rst.n, 0, rst.s, std::max<int64_t>(rs.d, 1), 0};
    }
    if (P.packed)
      MLAOPS_TRY(decode_cumulative(op, "actualSeqLengthsKvOptional", "FIA-11", p.actual_seq_lengths_kv, B, ks.s,
                                   &P.act_kv, &P.kv_start));
    else
      MLAOPS_TRY(decode_lengths(op, "actualSeqLengthsKvOptional", "FIA-11", p.actual_seq_lengths_kv, B, ks.s, "KV_S",
                                &P.act_kv));
  }
  MLAOPS_CHECK(KD == P.QD, kParamInvalid, "%s: key: FIA-08 head dim must equal the query head dim; allowed %lld, got %lld",
               op, (long long)P.QD, (long long)KD);
  MLAOPS_CHECK(P.VD > 0, kParamInvalid, "%s: value: FIA-08 head dim; allowed >= 1, got 0", op);

  // ---- FIA-21 KV antiquant (INT8 key / value) ----
  {
    FiaAqShape as;
    as.op = op;
    as.q_dtype = q.dtype;
    as.B = B;
    as.KVN = KVN;
    as.QS = P.QS;
    as.KD = KD;
    as.VD = P.VD;
    as.kv_s = kv_s;
    as.paged = paged;
    as.packed = P.packed;
    as.rope = rope;
    as.nz = paged && key.rank == 5;
    as.block_num = P.block_num;
    as.block_size = P.block_size;
    MLAOPS_TRY(fia_check_antiquant(p, as, &P.aq));
  }
  if (o.vendor_ranges) {
    MLAOPS_TRY(check::value_range(op, "query", "FIA-19 head dim D", P.QD, 1, 512));
    MLAOPS_TRY(check::value_range(op, "value", "FIA-19 head dim V_D", P.VD, 1, 512));
    if (rope) MLAOPS_TRY(check::value_in(op, "queryRopeOptional", "FIA-19 rope head dim", P.DR, {64}));
  }

  // ---- FIA-08 attentionOut, FIA-16 softmaxLse ----
  {
    int64_t nvd;
    MLAOPS_CHECK(mul_ok(N, P.VD, &nvd), kParamInvalid, "%s: attentionOut: FIA-17 N * V_D overflows int64", op);
    std::vector<int64_t> want;
    switch (P.out_l) {
      case FiaLayout::kBSH: want = {B, P.QS, nvd}; break;
      case FiaLayout::kBSND: want = {B, P.QS, N, P.VD}; break;
      case FiaLayout::kBNSD: want = {B, N, P.QS, P.VD}; break;
      case FiaLayout::kNBSD: want = {N, B, P.QS, P.VD}; break;
      case FiaLayout::kTND: want = {P.QS, N, P.VD}; break;
      case FiaLayout::kNTD: want = {N, P.QS, P.VD}; break;
    }
    bool ok = out.rank == static_cast<int>(want.size());
    for (int i = 0; ok && i < out.rank; ++i) ok = out.dims[i] == want[static_cast<size_t>(i)];
    std::string ws = "[";
    for (size_t i = 0; i < want.size(); ++i) ws += (i ? ", " : "") + std::to_string(want[i]);
    MLAOPS_CHECK(ok, kParamInvalid, "%s: attentionOut: FIA-08 shape for output layout %s; allowed %s], got %s", op,
                 fia_layout_name(P.out_l), ws.c_str(), shape_str(out).c_str());
    P.out = seq_strides(out, P.out_l, P.VD);
    if (lse != nullptr) {
      bool lok;
      if (P.packed) {
        lok = lse->rank == 3 && lse->dims[0] == P.QS && lse->dims[1] == N && lse->dims[2] == 1;
        P.lse_st = {0, lse->strides[1], lse->strides[0]};
      } else {
        lok = lse->rank == 4 && lse->dims[0] == B && lse->dims[1] == N && lse->dims[2] == P.QS && lse->dims[3] == 1;
        if (lok) P.lse_st = {lse->strides[0], lse->strides[1], lse->strides[2]};
      }
      MLAOPS_CHECK(lok, kParamInvalid, "%s: softmaxLse: FIA-16 shape; allowed %s, got %s", op,
                   P.packed ? check::dims_str({P.QS, N, 1}).c_str() : check::dims_str({B, N, P.QS, 1}).c_str(),
                   shape_str(*lse).c_str());
      P.lse = true;
    }
  }
  P.q = seq_strides(q, P.in_l, P.QD);
  if (rope) P.qr = seq_strides(*p.query_rope, P.in_l, P.DR);

  // ---- FIA-14 mask ----
  P.decode_rule = !P.packed && P.QS == 1 && !rope && P.QD == P.VD;
  P.mode = p.sparse_mode;
  P.pre = p.pre_tokens;
  P.next = p.next_tokens;
  const TensorView* mask = p.atten_mask;
  MLAOPS_CHECK(P.mode == 0 || mask != nullptr, kParamInvalid,
               "%s: attenMaskOptional: FIA-14 is required for sparseMode %lld; allowed a mask, got null", op,
               (long long)P.mode);
  if (mask != nullptr) {
    MLAOPS_TRY(dtype_in(op, "attenMaskOptional", "FIA-14", *mask, {DType::kBool, DType::kInt8, DType::kUInt8}));
    if (P.mode >= 2) {
      MLAOPS_CHECK(is_2048_template(*mask), kParamInvalid,
                   "%s: attenMaskOptional: FIA-14 shape for sparseMode %lld; allowed [2048, 2048], [1, 2048, 2048] or "
                   "[1, 1, 2048, 2048], got %s",
                   op, (long long)P.mode, shape_str(*mask).c_str());
    } else {
      MLAOPS_TRY(rank_in(op, "attenMaskOptional", "FIA-14", *mask, {2, 3, 4}));
      int64_t max_q = 0, max_kv = 0;
      for (int64_t b = 0; b < B; ++b) {
        max_q = std::max(max_q, P.act_q[static_cast<size_t>(b)]);
        max_kv = std::max(max_kv, P.act_kv[static_cast<size_t>(b)]);
      }
      int64_t batch_dim = -1, rows = 0;
      const int64_t* st = mask->strides;
      if (mask->rank == 2) {
        MLAOPS_CHECK(!P.packed, kParamInvalid,
                     "%s: attenMaskOptional: FIA-14 a 2-D mask is not accepted with TND/NTD layouts; allowed rank 3 or 4, "
                     "got %s",
                     op, shape_str(*mask).c_str());
        if (P.QS == 1) {  // (B, KV_S)
          batch_dim = mask->dims[0];
          rows = 1;
          P.mask_b = st[0];
          P.mask_i = 0;
        } else {  // (Q_S, KV_S)
          rows = mask->dims[0];
          P.mask_i = st[0];
        }
        P.mask_j = st[1];
      } else if (mask->rank == 3) {
        batch_dim = mask->dims[0];
        rows = mask->dims[1];
        P.mask_b = st[0];
        P.mask_i = st[1];
        P.mask_j = st[2];
      } else {
        MLAOPS_CHECK(mask->dims[1] == 1, kParamInvalid, "%s: attenMaskOptional: FIA-14 4-D mask dim 1; allowed 1, got %lld",
                     op, (long long)mask->dims[1]);
        batch_dim = mask->dims[0];
        rows = mask->dims[2];
        P.mask_b = st[0];
        P.mask_i = st[2];
        P.mask_j = st[3];
      }
      if (batch_dim >= 0) {
        MLAOPS_CHECK(batch_dim == B || batch_dim == 1, kParamInvalid,
                     "%s: attenMaskOptional: FIA-14 batch dim; allowed B (%lld) or 1, got %lld", op, (long long)B,
                     (long long)batch_dim);
        if (batch_dim == 1) P.mask_b = 0;
      }
      MLAOPS_CHECK(rows >= max_q && mask->dim(-1) >= max_kv, kParamInvalid,
                   "%s: attenMaskOptional: FIA-14 extent; allowed >= %lld rows and >= %lld columns, got %s", op,
                   (long long)max_q, (long long)max_kv, shape_str(*mask).c_str());
      P.explicit_mask = true;
    }
  }

  // ---- FIA-18 aliasing ----
  MLAOPS_TRY(check::no_overlap(op, "FIA-18", {{"attentionOut", &out}, {"softmaxLse", lse}},
                               {{"query", &q},
                                {"key", &key},
                                {"value", &value},
                                {"queryRopeOptional", p.query_rope},
                                {"keyRopeOptional", p.key_rope},
                                {"attenMaskOptional", p.atten_mask},
                                {"blockTableOptional", p.block_table},
                                {"antiquantScaleOptional", p.antiquant_scale},
                                {"antiquantOffsetOptional", p.antiquant_offset},
                                {"keyAntiquantScaleOptional", p.key_antiquant_scale},
                                {"keyAntiquantOffsetOptional", p.key_antiquant_offset},
                                {"valueAntiquantScaleOptional", p.value_antiquant_scale},
                                {"valueAntiquantOffsetOptional", p.value_antiquant_offset}}));

  // ---- the plan: work items, KV splits, workspace ----
  int64_t max_q = 1, max_kv = 0;
  for (int64_t b = 0; b < B; ++b) {
    max_q = std::max(max_q, P.act_q[static_cast<size_t>(b)]);
    max_kv = std::max(max_kv, P.act_kv[static_cast<size_t>(b)]);
  }
  P.R = std::max<int64_t>(1, std::min<int64_t>(max_q, 128 / std::min<int64_t>(P.G, 128)));
  P.tile = 64;
  // Lane path (BF16, >= 16 query rows per item) over a cache whose key rows of one head lie far
  // apart (many heads per slot) with contiguous channels: KV is read through a dense copy of 512
  // positions per chunk (kernels/cpu/flash_attn.h), which costs 512 x (QD + DR + VD) x 2 bytes of
  // per-thread scratch; items of adjacent heads then run in groups that copy their rows together
  // (one contiguous run per position), so the items are ordered (b, r0, h).
  const bool copy = !P.fp16 && !P.aq.on && P.G * P.R >= 16 && P.k.slot > 2 * P.QD && P.k.c0 >= P.QD &&
                    P.v.c0 >= P.VD && max_kv > 128;  // more than one lane tile
  for (int64_t b = 0; b < B; ++b) {
    const int64_t aq_b = P.act_q[static_cast<size_t>(b)];
    if (copy) {
      for (int64_t r0 = 0; r0 < aq_b; r0 += P.R)
        for (int64_t h = 0; h < KVN; ++h) P.items.push_back({b, h, r0, std::min(P.R, aq_b - r0)});
    } else {
      for (int64_t h = 0; h < KVN; ++h)
        for (int64_t r0 = 0; r0 < aq_b; r0 += P.R) P.items.push_back({b, h, r0, std::min(P.R, aq_b - r0)});
    }
  }
  P.threads = std::max(1, num_threads());
  const int64_t n_items = static_cast<int64_t>(P.items.size());
  P.splits = 1;
  if (n_items > 0 && n_items < P.threads)
    P.splits = std::max<int64_t>(1, std::min<int64_t>((P.threads + n_items - 1) / n_items, max_kv / (2 * P.tile)));
  kernels::FlashShape fs;
  fs.M = P.G * P.R;
  fs.R = P.R;
  fs.QD = P.QD;
  fs.DR = P.DR;
  fs.VD = P.VD;
  fs.tile = P.tile;
  fs.fp16 = P.fp16;
  if (copy) fs.copy_rows = 512;
  P.copy_rows = fs.copy_rows;
  // groups: a power of two dividing KV_N, while every thread still gets a task
  if (copy && P.splits == 1) {
    int64_t g = 1;
    while (2 * g <= kernels::flash_group_max_items(fs) && KVN % (2 * g) == 0) g *= 2;
    while (g > 1 && n_items / g < P.threads) g /= 2;
    P.lane_group = g;
  }
  int64_t m_kq, m_v;
  MLAOPS_CHECK(product_ok({fs.M, P.QD + P.DR + 32, 3 * 2}, &m_kq) && product_ok({fs.M, P.VD + 16, 3 * 4}, &m_v),
               kParamInvalid, "%s: FIA-17 workspace size overflows int64", op);
  P.thread_bytes = round_up(kernels::flash_group_scratch_bytes(fs, P.lane_group), kWorkspaceAlign);
  WorkspaceLayout l;
  int64_t threads_total;
  MLAOPS_CHECK(mul_ok(P.thread_bytes, P.threads, &threads_total), kParamInvalid, "%s: FIA-17 workspace overflows int64",
               op);
  MLAOPS_TRY(l.add(threads_total, &P.off_thread, op));
  if (P.aq.on) {
    // per thread: a chunk of KV rows of up to 16 heads dequantised to the query dtype and two
    // attention states per head (fia_aq_thread_bytes); once per call: per-channel scales /
    // offsets as floats, [KVN, QD] and [KVN, VD] each
    const int64_t heads = std::min<int64_t>(KVN, 16);
    int64_t buf_bytes, state_bytes, all_threads, ch;
    MLAOPS_CHECK(product_ok({kFiaAqChunk, heads, P.QD + P.VD, 2}, &buf_bytes) &&
                     product_ok({heads, fs.M, P.VD + 2, 8}, &state_bytes),
                 kParamInvalid, "%s: FIA-17 workspace overflows int64", op);
    const int64_t per_thread = fia_aq_thread_bytes(heads, fs.M, P.QD, P.VD);
    MLAOPS_CHECK(mul_ok(round_up(per_thread, kWorkspaceAlign), P.threads, &all_threads) &&
                     product_ok({KVN, P.QD + P.VD, 2, 4}, &ch),
                 kParamInvalid, "%s: FIA-17 workspace overflows int64", op);
    P.aq_thread_bytes = round_up(per_thread, kWorkspaceAlign);
    MLAOPS_TRY(l.add(all_threads, &P.off_aq_thread, op));
    MLAOPS_TRY(l.add(ch, &P.off_aq_ch, op));
  }
  if (P.splits > 1) {
    P.partial_o_floats = fs.M * P.VD;
    P.partial_ml_floats = fs.M;
    int64_t bytes;
    MLAOPS_CHECK(product_ok({n_items, P.splits, P.partial_o_floats + 2 * P.partial_ml_floats, 4}, &bytes), kParamInvalid,
                 "%s: FIA-17 workspace overflows int64", op);
    MLAOPS_TRY(l.add(bytes, &P.off_partial, op));
  }
  P.workspace_bytes = n_items == 0 ? 0 : l.total();
  return kSuccess;
}

// Row interval deltas of the mask rule for batch b (spec §2.5): valid iff
// i + lo <= j <= i + hi (before the explicit mask).
void fia_row_deltas(const FiaPlan& P, int64_t b, int64_t* lo, int64_t* hi) {
  const __int128 big = static_cast<__int128>(1) << 62;
  const __int128 diag = static_cast<__int128>(P.act_kv[static_cast<size_t>(b)]) - P.act_q[static_cast<size_t>(b)];
  __int128 l = -big, h = big;
  if (!P.decode_rule) {
    switch (P.mode) {
      case 0:
        if (P.explicit_mask) {
          l = -static_cast<__int128>(P.pre);
          h = P.next;
        }
        break;
      case 1: break;
      case 2: h = 0; break;
      case 3: h = diag; break;
      default:
        l = diag - P.pre;
        h = diag + P.next;
        break;
    }
  }
  *lo = clamp62(l);
  *hi = clamp62(h);
}

}  // namespace mlaops
