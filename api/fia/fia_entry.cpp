// Phase 1 shared by the fused-attention entry points (api/fia/fia_entry.h): binds the mapped
// arguments into executor slots in the entry point's inner-operator order, copies the host arrays
// and the layout string, applies the entry point's own rules, then FusedInferAttentionScoreV4's
// check and plan (ops/fia/fia_check.cpp, _plan.cpp); phase 2 runs
// ops/fia/fia_run.cpp on the slots as they are bound then.
#include "api/fia/fia_entry.h"

#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "api/runtime/executor.h"
#include "api/runtime/objects.h"
#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops::api {

const FiaEntryInput kFiaV4Inputs[kFiaNumSlots] = {
    {kFiaQuery, "query"},
    {kFiaKey, "key"},
    {kFiaValue, "value"},
    {kFiaPse, "pseShiftOptional"},
    {kFiaMask, "attenMaskOptional"},
    {kFiaAslQ, "actualSeqLengthsOptional"},
    {kFiaAslKv, "actualSeqLengthsKvOptional"},
    {kFiaDeq1, "deqScale1Optional"},
    {kFiaQs1, "quantScale1Optional"},
    {kFiaDeq2, "deqScale2Optional"},
    {kFiaQs2, "quantScale2Optional"},
    {kFiaQo2, "quantOffset2Optional"},
    {kFiaAntiquantScale, "antiquantScaleOptional"},
    {kFiaAntiquantOffset, "antiquantOffsetOptional"},
    {kFiaBlockTable, "blockTableOptional"},
    {kFiaQPad, "queryPaddingSizeOptional"},
    {kFiaKvPad, "kvPaddingSizeOptional"},
    {kFiaKAqScale, "keyAntiquantScaleOptional"},
    {kFiaKAqOffset, "keyAntiquantOffsetOptional"},
    {kFiaVAqScale, "valueAntiquantScaleOptional"},
    {kFiaVAqOffset, "valueAntiquantOffsetOptional"},
    {kFiaKPrefix, "keySharedPrefixOptional"},
    {kFiaVPrefix, "valueSharedPrefixOptional"},
    {kFiaPrefixLen, "actualSharedPrefixLenOptional"},
    {kFiaQRope, "queryRopeOptional"},
    {kFiaKRope, "keyRopeOptional"},
    {kFiaKRopeAqScale, "keyRopeAntiquantScaleOptional"},
    {kFiaDqsQuery, "dequantScaleQueryOptional"},
    {kFiaSink, "learnableSinkOptional"},
};

// V1's prototype names its optional inputs without the "Optional" suffix (the V1 slots 0..16;
// the later slots are null in V1 and keep their V4 names).
const FiaEntryInput kFiaV1Inputs[kFiaNumSlots] = {
    {kFiaQuery, "query"},
    {kFiaKey, "key"},
    {kFiaValue, "value"},
    {kFiaPse, "pseShift"},
    {kFiaMask, "attenMask"},
    {kFiaAslQ, "actualSeqLengths"},
    {kFiaAslKv, "actualSeqLengthsKv"},
    {kFiaDeq1, "deqScale1"},
    {kFiaQs1, "quantScale1"},
    {kFiaDeq2, "deqScale2"},
    {kFiaQs2, "quantScale2"},
    {kFiaQo2, "quantOffset2"},
    {kFiaAntiquantScale, "antiquantScale"},
    {kFiaAntiquantOffset, "antiquantOffset"},
    {kFiaBlockTable, "blockTable"},
    {kFiaQPad, "queryPaddingSize"},
    {kFiaKvPad, "kvPaddingSize"},
    {kFiaKAqScale, "keyAntiquantScaleOptional"},
    {kFiaKAqOffset, "keyAntiquantOffsetOptional"},
    {kFiaVAqScale, "valueAntiquantScaleOptional"},
    {kFiaVAqOffset, "valueAntiquantOffsetOptional"},
    {kFiaKPrefix, "keySharedPrefixOptional"},
    {kFiaVPrefix, "valueSharedPrefixOptional"},
    {kFiaPrefixLen, "actualSharedPrefixLenOptional"},
    {kFiaQRope, "queryRopeOptional"},
    {kFiaKRope, "keyRopeOptional"},
    {kFiaKRopeAqScale, "keyRopeAntiquantScaleOptional"},
    {kFiaDqsQuery, "dequantScaleQueryOptional"},
    {kFiaSink, "learnableSinkOptional"},
};

namespace {

constexpr size_t kLayoutMax = 32;  // longest accepted value is 9 characters

bool is_int_array_slot(int slot) { return slot == kFiaAslQ || slot == kFiaAslKv || slot == kFiaPrefixLen; }

// Host-side copies taken in phase 1 (int arrays, layout string), the scalar attributes, and where
// each V4 slot lives among the executor's inputs (-1: not an input of this entry point).
struct Host {
  int index[kFiaNumSlots];
  bool has_asl_q = false, has_asl_kv = false, has_prefix = false;
  std::vector<int64_t> asl_q, asl_kv, prefix;
  std::string layout;
  int64_t num_heads = 0, pre = 0, next = 0, num_kv_heads = 0, sparse = 0, inner = 0, block_size = 0;
  int64_t antiquant_mode = 0, key_aq_mode = 0, value_aq_mode = 0, query_quant_mode = 0;
  double scale = 1.0;
  bool lse_flag = false;
};

const TensorView* opt(const ExecutorState& st, const Host& h, int slot) {
  const int i = h.index[slot];
  if (i < 0) return nullptr;
  const TensorSlot& s = st.inputs[static_cast<size_t>(i)];
  return s.present ? &s.view : nullptr;
}

// key / value: a tensor list (FIA, IFA) or a single tensor (PFA: a one-element list).
std::vector<TensorView> list_of(const ExecutorState& st, const Host& h, int slot) {
  const TensorSlot& s = st.inputs[static_cast<size_t>(h.index[slot])];
  if (s.is_list) return s.list;
  if (!s.present) return {};
  return {s.view};
}

// MLAOPS_FIA_LEGACY_INVALID_ROWS=1 turns FiaParams::legacy_uniform_invalid_rows on for every aclnn
// call of the process (read once; docs/c-api.md): the vendor C signature has no place for it.
bool legacy_invalid_rows_env() {
  static const bool on = [] {
    const char* v = std::getenv("MLAOPS_FIA_LEGACY_INVALID_ROWS");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

FiaParams params_from(const ExecutorState& st, const Host& h) {
  FiaParams p;
  p.query = st.inputs[static_cast<size_t>(h.index[kFiaQuery])].view;
  p.key = list_of(st, h, kFiaKey);
  p.value = list_of(st, h, kFiaValue);
  p.pse_shift = opt(st, h, kFiaPse);
  p.atten_mask = opt(st, h, kFiaMask);
  p.actual_seq_lengths = h.has_asl_q ? &h.asl_q : nullptr;
  p.actual_seq_lengths_kv = h.has_asl_kv ? &h.asl_kv : nullptr;
  p.deq_scale1 = opt(st, h, kFiaDeq1);
  p.quant_scale1 = opt(st, h, kFiaQs1);
  p.deq_scale2 = opt(st, h, kFiaDeq2);
  p.quant_scale2 = opt(st, h, kFiaQs2);
  p.quant_offset2 = opt(st, h, kFiaQo2);
  p.antiquant_scale = opt(st, h, kFiaAntiquantScale);
  p.antiquant_offset = opt(st, h, kFiaAntiquantOffset);
  p.block_table = opt(st, h, kFiaBlockTable);
  p.query_padding_size = opt(st, h, kFiaQPad);
  p.kv_padding_size = opt(st, h, kFiaKvPad);
  p.key_antiquant_scale = opt(st, h, kFiaKAqScale);
  p.key_antiquant_offset = opt(st, h, kFiaKAqOffset);
  p.value_antiquant_scale = opt(st, h, kFiaVAqScale);
  p.value_antiquant_offset = opt(st, h, kFiaVAqOffset);
  p.key_shared_prefix = opt(st, h, kFiaKPrefix);
  p.value_shared_prefix = opt(st, h, kFiaVPrefix);
  p.actual_shared_prefix_len = h.has_prefix ? &h.prefix : nullptr;
  p.query_rope = opt(st, h, kFiaQRope);
  p.key_rope = opt(st, h, kFiaKRope);
  p.key_rope_antiquant_scale = opt(st, h, kFiaKRopeAqScale);
  p.dequant_scale_query = opt(st, h, kFiaDqsQuery);
  p.learnable_sink = opt(st, h, kFiaSink);
  p.num_heads = h.num_heads;
  p.scale_value = h.scale;
  p.pre_tokens = h.pre;
  p.next_tokens = h.next;
  p.input_layout = h.layout;
  p.num_key_value_heads = h.num_kv_heads;
  p.sparse_mode = h.sparse;
  p.inner_precise = h.inner;
  p.legacy_uniform_invalid_rows = legacy_invalid_rows_env();
  p.block_size = h.block_size;
  p.antiquant_mode = h.antiquant_mode;
  p.softmax_lse_flag = h.lse_flag;
  p.key_antiquant_mode = h.key_aq_mode;
  p.value_antiquant_mode = h.value_aq_mode;
  p.query_quant_mode = h.query_quant_mode;
  p.attention_out = st.outputs[0].view;
  p.softmax_lse = st.outputs[1].present ? &st.outputs[1].view : nullptr;
  return p;
}

Status copy_int_array(const aclIntArray* a, const char* op, const char* name, bool* has, std::vector<int64_t>* out) {
  *has = a != nullptr;
  if (a == nullptr) return kSuccess;
  MLAOPS_CHECK(is_live(a, ObjKind::kIntArray), kParamInvalid,
               "%s: %s: FIA-01 not a live aclIntArray (destroyed, or never created by aclCreateIntArray)", op, name);
  *out = a->values;
  return kSuccess;
}

// The name of V4 slot `slot` in the entry point's prototype.
const char* name_of(const FiaEntry& e, int slot) {
  for (size_t i = 0; i < e.num_inputs; ++i)
    if (e.inputs[i].slot == slot) return e.inputs[i].name;
  return kFiaV4Inputs[slot].name;
}

// IFA-02 / PFA-01: the layouts the entry point's own checker parses.
Status check_family_layout(const FiaEntry& e, const std::string& layout) {
  if (e.family == FiaFamily::kIfa) {
    for (const char* l : {"BSH", "BSND", "BNSD"})
      if (layout == l) return kSuccess;
    return fail(kParamInvalid, "%s: inputLayout: IFA-02 value; allowed {BSH, BSND, BNSD}, got \"%.32s\"", e.op,
                layout.c_str());
  }
  if (e.family == FiaFamily::kPfa) {
    for (const char* l : {"BSH", "BSND", "BNSD", "BNSD_BSND", "TND", "NTD"})
      if (layout == l) return kSuccess;
    if (layout == "SH" || layout == "NSD")
      return fail(kParamInvalid, "%s: inputLayout: PFA-01 \"%s\" is not supported yet; allowed {BSH, BSND, BNSD, "
                  "BNSD_BSND, TND, NTD}",
                  e.op, layout.c_str());
    return fail(kParamInvalid,
                "%s: inputLayout: PFA-01 value; allowed {BSH, BSND, BNSD, BNSD_BSND, TND, NTD}, got \"%.32s\"", e.op,
                layout.c_str());
  }
  return kSuccess;
}

// IFA-01: the query holds one token per batch (Q_S = 1); a query whose rank does not fit the
// layout is left to FIA-07.
Status check_ifa_query(const FiaEntry& e, const TensorView& q, const std::string& layout) {
  const bool bsh = layout == "BSH";
  if (q.rank != (bsh ? 3 : 4)) return kSuccess;
  const int64_t qs = layout == "BNSD" ? q.dims[2] : q.dims[1];
  MLAOPS_CHECK(qs == 1, kParamInvalid,
               "%s: query: IFA-01 sequence length (incremental decoding takes one token per batch); allowed 1, got %lld "
               "(shape %s, layout %s)",
               e.op, (long long)qs, check::shape_str(q).c_str(), layout.c_str());
  return kSuccess;
}

// FIA-03 for entry points that do not read INT32 as packed INT4 (FIA V1, IFA V1/V2, PFA).
Status check_no_int32_kv(const FiaEntry& e, const FiaParams& p) {
  for (const auto& [list, slot] : {std::pair{&p.key, kFiaKey}, std::pair{&p.value, kFiaValue}})
    for (const TensorView& t : *list)
      MLAOPS_CHECK(t.dtype != DType::kInt32, kParamInvalid,
                   "%s: %s: FIA-03 entry-point dtype; allowed {FLOAT16, BF16, INT8}, got INT32 (this entry point does not read "
                   "INT32 as packed INT4)",
                   e.op, name_of(e, slot));
  return kSuccess;
}

// The V4 rules name V4's parameters; the message of a failed check names the entry point's own
// (IFA's actualSeqLengths fills V4's actualSeqLengthsKvOptional, V1 drops "Optional", ...).
Status rename_params(const FiaEntry& e, Status status) {
  std::string msg = last_error_string();
  for (size_t i = 0; i < e.num_inputs; ++i) {
    const std::string v4 = kFiaV4Inputs[e.inputs[i].slot].name, mine = e.inputs[i].name;
    if (v4 == mine) continue;
    for (size_t at = msg.find(v4); at != std::string::npos; at = msg.find(v4, at + mine.size())) {
      const char next = at + v4.size() < msg.size() ? msg[at + v4.size()] : ' ';
      if (std::isalnum(static_cast<unsigned char>(next))) continue;  // a longer name that starts the same
      msg.replace(at, v4.size(), mine);
    }
  }
  set_last_error(msg);
  return status;
}

aclnnStatus register_noop(std::shared_ptr<ExecutorState> st, std::shared_ptr<Host> host, uint64_t* workspaceSize,
                          aclOpExecutor** executor) {
  st->workspace_bytes = 0;
  st->run = [](const ExecutorState&, void*, uint64_t) { return kSuccess; };
  st->params = [host](const ExecutorState& s) { return CallParams(params_from(s, *host)); };
  *workspaceSize = 0;
  *executor = register_executor(std::move(st));
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus fia_entry_workspace_size(const FiaEntry& e, uint64_t* workspaceSize, aclOpExecutor** executor) {
  const char* op = e.op;
  if (workspaceSize == nullptr || executor == nullptr)
    return fail(kParamNullptr, "%s: workspaceSize / executor: FIA-01 out-pointer is null", op);
  const bool pfa = e.family == FiaFamily::kPfa;
  // FIA-01 required arguments (named with the rule before the generic binding).
  const struct {
    const void* ptr;
    const char* name;
  } required[] = {{e.tensor[kFiaQuery], name_of(e, kFiaQuery)},
                  {pfa ? static_cast<const void*>(e.tensor[kFiaKey]) : e.key_list, name_of(e, kFiaKey)},
                  {pfa ? static_cast<const void*>(e.tensor[kFiaValue]) : e.value_list, name_of(e, kFiaValue)},
                  {e.attention_out, "attentionOut"}};
  for (const auto& r : required)
    if (r.ptr == nullptr) return fail(kParamNullptr, "%s: %s: FIA-01 required argument is null", op, r.name);
  if (pfa && e.input_layout == nullptr)
    return fail(kParamNullptr, "%s: inputLayout: PFA-01 required argument is null; allowed a layout string, got null",
                op);

  auto st = std::make_shared<ExecutorState>();
  auto host = std::make_shared<Host>();
  st->op = op;
  st->inputs.resize(e.num_inputs);
  st->outputs.resize(2);
  for (int& i : host->index) i = -1;
  for (size_t i = 0; i < e.num_inputs; ++i) {
    const int slot = e.inputs[i].slot;
    const char* name = e.inputs[i].name;
    host->index[slot] = static_cast<int>(i);
    TensorSlot* s = &st->inputs[i];
    if (is_int_array_slot(slot)) continue;  // host copies below; the slot stays unbound
    if ((slot == kFiaKey || slot == kFiaValue) && !pfa) {
      MLAOPS_TRY(bind_list_slot(slot == kFiaKey ? e.key_list : e.value_list, op, name, true, s));
      continue;
    }
    const bool needed = slot == kFiaQuery || slot == kFiaKey || slot == kFiaValue;
    MLAOPS_TRY(bind_slot(e.tensor[slot], op, name, needed, s));
  }
  MLAOPS_TRY(bind_slot(e.attention_out, op, "attentionOut", true, &st->outputs[0]));
  // softmaxLseFlag false: the argument is ignored (the vendor substitutes a placeholder).
  if (e.lse_flag) {
    if (e.softmax_lse == nullptr)
      return fail(kParamNullptr, "%s: softmaxLse: FIA-01 required when softmaxLseFlag is true; allowed a tensor, got null",
                  op);
    MLAOPS_TRY(bind_slot(e.softmax_lse, op, "softmaxLse", true, &st->outputs[1]));
  }
  MLAOPS_TRY(copy_int_array(e.asl_q, op, name_of(e, kFiaAslQ), &host->has_asl_q, &host->asl_q));
  MLAOPS_TRY(copy_int_array(e.asl_kv, op, name_of(e, kFiaAslKv), &host->has_asl_kv, &host->asl_kv));
  MLAOPS_TRY(copy_int_array(e.prefix_len, op, name_of(e, kFiaPrefixLen), &host->has_prefix, &host->prefix));
  // A null optional string attribute takes the op definition's default, "BSH" (FIA, IFA; PFA's
  // wrapper rejects it above).
  const char* layout = e.input_layout != nullptr ? e.input_layout : "BSH";
  bool truncated = false;
  host->layout = check::bounded_string(layout, kLayoutMax, &truncated);
  if (truncated)
    return fail(kParamInvalid,
                "%s: inputLayout: FIA-05 value; allowed a NUL-terminated layout string of at most %zu characters, got "
                "\"%.32s...\" (unterminated or too long)",
                op, kLayoutMax - 1, host->layout.c_str());
  host->num_heads = e.num_heads;
  host->scale = e.scale;
  host->pre = e.pre;
  host->next = e.next;
  host->num_kv_heads = e.num_kv_heads;
  host->sparse = e.sparse;
  host->inner = e.inner;
  host->block_size = e.block_size;
  host->antiquant_mode = e.antiquant_mode;
  host->lse_flag = e.lse_flag;
  host->key_aq_mode = e.key_aq_mode;
  host->value_aq_mode = e.value_aq_mode;
  host->query_quant_mode = e.query_quant_mode;

  // PFA-02: an empty attentionOut is a successful call that does nothing (before any other rule).
  if (pfa && st->outputs[0].view.empty()) return register_noop(std::move(st), std::move(host), workspaceSize, executor);
  MLAOPS_TRY(check_family_layout(e, host->layout));
  const FiaParams p = params_from(*st, *host);
  if (e.family == FiaFamily::kIfa) MLAOPS_TRY(check_ifa_query(e, p.query, host->layout));
  if (!e.int32_kv_is_int4) MLAOPS_TRY(check_no_int32_kv(e, p));

  FiaCheckOptions o;
  o.op = op;
  o.vendor_ranges = true;
  // Strided inputs (ops/common/auto_contiguous.h): PromptFlashAttention's wrapper makes only its main
  // inputs contiguous; the other entry points mark every input AutoContiguous.
  o.stage_set = pfa ? FiaStageSet::kPfa : FiaStageSet::kAllInputs;
  FiaCall call;
  auto plan = std::make_shared<FiaPlan>();
  if (Status s = fia_check(p, o, &call); s != kSuccess) return rename_params(e, s);
  if (Status s = fia_check_pointers(p, call, op); s != kSuccess) return rename_params(e, s);
  MLAOPS_TRY(fia_plan(call, op, plan.get()));
  st->workspace_bytes = static_cast<uint64_t>(fia_workspace_bytes(*plan));
  st->run = [plan, host](const ExecutorState& s, void* ws, uint64_t size) {
    return fia_run(params_from(s, *host), *plan, ws, size, s.op.c_str());
  };
  st->params = [host](const ExecutorState& s) { return CallParams(params_from(s, *host)); };
  *workspaceSize = st->workspace_bytes;
  *executor = register_executor(std::move(st));
  return ACLNN_SUCCESS;
}

}  // namespace mlaops::api
