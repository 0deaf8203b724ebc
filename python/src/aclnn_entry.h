// The aclnn C entry points behind torch_npu's npu_incre_flash_attention and
// npu_prompt_flash_attention (docs/python.md): the Python layer's tensors become aclTensors over
// their memory (as torch_npu hands them to aclCreateTensor), then the two-phase calls
// aclnnIncreFlashAttentionV4* / aclnnPromptFlashAttentionV3* run on the null stream, so the
// entry points' own rules apply (docs/ops/incre_flash_attention.md,
// docs/ops/prompt_flash_attention.md).
#pragma once

#include <nanobind/nanobind.h>

namespace mlaops::py {

// Defines incre_flash_attention(tensors, actual_seq_lengths, attrs) and
// prompt_flash_attention(tensors, actual_seq_lengths, actual_seq_lengths_kv, attrs), each
// returning (status, message).
void def_aclnn_entries(nanobind::module_& m);

}  // namespace mlaops::py
