// npu_incre_flash_attention / npu_prompt_flash_attention through the aclnn C entry points
// (aclnn_entry.h).
#include "aclnn_entry.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "convert.h"

namespace mlaops::py {
namespace {

namespace nb = nanobind;
using Result = std::pair<int, std::string>;

nb::handle entry(const nb::dict& d, const char* key) {
  return d.contains(key) ? nb::handle(d[key]) : nb::handle(Py_None);
}

// The acl objects of one call; destroyed with it (a tensor list destroys its tensors).
class AclArgs {
 public:
  AclArgs() = default;
  AclArgs(const AclArgs&) = delete;
  AclArgs& operator=(const AclArgs&) = delete;
  ~AclArgs() {
    for (const aclTensorList* l : lists_) aclDestroyTensorList(l);
    for (const aclTensor* t : tensors_) aclDestroyTensor(t);
    for (const aclIntArray* a : arrays_) aclDestroyIntArray(a);
  }

  // The aclTensor of one Python tensor spec (nullptr for None).
  const aclTensor* tensor(nb::handle spec, const char* name) {
    if (spec.is_none()) return nullptr;
    aclTensor* t = create(bound_.view(spec, name), name);
    tensors_.push_back(t);
    return t;
  }

  // A tensor list of the Python list of specs (key / value: one tensor, or one per batch).
  const aclTensorList* list(nb::handle specs, const char* name) {
    std::vector<aclTensor*> members;
    const aclTensorList* l = nullptr;
    try {
      for (nb::handle s : nb::borrow<nb::list>(specs)) members.push_back(create(bound_.view(s, name), name));
      l = aclCreateTensorList(members.data(), members.size());
      if (l == nullptr) throw nb::value_error((std::string(name) + ": aclCreateTensorList refused the list").c_str());
    } catch (...) {
      for (aclTensor* t : members) aclDestroyTensor(t);
      throw;
    }
    lists_.push_back(l);
    return l;
  }

  const aclIntArray* ints(const std::optional<std::vector<int64_t>>& v) {
    if (!v) return nullptr;
    const int64_t none = 0;
    const aclIntArray* a = aclCreateIntArray(v->empty() ? &none : v->data(), v->size());
    arrays_.push_back(a);
    return a;
  }

 private:
  // As torch_npu's ConvertType: the view's dims and strides over the tensor's memory; the storage
  // dims are an NZ tensor's NZ shape, else one dim spanning the elements the view reaches.
  static aclTensor* create(const TensorView& v, const char* name) {
    std::vector<int64_t> dims(v.dims, v.dims + v.rank), strides(v.strides, v.strides + v.rank), storage;
    if (v.format == Format::kFractalNZ && v.storage_rank > 0) {
      storage.assign(v.storage_dims, v.storage_dims + v.storage_rank);
    } else {
      int64_t extent = v.numel() == 0 ? 0 : 1;
      for (int i = 0; i < v.rank && extent > 0; ++i) extent += (v.dims[i] - 1) * v.strides[i];
      storage.push_back(extent);
    }
    aclTensor* t = aclCreateTensor(dims.data(), dims.size(), static_cast<aclDataType>(v.dtype), strides.data(), 0,
                                   static_cast<aclFormat>(v.format), storage.data(), storage.size(), v.data);
    if (t == nullptr)
      throw nb::value_error((std::string(name) + ": aclCreateTensor refused the tensor (dims, strides or dtype)").c_str());
    return t;
  }

  Bound bound_;
  std::vector<const aclTensor*> tensors_;
  std::vector<const aclTensorList*> lists_;
  std::vector<const aclIntArray*> arrays_;
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Phase 2 on the null stream (synchronous) in a 64-byte aligned workspace; (status, message).
template <class Execute>
Result run(aclnnStatus phase1, uint64_t bytes, aclOpExecutor* executor, Execute execute) {
  if (phase1 != ACLNN_SUCCESS) return {phase1, aclGetRecentErrMsg()};
  std::unique_ptr<void, FreeDeleter> ws(bytes == 0 ? nullptr : std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  const aclnnStatus st = execute(ws.get(), bytes, executor, nullptr);
  return {st, st == ACLNN_SUCCESS ? std::string() : std::string(aclGetRecentErrMsg())};
}

// The attributes both entry points take.
struct Attrs {
  std::string layout;
  int64_t num_heads, kv_heads, inner;
  double scale;
};

Attrs attrs_of(const nb::dict& a) {
  return {nb::cast<std::string>(a["input_layout"]), nb::cast<int64_t>(a["num_heads"]),
          nb::cast<int64_t>(a["num_key_value_heads"]), nb::cast<int64_t>(a["inner_precise"]),
          nb::cast<double>(a["scale_value"])};
}

// aclnnIncreFlashAttentionV4, the call torch_npu's npu_incre_flash_attention makes.
Result incre_flash_attention(const nb::dict& t, std::optional<std::vector<int64_t>> actual_seq_lengths,
                             const nb::dict& a) {
  AclArgs acl;
  const aclTensor* query = acl.tensor(entry(t, "query"), "query");
  const aclTensorList* key = acl.list(entry(t, "key"), "key");
  const aclTensorList* value = acl.list(entry(t, "value"), "value");
  const aclTensor* pse = acl.tensor(entry(t, "pse_shift"), "pse_shift");
  const aclTensor* mask = acl.tensor(entry(t, "atten_mask"), "atten_mask");
  const aclTensor* deq1 = acl.tensor(entry(t, "dequant_scale1"), "dequant_scale1");
  const aclTensor* qs1 = acl.tensor(entry(t, "quant_scale1"), "quant_scale1");
  const aclTensor* deq2 = acl.tensor(entry(t, "dequant_scale2"), "dequant_scale2");
  const aclTensor* qs2 = acl.tensor(entry(t, "quant_scale2"), "quant_scale2");
  const aclTensor* qo2 = acl.tensor(entry(t, "quant_offset2"), "quant_offset2");
  const aclTensor* aq_scale = acl.tensor(entry(t, "antiquant_scale"), "antiquant_scale");
  const aclTensor* aq_offset = acl.tensor(entry(t, "antiquant_offset"), "antiquant_offset");
  const aclTensor* block_table = acl.tensor(entry(t, "block_table"), "block_table");
  const aclTensor* kv_pad = acl.tensor(entry(t, "kv_padding_size"), "kv_padding_size");
  const aclTensor* out = acl.tensor(entry(t, "attention_out"), "attention_out");
  const aclIntArray* lens = acl.ints(actual_seq_lengths);
  Attrs at = attrs_of(a);
  const int64_t block_size = nb::cast<int64_t>(a["block_size"]);

  nb::gil_scoped_release release;
  uint64_t bytes = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus st = aclnnIncreFlashAttentionV4GetWorkspaceSize(
      query, key, value, pse, mask, lens, deq1, qs1, deq2, qs2, qo2, aq_scale, aq_offset, block_table, kv_pad,
      at.num_heads, at.scale, at.layout.data(), at.kv_heads, block_size, at.inner, out, &bytes, &executor);
  return run(st, bytes, executor, aclnnIncreFlashAttentionV4);
}

// aclnnPromptFlashAttentionV3, the call torch_npu's npu_prompt_flash_attention makes.
Result prompt_flash_attention(const nb::dict& t, std::optional<std::vector<int64_t>> actual_seq_lengths,
                              std::optional<std::vector<int64_t>> actual_seq_lengths_kv, const nb::dict& a) {
  AclArgs acl;
  const aclTensor* query = acl.tensor(entry(t, "query"), "query");
  const aclTensor* key = acl.tensor(entry(t, "key"), "key");
  const aclTensor* value = acl.tensor(entry(t, "value"), "value");
  const aclTensor* pse = acl.tensor(entry(t, "pse_shift"), "pse_shift");
  const aclTensor* mask = acl.tensor(entry(t, "atten_mask"), "atten_mask");
  const aclTensor* deq1 = acl.tensor(entry(t, "deq_scale1"), "deq_scale1");
  const aclTensor* qs1 = acl.tensor(entry(t, "quant_scale1"), "quant_scale1");
  const aclTensor* deq2 = acl.tensor(entry(t, "deq_scale2"), "deq_scale2");
  const aclTensor* qs2 = acl.tensor(entry(t, "quant_scale2"), "quant_scale2");
  const aclTensor* qo2 = acl.tensor(entry(t, "quant_offset2"), "quant_offset2");
  const aclTensor* out = acl.tensor(entry(t, "attention_out"), "attention_out");
  const aclIntArray* lens = acl.ints(actual_seq_lengths);
  const aclIntArray* lens_kv = acl.ints(actual_seq_lengths_kv);
  Attrs at = attrs_of(a);
  const int64_t pre = nb::cast<int64_t>(a["pre_tokens"]), next = nb::cast<int64_t>(a["next_tokens"]);
  const int64_t sparse = nb::cast<int64_t>(a["sparse_mode"]);

  nb::gil_scoped_release release;
  uint64_t bytes = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus st = aclnnPromptFlashAttentionV3GetWorkspaceSize(
      query, key, value, pse, mask, lens, lens_kv, deq1, qs1, deq2, qs2, qo2, at.num_heads, at.scale, pre, next,
      at.layout.data(), at.kv_heads, sparse, at.inner, out, &bytes, &executor);
  return run(st, bytes, executor, aclnnPromptFlashAttentionV3);
}

}  // namespace

void def_aclnn_entries(nb::module_& m) {
  m.def("incre_flash_attention", &incre_flash_attention, nb::arg("tensors"), nb::arg("actual_seq_lengths").none(),
        nb::arg("attrs"));
  m.def("prompt_flash_attention", &prompt_flash_attention, nb::arg("tensors"), nb::arg("actual_seq_lengths").none(),
        nb::arg("actual_seq_lengths_kv").none(), nb::arg("attrs"));
}

}  // namespace mlaops::py
