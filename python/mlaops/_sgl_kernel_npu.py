"""sgl-kernel-npu's ``torch.ops.npu.mla_preprocess`` (csrc/mla_preprocess: its schema and binding
op_host/mla_preprocess.cpp), the op SGLang's NPU MLA layer calls (forward_mlapo). Its kernel is
the serving stacks' MLAPO op (docs/ops/mla_preprocess.md "The serving stacks' MLAPO op"): the
binding takes gamma0 / beta0 but the kernel's first stage quantises hiddenState without reading
them. docs/python.md "mlaops._sgl_kernel_npu.mla_preprocess" says what is supported."""
from ._args import checked
from ._errors import Error
from ._preprocess import mlapo
from ._tensors import dtype_name

_FN = "sgl_kernel_npu.mla_preprocess"
# the binding's maps (cache_mode_map / quant_mode_map) -> the enum values
_CACHE_MODES = {"krope_ctkv": 1, "int8_nzcache": 2, "nzcache": 3}
_QUANT_MODES = {"per_tensor_quant_asymm": 0, "per_token_quant_symm": 1}


def _refuse(param, rule, what, allowed, got):
    raise Error(161002, f"{_FN}: {param}: {rule} {what}; allowed {allowed}, got {got}")


@checked("MPP-01", name=_FN)
def mla_preprocess(hiddenState, gamma0, beta0, wdqkv, descale0, gamma1, beta1, wuq, descale1, gamma2, cos, sin,  # noqa: N803
                   wuk, kv_cache, kv_cache_rope, slotmapping, quant_scale0, quant_offset0, bias0, quant_scale1,
                   quant_offset1, bias1, *, ctkv_scale=None, q_nope_scale=None, cache_mode=None, quant_mode=None,
                   q_out0, kv_cache_out0, q_out1, kv_cache_out1):
    """Returns (q_out0, kv_cache_out0, q_out1, kv_cache_out1), the four outputs as given.

    The schema's order: the first 22 tensors positional, the rest keyword-only (the four outputs
    required). cache_mode None: "krope_ctkv" ("int8_nzcache", "nzcache"; the binding maps no
    "kvcache"); quant_mode None: "per_token_quant_symm" ("per_tensor_quant_asymm"), the binding's
    defaults. gamma0 / beta0 are not read (SGLang passes zeros); beta1 is read for its first Hcq
    elements (SGLang's dummy of length hidden when the q RmsNorm has no bias). The weights are
    int8 (the kernel has no unquantised path). The new cache rows go into kv_cache_out0 /
    kv_cache_out1 (SGLang passes the caches themselves)."""
    cm = _CACHE_MODES.get(cache_mode if cache_mode is not None else "krope_ctkv")
    if cm is None:
        _refuse("cache_mode", "MPP-06", "value", "{" + ", ".join(_CACHE_MODES) + "}", f'"{cache_mode}"')
    qm = _QUANT_MODES.get(quant_mode if quant_mode is not None else "per_token_quant_symm")
    if qm is None:
        _refuse("quant_mode", "MPP-07", "value", "{" + ", ".join(_QUANT_MODES) + "}", f'"{quant_mode}"')
    if dtype_name(wdqkv) != "int8":
        _refuse("wdqkv", "MPP-11", "dtype (the kernel has no unquantised path)", "int8", dtype_name(wdqkv))
    return mlapo(_FN, cm, qm, False, hiddenState=hiddenState, wdqkv=wdqkv, descale0=descale0, gamma1=gamma1,
                 beta1=beta1, wuq=wuq, descale1=descale1, gamma2=gamma2, cos=cos, sin=sin, wuk=wuk, kv_cache=kv_cache,
                 kv_cache_rope=kv_cache_rope, slotmapping=slotmapping, quant_scale0=quant_scale0,
                 quant_offset0=quant_offset0, bias0=bias0, quant_scale1=quant_scale1, quant_offset1=quant_offset1,
                 bias1=bias1, ctkv_scale=ctkv_scale, q_nope_scale=q_nope_scale, q_out0=q_out0,
                 kv_cache_out0=kv_cache_out0, q_out1=q_out1, kv_cache_out1=kv_cache_out1, inner_out=None)[:4]
