// Float64 golden reference of the shared prefix (fia_prefix_ref.h). Own parsing only
// (reference/ref_util.h); the attention itself is fused_infer_attention_score_v4_ref.
#include "reference/fia_prefix_ref.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "reference/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "fused_infer_attention_score_v4_ref";

// The sequence axis of a key-like tensor in layout l (BSH / BSND: 1, BNSD: 2).
int seq_axis(FiaLayout l) { return l == FiaLayout::kBNSD ? 2 : 1; }

// A dense tensor of the key's layout with S' = Lp + S: batch b position t < Lp from the prefix
// (batch 0), position Lp + t from `own` (batch b); `buf` holds the 16-bit elements.
TensorView concat(const TensorView& pre, const TensorView& own, int ax, int64_t lp, std::vector<uint16_t>* buf) {
  TensorView t;
  t.dtype = own.dtype;
  t.rank = own.rank;
  int64_t n = 1;
  for (int i = 0; i < own.rank; ++i) {
    t.dims[i] = i == ax ? own.dims[i] + lp : own.dims[i];
    n *= t.dims[i];
  }
  int64_t st = 1;
  for (int i = own.rank; i-- > 0;) {
    t.strides[i] = st;
    st *= t.dims[i];
  }
  buf->assign(static_cast<size_t>(n), 0);
  t.data = buf->data();
  int64_t idx[kMaxRank] = {};
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e;
    for (int i = t.rank; i-- > 0;) {
      idx[i] = rest % t.dims[i];
      rest /= t.dims[i];
    }
    int64_t src[kMaxRank];
    std::memcpy(src, idx, sizeof(src));
    const TensorView* from = &own;
    if (idx[ax] < lp) {
      from = &pre;
      src[0] = 0;
    } else {
      src[ax] = idx[ax] - lp;
    }
    (*buf)[static_cast<size_t>(e)] = ref::raw<uint16_t>(*from, ref::offset(*from, src));
  }
  return t;
}

}  // namespace

Status fia_prefix_ref(const FiaParams& p, FiaRefAntiquant antiquant) {
  const TensorView* kp = p.key_shared_prefix;
  const TensorView* vp = p.value_shared_prefix;
  MLAOPS_CHECK(kp != nullptr && vp != nullptr, kParamInvalid,
               "%s: keySharedPrefix / valueSharedPrefix: both or neither (actualSharedPrefixLen needs them)", kOp);
  MLAOPS_CHECK(p.key.size() == 1 && p.value.size() == 1, kParamInvalid,
               "%s: shared prefix: key/value tensor lists are not supported", kOp);
  FiaLayout in, out;
  MLAOPS_CHECK(ref::layout_from_string(p.input_layout, &in, &out) && !ref::layout_packed(in), kParamInvalid,
               "%s: shared prefix: layout %s; allowed BSH, BSND, BNSD, BNSD_BSND", kOp, p.input_layout.c_str());
  MLAOPS_CHECK(p.block_table == nullptr && p.query_rope == nullptr && p.key_rope == nullptr &&
                   p.learnable_sink == nullptr && p.query_padding_size == nullptr && p.kv_padding_size == nullptr &&
                   p.sparse_mode != 9,
               kParamInvalid, "%s: shared prefix: not with paged KV, MLA rope, learnableSink, left padding or the tree mask",
               kOp);
  const TensorView& key = p.key[0];
  const TensorView& value = p.value[0];
  MLAOPS_CHECK(ref::is_half(key.dtype) && key.dtype == p.query.dtype, kParamInvalid,
               "%s: shared prefix: INT8 / INT4 key/value with a prefix is not supported yet", kOp);
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
  // Own lengths: (1) / (>= B) array or the extent, then Lp + actKV[b].
  std::vector<int64_t> act(static_cast<size_t>(B), kv_s);
  if (const std::vector<int64_t>* a = p.actual_seq_lengths_kv) {
    const int64_t len = static_cast<int64_t>(a->size());
    MLAOPS_CHECK(len == 1 || len >= B, kParamInvalid, "%s: actualSeqLengthsKv: length 1 or >= B", kOp);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = (*a)[static_cast<size_t>(len == 1 ? 0 : b)];
      MLAOPS_CHECK(v >= 0 && v <= kv_s, kParamInvalid, "%s: actualSeqLengthsKv[%lld] = %lld outside [0, %lld]", kOp,
                   static_cast<long long>(b), static_cast<long long>(v), static_cast<long long>(kv_s));
      act[static_cast<size_t>(b)] = lp + v;
    }
  } else {
    for (int64_t& v : act) v += lp;
  }
  std::vector<uint16_t> kbuf, vbuf;
  FiaParams q = p;
  q.key = {concat(*kp, key, ax, lp, &kbuf)};
  q.value = {concat(*vp, value, ax, lp, &vbuf)};
  q.key_shared_prefix = nullptr;
  q.value_shared_prefix = nullptr;
  q.actual_shared_prefix_len = nullptr;
  q.actual_seq_lengths_kv = &act;
  return fused_infer_attention_score_v4_ref(q, antiquant);
}

}  // namespace mlaops
