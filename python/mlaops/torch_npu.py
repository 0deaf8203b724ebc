"""Drop-in module: ``import mlaops.torch_npu as torch_npu`` gives the operators under
torch_npu's names (docs/python.md), so code written for torch_npu's MLA calls runs on the CPU.
Only the functions below exist; other torch_npu functions raise AttributeError."""
from . import (npu_format_cast, npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2,
               npu_mla_prolog, npu_mla_prolog_v2)

__all__ = ["npu_format_cast", "npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
           "npu_mla_prolog", "npu_mla_prolog_v2"]
