// Calls aclnnFusedInferAttentionScoreV4 on a materialised case (fia_test::FiaRun) through the C
// API — aclCreateTensor, aclCreateTensorList, aclCreateIntArray, two-phase call, optional
// stream — with an optional mutation of the arguments first (negative tests).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "ops/acl_tensor_util.h"
#include "ops/aclnn_phase2.h"
#include "testkit/fia_test_data.h"
#include "tests/support/guarded_alloc.h"

namespace mlaops::testing {

// Every argument of the prototype, editable.
struct FiaAclArgs {
  static constexpr int kIn = 29;  // input positions 0..28 (int-array positions 5, 6, 23 unused here)
  TensorView in[kIn];
  bool passed[kIn] = {};
  int key_list_len = 1, value_list_len = 1;  // > 1: the same tensor repeated
  std::vector<TensorView> key_views, value_views;  // non-empty: the lists' tensors (tensor-list KV)
  bool key_list_null = false, value_list_null = false;
  bool has_asl_q = false, has_asl_kv = false, has_prefix = false;
  std::vector<int64_t> asl_q, asl_kv, prefix;
  const aclIntArray* asl_q_handle = nullptr;  // non-null: passed as actualSeqLengths instead (e.g. a dead handle)
  int64_t num_heads = 1, pre = 2147483647, next = 2147483647, kvn = 0, sparse = 0, inner = 0, block_size = 0;
  int64_t antiquant_mode = 0, key_aq_mode = 0, value_aq_mode = 0, query_quant_mode = 0;
  double scale = 1.0;
  std::string layout = "BSH";
  const char* raw_layout = nullptr;  // non-null: passed instead of `layout` (may be unterminated)
  bool null_layout = false;
  bool lse_flag = false;
  TensorView out, lse;
  bool out_passed = true, lse_passed = false;
  bool null_workspace_size = false, null_executor = false;
};

// The attributes, the actual lengths and the outputs of the call from FiaParams (what both
// converters below pass).
inline void fia_acl_attrs(const FiaParams& p, FiaAclArgs* a) {
  if (p.actual_seq_lengths) a->has_asl_q = true, a->asl_q = *p.actual_seq_lengths;
  if (p.actual_seq_lengths_kv) a->has_asl_kv = true, a->asl_kv = *p.actual_seq_lengths_kv;
  a->num_heads = p.num_heads;
  a->scale = p.scale_value;
  a->pre = p.pre_tokens;
  a->next = p.next_tokens;
  a->layout = p.input_layout;
  a->kvn = p.num_key_value_heads;
  a->sparse = p.sparse_mode;
  a->inner = p.inner_precise;
  a->block_size = p.block_size;
  a->lse_flag = p.softmax_lse_flag;
  a->out = p.attention_out;
  if (p.softmax_lse) {
    a->lse = *p.softmax_lse;
    a->lse_passed = true;
  }
}

// Every argument of the C API from the C++ parameters (the vendor system tests' mapping).
inline FiaAclArgs acl_args_of_params(const FiaParams& p) {
  FiaAclArgs a;
  auto put = [&](int i, const TensorView* t) {
    if (t != nullptr) {
      a.in[i] = *t;
      a.passed[i] = true;
    }
  };
  put(0, &p.query);
  put(1, &p.key[0]);
  put(2, &p.value[0]);
  const TensorView* opt[] = {p.pse_shift,           p.atten_mask,           nullptr,
                             nullptr,               p.deq_scale1,           p.quant_scale1,
                             p.deq_scale2,          p.quant_scale2,         p.quant_offset2,
                             p.antiquant_scale,     p.antiquant_offset,     p.block_table,
                             p.query_padding_size,  p.kv_padding_size,      p.key_antiquant_scale,
                             p.key_antiquant_offset, p.value_antiquant_scale, p.value_antiquant_offset,
                             p.key_shared_prefix,   p.value_shared_prefix,  nullptr,
                             p.query_rope,          p.key_rope,             p.key_rope_antiquant_scale,
                             p.dequant_scale_query, p.learnable_sink};
  for (int i = 0; i < static_cast<int>(sizeof(opt) / sizeof(opt[0])); ++i) put(3 + i, opt[i]);
  fia_acl_attrs(p, &a);
  if (p.actual_shared_prefix_len) a.has_prefix = true, a.prefix = *p.actual_shared_prefix_len;
  a.antiquant_mode = p.antiquant_mode;
  a.key_aq_mode = p.key_antiquant_mode;
  a.value_aq_mode = p.value_antiquant_mode;
  a.query_quant_mode = p.query_quant_mode;
  return a;
}

// The arguments of a materialised case: its tensors of the positions below only.
inline FiaAclArgs acl_args_of(const fia_test::FiaRun& r) {
  const FiaParams& p = r.params;
  FiaAclArgs a;
  a.in[0] = p.query;
  a.passed[0] = true;
  a.in[1] = p.key[0];
  a.passed[1] = true;
  a.in[2] = p.value[0];
  a.passed[2] = true;
  auto put = [&](int i, const TensorView* t) {
    if (t != nullptr) {
      a.in[i] = *t;
      a.passed[i] = true;
    }
  };
  put(3, p.pse_shift);
  put(4, p.atten_mask);
  put(14, p.block_table);
  put(24, p.query_rope);
  put(25, p.key_rope);
  put(28, p.learnable_sink);
  fia_acl_attrs(p, &a);
  return a;
}

class AclIntArrayHandle {
 public:
  AclIntArrayHandle(bool present, const std::vector<int64_t>& v) {
    if (present) a_ = aclCreateIntArray(v.data(), v.size());
  }
  ~AclIntArrayHandle() {
    if (a_) aclDestroyIntArray(a_);
  }
  AclIntArrayHandle(const AclIntArrayHandle&) = delete;
  AclIntArrayHandle& operator=(const AclIntArrayHandle&) = delete;
  aclIntArray* get() const { return a_; }

 private:
  aclIntArray* a_ = nullptr;
};

// A tensor list of `count` handles of the same view, or of `views` when given (tensor-list KV).
// aclDestroyTensorList destroys the member tensors too, so the list owns them once created.
class AclTensorListHandle {
 public:
  AclTensorListHandle(const TensorView& one, int count, bool null_list, const std::vector<TensorView>& views = {}) {
    if (null_list) return;
    for (int i = 0; i < (views.empty() ? count : static_cast<int>(views.size())); ++i) {
      const TensorView& v = views.empty() ? one : views[static_cast<size_t>(i)];
      std::vector<int64_t> storage(v.storage_dims, v.storage_dims + v.storage_rank);  // as AclTensor
      if (storage.empty()) storage.assign(v.dims, v.dims + v.rank);
      t_.push_back(aclCreateTensor(v.dims, static_cast<uint64_t>(v.rank), static_cast<aclDataType>(v.dtype), v.strides,
                                   0, static_cast<aclFormat>(v.format), storage.data(), storage.size(), v.data));
    }
    std::vector<const aclTensor*> ptrs(t_.begin(), t_.end());
    l_ = aclCreateTensorList(ptrs.data(), ptrs.size());
  }
  ~AclTensorListHandle() {
    if (l_) {
      aclDestroyTensorList(l_);
    } else {
      for (aclTensor* t : t_)
        if (t) aclDestroyTensor(t);
    }
  }
  AclTensorListHandle(const AclTensorListHandle&) = delete;
  AclTensorListHandle& operator=(const AclTensorListHandle&) = delete;
  aclTensorList* get() const { return l_; }

 private:
  std::vector<aclTensor*> t_;
  aclTensorList* l_ = nullptr;
};

// In a guard mode (tests/support/guarded_alloc.h), every tensor of `a` in guarded regions.
inline void guard_args(FiaAclArgs& a) {
  if (current_guard_scope() == nullptr) return;
  std::vector<TensorView*> v;
  for (int i = 0; i < FiaAclArgs::kIn; ++i)
    if (a.passed[i] || i == 1 || i == 2) v.push_back(&a.in[i]);
  for (TensorView& k : a.key_views) v.push_back(&k);
  for (TensorView& k : a.value_views) v.push_back(&k);
  if (a.out_passed) v.push_back(&a.out);
  if (a.lse_passed) v.push_back(&a.lse);
  guard_views(v.data(), v.size());
}

// The C-API objects of one call on `args` (in a guard mode, with its tensors in guarded regions),
// alive as long as this object: a handle per input position (null where not passed; key and
// value go as the lists), the key / value tensor lists, the int arrays, the outputs, and the
// layout argument (null, the raw pointer, or the layout string). Every entry point's phase 1
// (fia_phase1, fia_entry_call.h) takes its arguments from here.
struct FiaAclObjects {
  FiaAclArgs a;
  std::vector<AclTensor> t;
  AclTensorListHandle key, value;
  AclIntArrayHandle aq, akv, apre;
  AclTensor out, lse;
  std::string layout;
  char* lp;

  explicit FiaAclObjects(const FiaAclArgs& args)
      : a(guarded(args)),
        t(inputs(a)),
        key(a.in[1], a.key_list_len, a.key_list_null, a.key_views),
        value(a.in[2], a.value_list_len, a.value_list_null, a.value_views),
        aq(a.has_asl_q, a.asl_q),
        akv(a.has_asl_kv, a.asl_kv),
        apre(a.has_prefix, a.prefix),
        out(a.out, a.out_passed),
        lse(a.lse, a.lse_passed),
        layout(a.layout),
        lp(a.null_layout ? nullptr : a.raw_layout ? const_cast<char*>(a.raw_layout) : layout.data()) {}
  FiaAclObjects(const FiaAclObjects&) = delete;
  FiaAclObjects& operator=(const FiaAclObjects&) = delete;

 private:
  static FiaAclArgs guarded(const FiaAclArgs& args) {
    FiaAclArgs g = args;
    guard_args(g);
    return g;
  }
  static std::vector<AclTensor> inputs(const FiaAclArgs& g) {
    std::vector<AclTensor> v;
    v.reserve(FiaAclArgs::kIn);
    for (int i = 0; i < FiaAclArgs::kIn; ++i) v.emplace_back(g.in[i], g.passed[i] && i != 1 && i != 2);
    return v;
  }
};

// Phase 1 only.
inline aclnnStatus fia_phase1(const FiaAclArgs& args, uint64_t* ws_size, aclOpExecutor** ex) {
  const FiaAclObjects o(args);
  const FiaAclArgs& a = o.a;
  const std::vector<AclTensor>& t = o.t;
  return aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
      t[0], o.key.get(), o.value.get(), t[3], t[4], a.asl_q_handle ? a.asl_q_handle : o.aq.get(), o.akv.get(), t[7],
      t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15], t[16], t[17], t[18], t[19], t[20], t[21], t[22],
      o.apre.get(), t[24], t[25], t[26], t[27], t[28], a.num_heads, a.scale, a.pre, a.next, o.lp, a.kvn, a.sparse,
      a.inner, a.block_size, a.antiquant_mode, a.lse_flag, a.key_aq_mode, a.value_aq_mode, a.query_quant_mode, o.out,
      o.lse, a.null_workspace_size ? nullptr : ws_size, a.null_executor ? nullptr : ex);
}

// Both phases on `stream` (nullptr: synchronous), then synchronize. `between` runs after phase 1
// (e.g. to corrupt the block table). Returns the first error.
inline aclnnStatus fia_aclnn_call(const FiaAclArgs& a, aclrtStream stream = nullptr,
                                  const std::function<void()>& between = {}) {
  GuardScope guard;
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus s = fia_phase1(a, &ws_size, &ex);
  if (s != ACLNN_SUCCESS) return s;
  if (between) between();
  guard_refresh();
  return aclnn_phase2(aclnnFusedInferAttentionScoreV4, ws_size, ex, stream);
}

}  // namespace mlaops::testing
