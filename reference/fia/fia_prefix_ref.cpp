// Float64 golden reference of the shared prefix (fia_prefix_ref.h). Own parsing only
// (reference/common/ref_util.h); the attention itself is fused_infer_attention_score_v4_ref.
#include "reference/fia/fia_prefix_ref.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "reference/common/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "fused_infer_attention_score_v4_ref";

// The sequence axis of a key-like tensor in layout l (BSH / BSND: 1, BNSD: 2).
int seq_axis(FiaLayout l) { return l == FiaLayout::kBNSD ? 2 : 1; }

// A dense row-major tensor of dtype `dt` and dims `dims` over `buf` (8-byte words, zeroed).
TensorView dense(DType dt, const int64_t* dims, int rank, std::vector<uint64_t>* buf) {
  TensorView t;
  t.dtype = dt;
  t.rank = rank;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    t.dims[i] = dims[i];
    n *= dims[i];
  }
  int64_t st = 1;
  for (int i = rank; i-- > 0;) {
    t.strides[i] = st;
    st *= t.dims[i];
  }
  buf->assign(static_cast<size_t>((n * ref::elem_bytes(dt) + 7) / 8 + 1), 0);
  t.data = buf->data();
  return t;
}

// Copies element `from_off` of `from` to element `to_off` of `to` (same dtype, its raw bytes).
void copy_elem(const TensorView& from, int64_t from_off, const TensorView& to, int64_t to_off) {
  const int64_t eb = ref::elem_bytes(from.dtype);
  std::memcpy(static_cast<char*>(to.data) + to_off * eb, static_cast<const char*>(from.data) + from_off * eb,
              static_cast<size_t>(eb));
}

// Unravels the row-major element number e of t (dense) into idx.
void unravel(const TensorView& t, int64_t e, int64_t* idx) {
  for (int i = t.rank; i-- > 0;) {
    idx[i] = e % t.dims[i];
    e /= t.dims[i];
  }
}

// The concatenated K (or V) of the key's layout and dtype (FP16 / BF16, INT8 or INT32 words of
// packed INT4), with S' = Lp + S positions: batch b's position t' < Lp is prefix row t' (batch 0),
// position Lp + t is own[b] row src(b, t), where src(b, t) = start[b] + t for t < count[b]
// (the rest stays 0). Without left padding start = 0 and count = S: the plain concatenation.
TensorView concat(const TensorView& pre, const TensorView& own, int ax, int64_t lp, const std::vector<int64_t>& start,
                  const std::vector<int64_t>& count, std::vector<uint64_t>* buf) {
  int64_t dims[kMaxRank];
  for (int i = 0; i < own.rank; ++i) dims[i] = i == ax ? own.dims[i] + lp : own.dims[i];
  TensorView t = dense(own.dtype, dims, own.rank, buf);
  const int64_t n = t.numel();
  int64_t idx[kMaxRank] = {};
  for (int64_t e = 0; e < n; ++e) {
    unravel(t, e, idx);
    int64_t src[kMaxRank];
    std::memcpy(src, idx, sizeof(src));
    if (idx[ax] < lp) {
      src[0] = 0;
      copy_elem(pre, ref::offset(pre, src), t, e);
      continue;
    }
    const size_t b = static_cast<size_t>(idx[0]);
    const int64_t tt = idx[ax] - lp;
    if (tt >= count[b]) continue;
    src[ax] = start[b] + tt;
    copy_elem(own, ref::offset(own, src), t, e);
  }
  return t;
}

bool is_2048_template(const TensorView& m) {
  if (m.rank < 2 || m.rank > 4) return false;
  for (int i = 0; i < m.rank - 2; ++i)
    if (m.dims[i] != 1) return false;
  return m.dims[m.rank - 1] == 2048 && m.dims[m.rank - 2] == 2048;
}

// Left padding with a prefix: the explicit mask and pseShift are addressed at the columns of the
// concatenation [prefix (Lp) | the KV tensor (KV_S)] in padded coordinates: prefix row j at column
// j, own row t at column Lp + kv0[b] + t. The inner call sees the compacted sequence (own row t at
// position Lp + t), so the mask / pse columns are gathered into new tensors per batch.
int64_t src_col(int64_t j, int64_t lp, int64_t kv0) { return j < lp ? j : kv0 + j; }

// The explicit mask element (batch b, row i, column c) of the sparse 0 / 1 forms: (Q_S, S) or
// (B or 1, S) for Q_S = 1, (B or 1, rows, S), (B or 1, 1, rows, S).
int64_t mask_offset(const TensorView& m, int64_t qs, int64_t b, int64_t i, int64_t c) {
  const int64_t bb = m.dims[0] == 1 ? 0 : b;
  if (m.rank == 2) {
    const int64_t idx[2] = {qs == 1 ? bb : i, c};
    return ref::offset(m, idx);
  }
  if (m.rank == 3) {
    const int64_t idx[3] = {bb, i, c};
    return ref::offset(m, idx);
  }
  const int64_t idx[4] = {bb, 0, i, c};
  return ref::offset(m, idx);
}

}  // namespace

Status fia_prefix_ref(const FiaParams& p) {
  const TensorView* kp = p.key_shared_prefix;
  const TensorView* vp = p.value_shared_prefix;
  MLAOPS_CHECK(kp != nullptr && vp != nullptr, kParamInvalid,
               "%s: keySharedPrefix / valueSharedPrefix: both or neither", kOp);
  MLAOPS_CHECK(p.key.size() == 1 && p.value.size() == 1, kParamInvalid,
               "%s: shared prefix: key/value tensor lists are not supported", kOp);
  FiaLayout in, out;
  MLAOPS_CHECK(ref::layout_from_string(p.input_layout, &in, &out) && !ref::layout_packed(in), kParamInvalid,
               "%s: shared prefix: layout %s; allowed BSH, BSND, BNSD, BNSD_BSND", kOp, p.input_layout.c_str());
  MLAOPS_CHECK(p.block_table == nullptr && p.query_rope == nullptr && p.key_rope == nullptr &&
                   p.learnable_sink == nullptr && p.sparse_mode != 9,
               kParamInvalid, "%s: shared prefix: not with paged KV, MLA rope, learnableSink or the tree mask", kOp);
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  const bool quant = key.dtype == DType::kInt8 || key.dtype == DType::kInt32;  // KV antiquant (INT4 in INT32)
  MLAOPS_CHECK(ref::is_half(p.query.dtype) && (key.dtype == p.query.dtype || quant) && value.dtype == key.dtype,
               kParamInvalid, "%s: shared prefix: key/value of the query dtype, INT8 or INT32 (INT4), got %s / %s", kOp,
               ref::type_name(key.dtype), ref::type_name(value.dtype));
  const int ax = seq_axis(in);
  for (const auto& [pre, own] : {std::pair{kp, &key}, std::pair{vp, &value}}) {
    MLAOPS_CHECK(pre->data != nullptr || pre->numel() == 0, kParamNullptr, "%s: shared prefix data is null", kOp);
    bool ok = pre->rank == own->rank && pre->dtype == own->dtype && own->rank > ax && pre->dims[0] == 1;
    for (int i = 1; ok && i < own->rank; ++i) ok = i == ax || pre->dims[i] == own->dims[i];
    MLAOPS_CHECK(ok, kParamInvalid, "%s: shared prefix shape %s does not fit the key/value %s", kOp,
                 ref::shape_str(*pre).c_str(), ref::shape_str(*own).c_str());
  }
  const int64_t sp = kp->dims[ax];
  MLAOPS_CHECK(vp->dims[ax] == sp, kParamInvalid, "%s: valueSharedPrefix S %lld != keySharedPrefix S %lld", kOp,
               static_cast<long long>(vp->dims[ax]), static_cast<long long>(sp));
  int64_t lp = sp;
  if (p.actual_shared_prefix_len != nullptr) {
    const std::vector<int64_t>& a = *p.actual_shared_prefix_len;
    MLAOPS_CHECK(a.size() == 1 && a[0] >= 0 && a[0] <= sp, kParamInvalid,
                 "%s: actualSharedPrefixLen: one value in [0, %lld]", kOp, static_cast<long long>(sp));
    lp = a[0];
  }
  MLAOPS_CHECK(key.rank > ax && key.dims[ax] == value.dims[ax], kParamInvalid, "%s: key/value S differ", kOp);
  const int64_t B = key.dims[0], kv_s = key.dims[ax];
  MLAOPS_CHECK(p.query.rank == key.rank && p.query.dims[0] == B, kParamInvalid, "%s: query rank / batch", kOp);
  const int64_t QS = p.query.dims[ax];
  // Own lengths: (1) / (>= B) array or the extent.
  std::vector<int64_t> act(static_cast<size_t>(B), kv_s);
  if (const std::vector<int64_t>* a = p.actual_seq_lengths_kv) {
    const int64_t len = static_cast<int64_t>(a->size());
    MLAOPS_CHECK(len == 1 || len >= B, kParamInvalid, "%s: actualSeqLengthsKv: length 1 or >= B", kOp);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = (*a)[static_cast<size_t>(len == 1 ? 0 : b)];
      MLAOPS_CHECK(v >= 0 && v <= kv_s, kParamInvalid, "%s: actualSeqLengthsKv[%lld] = %lld outside [0, %lld]", kOp,
                   static_cast<long long>(b), static_cast<long long>(v), static_cast<long long>(kv_s));
      act[static_cast<size_t>(b)] = v;
    }
  }
  // KV left padding (kvPaddingSize with actualSeqLengthsKv): batch b's own window
  // [KV_S - kvPad - actKV[b], KV_S - kvPad); Q_S = 1 with a window starting before 0: no own
  // position (the prefix stays). The query padding is left to the inner call.
  const bool kv_pad = p.kv_padding_size != nullptr && p.actual_seq_lengths_kv != nullptr;
  std::vector<int64_t> kv0(static_cast<size_t>(B), 0);
  if (kv_pad) {
    const TensorView& t = *p.kv_padding_size;
    MLAOPS_CHECK(t.dtype == DType::kInt64 && t.rank == 1 && t.dims[0] == 1 && t.data != nullptr, kParamInvalid,
                 "%s: kvPaddingSize: INT64 of shape (1) with data", kOp);
    const int64_t pad = std::max<int64_t>(0, ref::load_int(t, 0));
    for (int64_t b = 0; b < B; ++b) {
      const size_t i = static_cast<size_t>(b);
      const int64_t s = kv_s - pad - act[i];
      if (s < 0) {
        MLAOPS_CHECK(QS == 1, kParamInvalid, "%s: batch %lld: the KV window starts before position 0", kOp,
                     static_cast<long long>(b));
        act[i] = 0;
      } else {
        kv0[i] = s;
      }
    }
  }
  std::vector<int64_t> eff(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) eff[static_cast<size_t>(b)] = lp + act[static_cast<size_t>(b)];

  std::vector<uint64_t> kbuf, vbuf, mbuf, pbuf;
  FiaParams q = p;
  q.key = {concat(*kp, key, ax, lp, kv0, act, &kbuf)};
  q.value = {concat(*vp, value, ax, lp, kv0, act, &vbuf)};
  q.key_shared_prefix = nullptr;
  q.value_shared_prefix = nullptr;
  q.actual_shared_prefix_len = nullptr;
  q.kv_padding_size = nullptr;  // applied above (or not applying: no actualSeqLengthsKv)
  q.actual_seq_lengths_kv = &eff;
  TensorView mask_c, pse_c;
  if (kv_pad) {
    const int64_t S2 = lp + kv_s;
    // Per-token antiquant parameters with left padding: not defined (the operator rejects them, FIA-41).
    const auto row_mode = [](int64_t m) { return m == 1 || m == 3; };
    const bool row = p.key_antiquant_scale != nullptr
                         ? row_mode(p.key_antiquant_mode) || row_mode(p.value_antiquant_mode)
                         : p.antiquant_scale != nullptr && p.antiquant_mode == 1;
    MLAOPS_CHECK(!quant || !row, kParamInvalid, "%s: per-token antiquant parameters with left padding are not defined",
                 kOp);
    // sparse 0: preTokens / nextTokens are ignored with left padding (the inner call has none).
    if (p.sparse_mode == 0) q.pre_tokens = q.next_tokens = int64_t{1} << 62;
    // The explicit mask (sparse 0 / 1, or any non-template mask of a decode without rope): gathered.
    const TensorView* m = p.atten_mask;
    const int64_t qd = in == FiaLayout::kBSH ? p.query.dims[2] / p.num_heads : p.query.dims[p.query.rank - 1];
    const int64_t kvn = p.num_key_value_heads == 0 ? p.num_heads : p.num_key_value_heads;
    const int64_t vd = in == FiaLayout::kBSH ? value.dims[2] / kvn : value.dims[value.rank - 1];
    const bool decode_rule = QS == 1 && qd == vd;
    if (m != nullptr && (p.sparse_mode <= 1 || (decode_rule && !is_2048_template(*m)))) {
      MLAOPS_CHECK(m->rank >= 2 && m->rank <= 4 && m->data != nullptr, kParamInvalid, "%s: attenMask rank / data",
                   kOp);
      const int64_t rows = m->rank == 2 ? (QS == 1 ? 1 : m->dims[0]) : m->dims[m->rank - 2];
      const int64_t dims[4] = {B, 1, rows, S2};
      mask_c = dense(DType::kUInt8, dims, 4, &mbuf);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < S2; ++j) {
            const int64_t c = src_col(j, lp, kv0[static_cast<size_t>(b)]);
            const bool read = j < eff[static_cast<size_t>(b)];
            MLAOPS_CHECK(!read || c < m->dims[m->rank - 1], kParamInvalid,
                         "%s: attenMask %s does not reach column %lld (prefix first, padded coordinates)", kOp,
                         ref::shape_str(*m).c_str(), static_cast<long long>(c));
            const int64_t idx[4] = {b, 0, i, j};
            const double v = read ? ref::load(*m, mask_offset(*m, QS, b, i, c)) : 1.0;
            ref::put<uint8_t>(mask_c, ref::offset(mask_c, idx), v != 0.0 ? 1 : 0);
          }
      q.atten_mask = &mask_c;
    }
    if (const TensorView* t = p.pse_shift) {
      MLAOPS_CHECK(t->rank == 4 && t->data != nullptr && ref::is_half(t->dtype), kParamInvalid,
                   "%s: pseShift rank / data / dtype", kOp);
      const int64_t dims[4] = {B, t->dims[1], t->dims[2], S2};
      pse_c = dense(t->dtype, dims, 4, &pbuf);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < t->dims[1]; ++n)
          for (int64_t i = 0; i < t->dims[2]; ++i)
            for (int64_t j = 0; j < eff[static_cast<size_t>(b)]; ++j) {
              const int64_t c = src_col(j, lp, kv0[static_cast<size_t>(b)]);
              MLAOPS_CHECK(c < t->dims[3], kParamInvalid,
                           "%s: pseShift %s does not reach column %lld (prefix first, padded coordinates)", kOp,
                           ref::shape_str(*t).c_str(), static_cast<long long>(c));
              const int64_t src[4] = {t->dims[0] == 1 ? 0 : b, n, i, c};
              const int64_t dst[4] = {b, n, i, j};
              copy_elem(*t, ref::offset(*t, src), pse_c, ref::offset(pse_c, dst));
            }
      q.pse_shift = &pse_c;
    }
  }
  return fused_infer_attention_score_v4_ref(q);
}

}  // namespace mlaops
