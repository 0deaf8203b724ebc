"""mlaops: CANN's MLA inference operators on the CPU with torch_npu's Python signatures.

See docs/python.md. The functions take torch tensors (zero-copy through DLPack) or numpy
arrays (bf16 as ml_dtypes.bfloat16) and return what torch_npu returns.
"""
from ._mlaops import version as _version
from ._mlaops import num_threads, set_num_threads, active_isa
from ._errors import Error
from ._format import npu_format_cast, npu_format_cast_, get_npu_format
from ._prolog import npu_mla_prolog, npu_mla_prolog_v2, npu_mla_prolog_v3, npu_mla_prolog_v3_functional
from ._preprocess import npu_mla_preprocess
from . import _C_ascend  # noqa: N812 - vllm-ascend's torch.ops._C_ascend name
from . import _sgl_kernel_npu  # sgl-kernel-npu's torch.ops.npu.mla_preprocess
from ._fia import (npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2,
                   _npu_fused_infer_attention_score_get_max_workspace,
                   _npu_fused_infer_attention_score_v2_get_max_workspace)
from ._flash import npu_incre_flash_attention, npu_prompt_flash_attention

__version__ = _version()

__all__ = [
    "Error",
    "npu_format_cast",
    "npu_format_cast_",
    "get_npu_format",
    "npu_mla_prolog",
    "npu_mla_prolog_v2",
    "npu_mla_prolog_v3",
    "npu_mla_prolog_v3_functional",
    "npu_mla_preprocess",
    "npu_fused_infer_attention_score",
    "npu_fused_infer_attention_score_v2",
    "npu_incre_flash_attention",
    "npu_prompt_flash_attention",
    "num_threads",
    "set_num_threads",
    "active_isa",
]

try:  # torch.ops.mlaops.* and the torch_npu / vllm-ascend / SGLang names (torch.library) when torch is there
    import torch as _torch  # noqa: F401
except ImportError:  # pragma: no cover
    pass
else:
    from . import _torch_ops  # noqa: F401
