// Tensor-list KV of FusedInferAttentionScoreV4 (ops/fia/fia_tensor_list.h): its rules (FIA-50,
// FIA-51, and FIA-01 / 04 / 11 / 17 / 18 per element) and the strides of the padded call.
// docs/ops/fused_infer_attention_score.md "Tensor-list KV".
#include "ops/fia/fia_tensor_list.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {

std::string fia_tensor_list_elem_name(const char* list, size_t i) { return std::string(list) + "[" + std::to_string(i) + "]"; }

namespace {

using check::shape_str;

constexpr int64_t kMaxListBatch = 256;  // the vendor's B limit with tensor lists

// Element of layout l: (1, S, KV_N * D) BSH, (1, S, KV_N, D) BSND, (1, KV_N, S, D) BNSD.
struct Elem {
  int64_t s = 0, d = 0;
};

Status parse_elem(const char* op, const std::string& name, const TensorView& t, FiaLayout l, int64_t kvn, Elem* e) {
  const int want = l == FiaLayout::kBSH ? 3 : 4;
  const char* form = l == FiaLayout::kBSH ? "(1, S_b, KV_N * D)" : l == FiaLayout::kBSND ? "(1, S_b, KV_N, D)"
                                                                                          : "(1, KV_N, S_b, D)";
  bool ok = t.rank == want && t.dims[0] == 1;
  if (ok && l == FiaLayout::kBSH) ok = t.dims[2] % kvn == 0;
  if (ok && l == FiaLayout::kBSND) ok = t.dims[2] == kvn;
  if (ok && l == FiaLayout::kBNSD) ok = t.dims[1] == kvn;
  MLAOPS_CHECK(ok, kParamInvalid,
               "%s: %s: FIA-51 tensor list element shape for layout %s; allowed %s with batch 1 and KV_N %lld, got %s",
               op, name.c_str(), fia_layout_name(l), form, (long long)kvn, shape_str(t).c_str());
  if (l == FiaLayout::kBSH) *e = {t.dims[1], t.dims[2] / kvn};
  if (l == FiaLayout::kBSND) *e = {t.dims[1], t.dims[3]};
  if (l == FiaLayout::kBNSD) *e = {t.dims[2], t.dims[3]};
  return kSuccess;
}

}  // namespace

Status fia_tensor_list_check_existence(const FiaParams& p, const char* op) {
  if (!fia_tensor_list_requested(p)) return kSuccess;
  for (const auto& [list, name] : {std::pair{&p.key, "key"}, std::pair{&p.value, "value"}})
    for (size_t i = 0; i < list->size(); ++i)
      MLAOPS_CHECK((*list)[i].dtype != DType::kUndefined, kParamNullptr,
                   "%s: %s: FIA-01 tensor list element is null; allowed a tensor, got null", op,
                   fia_tensor_list_elem_name(name, i).c_str());
  MLAOPS_CHECK(p.key.size() == p.value.size(), kParamInvalid,
               "%s: value: FIA-51 tensor list length must equal key's; allowed %zu, got %zu", op, p.key.size(),
               p.value.size());
  return kSuccess;
}

Status fia_tensor_list_check_kv(const FiaParams& p, const FiaCheckOptions& o, int64_t query_batch, FiaCall* c, int64_t* kd) {
  const char* op = o.op;
  // FIA-50: the features a tensor-list call excludes (the vendor's list).
  const DType kt = p.key[0].dtype;
  const struct {
    bool bad;
    const char* param;
    const char* what;
  } excl[] = {
      {c->paged, "blockTableOptional", "paged attention (blockTable)"},
      {p.query_padding_size != nullptr || p.kv_padding_size != nullptr,
       p.query_padding_size != nullptr ? "queryPaddingSizeOptional" : "kvPaddingSizeOptional", "left padding"},
      {p.key_shared_prefix != nullptr || p.value_shared_prefix != nullptr || p.actual_shared_prefix_len != nullptr,
       "keySharedPrefixOptional", "a shared prefix"},
      {c->packed, "inputLayout", "the TND / NTD layouts"},
      {c->rope, "queryRopeOptional", "MLA (queryRope / keyRope; MLA full quant too)"},
      {p.learnable_sink != nullptr, "learnableSinkOptional", "learnableSink"},
      {p.sparse_mode == 9, "sparseMode", "the tree mask (sparseMode 9)"},
      {p.query.dtype == DType::kInt8, "query", "INT8 full quantisation (INT8 query)"},
      {kt == DType::kInt32 || kt == DType::kInt4, "key", "INT4 key/value (INT32)"},
      {kt == DType::kInt8 && c->QS > 1, "key", "KV antiquant with Q_S > 1 (INT8 key/value allowed with Q_S = 1)"},
  };
  for (const auto& e : excl)
    MLAOPS_CHECK(!e.bad, kParamInvalid,
                 "%s: %s: FIA-50 tensor-list key/value exclude %s; allowed one tensor per list, got %zu tensors", op,
                 e.param, e.what, p.key.size());
  // FIA-51: one element per batch, B <= 256.
  const int64_t B = query_batch, KVN = c->KVN;
  MLAOPS_CHECK(static_cast<int64_t>(p.key.size()) == B, kParamInvalid,
               "%s: key: FIA-51 tensor list length must equal the query batch; allowed %lld, got %zu", op, (long long)B,
               p.key.size());
  MLAOPS_CHECK(B <= kMaxListBatch, kParamInvalid,
               "%s: query: FIA-51 batch with tensor-list key/value; allowed [1, %lld], got %lld", op,
               (long long)kMaxListBatch, (long long)B);
  // Elements: dtype and format of element 0 (FIA-03's rows check element 0), dense, shapes.
  FiaTensorList& tl = c->tl;
  tl = FiaTensorList();
  tl.s.assign(static_cast<size_t>(B), 0);
  int64_t d[2] = {0, 0};
  for (int w = 0; w < 2; ++w) {
    const std::vector<TensorView>& list = w == 0 ? p.key : p.value;
    const char* lname = w == 0 ? "key" : "value";
    for (size_t i = 0; i < list.size(); ++i) {
      const TensorView& t = list[i];
      const std::string name = fia_tensor_list_elem_name(lname, i);
      MLAOPS_CHECK(t.dtype == list[0].dtype, kParamInvalid,
                   "%s: %s: FIA-51 tensor list element dtype must equal element 0's; allowed %s, got %s", op,
                   name.c_str(), dtype_name(list[0].dtype), dtype_name(t.dtype));
      MLAOPS_TRY(check::format_in(op, name.c_str(), "FIA-04", t, {Format::kND, Format::kNCHW}));
      if (!t.empty()) MLAOPS_TRY(check::dense(op, name.c_str(), "FIA-17", t));  // S_b = 0: nothing is read
      Elem e;
      MLAOPS_TRY(parse_elem(op, name, t, c->in_l, KVN, &e));
      if (i == 0) d[w] = e.d;
      MLAOPS_CHECK(e.d == d[w], kParamInvalid,
                   "%s: %s: FIA-51 tensor list element head dim must equal element 0's; allowed %lld, got %lld "
                   "(shape %s)",
                   op, name.c_str(), (long long)d[w], (long long)e.d, shape_str(t).c_str());
      if (w == 0) tl.s[i] = e.s;
      MLAOPS_CHECK(w == 0 || e.s == tl.s[i], kParamInvalid,
                   "%s: %s: FIA-51 sequence extent must equal key[%zu]'s; allowed %lld, got %lld", op, name.c_str(), i,
                   (long long)tl.s[i], (long long)e.s);
    }
  }
  *kd = d[0];
  c->VD = d[1];
  const int64_t max_s = *std::max_element(tl.s.begin(), tl.s.end());
  c->kv_s = max_s;
  // Strides of the padded contiguous call (B, max S_b): batch stride unused (one batch per element).
  auto st = [&](int64_t D) {
    switch (c->in_l) {
      case FiaLayout::kBSH: return FiaKvStrides{0, D, 0, KVN * D, std::max<int64_t>(D, 1), 0};
      case FiaLayout::kBSND: return FiaKvStrides{0, D, 0, KVN * D, std::max<int64_t>(D, 1), 0};
      default: return FiaKvStrides{0, max_s * D, 0, D, std::max<int64_t>(D, 1), 0};  // BNSD
    }
  };
  c->k = st(d[0]);
  c->v = st(d[1]);
  tl.head_by_s = c->in_l == FiaLayout::kBNSD;
  tl.on = true;
  // FIA-11: per-batch lengths against each element's extent.
  c->kv_start.assign(static_cast<size_t>(B), 0);
  c->act_kv = tl.s;
  if (const std::vector<int64_t>* a = p.actual_seq_lengths_kv) {
    const int64_t len = static_cast<int64_t>(a->size());
    MLAOPS_CHECK(len == 1 || len >= B, kParamInvalid,
                 "%s: actualSeqLengthsKvOptional: FIA-11 tensor-list length; allowed 1 or >= B (%lld), got %lld", op, (long long)B,
                 (long long)len);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t i = len == 1 ? 0 : b, v = (*a)[static_cast<size_t>(i)], s = tl.s[static_cast<size_t>(b)];
      MLAOPS_CHECK(v >= 0 && v <= s, kParamInvalid,
                   "%s: actualSeqLengthsKvOptional: FIA-11 tensor-list value [%lld]; allowed [0, %lld] (key[%lld]'s S), got %lld",
                   op, (long long)i, (long long)s, (long long)b, (long long)v);
      c->act_kv[static_cast<size_t>(b)] = v;
    }
  }
  return kSuccess;
}

Status fia_tensor_list_check_pointers(const FiaParams& p, const FiaCall& c, const char* op) {
  if (!c.tl.on) return kSuccess;
  std::vector<std::string> names;
  std::vector<check::Region> in;
  for (const auto& [list, lname] : {std::pair{&p.key, "key"}, std::pair{&p.value, "value"}})
    for (size_t i = 0; i < list->size(); ++i) names.push_back(fia_tensor_list_elem_name(lname, i));
  size_t k = 0;
  for (const std::vector<TensorView>* list : {&p.key, &p.value})
    for (const TensorView& t : *list) {
      const char* name = names[k++].c_str();
      if (t.empty()) continue;
      MLAOPS_CHECK(t.data != nullptr, kParamInvalid,
                   "%s: %s: FIA-17 null data of a tensor list element; allowed non-null for a tensor of shape %s, got null", op, name,
                   shape_str(t).c_str());
      MLAOPS_TRY(check::aligned(op, name, "FIA-17", t));  // strided elements are read as copies (fia_check)
      in.push_back({name, &t});
    }
  const TensorView* lse = p.softmax_lse_flag ? p.softmax_lse : nullptr;
  return check::no_overlap(op, "FIA-18", {{"attentionOut", &p.attention_out}, {"softmaxLse", lse}}, in);
}

}  // namespace mlaops
