// mlaops._mlaops: the nanobind extension module behind the Python package (docs/python.md).
//
// One function per operator: it turns the Python layer's tensor tuples and attributes into the
// C++ API's params, releases the GIL, runs the operator (plan, workspace, run) and returns
// (status, message). The Python layer (python/mlaops/_ops.py) allocates the outputs, raises
// mlaops.Error on a non-zero status and gives the torch_npu signatures.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aclnn_entry.h"
#include "convert.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_preprocess.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/mlapo.h"
#include "mlaops/runtime.h"
#include "mlaops/status.h"
// MlaPrologV3's mode checks (MP-20, MP-21) are options of the library's plan function
#include "ops/mla_prolog/mla_prolog.h"
#include "ops/mla_prolog/mla_prolog_check.h"
// the MLAPO op's plan function with the serving function's name in messages
#include "ops/mla_preprocess/mla_preprocess.h"

namespace nb = nanobind;
using mlaops::py::Bound;

namespace {

using Result = std::pair<int, std::string>;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Workspace of `bytes`, 64-byte aligned (null for 0).
std::unique_ptr<void, FreeDeleter> workspace(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  const uint64_t rounded = (bytes + 63) / 64 * 64;
  return std::unique_ptr<void, FreeDeleter>(std::aligned_alloc(64, rounded));
}

Result result(mlaops::Status st) {
  return {static_cast<int>(st), st == mlaops::kSuccess ? std::string() : std::string(mlaops::last_error_message())};
}

nb::handle item(const nb::dict& d, const char* key) {
  return d.contains(key) ? nb::handle(d[key]) : nb::handle(Py_None);
}

// MlaProlog V1 / V2 / V3 (the cache mode as its enum value, docs/ops/mla_prolog.md). `v3` is
// None for V1 / V2, else V3's attributes (the mode tuple, qc_qr_scale, kc_scale, the op name for
// messages); V3's extra tensors come in `t`.
Result mla_prolog(const nb::dict& t, double eps_cq, double eps_ckv, int cache_mode, std::optional<nb::dict> v3) {
  Bound b;
  mlaops::MlaPrologParams p;
  p.token_x = b.view(item(t, "token_x"), "token_x");
  p.weight_dq = b.view(item(t, "weight_dq"), "weight_dq");
  p.weight_uq_qr = b.view(item(t, "weight_uq_qr"), "weight_uq_qr");
  p.weight_uk = b.view(item(t, "weight_uk"), "weight_uk");
  p.weight_dkv_kr = b.view(item(t, "weight_dkv_kr"), "weight_dkv_kr");
  p.rmsnorm_gamma_cq = b.view(item(t, "rmsnorm_gamma_cq"), "rmsnorm_gamma_cq");
  p.rmsnorm_gamma_ckv = b.view(item(t, "rmsnorm_gamma_ckv"), "rmsnorm_gamma_ckv");
  p.rope_sin = b.view(item(t, "rope_sin"), "rope_sin");
  p.rope_cos = b.view(item(t, "rope_cos"), "rope_cos");
  if (!item(t, "cache_index").is_none()) p.cache_index = b.view(item(t, "cache_index"), "cache_index");
  p.kv_cache = b.view(item(t, "kv_cache"), "kv_cache");
  p.kr_cache = b.view(item(t, "kr_cache"), "kr_cache");
  p.dequant_scale_x = b.optional(item(t, "dequant_scale_x"), "dequant_scale_x");
  p.dequant_scale_w_dq = b.optional(item(t, "dequant_scale_w_dq"), "dequant_scale_w_dq");
  p.dequant_scale_w_uq_qr = b.optional(item(t, "dequant_scale_w_uq_qr"), "dequant_scale_w_uq_qr");
  p.dequant_scale_w_dkv_kr = b.optional(item(t, "dequant_scale_w_dkv_kr"), "dequant_scale_w_dkv_kr");
  p.quant_scale_ckv = b.optional(item(t, "quant_scale_ckv"), "quant_scale_ckv");
  p.quant_scale_ckr = b.optional(item(t, "quant_scale_ckr"), "quant_scale_ckr");
  p.smooth_scales_cq = b.optional(item(t, "smooth_scales_cq"), "smooth_scales_cq");
  p.rmsnorm_epsilon_cq = eps_cq;
  p.rmsnorm_epsilon_ckv = eps_ckv;
  p.cache_mode = static_cast<mlaops::MlaPrologCacheMode>(cache_mode);
  p.query_out = b.view(item(t, "query_out"), "query_out");
  p.query_rope_out = b.view(item(t, "query_rope_out"), "query_rope_out");
  p.dequant_scale_q_nope_out = b.optional(item(t, "dequant_scale_q_nope_out"), "dequant_scale_q_nope_out");
  mlaops::MlaPrologCheckOptions o;
  std::string op;
  if (v3) {
    const nb::dict& a = *v3;
    op = nb::cast<std::string>(a["op"]);
    o.op = op.c_str();
    o.v3 = true;
    o.modes.weight_quant_mode = nb::cast<int64_t>(a["weight_quant_mode"]);
    o.modes.kv_cache_quant_mode = nb::cast<int64_t>(a["kv_cache_quant_mode"]);
    o.modes.query_quant_mode = nb::cast<int64_t>(a["query_quant_mode"]);
    o.modes.ckvkr_repo_mode = nb::cast<int64_t>(a["ckvkr_repo_mode"]);
    o.modes.quant_scale_repo_mode = nb::cast<int64_t>(a["quant_scale_repo_mode"]);
    o.modes.tile_size = nb::cast<int64_t>(a["tile_size"]);
    p.qc_qr_scale = nb::cast<double>(a["qc_qr_scale"]);
    p.kc_scale = nb::cast<double>(a["kc_scale"]);
    p.kv_quant_per_tile = o.modes.kv_cache_quant_mode == 3;
    p.actual_seq_len = b.optional(item(t, "actual_seq_len"), "actual_seq_len");
    p.k_nope_clip_alpha = b.optional(item(t, "k_nope_clip_alpha"), "k_nope_clip_alpha");
    p.query_norm_out = b.optional(item(t, "query_norm_out"), "query_norm_out");
    p.dequant_scale_q_norm_out = b.optional(item(t, "dequant_scale_q_norm_out"), "dequant_scale_q_norm_out");
  }

  nb::gil_scoped_release release;
  mlaops::OpPlan plan;
  mlaops::Status st = v3 ? mlaops::mla_prolog_make_plan(p, o, &plan) : mlaops::mla_prolog_plan(p, &plan);
  if (st != mlaops::kSuccess) return result(st);
  auto ws = workspace(plan.workspace_size());
  return result(mlaops::mla_prolog_run(plan, p, ws.get(), plan.workspace_size()));
}

// FusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md). `t` holds the tensors
// (key / value as lists; "workspace": an optional caller buffer, the .out variants'), `lens` the
// host int arrays, `a` the attributes. Returns (status, message, planned workspace bytes); with
// plan_only (the _get_max_workspace helpers) it plans and returns without running.
std::tuple<int, std::string, uint64_t> fused_infer_attention_score(const nb::dict& t, std::optional<std::vector<int64_t>> actual_seq_lengths,
                                   std::optional<std::vector<int64_t>> actual_seq_lengths_kv,
                                   std::optional<std::vector<int64_t>> actual_shared_prefix_len,
                                   const nb::dict& a, bool plan_only) {
  Bound b;
  mlaops::FiaParams p;
  p.query = b.view(item(t, "query"), "query");
  for (nb::handle k : nb::borrow<nb::list>(item(t, "key"))) p.key.push_back(b.view(k, "key"));
  for (nb::handle v : nb::borrow<nb::list>(item(t, "value"))) p.value.push_back(b.view(v, "value"));
  p.pse_shift = b.optional(item(t, "pse_shift"), "pse_shift");
  p.atten_mask = b.optional(item(t, "atten_mask"), "atten_mask");
  p.actual_seq_lengths = actual_seq_lengths ? &*actual_seq_lengths : nullptr;
  p.actual_seq_lengths_kv = actual_seq_lengths_kv ? &*actual_seq_lengths_kv : nullptr;
  p.deq_scale1 = b.optional(item(t, "dequant_scale1"), "dequant_scale1");
  p.quant_scale1 = b.optional(item(t, "quant_scale1"), "quant_scale1");
  p.deq_scale2 = b.optional(item(t, "dequant_scale2"), "dequant_scale2");
  p.quant_scale2 = b.optional(item(t, "quant_scale2"), "quant_scale2");
  p.quant_offset2 = b.optional(item(t, "quant_offset2"), "quant_offset2");
  p.antiquant_scale = b.optional(item(t, "antiquant_scale"), "antiquant_scale");
  p.antiquant_offset = b.optional(item(t, "antiquant_offset"), "antiquant_offset");
  p.block_table = b.optional(item(t, "block_table"), "block_table");
  p.query_padding_size = b.optional(item(t, "query_padding_size"), "query_padding_size");
  p.kv_padding_size = b.optional(item(t, "kv_padding_size"), "kv_padding_size");
  p.key_antiquant_scale = b.optional(item(t, "key_antiquant_scale"), "key_antiquant_scale");
  p.key_antiquant_offset = b.optional(item(t, "key_antiquant_offset"), "key_antiquant_offset");
  p.value_antiquant_scale = b.optional(item(t, "value_antiquant_scale"), "value_antiquant_scale");
  p.value_antiquant_offset = b.optional(item(t, "value_antiquant_offset"), "value_antiquant_offset");
  p.key_shared_prefix = b.optional(item(t, "key_shared_prefix"), "key_shared_prefix");
  p.value_shared_prefix = b.optional(item(t, "value_shared_prefix"), "value_shared_prefix");
  p.actual_shared_prefix_len = actual_shared_prefix_len ? &*actual_shared_prefix_len : nullptr;
  p.query_rope = b.optional(item(t, "query_rope"), "query_rope");
  p.key_rope = b.optional(item(t, "key_rope"), "key_rope");
  p.key_rope_antiquant_scale = b.optional(item(t, "key_rope_antiquant_scale"), "key_rope_antiquant_scale");
  p.dequant_scale_query = b.optional(item(t, "dequant_scale_query"), "dequant_scale_query");
  p.learnable_sink = b.optional(item(t, "learnable_sink"), "learnable_sink");
  p.num_heads = nb::cast<int64_t>(a["num_heads"]);
  p.scale_value = nb::cast<double>(a["scale"]);
  p.pre_tokens = nb::cast<int64_t>(a["pre_tokens"]);
  p.next_tokens = nb::cast<int64_t>(a["next_tokens"]);
  p.input_layout = nb::cast<std::string>(a["input_layout"]);
  p.num_key_value_heads = nb::cast<int64_t>(a["num_key_value_heads"]);
  p.sparse_mode = nb::cast<int64_t>(a["sparse_mode"]);
  p.inner_precise = nb::cast<int64_t>(a["inner_precise"]);
  p.block_size = nb::cast<int64_t>(a["block_size"]);
  p.antiquant_mode = nb::cast<int64_t>(a["antiquant_mode"]);
  p.softmax_lse_flag = nb::cast<bool>(a["softmax_lse_flag"]);
  p.key_antiquant_mode = nb::cast<int64_t>(a["key_antiquant_mode"]);
  p.value_antiquant_mode = nb::cast<int64_t>(a["value_antiquant_mode"]);
  p.query_quant_mode = nb::cast<int64_t>(a["query_quant_mode"]);
  p.attention_out = b.view(item(t, "attention_out"), "attention_out");
  p.softmax_lse = b.optional(item(t, "softmax_lse"), "softmax_lse");
  const mlaops::TensorView* given_ws = b.optional(item(t, "workspace"), "workspace");

  nb::gil_scoped_release release;
  mlaops::OpPlan plan;
  mlaops::Status st = mlaops::fused_infer_attention_score_v4_plan(p, &plan);
  const uint64_t bytes = st == mlaops::kSuccess ? plan.workspace_size() : 0;
  auto with_size = [bytes](Result r) { return std::make_tuple(r.first, r.second, bytes); };
  if (st != mlaops::kSuccess || plan_only) return with_size(result(st));
  if (given_ws != nullptr) {  // the caller's (contiguous) buffer when it is large enough
    uint64_t given = static_cast<uint64_t>(mlaops::dtype_size(given_ws->dtype));
    for (int i = 0; i < given_ws->rank; ++i) given *= static_cast<uint64_t>(given_ws->dims[i]);
    if (given >= bytes)
      return with_size(result(mlaops::fused_infer_attention_score_v4_run(plan, p, given_ws->data, given)));
  }
  auto ws = workspace(bytes);
  return with_size(result(mlaops::fused_infer_attention_score_v4_run(plan, p, ws.get(), bytes)));
}

// MlaPreprocess (docs/ops/mla_preprocess.md): `a` holds cache_mode / quant_mode (enum values)
// and do_rms_norm; epsilon is the vendor kernel's 1e-6 (the aclnn entry points do the same).
Result mla_preprocess(const nb::dict& t, const nb::dict& a) {
  Bound b;
  mlaops::MlaPreprocessParams p;
  p.input = b.view(item(t, "input"), "input");
  p.gamma0 = b.view(item(t, "gamma0"), "gamma0");
  p.beta0 = b.view(item(t, "beta0"), "beta0");
  p.quant_scale0 = b.optional(item(t, "quant_scale0"), "quant_scale0");
  p.quant_offset0 = b.optional(item(t, "quant_offset0"), "quant_offset0");
  p.wdqkv = b.view(item(t, "wdqkv"), "wdqkv");
  p.de_scale0 = b.optional(item(t, "descale0"), "descale0");
  p.bias0 = b.optional(item(t, "bias0"), "bias0");
  p.gamma1 = b.view(item(t, "gamma1"), "gamma1");
  p.beta1 = b.view(item(t, "beta1"), "beta1");
  p.quant_scale1 = b.optional(item(t, "quant_scale1"), "quant_scale1");
  p.quant_offset1 = b.optional(item(t, "quant_offset1"), "quant_offset1");
  p.wuq = b.view(item(t, "wuq"), "wuq");
  p.de_scale1 = b.optional(item(t, "descale1"), "descale1");
  p.bias1 = b.optional(item(t, "bias1"), "bias1");
  p.gamma2 = b.view(item(t, "gamma2"), "gamma2");
  p.cos = b.view(item(t, "cos"), "cos");
  p.sin = b.view(item(t, "sin"), "sin");
  p.wuk = b.view(item(t, "wuk"), "wuk");
  p.kv_cache = b.view(item(t, "kv_cache"), "kv_cache");
  p.kv_cache_rope = b.optional(item(t, "kv_cache_rope"), "kv_cache_rope");
  p.slot_mapping = b.view(item(t, "slotmapping"), "slotmapping");
  p.ctkv_scale = b.optional(item(t, "ctkv_scale"), "ctkv_scale");
  p.q_nope_scale = b.optional(item(t, "q_nope_scale"), "q_nope_scale");
  p.epsilon = 1e-6;
  p.cache_mode = static_cast<mlaops::MlaPreprocessCacheMode>(nb::cast<int>(a["cache_mode"]));
  p.quant_mode = static_cast<mlaops::MlaPreprocessQuantMode>(nb::cast<int>(a["quant_mode"]));
  p.do_rms_norm = nb::cast<bool>(a["do_rms_norm"]);
  p.q_out = b.view(item(t, "q_out0"), "q_out0");
  if (!item(t, "kv_cache_out0").is_none()) p.kv_cache_out = b.view(item(t, "kv_cache_out0"), "kv_cache_out0");
  p.q_rope_out = b.optional(item(t, "q_out1"), "q_out1");
  p.kr_cache_out = b.optional(item(t, "kv_cache_out1"), "kv_cache_out1");
  p.q_down_out = b.optional(item(t, "inner_out"), "inner_out");

  nb::gil_scoped_release release;
  mlaops::OpPlan plan;
  mlaops::Status st = mlaops::mla_preprocess_plan(p, &plan);
  if (st != mlaops::kSuccess) return result(st);
  auto ws = workspace(plan.workspace_size());
  return result(mlaops::mla_preprocess_run(plan, p, ws.get(), plan.workspace_size()));
}

// The serving stacks' MLAPO op (mlaops/mlapo.h, docs/ops/mla_preprocess.md): behind
// mlaops._C_ascend.mla_preprocess and mlaops._sgl_kernel_npu.mla_preprocess. `a` holds op (the
// function's name in messages), cache_mode and quant_mode (enum values); the optional tensors
// (beta1, cos / sin, ...) are None when absent.
Result mlapo(const nb::dict& t, const nb::dict& a) {
  Bound b;
  mlaops::MlapoParams p;
  p.input = b.view(item(t, "input"), "input");
  p.quant_scale0 = b.optional(item(t, "quant_scale0"), "quant_scale0");
  p.quant_offset0 = b.optional(item(t, "quant_offset0"), "quant_offset0");
  p.wdqkv = b.view(item(t, "wdqkv"), "wdqkv");
  p.de_scale0 = b.optional(item(t, "descale0"), "descale0");
  p.bias0 = b.optional(item(t, "bias0"), "bias0");
  p.gamma1 = b.view(item(t, "gamma1"), "gamma1");
  p.beta1 = b.optional(item(t, "beta1"), "beta1");
  p.quant_scale1 = b.optional(item(t, "quant_scale1"), "quant_scale1");
  p.quant_offset1 = b.optional(item(t, "quant_offset1"), "quant_offset1");
  p.wuq = b.view(item(t, "wuq"), "wuq");
  p.de_scale1 = b.optional(item(t, "descale1"), "descale1");
  p.bias1 = b.optional(item(t, "bias1"), "bias1");
  p.gamma2 = b.view(item(t, "gamma2"), "gamma2");
  p.cos = b.optional(item(t, "cos"), "cos");
  p.sin = b.optional(item(t, "sin"), "sin");
  p.wuk = b.view(item(t, "wuk"), "wuk");
  p.kv_cache = b.view(item(t, "kv_cache"), "kv_cache");
  p.kv_cache_rope = b.optional(item(t, "kv_cache_rope"), "kv_cache_rope");
  p.slot_mapping = b.view(item(t, "slotmapping"), "slotmapping");
  p.ctkv_scale = b.optional(item(t, "ctkv_scale"), "ctkv_scale");
  p.q_nope_scale = b.optional(item(t, "q_nope_scale"), "q_nope_scale");
  p.cache_mode = static_cast<mlaops::MlaPreprocessCacheMode>(nb::cast<int>(a["cache_mode"]));
  p.quant_mode = static_cast<mlaops::MlaPreprocessQuantMode>(nb::cast<int>(a["quant_mode"]));
  p.q_out = b.view(item(t, "q_out0"), "q_out0");
  if (!item(t, "kv_cache_out0").is_none()) p.kv_cache_out = b.view(item(t, "kv_cache_out0"), "kv_cache_out0");
  p.q_rope_out = b.optional(item(t, "q_out1"), "q_out1");
  p.kr_cache_out = b.optional(item(t, "kv_cache_out1"), "kv_cache_out1");
  p.q_down_out = b.optional(item(t, "inner_out"), "inner_out");
  const std::string op = nb::cast<std::string>(a["op"]);

  nb::gil_scoped_release release;
  mlaops::OpPlan plan;
  mlaops::Status st = mlaops::mlapo_make_plan(p, op.c_str(), &plan);
  if (st != mlaops::kSuccess) return result(st);
  auto ws = workspace(plan.workspace_size());
  return result(mlaops::mlapo_run(plan, p, ws.get(), plan.workspace_size()));
}

}  // namespace

NB_MODULE(_mlaops, m) {
  m.doc() = "mlaops C++ operators (use the mlaops package, docs/python.md)";
  m.def("version", [] { return std::string(mlaops::version()); });
  m.def("num_threads", &mlaops::num_threads);
  m.def("set_num_threads", &mlaops::set_num_threads, nb::arg("n"));
  m.def("active_isa", [] { return std::string(mlaops::isa_name(mlaops::active_isa())); });
  m.def("mla_prolog", &mla_prolog, nb::arg("tensors"), nb::arg("rmsnorm_epsilon_cq"),
        nb::arg("rmsnorm_epsilon_ckv"), nb::arg("cache_mode"), nb::arg("v3").none() = nb::none());
  m.def("mla_preprocess", &mla_preprocess, nb::arg("tensors"), nb::arg("attrs"));
  m.def("mlapo", &mlapo, nb::arg("tensors"), nb::arg("attrs"));
  m.def("fused_infer_attention_score", &fused_infer_attention_score, nb::arg("tensors"),
        nb::arg("actual_seq_lengths").none(), nb::arg("actual_seq_lengths_kv").none(),
        nb::arg("actual_shared_prefix_len").none(), nb::arg("attrs"), nb::arg("plan_only") = false);
  // IncreFlashAttention / PromptFlashAttention through their aclnn C entry points (aclnn_entry.h)
  mlaops::py::def_aclnn_entries(m);
}
