"""Drop-in module: ``import mlaops.torch_npu as torch_npu`` gives the operators under
torch_npu's names (docs/python.md), so code written for torch_npu's MLA calls runs on the CPU.
Only the functions below exist; other torch_npu functions raise AttributeError."""
from . import (get_npu_format, npu_format_cast, npu_format_cast_, npu_fused_infer_attention_score,
               npu_fused_infer_attention_score_v2, npu_incre_flash_attention, npu_mla_prolog, npu_mla_prolog_v2,
               npu_mla_prolog_v3, npu_mla_prolog_v3_functional, npu_prompt_flash_attention,
               _npu_fused_infer_attention_score_get_max_workspace,
               _npu_fused_infer_attention_score_v2_get_max_workspace)
from . import npu_mla_preprocess as _npu_mla_preprocess


class atb:  # noqa: N801 - torch_npu.atb's name
    """torch_npu.atb: npu_mla_preprocess (ATB's MlaPreprocessOperation)."""
    npu_mla_preprocess = staticmethod(_npu_mla_preprocess)


__all__ = ["atb", "get_npu_format", "npu_format_cast", "npu_format_cast_", "npu_fused_infer_attention_score",
           "npu_fused_infer_attention_score_v2", "npu_incre_flash_attention", "npu_mla_prolog", "npu_mla_prolog_v2",
           "npu_mla_prolog_v3", "npu_mla_prolog_v3_functional", "npu_prompt_flash_attention",
           "_npu_fused_infer_attention_score_get_max_workspace",
           "_npu_fused_infer_attention_score_v2_get_max_workspace"]
