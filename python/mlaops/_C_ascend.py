"""vllm-ascend's ``torch.ops._C_ascend.mla_preprocess`` in its newer positional form (no gamma0 /
beta0; csrc/torch_binding.cpp), for weights in the input dtype (quant_mode "no_quant"), and its
optional cos / sin. docs/python.md "vllm-ascend's _C_ascend.mla_preprocess" says what is known
of that form and why the int8 quant modes are refused."""
from ._args import checked
from ._errors import Error
from ._preprocess import npu_mla_preprocess
from ._tensors import dtype_name, empty, kind_of


def _filled(kind, shape, dtype, value):
    out = empty(kind, shape, dtype)
    out[...] = value
    return out


def _rope_dim(kv_cache, kv_cache_rope, gamma2, cache_mode):
    """Dr from the caches: [.., Hckv + Dr] (cache mode 0), [.., Dr] (ND) or [BN, Dr/16, BS, 16] (NZ)."""
    if kv_cache_rope is None:
        return int(kv_cache.shape[-1]) - int(gamma2.shape[0])
    if cache_mode in ("int8_nzcache", "nzcache"):
        return int(kv_cache_rope.shape[1]) * int(kv_cache_rope.shape[3])
    return int(kv_cache_rope.shape[-1])


@checked("MPP-01", optional=("descale0", "descale1", "cos", "sin", "kv_cache_rope"),
         name="_C_ascend.mla_preprocess")
def mla_preprocess(hiddenState, wdqkv, descale0, gamma1, beta1, wuq, descale1, gamma2, cos, sin, wuk,  # noqa: N803
                   kv_cache, kv_cache_rope, slotmapping, quant_scale0=None, quant_offset0=None, bias0=None,
                   quant_scale1=None, quant_offset1=None, bias1=None, ctkv_scale=None, q_nope_scale=None,
                   cache_mode=None, quant_mode=None, enable_inner_out=None, q_out0=None, kv_cache_out0=None,
                   q_out1=None, kv_cache_out1=None, inner_out=None):
    """Returns (q_out0, kv_cache_out0, q_out1, kv_cache_out1, inner_out), as npu_mla_preprocess.

    Every argument may be positional, in the custom op's order. Only quant_mode "no_quant" is
    supported: the first stage is then hiddenState @ wdqkv without a RmsNorm, as in
    npu_mla_preprocess (whose gamma0 / beta0 that mode does not read). cos and sin both None:
    no RoPE rotation, the q_rope / k_rope values are written as computed (the rotation with
    cos = 1, sin = 0, which is exact). cache_mode None: "krope_ctkv"."""
    fn = "_C_ascend.mla_preprocess"
    if quant_mode != "no_quant":
        raise Error(161002, f"{fn}: quant_mode: the quantised first stage of this form (hiddenState quantised "
                            f"without a gamma0 / beta0 RmsNorm) is not implemented; allowed \"no_quant\", "
                            f"got \"{quant_mode}\"")
    if (cos is None) != (sin is None):
        raise Error(161001, f"{fn}: cos / sin: both given or both None; got "
                            f"{'cos None' if cos is None else 'sin None'}")
    kind, dt = kind_of(hiddenState), dtype_name(hiddenState)
    if cos is None:
        t = int(hiddenState.shape[0])
        shape = (t, _rope_dim(kv_cache, kv_cache_rope, gamma2, cache_mode))
        cos, sin = _filled(kind, shape, dt, 1), _filled(kind, shape, dt, 0)
    he = int(hiddenState.shape[-1])
    return npu_mla_preprocess(
        hiddenState, _filled(kind, (he,), dt, 1), _filled(kind, (he,), dt, 0), wdqkv, descale0, gamma1, beta1, wuq,
        descale1, gamma2, cos, sin, wuk, kv_cache, kv_cache_rope, slotmapping, quant_scale0=quant_scale0,
        quant_offset0=quant_offset0, bias0=bias0, quant_scale1=quant_scale1, quant_offset1=quant_offset1, bias1=bias1,
        ctkv_scale=ctkv_scale, q_nope_scale=q_nope_scale, cache_mode=cache_mode or "krope_ctkv",
        quant_mode=quant_mode, enable_inner_out=bool(enable_inner_out), q_out0=q_out0, kv_cache_out0=kv_cache_out0,
        q_out1=q_out1, kv_cache_out1=kv_cache_out1, inner_out=inner_out)
