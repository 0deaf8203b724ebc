// The inputs FusedInferAttentionScore reads as logical views and reads once (ops/common/auto_contiguous.h),
// and the phase-2 rule that the workspace overlaps none of the call's tensors (FIA-18): docs/c-api.md
// "Strided inputs", "Index tensors", "Workspace".
#include <iterator>
#include <string>
#include <vector>

#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {

std::vector<StageSlot> fia_stage_slots(FiaParams* p, FiaStageSet set, std::vector<TensorView>* store) {
  std::vector<StageSlot> slots;
  slots.push_back({"query", &p->query});
  for (auto [list, name] : {std::pair{&p->key, "key"}, std::pair{&p->value, "value"}})
    for (size_t i = 0; i < list->size(); ++i)
      slots.push_back({list->size() == 1 ? std::string(name) : fia_tensor_list_elem_name(name, i), &(*list)[i]});
  const OptionalInput pfa[] = {{&p->pse_shift, "pseShiftOptional"}, {&p->atten_mask, "attenMaskOptional"}};
  const OptionalInput rest[] = {  // the index tensors among them are read once (snapshot)
      {&p->deq_scale1, "deqScale1Optional"},
      {&p->quant_scale1, "quantScale1Optional"},
      {&p->deq_scale2, "deqScale2Optional"},
      {&p->quant_scale2, "quantScale2Optional"},
      {&p->quant_offset2, "quantOffset2Optional"},
      {&p->antiquant_scale, "antiquantScaleOptional"},
      {&p->antiquant_offset, "antiquantOffsetOptional"},
      {&p->block_table, "blockTableOptional", true},
      {&p->query_padding_size, "queryPaddingSizeOptional", true},
      {&p->kv_padding_size, "kvPaddingSizeOptional", true},
      {&p->key_antiquant_scale, "keyAntiquantScaleOptional"},
      {&p->key_antiquant_offset, "keyAntiquantOffsetOptional"},
      {&p->value_antiquant_scale, "valueAntiquantScaleOptional"},
      {&p->value_antiquant_offset, "valueAntiquantOffsetOptional"},
      {&p->key_shared_prefix, "keySharedPrefixOptional"},
      {&p->value_shared_prefix, "valueSharedPrefixOptional"},
      {&p->query_rope, "queryRopeOptional"},
      {&p->key_rope, "keyRopeOptional"},
      {&p->key_rope_antiquant_scale, "keyRopeAntiquantScaleOptional"},
      {&p->dequant_scale_query, "dequantScaleQueryOptional"},
      {&p->learnable_sink, "learnableSinkOptional"}};
  store->clear();
  store->reserve(std::size(pfa) + std::size(rest));  // no reallocation: the slots point into it
  add_optional_slots(pfa, store, &slots);
  if (set == FiaStageSet::kAllInputs) add_optional_slots(rest, store, &slots);
  return slots;
}

Status fia_check_workspace(const FiaParams& caller, const void* workspace, int64_t bytes, const char* op) {
  FiaParams p = caller;  // every input, list elements included, and the outputs
  std::vector<TensorView> store;
  const std::vector<StageSlot> slots = fia_stage_slots(&p, FiaStageSet::kAllInputs, &store);
  std::vector<check::Region> bound;
  for (const StageSlot& s : slots) bound.push_back({s.name.c_str(), s.view});
  bound.push_back({"attentionOut", &p.attention_out});
  bound.push_back({"softmaxLse", p.softmax_lse_flag ? p.softmax_lse : nullptr});
  return check::workspace_disjoint(op, "FIA-18", workspace, static_cast<uint64_t>(bytes), bound);
}

}  // namespace mlaops
