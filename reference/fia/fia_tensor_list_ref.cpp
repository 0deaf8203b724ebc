// Float64 golden reference of tensor-list KV (fia_tensor_list_ref.h). Own parsing only
// (reference/common/ref_util.h); the attention itself is fused_infer_attention_score_v4_ref.
#include "reference/fia/fia_tensor_list_ref.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "reference/common/ref_util.h"

namespace mlaops {
namespace {

constexpr const char* kOp = "fused_infer_attention_score_v4_ref";

// The elements of one list copied into a dense tensor with batch B and sequence extent S along
// axis `ax` (positions >= S_b of batch b hold 0; they are never read: actKV[b] <= S_b).
TensorView pad(const std::vector<TensorView>& list, int ax, int64_t S, std::vector<unsigned char>* buf) {
  const TensorView& e0 = list[0];
  TensorView t;
  t.dtype = e0.dtype;
  t.rank = e0.rank;
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) {
    t.dims[i] = i == 0 ? static_cast<int64_t>(list.size()) : i == ax ? S : e0.dims[i];
    n *= t.dims[i];
  }
  int64_t st = 1;
  for (int i = t.rank; i-- > 0;) {
    t.strides[i] = st;
    st *= t.dims[i];
  }
  const int64_t eb = ref::elem_bytes(t.dtype);
  buf->assign(static_cast<size_t>(n * eb + 1), 0);
  t.data = buf->data();
  int64_t idx[kMaxRank] = {};
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e;
    for (int i = t.rank; i-- > 0;) {
      idx[i] = rest % t.dims[i];
      rest /= t.dims[i];
    }
    const TensorView& from = list[static_cast<size_t>(idx[0])];
    if (idx[ax] >= from.dims[ax]) continue;
    int64_t src[kMaxRank];
    std::memcpy(src, idx, sizeof(src));
    src[0] = 0;
    std::memcpy(buf->data() + e * eb, static_cast<const unsigned char*>(from.data) + ref::offset(from, src) * eb,
                static_cast<size_t>(eb));
  }
  return t;
}

}  // namespace

Status fia_tensor_list_ref(const FiaParams& p) {
  FiaLayout in, out;
  MLAOPS_CHECK(ref::layout_from_string(p.input_layout, &in, &out) && !ref::layout_packed(in), kParamInvalid,
               "%s: tensor lists: layout %s; allowed BSH, BSND, BNSD and their output variants", kOp,
               p.input_layout.c_str());
  MLAOPS_CHECK(p.block_table == nullptr && p.query_rope == nullptr && p.key_rope == nullptr &&
                   p.learnable_sink == nullptr && p.query_padding_size == nullptr && p.kv_padding_size == nullptr &&
                   p.key_shared_prefix == nullptr && p.value_shared_prefix == nullptr &&
                   p.actual_shared_prefix_len == nullptr && p.dequant_scale_query == nullptr && p.sparse_mode != 9 &&
                   p.query.dtype != DType::kInt8,
               kParamInvalid,
               "%s: tensor lists: not with paged KV, MLA rope, learnableSink, left padding, a shared prefix, the tree "
               "mask or an INT8 query",
               kOp);
  MLAOPS_CHECK(p.query.rank >= 3, kParamInvalid, "%s: query rank %d", kOp, p.query.rank);
  const int64_t B = p.query.dims[0];
  MLAOPS_CHECK(static_cast<int64_t>(p.key.size()) == B && static_cast<int64_t>(p.value.size()) == B, kParamInvalid,
               "%s: tensor lists: key / value lists of B = %lld tensors, got %zu / %zu", kOp, static_cast<long long>(B),
               p.key.size(), p.value.size());
  const int ax = in == FiaLayout::kBNSD ? 2 : 1;
  std::vector<int64_t> s(static_cast<size_t>(B), 0);
  for (const std::vector<TensorView>* list : {&p.key, &p.value}) {
    const TensorView& e0 = (*list)[0];
    MLAOPS_CHECK(ref::elem_bytes(e0.dtype) > 0 && e0.rank > ax, kParamInvalid, "%s: tensor list element dtype / rank",
                 kOp);
    for (int64_t b = 0; b < B; ++b) {
      const TensorView& t = (*list)[static_cast<size_t>(b)];
      bool ok = t.dtype == e0.dtype && t.rank == e0.rank && t.dims[0] == 1;
      for (int i = 1; ok && i < t.rank; ++i) ok = i == ax || t.dims[i] == e0.dims[i];
      MLAOPS_CHECK(ok, kParamInvalid,
                   "%s: tensor list element %lld shape %s: allowed batch 1 and the dtype and dims of element 0 %s "
                   "but S",
                   kOp, static_cast<long long>(b), ref::shape_str(t).c_str(), ref::shape_str(e0).c_str());
      MLAOPS_CHECK(t.data != nullptr || t.numel() == 0, kParamNullptr, "%s: tensor list element %lld data is null", kOp,
                   static_cast<long long>(b));
      if (list == &p.key) s[static_cast<size_t>(b)] = t.dims[ax];
      MLAOPS_CHECK(t.dims[ax] == s[static_cast<size_t>(b)], kParamInvalid,
                   "%s: tensor list element %lld: value S %lld != key S %lld", kOp, static_cast<long long>(b),
                   static_cast<long long>(t.dims[ax]), static_cast<long long>(s[static_cast<size_t>(b)]));
    }
  }
  // Per-batch lengths: (1) / (>= B) array, each <= S_b; default S_b.
  std::vector<int64_t> act = s;
  if (const std::vector<int64_t>* a = p.actual_seq_lengths_kv) {
    const int64_t len = static_cast<int64_t>(a->size());
    MLAOPS_CHECK(len == 1 || len >= B, kParamInvalid, "%s: actualSeqLengthsKv: length 1 or >= B", kOp);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = (*a)[static_cast<size_t>(len == 1 ? 0 : b)];
      MLAOPS_CHECK(v >= 0 && v <= s[static_cast<size_t>(b)], kParamInvalid,
                   "%s: actualSeqLengthsKv[%lld] = %lld outside [0, S_b = %lld]", kOp, static_cast<long long>(b),
                   static_cast<long long>(v), static_cast<long long>(s[static_cast<size_t>(b)]));
      act[static_cast<size_t>(b)] = v;
    }
  }
  const int64_t max_s = *std::max_element(s.begin(), s.end());
  std::vector<unsigned char> kbuf, vbuf;
  FiaParams q = p;
  q.key = {pad(p.key, ax, max_s, &kbuf)};
  q.value = {pad(p.value, ax, max_s, &vbuf)};
  q.actual_seq_lengths_kv = &act;
  return fused_infer_attention_score_v4_ref(q);
}

}  // namespace mlaops
