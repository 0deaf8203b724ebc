"""vllm-ascend's ``torch.ops._C_ascend.mla_preprocess`` (csrc/mla_preprocess: its binding
mla_preprocess_torch_adpt.h, op definition and tiling) in its current positional form: no gamma0 /
beta0, optional beta1, optional cos / sin. It computes the serving stacks' MLAPO op
(docs/ops/mla_preprocess.md "The serving stacks' MLAPO op"): the hidden states are quantised
without a RmsNorm. docs/python.md "mlaops._C_ascend.mla_preprocess" says what is supported."""
from ._args import checked
from ._errors import Error
from ._preprocess import mlapo
from ._tensors import dtype_name

_FN = "_C_ascend.mla_preprocess"
# the binding's strings (ParseCacheMode / ParseQuantMode) -> the enum values
_CACHE_MODES = {"kvcache": 0, "krope_ctkv": 1, "int8_nzcache": 2, "nzcache": 3}
_QUANT_MODES = {"per_tensor_quant_asymm": 0, "per_token_quant_symm": 1, "per_token_quant_asymm": 2, "no_quant": 3}
_MAX_TOKENS = 1024  # the tiling's "token count must be in [1, 1024]"


def _refuse(param, rule, what, allowed, got):
    raise Error(161002, f"{_FN}: {param}: {rule} {what}; allowed {allowed}, got {got}")


@checked("MPP-01", optional=("descale0", "beta1", "descale1", "cos", "sin", "kv_cache_rope"), name=_FN)
def mla_preprocess(hiddenState, wdqkv, descale0, gamma1, beta1, wuq, descale1, gamma2, cos, sin, wuk,  # noqa: N803
                   kv_cache, kv_cache_rope, slotmapping, quant_scale0=None, quant_offset0=None, bias0=None,
                   quant_scale1=None, quant_offset1=None, bias1=None, ctkv_scale=None, q_nope_scale=None,
                   cache_mode=None, quant_mode=None, enable_inner_out=None, q_out0=None, kv_cache_out0=None,
                   q_out1=None, kv_cache_out1=None, inner_out=None):
    """Returns (q_out0, kv_cache_out0, q_out1, kv_cache_out1, inner_out).

    Every argument may be positional, in the custom op's order. cache_mode None: "krope_ctkv";
    quant_mode None: "per_token_quant_symm" (the binding's defaults). quant_mode
    "per_tensor_quant_asymm" / "per_token_quant_symm" with int8 weights, "no_quant" with weights
    in the input dtype. cos and sin both None: no RoPE rotation. The outputs may be given (as
    vllm-ascend does) or left None (allocated); the new cache rows go into kv_cache_out0 /
    kv_cache_out1, by default the caches themselves. inner_out ([T, Hcq], RmsNorm(cq) * gamma1 +
    beta1) is written only with enable_inner_out. NZ caches may be given as allocated
    ([BlockNum, BlockSize, 1, W]) or as their NZ view ([BlockNum, W/c0, BlockSize, c0])."""
    cm = _CACHE_MODES.get(cache_mode if cache_mode is not None else "krope_ctkv")
    if cm is None:
        _refuse("cache_mode", "MPP-06", "value", "{" + ", ".join(_CACHE_MODES) + "}", f'"{cache_mode}"')
    qm_name = quant_mode if quant_mode is not None else "per_token_quant_symm"
    qm = _QUANT_MODES.get(qm_name)
    if qm is None:
        _refuse("quant_mode", "MPP-07", "value", "{" + ", ".join(_QUANT_MODES) + "}", f'"{quant_mode}"')
    if qm == 2:
        _refuse("quant_mode", "MPP-07", "not implemented (the kernel has no per_token_quant_asymm instantiation)",
                "{per_tensor_quant_asymm, per_token_quant_symm, no_quant}", '"per_token_quant_asymm"')
    dt, wdt = dtype_name(hiddenState), dtype_name(wdqkv)
    if (qm == 3) != (wdt != "int8"):
        _refuse("quant_mode", "MPP-11", f"value with {wdt} weights",
                '"no_quant"' if wdt != "int8" else "{per_tensor_quant_asymm, per_token_quant_symm}", f'"{qm_name}"')
    if qm == 1 and dt != "bf16":  # the tiling: "per_token_quant_symm supports only bfloat16 hiddenState"
        _refuse("hiddenState", "MPP-11", "dtype with per_token_quant_symm", "bf16", dt)
    t = int(hiddenState.shape[0])
    if not 1 <= t <= _MAX_TOKENS:
        _refuse("hiddenState", "MPP-08", "token count", f"[1, {_MAX_TOKENS}]", t)
    return mlapo(_FN, cm, 0 if qm == 3 else qm, bool(enable_inner_out), hiddenState=hiddenState, wdqkv=wdqkv,
                 descale0=descale0, gamma1=gamma1, beta1=beta1, wuq=wuq, descale1=descale1, gamma2=gamma2, cos=cos,
                 sin=sin, wuk=wuk, kv_cache=kv_cache, kv_cache_rope=kv_cache_rope, slotmapping=slotmapping,
                 quant_scale0=quant_scale0, quant_offset0=quant_offset0, bias0=bias0, quant_scale1=quant_scale1,
                 quant_offset1=quant_offset1, bias1=bias1, ctkv_scale=ctkv_scale, q_nope_scale=q_nope_scale,
                 q_out0=q_out0, kv_cache_out0=kv_cache_out0, q_out1=q_out1, kv_cache_out1=kv_cache_out1,
                 inner_out=inner_out)
