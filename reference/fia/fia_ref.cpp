// Float64 golden reference of FusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md);
// conventions in fia_ref.h. Uses only its own helpers (ref_util.h).
//
// Structure (mirrors the golden pseudo-code):
//   0. scope checks (features outside this build -> "not supported yet"), empty-tensor rules
//   1. layouts and shapes: query / key / value / rope / output / lse, contiguous or paged KV
//   2. per-batch lengths actQ[b], actKV[b] (+ starts of packed TND/NTD batches); mask form
//      (explicit full mask or the analytic 2048 template); pseShift and learnableSink
//   3. block-table pre-pass
//   4. per batch: gather canonical K[h][j][D+DR], V[h][j][V_D]; per head and query row: scores in
//      double (+ pse), mask, softmax (+ sink), P*V, lse; rows without any valid column -> 0 / +inf
// Every check runs before the first write, so a rejected call leaves the outputs untouched.
#include "reference/fia/fia_ref.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "reference/fia/fia_full_quant_ref.h"
#include "reference/fia/fia_inner_precise_ref.h"
#include "reference/fia/fia_left_padding_ref.h"
#include "reference/fia/fia_mla_quant_ref.h"
#include "reference/fia/fia_prefix_ref.h"
#include "reference/fia/fia_ref_access.h"
#include "reference/fia/fia_tensor_list_ref.h"
#include "reference/common/ref_util.h"

namespace mlaops {

// ------------------------------------------------------------------------------------------
// Reference.
// ------------------------------------------------------------------------------------------

namespace {

using namespace fia_ref;  // the access helpers (reference/fia/fia_ref_access.h)
using ref::is_half;

// Saturating position arithmetic for the band rules (pre/next may be near INT64 limits).
using Wide = __int128;

}  // namespace

Status fused_infer_attention_score_v4_ref(const FiaParams& p) {
  if (p.key.size() > 1 || p.value.size() > 1) return fia_tensor_list_ref(p);  // its own file
  if (fia_ref_is_full_quant(p)) return fia_full_quant_ref(p);  // INT8 query (fia_full_quant_ref.h)
  // ---------- 0. scope, presence, empty tensors ----------
  if (p.dequant_scale_query != nullptr) return fia_mla_quant_ref(p);  // MLA full quant (its own file)
  MLAOPS_TRY(check_scope(p));
  // shared prefix (its own file); actualSharedPrefixLen without the prefix tensors is ignored
  if (p.key_shared_prefix != nullptr || p.value_shared_prefix != nullptr) return fia_prefix_ref(p);
  MLAOPS_CHECK(!p.key.empty() && !p.value.empty(), kParamNullptr, "%s: key and value lists must not be empty", kOp);
  const TensorView& q = p.query;
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  const TensorView& out = p.attention_out;
  const TensorView* lse = p.softmax_lse_flag ? p.softmax_lse : nullptr;
  MLAOPS_CHECK(!p.softmax_lse_flag || p.softmax_lse != nullptr, kParamNullptr,
               "%s: softmaxLse: required when softmaxLseFlag is true", kOp);
  for (const TensorView* t : {&q, &key, &value, &out})
    for (int i = 0; i < t->rank; ++i)
      MLAOPS_CHECK(t->dims[i] >= 0, kParamInvalid, "%s: negative dim %lld", kOp, static_cast<long long>(t->dims[i]));
  // Empty tensors: an empty query or output -> nothing to do; empty key/value -> zeros / +inf lse.
  if (q.empty() || out.empty()) return kSuccess;
  MLAOPS_CHECK(q.data != nullptr && out.data != nullptr, kParamNullptr, "%s: query/attentionOut data is null", kOp);
  const bool post_quant = p.quant_scale2 != nullptr;
  const bool out_dtype_ok = is_half(out.dtype) || out.dtype == DType::kFloat32 || out.dtype == DType::kFloat64 ||
                            (post_quant && out.dtype == DType::kInt8);
  MLAOPS_CHECK(out_dtype_ok, kParamInvalid, "%s: attentionOut dtype; allowed FLOAT16, BF16 (FLOAT, DOUBLE), got %s",
               kOp, ref::type_name(out.dtype));
  if (lse != nullptr) {
    MLAOPS_CHECK(lse->dtype == DType::kFloat32, kParamInvalid, "%s: softmaxLse dtype; allowed FLOAT, got %s", kOp,
                 ref::type_name(lse->dtype));
    MLAOPS_CHECK(lse->empty() || lse->data != nullptr, kParamNullptr, "%s: softmaxLse data is null", kOp);
  }
  // Post-quant INT8 output (docs/ops/fused_infer_attention_score.md "Post-quant INT8 output"):
  // the scale / offset of output channel (n, d): per tensor one element, per channel N * V_D
  // elements in (n, d) order (any of the per-layout shapes); read through the strides.
  auto pq_param = [&](const TensorView* t, int64_t n, int64_t d, int64_t VDc) -> double {
    if (t == nullptr) return 0.0;
    const int64_t ne = t->numel();
    const int64_t lin = ne == 1 ? 0 : n * VDc + d;
    return ref::load(*t, ref::linear_offset(*t, lin));
  };
  if (post_quant) {
    for (const TensorView* t : {p.quant_scale2, p.quant_offset2}) {
      if (t == nullptr) continue;
      MLAOPS_CHECK(t->dtype == DType::kFloat32 || t->dtype == DType::kBFloat16, kParamInvalid,
                   "%s: quantScale2 / quantOffset2 dtype; allowed FLOAT, BF16, got %s", kOp, ref::type_name(t->dtype));
      MLAOPS_CHECK(t->numel() >= 1 && t->data != nullptr, kParamInvalid, "%s: quantScale2 / quantOffset2 empty or null",
                   kOp);
    }
  }
  if (key.empty() || value.empty()) {
    if (post_quant) {
      // Every row is empty: x = 0 quantised per channel; the channel is the output's (n, d):
      // the coordinates of element i, n at the output layout's N position (BSH: h / V_D).
      FiaLayout il = FiaLayout::kBSH, ol = FiaLayout::kBSH;
      MLAOPS_CHECK(ref::layout_from_string(p.input_layout, &il, &ol), kParamInvalid, "%s: inputLayout \"%.64s\"", kOp,
                   p.input_layout.c_str());
      const int64_t N = p.num_heads;
      MLAOPS_CHECK(N > 0 && out.rank >= 3, kParamInvalid, "%s: numHeads / attentionOut rank", kOp);
      const int n_pos = ol == FiaLayout::kBSND ? 2 : (ol == FiaLayout::kBNSD || ol == FiaLayout::kTND) ? 1 : 0;
      const int64_t VDo = ol == FiaLayout::kBSH ? out.dims[2] / N : out.dims[out.rank - 1];
      const int64_t on = out.numel();
      for (int64_t i = 0; i < on; ++i) {
        std::vector<int64_t> idx(static_cast<size_t>(out.rank));
        int64_t r = i;
        for (int a = out.rank - 1; a >= 0; --a) {
          idx[static_cast<size_t>(a)] = r % out.dims[a];
          r /= out.dims[a];
        }
        const int64_t last = idx[static_cast<size_t>(out.rank - 1)];
        const int64_t n = ol == FiaLayout::kBSH ? last / VDo : idx[static_cast<size_t>(n_pos)];
        const int64_t d = ol == FiaLayout::kBSH ? last % VDo : last;
        ref::store(out, ref::linear_offset(out, i),
                   ref::post_quant_int8(0.0, pq_param(p.quant_scale2, n, d, VDo), pq_param(p.quant_offset2, n, d, VDo)));
      }
      if (lse != nullptr) fill_all(*lse, std::numeric_limits<double>::infinity());
      return kSuccess;
    }
    fill_all(out, 0.0);
    if (lse != nullptr) fill_all(*lse, std::numeric_limits<double>::infinity());
    return kSuccess;
  }
  MLAOPS_CHECK(key.data != nullptr && value.data != nullptr, kParamNullptr, "%s: key/value data is null", kOp);

  // ---------- 1. attributes, layouts, shapes ----------
  FiaLayout in_l = FiaLayout::kBSH, out_l = FiaLayout::kBSH;
  MLAOPS_CHECK(ref::layout_from_string(p.input_layout, &in_l, &out_l), kParamInvalid,
               "%s: inputLayout: allowed BSH, BSND, BNSD, TND, NTD, BSH_BNSD, BSND_BNSD, BNSD_BSND, NTD_TND, TND_NTD, "
               "BSH_NBSD, BSND_NBSD, BNSD_NBSD, got \"%.64s\"", kOp, p.input_layout.c_str());
  const int64_t N = p.num_heads;
  MLAOPS_CHECK(N > 0, kParamInvalid, "%s: numHeads must be > 0, got %lld", kOp, static_cast<long long>(N));
  MLAOPS_CHECK(p.num_key_value_heads >= 0, kParamInvalid, "%s: numKeyValueHeads must be >= 0, got %lld", kOp,
               static_cast<long long>(p.num_key_value_heads));
  const int64_t KVN = p.num_key_value_heads == 0 ? N : p.num_key_value_heads;
  MLAOPS_CHECK(N % KVN == 0, kParamInvalid, "%s: numHeads (%lld) must be a multiple of numKeyValueHeads (%lld)", kOp,
               static_cast<long long>(N), static_cast<long long>(KVN));
  const int64_t G = N / KVN;
  MLAOPS_CHECK((p.sparse_mode >= 0 && p.sparse_mode <= 4) || p.sparse_mode == 9, kParamInvalid,
               "%s: sparseMode: allowed 0..4, 9, got %lld", kOp,
               static_cast<long long>(p.sparse_mode));
  MLAOPS_CHECK(p.inner_precise >= 0 && p.inner_precise <= 3, kParamInvalid,
               "%s: innerPrecise: allowed 0..3, got %lld", kOp, static_cast<long long>(p.inner_precise));
  MLAOPS_CHECK(is_half(q.dtype), kParamInvalid, "%s: query dtype; allowed FLOAT16, BF16, got %s", kOp,
               ref::type_name(q.dtype));
  const bool kv_int4 = key.dtype == DType::kInt32 && value.dtype == DType::kInt32;  // packed INT4
  const bool kv_int8 = (key.dtype == DType::kInt8 && value.dtype == DType::kInt8) || kv_int4;  // dequantised
  MLAOPS_CHECK((key.dtype == q.dtype && value.dtype == q.dtype) || kv_int8, kParamInvalid,
               "%s: key/value dtype must equal the query dtype (%s) or both be INT8 / INT32 (INT4), got %s / %s", kOp,
               ref::type_name(q.dtype), ref::type_name(key.dtype), ref::type_name(value.dtype));
  const bool sep_aq = p.key_antiquant_scale != nullptr && p.value_antiquant_scale != nullptr;
  MLAOPS_CHECK(!kv_int8 || sep_aq || p.antiquant_scale != nullptr, kParamInvalid,
               "%s: INT8 key/value need antiquant scales", kOp);
  AntiquantRef aq_k, aq_v;
  if (kv_int8) {
    for (int w = 0; w < 2; ++w) {
      AntiquantRef& a = w == 0 ? aq_k : aq_v;
      a.which = w;
      a.combined = !sep_aq;
      a.scale = sep_aq ? (w == 0 ? p.key_antiquant_scale : p.value_antiquant_scale) : p.antiquant_scale;
      a.offset = sep_aq ? (w == 0 ? p.key_antiquant_offset : p.value_antiquant_offset) : p.antiquant_offset;
      a.mode = sep_aq ? (w == 0 ? p.key_antiquant_mode : p.value_antiquant_mode) : p.antiquant_mode;
      a.KVN = p.num_key_value_heads == 0 ? p.num_heads : p.num_key_value_heads;
      a.block_size = p.block_size;
      MLAOPS_CHECK(a.mode >= 0 && a.mode <= 5 && (sep_aq || a.mode <= 1), kParamInvalid,
                   "%s: antiquant mode %lld is not supported", kOp, static_cast<long long>(a.mode));
    }
  }
  const bool rope = p.query_rope != nullptr || p.key_rope != nullptr;
  MLAOPS_CHECK(!rope || (p.query_rope != nullptr && p.key_rope != nullptr), kParamInvalid,
               "%s: queryRope and keyRope must be given together", kOp);
  if (rope) {
    MLAOPS_CHECK(p.query_rope->dtype == q.dtype && p.key_rope->dtype == q.dtype, kParamInvalid,
                 "%s: queryRope/keyRope dtype must equal the query dtype (%s), got %s / %s", kOp, ref::type_name(q.dtype),
                 ref::type_name(p.query_rope->dtype), ref::type_name(p.key_rope->dtype));
    MLAOPS_CHECK((p.query_rope->empty() || p.query_rope->data != nullptr) &&
                     (p.key_rope->empty() || p.key_rope->data != nullptr),
                 kParamNullptr,
                 "%s: queryRope/keyRope data is null", kOp);
  }

  const bool packed = ref::layout_packed(in_l);
  SeqShape qs;
  MLAOPS_TRY(parse_seq(q, in_l, N, "query", &qs));
  const int64_t QS = qs.s;  // Q_S, or T_q when packed
  const int64_t QD = qs.d;
  int64_t DR = 0;
  if (rope) {
    SeqShape rs;
    MLAOPS_TRY(parse_seq(*p.query_rope, in_l, N, "queryRope", &rs));
    MLAOPS_CHECK(rs.b == qs.b && rs.s == qs.s, kParamInvalid, "%s: queryRope batch/sequence must equal the query's", kOp);
    DR = rs.d;
  }

  // Batch and query lengths.
  int64_t B = 0;
  std::vector<int64_t> act_q, q_start;
  if (packed) {
    MLAOPS_CHECK(p.actual_seq_lengths != nullptr, kParamInvalid, "%s: actualSeqLengths: required for TND/NTD", kOp);
    B = static_cast<int64_t>(p.actual_seq_lengths->size());
    MLAOPS_TRY(decode_cumulative(p.actual_seq_lengths, B, QS, "actualSeqLengths", &act_q, &q_start));
  } else {
    B = qs.b;
    if (QS == 1) {
      act_q.assign(static_cast<size_t>(B), 1);  // Q_S == 1, non-TND: actualSeqLengths ignored (IFA path)
    } else {
      MLAOPS_TRY(decode_lengths(p.actual_seq_lengths, B, QS, "actualSeqLengths", &act_q));
    }
    q_start.assign(static_cast<size_t>(B), 0);
  }

  // Key / value / keyRope: contiguous or paged.
  const bool paged = p.block_table != nullptr;
  SeqAccess k_seq, v_seq, kr_seq;
  PagedAccess k_pg, v_pg, kr_pg;
  int64_t KD = 0, VD = 0, kv_extent = 0;  // kv_extent: KV_S (T_kv when packed; logical max when paged)
  std::vector<int64_t> act_kv, kv_start(static_cast<size_t>(B), 0);
  const TensorView* bt = p.block_table;
  if (paged) {
    MLAOPS_TRY(parse_paged(key, KVN, "key", &k_pg));
    MLAOPS_TRY(parse_paged(value, KVN, "value", &v_pg));
    KD = k_pg.d * (kv_int4 ? 8 : 1);
    VD = v_pg.d * (kv_int4 ? 8 : 1);
    MLAOPS_CHECK(v_pg.block_num == k_pg.block_num && v_pg.block_size == k_pg.block_size, kParamInvalid,
                 "%s: value: paged blockNum/blockSize must equal key's", kOp);
    if (rope) {
      MLAOPS_TRY(parse_paged(*p.key_rope, KVN, "keyRope", &kr_pg));
      MLAOPS_CHECK(kr_pg.block_num == k_pg.block_num && kr_pg.block_size == k_pg.block_size, kParamInvalid,
                   "%s: keyRope: paged blockNum/blockSize must equal key's", kOp);
      MLAOPS_CHECK(kr_pg.d == DR, kParamInvalid, "%s: keyRope head dim must equal queryRope's (%lld), got %lld", kOp,
                   static_cast<long long>(DR), static_cast<long long>(kr_pg.d));
    }
    MLAOPS_CHECK(p.block_size > 0 && p.block_size == k_pg.block_size, kParamInvalid,
                 "%s: blockSize must equal the cache block size (%lld), got %lld", kOp,
                 static_cast<long long>(k_pg.block_size), static_cast<long long>(p.block_size));
    MLAOPS_CHECK(bt->rank == 2 && bt->dtype == DType::kInt32, kParamInvalid,
                 "%s: blockTable: allowed INT32 rank 2, got %s rank %d", kOp, ref::type_name(bt->dtype), bt->rank);
    MLAOPS_CHECK(bt->dims[0] == B && bt->dims[1] >= 0, kParamInvalid, "%s: blockTable dim 0 must equal B (%lld), got %lld",
                 kOp, static_cast<long long>(B), static_cast<long long>(bt->dims[0]));
    MLAOPS_CHECK(ref::mul_ok(bt->dims[1], k_pg.block_size, &kv_extent), kParamInvalid, "%s: blockTable extent overflows", kOp);
    MLAOPS_CHECK(p.actual_seq_lengths_kv != nullptr, kParamInvalid,
                 "%s: actualSeqLengthsKv: required with paged attention", kOp);
    MLAOPS_TRY(decode_lengths(p.actual_seq_lengths_kv, B, kv_extent, "actualSeqLengthsKv", &act_kv));
    MLAOPS_CHECK(B == 0 || bt->data != nullptr, kParamNullptr, "%s: blockTable data is null", kOp);
  } else {
    SeqShape ks, vs;
    MLAOPS_TRY(parse_seq(key, in_l, KVN, "key", &ks));
    MLAOPS_TRY(parse_seq(value, in_l, KVN, "value", &vs));
    MLAOPS_CHECK(ks.b == qs.b && vs.b == qs.b, kParamInvalid,
                 "%s: key/value batch must equal the query batch (%lld), got %lld / %lld", kOp,
                 static_cast<long long>(qs.b), static_cast<long long>(ks.b), static_cast<long long>(vs.b));
    MLAOPS_CHECK(vs.s == ks.s, kParamInvalid, "%s: value sequence (%lld) must equal key sequence (%lld)", kOp,
                 static_cast<long long>(vs.s), static_cast<long long>(ks.s));
    KD = ks.d * (kv_int4 ? 8 : 1);
    VD = vs.d * (kv_int4 ? 8 : 1);
    kv_extent = ks.s;
    k_seq = {&key, in_l, ks.d};
    v_seq = {&value, in_l, vs.d};
    if (rope) {
      SeqShape krs;
      MLAOPS_TRY(parse_seq(*p.key_rope, in_l, KVN, "keyRope", &krs));
      MLAOPS_CHECK(krs.b == ks.b && krs.s == ks.s, kParamInvalid, "%s: keyRope batch/sequence must equal the key's", kOp);
      MLAOPS_CHECK(krs.d == DR, kParamInvalid, "%s: keyRope head dim must equal queryRope's (%lld), got %lld", kOp,
                   static_cast<long long>(DR), static_cast<long long>(krs.d));
      kr_seq = {p.key_rope, in_l, DR};
    }
    if (packed) {
      MLAOPS_TRY(decode_cumulative(p.actual_seq_lengths_kv, B, kv_extent, "actualSeqLengthsKv", &act_kv, &kv_start));
    } else {
      MLAOPS_TRY(decode_lengths(p.actual_seq_lengths_kv, B, kv_extent, "actualSeqLengthsKv", &act_kv));
    }
  }
  MLAOPS_CHECK(KD == QD, kParamInvalid, "%s: key head dim must equal the query head dim (%lld), got %lld", kOp,
               static_cast<long long>(QD), static_cast<long long>(KD));
  FiaRefLeftPad lp;  // left padding (reference/fia/fia_left_padding_ref.h)
  MLAOPS_TRY(fia_ref_left_padding(p, B, QS, kv_extent, paged, packed, rope, act_q, &act_kv, &lp));
  if (lp.on)
    for (int64_t b = 0; b < B; ++b) kv_start[static_cast<size_t>(b)] = lp.kv(b);

  // Output and lse shapes.
  {
    int64_t want[4] = {0, 0, 0, 0};
    int want_rank = 4;
    int64_t nvd = 0;
    MLAOPS_CHECK(ref::mul_ok(N, VD, &nvd), kParamInvalid, "%s: N*V_D overflows", kOp);
    switch (out_l) {
      case FiaLayout::kBSH: want_rank = 3; want[0] = B; want[1] = QS; want[2] = nvd; break;
      case FiaLayout::kBSND: want[0] = B; want[1] = QS; want[2] = N; want[3] = VD; break;
      case FiaLayout::kBNSD: want[0] = B; want[1] = N; want[2] = QS; want[3] = VD; break;
      case FiaLayout::kNBSD: want[0] = N; want[1] = B; want[2] = QS; want[3] = VD; break;
      case FiaLayout::kTND: want_rank = 3; want[0] = QS; want[1] = N; want[2] = VD; break;
      case FiaLayout::kNTD: want_rank = 3; want[0] = N; want[1] = QS; want[2] = VD; break;
    }
    bool ok = out.rank == want_rank;
    for (int i = 0; ok && i < want_rank; ++i) ok = out.dims[i] == want[i];
    MLAOPS_CHECK(ok, kParamInvalid, "%s: attentionOut shape for output layout %s; got %s", kOp, ref::layout_text(out_l),
                 ref::shape_str(out).c_str());
    if (lse != nullptr) {
      // (B, N, Q_S, 1); packed inputs: (T, N, 1). The aclnn doc names only TND and NTD_TND for the
      // 3-D form; for NTD and TND_NTD we follow the torch v2 glue, which also allocates (T, N, 1).
      const int64_t lw4[4] = {B, N, QS, 1};
      const int64_t lw3[3] = {QS, N, 1};
      const int lr = packed ? 3 : 4;
      bool lok = lse->rank == lr;
      for (int i = 0; lok && i < lr; ++i) lok = lse->dims[i] == (packed ? lw3[i] : lw4[i]);
      MLAOPS_CHECK(lok, kParamInvalid, "%s: softmaxLse shape; allowed %s, got %s", kOp,
                   packed ? "(T, N, 1)" : "(B, N, Q_S, 1)", ref::shape_str(*lse).c_str());
    }
  }

  // ---------- 2. masks ----------
  // Decode without rope (IFA path): sparseMode / preTokens / nextTokens are ignored and only an
  // explicit mask (sparse 0/1 form, whatever the sparse mode) applies; a 2048 template of sparse
  // 2/3/4 masks nothing.
  const bool decode_rule = !packed && QS == 1 && !rope && QD == VD;
  const int64_t mode = p.sparse_mode;
  const TensorView* mask = p.atten_mask;
  MLAOPS_CHECK(mode == 0 || mask != nullptr, kParamInvalid, "%s: attenMask: required for sparseMode %lld", kOp,
               static_cast<long long>(mode));
  MaskAccess ma;
  TreeAccess tree;
  bool use_explicit_mask = false;
  if (mode == 9) {
    MLAOPS_CHECK(mask->dtype == DType::kBool || mask->dtype == DType::kInt8 || mask->dtype == DType::kUInt8,
                 kParamInvalid, "%s: attenMask dtype; allowed BOOL, INT8, UINT8, got %s", kOp, ref::type_name(mask->dtype));
    int64_t total = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t s1 = act_q[static_cast<size_t>(b)], s2 = act_kv[static_cast<size_t>(b)];
      MLAOPS_CHECK(s1 <= s2, kParamInvalid, "%s: tree mask needs actQ <= actKV; batch %lld has %lld > %lld", kOp,
                   static_cast<long long>(b), static_cast<long long>(s1), static_cast<long long>(s2));
      tree.start.push_back(total);
      total += s1 * s1;
    }
    if (packed) {
      MLAOPS_CHECK(mask->rank == 1 && mask->dims[0] == total, kParamInvalid,
                   "%s: tree attenMask with a packed layout; allowed (%lld), got %s", kOp, static_cast<long long>(total),
                   ref::shape_str(*mask).c_str());
    } else {
      MLAOPS_CHECK(mask->rank == 3 && mask->dims[0] == B && mask->dims[1] == QS && mask->dims[2] == QS, kParamInvalid,
                   "%s: tree attenMask; allowed (B, Q_S, Q_S) = (%lld, %lld, %lld), got %s", kOp,
                   static_cast<long long>(B), static_cast<long long>(QS), static_cast<long long>(QS),
                   ref::shape_str(*mask).c_str());
    }
    MLAOPS_CHECK(mask->empty() || mask->data != nullptr, kParamNullptr, "%s: attenMask data is null", kOp);
    tree.t = mask;
  } else if (mask != nullptr) {
    MLAOPS_CHECK(mask->dtype == DType::kBool || mask->dtype == DType::kInt8 || mask->dtype == DType::kUInt8,
                 kParamInvalid, "%s: attenMask dtype; allowed BOOL, INT8, UINT8, got %s", kOp, ref::type_name(mask->dtype));
    // Decode without rope ignores the sparse mode: with sparseMode 2/3/4 a mask that is not the
    // 2048 template is read as an explicit (sparse 0/1 form) mask and applied.
    if (mode >= 2 && !(decode_rule && !is_2048_template(*mask))) {
      MLAOPS_CHECK(is_2048_template(*mask), kParamInvalid,
                   "%s: attenMask for sparseMode %lld; allowed (2048, 2048), (1, 2048, 2048), (1, 1, 2048, 2048), got %s",
                   kOp, static_cast<long long>(mode), ref::shape_str(*mask).c_str());
    } else {
      MLAOPS_CHECK(mask->rank >= 2 && mask->rank <= 4, kParamInvalid, "%s: attenMask rank; allowed 2, 3, 4, got %d", kOp,
                   mask->rank);
      for (int i = 0; i < mask->rank; ++i)
        MLAOPS_CHECK(mask->dims[i] >= 0, kParamInvalid, "%s: attenMask: negative dim", kOp);
      int64_t max_q = 0, max_kv = 0;
      for (int64_t b = 0; b < B; ++b) {
        max_q = std::max(max_q, act_q[static_cast<size_t>(b)]);
        max_kv = std::max(max_kv, act_kv[static_cast<size_t>(b)]);
      }
      ma.t = mask;
      int64_t batch_dim = -1, rows = 0;
      if (mask->rank == 2) {
        MLAOPS_CHECK(!packed, kParamInvalid, "%s: 2-D attenMask is not accepted with TND/NTD layouts", kOp);
        if (QS == 1) {
          ma.rank2_rows_are_batch = true;  // (B, KV_S)
          batch_dim = mask->dims[0];
          rows = 1;
        } else {
          rows = mask->dims[0];  // (Q_S, KV_S), shared by all batches
        }
      } else if (mask->rank == 3) {
        batch_dim = mask->dims[0];
        rows = mask->dims[1];
      } else {
        MLAOPS_CHECK(mask->dims[1] == 1, kParamInvalid, "%s: 4-D attenMask dim 1; allowed 1, got %lld", kOp,
                     static_cast<long long>(mask->dims[1]));
        batch_dim = mask->dims[0];
        rows = mask->dims[2];
      }
      if (batch_dim >= 0) {
        MLAOPS_CHECK(batch_dim == B || batch_dim == 1, kParamInvalid,
                     "%s: attenMask batch dim; allowed B (%lld) or 1, got %lld", kOp, static_cast<long long>(B),
                     static_cast<long long>(batch_dim));
        ma.batch_broadcast = batch_dim == 1;
      }
      MLAOPS_CHECK(rows >= max_q && mask->dim(-1) >= max_kv, kParamInvalid,
                   "%s: attenMask %s too small; needs >= %lld rows and >= %lld columns", kOp,
                   ref::shape_str(*mask).c_str(), static_cast<long long>(max_q), static_cast<long long>(max_kv));
      MLAOPS_CHECK(mask->empty() || mask->data != nullptr, kParamNullptr, "%s: attenMask data is null", kOp);
      use_explicit_mask = true;
    }
  }

  // ---------- 2b. pseShift, learnableSink ----------
  // Accepted with every layout, mask form, paged or INT8 KV and the decode rule (the operator's
  // own checks enforce the vendor's exclusions); each is checked for exactly what is read.
  int64_t max_act_q = 0, max_act_kv = 0;
  for (int64_t b = 0; b < B; ++b) {
    max_act_q = std::max(max_act_q, act_q[static_cast<size_t>(b)]);
    max_act_kv = std::max(max_act_kv, act_kv[static_cast<size_t>(b)]);
  }
  PseAccess pse;
  if (p.pse_shift != nullptr) {
    const TensorView& t = *p.pse_shift;
    MLAOPS_CHECK(is_half(t.dtype), kParamInvalid, "%s: pseShift dtype; allowed FLOAT16, BF16, got %s", kOp,
                 ref::type_name(t.dtype));
    MLAOPS_CHECK(t.rank == 4, kParamInvalid, "%s: pseShift rank; allowed 4 (B or 1, N, S1p, S2p), got %d", kOp,
                 t.rank);
    int64_t numel = 0;
    MLAOPS_CHECK(ref::numel_of(t, &numel), kParamInvalid, "%s: pseShift shape %s: negative dim or size overflow", kOp,
                 ref::shape_str(t).c_str());
    MLAOPS_CHECK(t.dims[0] == B || t.dims[0] == 1, kParamInvalid, "%s: pseShift dim 0; allowed B (%lld) or 1, got %lld",
                 kOp, static_cast<long long>(B), static_cast<long long>(t.dims[0]));
    MLAOPS_CHECK(t.dims[1] == N, kParamInvalid, "%s: pseShift dim 1; allowed N (%lld), got %lld", kOp,
                 static_cast<long long>(N), static_cast<long long>(t.dims[1]));
    MLAOPS_CHECK(t.dims[2] >= max_act_q && t.dims[3] >= max_act_kv, kParamInvalid,
                 "%s: pseShift %s too small; needs >= %lld rows (max actQ) and >= %lld columns (max actKV)", kOp,
                 ref::shape_str(t).c_str(), static_cast<long long>(max_act_q), static_cast<long long>(max_act_kv));
    MLAOPS_CHECK(numel == 0 || t.data != nullptr, kParamNullptr, "%s: pseShift data is null", kOp);
    pse.t = &t;
    pse.batch_broadcast = t.dims[0] == 1;
  }
  std::vector<double> sink;  // one logit per query head; empty: no sink
  if (p.learnable_sink != nullptr) {
    const TensorView& t = *p.learnable_sink;
    MLAOPS_CHECK(is_half(t.dtype), kParamInvalid, "%s: learnableSink dtype; allowed FLOAT16, BF16, got %s", kOp,
                 ref::type_name(t.dtype));
    MLAOPS_CHECK(t.rank == 1 && t.dims[0] == N, kParamInvalid, "%s: learnableSink shape; allowed (N) = (%lld), got %s",
                 kOp, static_cast<long long>(N), ref::shape_str(t).c_str());
    MLAOPS_CHECK(t.data != nullptr, kParamNullptr, "%s: learnableSink data is null", kOp);
    sink.resize(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) sink[static_cast<size_t>(n)] = ref::load(t, n * t.strides[0]);
  }

  const Wide pre = p.pre_tokens, next = p.next_tokens;
  bool rule_only = false;  // legacy rows (fia_inner_precise_ref.h): the rule without the explicit mask
  // Row i / position j of batch b's windows; the explicit mask is read at the padded coordinates.
  auto is_masked = [&](int64_t b, int64_t i, int64_t j) -> bool {
    if (mode == 9) return tree.masked(b, i, j, act_q[static_cast<size_t>(b)], act_kv[static_cast<size_t>(b)]);
    const int64_t mi = i + lp.q(b), mj = j + lp.kv(b);
    if (decode_rule) return use_explicit_mask && !rule_only && ma.masked(b, mi, mj);
    const Wide diag = static_cast<Wide>(act_kv[static_cast<size_t>(b)]) - act_q[static_cast<size_t>(b)];  // S2 - S1
    const Wide wi = i, wj = j;
    switch (mode) {
      case 0:
        if (!use_explicit_mask) return false;
        if (lp.on) return !rule_only && ma.masked(b, mi, mj);  // left padding: pre / next ignored
        return (!rule_only && ma.masked(b, mi, mj)) || wj > wi + next || wj < wi - pre;
      case 1: return !rule_only && ma.masked(b, mi, mj);
      case 2: return wj > wi;
      case 3: return wj > wi + diag;
      default: return wj > wi + diag + next || wj < wi + diag - pre;
    }
  };

  // ---------- 3. block-table pre-pass (read only) ----------
  if (paged) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t nblk = ref::ceil_div(act_kv[static_cast<size_t>(b)], k_pg.block_size);
      for (int64_t k = 0; k < nblk; ++k) {
        const int64_t idx[2] = {b, k};
        const int64_t id = ref::load_int(*bt, ref::offset(*bt, idx));
        MLAOPS_CHECK(id >= 0 && id < k_pg.block_num, kParamInvalid,
                     "%s: blockTable[%lld][%lld] = %lld is out of range [0, %lld)", kOp, static_cast<long long>(b),
                     static_cast<long long>(k), static_cast<long long>(id), static_cast<long long>(k_pg.block_num));
      }
    }
  }

  // Scratch sizes (per batch: K_N * actKV * max(Q_D + DR, V_D) doubles) must not overflow.
  {
    int64_t max_kv = 0, scratch = 0;
    for (int64_t b = 0; b < B; ++b) max_kv = std::max(max_kv, act_kv[static_cast<size_t>(b)]);
    MLAOPS_CHECK(ref::mul_ok(KVN, max_kv, &scratch) && ref::mul_ok(scratch, std::max(QD + DR, VD), &scratch) &&
                     ref::mul_ok(scratch, 8, &scratch),
                 kParamInvalid, "%s: KV_N * actKV * D is too large", kOp);
  }

  // ---------- 4. attention ----------
  const SeqAccess q_acc{&q, in_l, QD};
  const SeqAccess qr_acc{p.query_rope, in_l, DR};
  const SeqAccess o_acc{&out, out_l, VD};
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t KF = QD + DR;  // full score head dim (nope + rope)
  auto write_lse = [&](int64_t b, int64_t n, int64_t i, double v) {
    if (lse == nullptr) return;
    if (packed) {
      const int64_t idx[3] = {q_start[static_cast<size_t>(b)] + i, n, 0};
      ref::store(*lse, ref::offset(*lse, idx), v);
    } else {
      const int64_t idx[4] = {b, n, i, 0};
      ref::store(*lse, ref::offset(*lse, idx), v);
    }
  };
  aq_k.D = QD;
  aq_v.D = VD;
  if (kv_int8) {
    aq_k.load_params();
    aq_v.load_params();
  }
  std::vector<double> kc, vc, qv(static_cast<size_t>(KF)), sc, acc(static_cast<size_t>(VD));
  std::vector<char> valid;
  // innerPrecise (fia_inner_precise_ref.h): the FP16 emulation, legacy rows
  const bool emul16 = fia_ref_fp16_softmax(p, decode_rule);
  const bool legacy = fia_ref_legacy_rows(p, use_explicit_mask, lp.on);
  std::vector<double> dots;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s1 = act_q[static_cast<size_t>(b)];
    const int64_t s2 = act_kv[static_cast<size_t>(b)];
    const int64_t q0 = q_start[static_cast<size_t>(b)];
    const int64_t kv0 = kv_start[static_cast<size_t>(b)];
    // Canonical K[h][j][0..KF) (nope then rope) and V[h][j][0..VD) of this batch.
    kc.assign(static_cast<size_t>(KVN * s2 * KF), 0.0);
    vc.assign(static_cast<size_t>(KVN * s2 * VD), 0.0);
    for (int64_t h = 0; h < KVN; ++h) {
      for (int64_t j = 0; j < s2; ++j) {
        double* kr = &kc[static_cast<size_t>((h * s2 + j) * KF)];
        double* vr = &vc[static_cast<size_t>((h * s2 + j) * VD)];
        if (paged) {
          const int64_t idx[2] = {b, j / k_pg.block_size};
          const int64_t blk = ref::load_int(*bt, ref::offset(*bt, idx));
          const int64_t slot = j % k_pg.block_size;
          for (int64_t d = 0; d < QD; ++d)
            kr[d] = kv_int4 ? int4_at(k_pg.load(blk, h, slot, d / 8), d) : k_pg.load(blk, h, slot, d);
          for (int64_t d = 0; d < DR; ++d) kr[QD + d] = kr_pg.load(blk, h, slot, d);
          for (int64_t d = 0; d < VD; ++d)
            vr[d] = kv_int4 ? int4_at(v_pg.load(blk, h, slot, d / 8), d) : v_pg.load(blk, h, slot, d);
          if (kv_int8) {
            for (int64_t d = 0; d < QD; ++d) kr[d] = aq_k.dequant(kr[d], b, h, j, d, blk, slot);
            for (int64_t d = 0; d < VD; ++d) vr[d] = aq_v.dequant(vr[d], b, h, j, d, blk, slot);
          }
        } else {
          const int64_t t = kv0 + j;
          for (int64_t d = 0; d < QD; ++d)
            kr[d] = kv_int4 ? int4_at(k_seq.load(b, h, t, d / 8), d) : k_seq.load(b, h, t, d);
          for (int64_t d = 0; d < DR; ++d) kr[QD + d] = kr_seq.load(b, h, t, d);
          for (int64_t d = 0; d < VD; ++d)
            vr[d] = kv_int4 ? int4_at(v_seq.load(b, h, t, d / 8), d) : v_seq.load(b, h, t, d);
          if (kv_int8) {
            for (int64_t d = 0; d < QD; ++d) kr[d] = aq_k.dequant(kr[d], b, h, j, d, 0, 0);
            for (int64_t d = 0; d < VD; ++d) vr[d] = aq_v.dequant(vr[d], b, h, j, d, 0, 0);
          }
        }
      }
    }
    // Padded (non-packed) layouts have Q_S rows per batch; rows >= actQ[b] are written 0 / +inf.
    const int64_t rows = packed ? s1 : QS;
    sc.assign(static_cast<size_t>(s2), 0.0);
    valid.assign(static_cast<size_t>(s2), 0);
    dots.assign(static_cast<size_t>(s2), 0.0);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t h = n / G;
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t qt = q0 + i;       // token index in the query tensor
        const int64_t r = i - lp.q(b);  // row in the batch's valid window (left padding)
        std::fill(acc.begin(), acc.end(), 0.0);
        double lse_v = inf;
        if (r >= 0 && r < s1) {
          for (int64_t d = 0; d < QD; ++d) qv[static_cast<size_t>(d)] = q_acc.load(b, n, qt, d);
          for (int64_t d = 0; d < DR; ++d) qv[static_cast<size_t>(QD + d)] = qr_acc.load(b, n, qt, d);
          double m = -inf;
          bool any = false;
          for (int64_t j = 0; j < s2; ++j) {
            valid[static_cast<size_t>(j)] = !is_masked(b, r, j);
            if (!valid[static_cast<size_t>(j)]) continue;
            const double* kr = &kc[static_cast<size_t>((h * s2 + j) * KF)];
            double dot = 0.0;
            for (int64_t d = 0; d < KF; ++d) dot += qv[static_cast<size_t>(d)] * kr[d];
            double s = p.scale_value * dot;
            dots[static_cast<size_t>(j)] = dot;
            if (pse.t != nullptr) s += pse.at(b, n, r + lp.q(b), j + lp.kv(b));  // after scaling, before the softmax
            sc[static_cast<size_t>(j)] = s;
            if (!any || s > m) m = s;
            any = true;
          }
          // A row without any valid position stays 0 / +inf: the sink does not revive it.
          const double* vh = vc.data() + h * s2 * VD;
          if (any && emul16) {
            lse_v = fia_ref_fp16_softmax_row(dots.data(), valid.data(), s2, vh, VD, p.scale_value, acc.data());
          } else if (any) {
            // learnableSink: one more logit, sink[n] (not scaled, not masked, no value row), in
            // the denominator; the shift becomes max(m, sink[n]).
            const double sk = sink.empty() ? 0.0 : sink[static_cast<size_t>(n)];
            if (!sink.empty()) m = std::max(m, sk);
            double den = 0.0;
            for (int64_t j = 0; j < s2; ++j) {
              if (!valid[static_cast<size_t>(j)]) continue;
              const double e = std::exp(sc[static_cast<size_t>(j)] - m);
              den += e;
              const double* vr = &vc[static_cast<size_t>((h * s2 + j) * VD)];
              for (int64_t d = 0; d < VD; ++d) acc[static_cast<size_t>(d)] += e * vr[d];
            }
            if (!sink.empty()) den += std::exp(sk - m);
            for (int64_t d = 0; d < VD; ++d) acc[static_cast<size_t>(d)] /= den;
            lse_v = m + std::log(den);
          } else if (legacy) {  // the rule's positions, when the explicit mask empties them
            rule_only = true;
            int64_t kept = 0;
            for (int64_t j = 0; j < s2; ++j) kept += (valid[static_cast<size_t>(j)] = !is_masked(b, r, j)) ? 1 : 0;
            rule_only = false;
            if (kept > 0) lse_v = fia_ref_legacy_row(valid.data(), s2, vh, VD, emul16, acc.data());
          }
        }
        if (post_quant) {
          for (int64_t d = 0; d < VD; ++d)
            ref::store(out, o_acc.offset(b, n, qt, d),
                       ref::post_quant_int8(acc[static_cast<size_t>(d)], pq_param(p.quant_scale2, n, d, VD),
                                            pq_param(p.quant_offset2, n, d, VD)));
        } else {
          for (int64_t d = 0; d < VD; ++d) ref::store(out, o_acc.offset(b, n, qt, d), acc[static_cast<size_t>(d)]);
        }
        write_lse(b, n, i, lse_v);
      }
    }
  }
  return kSuccess;
}

}  // namespace mlaops
