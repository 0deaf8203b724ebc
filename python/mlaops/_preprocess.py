"""npu_mla_preprocess: MlaPreprocess (docs/ops/mla_preprocess.md) with torch_npu.atb's positional
order and vllm-ascend's keywords (docs/python.md); mlapo: the serving stacks' MLAPO op behind
mlaops._C_ascend.mla_preprocess and mlaops._sgl_kernel_npu.mla_preprocess."""
from . import _mlaops
from ._args import checked
from ._errors import Error, check
from ._tensors import spec, kind_of, dtype_name, empty, is_torch, ACL_FORMAT_NZ, ACL_FORMAT_ND

# cache_mode / quant_mode strings -> the operator's enum values (ATB's names, lower case)
_CACHE_MODES = {"kvcache": 0, "krope_ctkv": 1, "int8_nzcache": 2, "nzcache": 3}
_QUANT_MODES = {"per_tensor_quant_asymm": 0, "per_token_quant_symm": 1, "no_quant": 0}


def _nz_if_4d(x):
    # npu_format_cast(w, 29) gives 4-D NZ storage ([C1, R1, 16, c0], or ATB's [1, C1, R1*16, c0]);
    # wuk's per-head NZ is 4-D too. 2-D / 3-D tensors are ND.
    return spec(x, ACL_FORMAT_NZ if x is not None and x.ndim == 4 else ACL_FORMAT_ND)


def _outputs(x, cm, n, hckv, dr, hcq, enable_inner_out, q_out0, q_out1, inner_out):
    """q_out0 [T, N, Hckv(+Dr in cacheMode 0)] (int8 in cacheMode 2), q_out1 [T, N, Dr] (not in
    cacheMode 0) and, with enable_inner_out, inner_out [T, Hcq], each allocated when None."""
    kind, dt, t = kind_of(x), dtype_name(x), int(x.shape[0])
    if q_out0 is None:
        q_out0 = empty(kind, (t, n, hckv + dr if cm == 0 else hckv), "int8" if cm == 2 else dt)
    if q_out1 is None and cm != 0:
        q_out1 = empty(kind, (t, n, dr), dt)
    if inner_out is None and enable_inner_out:
        inner_out = empty(kind, (t, hcq), dt)
    return q_out0, q_out1, inner_out


# descale0 / descale1: absent with weights in the input dtype, kv_cache_rope in cacheMode 0 (MPP-10)
@checked("MPP-01", optional=("descale0", "descale1", "kv_cache_rope"))
def npu_mla_preprocess(input, gamma0, beta0, wdqkv, descale0, gamma1, beta1, wuq, descale1, gamma2, cos, sin,
                       wuk, kv_cache, kv_cache_rope, slotmapping, *, quant_scale0=None, quant_offset0=None,
                       bias0=None, quant_scale1=None, quant_offset1=None, bias1=None, ctkv_scale=None,
                       q_nope_scale=None, cache_mode="krope_ctkv", quant_mode="per_tensor_quant_asymm",
                       enable_inner_out=False, q_out0=None, kv_cache_out0=None, q_out1=None,
                       kv_cache_out1=None, inner_out=None):
    """MlaPreprocess: returns (q_out0, kv_cache_out0, q_out1, kv_cache_out1, inner_out).

    cache_mode "kvcache" (0: one [BlockNum, BlockSize, 1, Hckv+Dr] cache, q_out0 [T, N, Hckv+Dr],
    no q_out1 / kv_cache_rope), "krope_ctkv" (1), "int8_nzcache" (2: int8 NZ kv cache, int8
    q_out0, ctkv_scale and q_nope_scale), "nzcache" (3). quant_mode "per_tensor_quant_asymm"
    (quant_scale*, quant_offset*, bias*), "per_token_quant_symm", or "no_quant" (weights in the
    input dtype). The new rows go into kv_cache_out0 / kv_cache_out1 at the slotmapping slots
    (-1 skips), by default kv_cache / kv_cache_rope themselves (in place). q_out0 / q_out1 /
    inner_out are allocated when None; inner_out ([T, Hcq], RmsNorm(cq) * gamma1 + beta1) is
    written only with enable_inner_out (else returned as given, None by default). Every RmsNorm
    uses epsilon 1e-6, as the vendor kernel does.
    """
    fn = "npu_mla_preprocess"
    if cache_mode not in _CACHE_MODES:
        raise Error(161002, f"{fn}: cache_mode: must be one of {', '.join(_CACHE_MODES)}; got \"{cache_mode}\"")
    if quant_mode not in _QUANT_MODES:
        raise Error(161002, f"{fn}: quant_mode: must be one of {', '.join(_QUANT_MODES)}; got \"{quant_mode}\"")
    int8_weights = dtype_name(wdqkv) == "int8"
    if (quant_mode == "no_quant") == int8_weights:
        raise Error(161002, f"{fn}: quant_mode: \"no_quant\" exactly with weights in the input dtype; allowed "
                            f"{'a quantized mode' if int8_weights else chr(34) + 'no_quant' + chr(34)} with "
                            f"{dtype_name(wdqkv)} wdqkv, got \"{quant_mode}\"")
    cm = _CACHE_MODES[cache_mode]
    q_out0, q_out1, inner_out = _outputs(input, cm, int(wuk.shape[0]), int(gamma2.shape[0]), int(cos.shape[-1]),
                                         int(gamma1.shape[0]), enable_inner_out, q_out0, q_out1, inner_out)
    cache_fmt = ACL_FORMAT_NZ if cm in (2, 3) else ACL_FORMAT_ND
    tensors = {
        "input": spec(input), "gamma0": spec(gamma0), "beta0": spec(beta0), "wdqkv": _nz_if_4d(wdqkv),
        "descale0": spec(descale0), "gamma1": spec(gamma1), "beta1": spec(beta1), "wuq": _nz_if_4d(wuq),
        "descale1": spec(descale1), "gamma2": spec(gamma2), "cos": spec(cos), "sin": spec(sin),
        "wuk": _nz_if_4d(wuk), "kv_cache": spec(kv_cache, cache_fmt),
        "kv_cache_rope": spec(kv_cache_rope, cache_fmt) if cm != 0 else None,
        "slotmapping": spec(slotmapping), "quant_scale0": spec(quant_scale0), "quant_offset0": spec(quant_offset0),
        "bias0": spec(bias0), "quant_scale1": spec(quant_scale1), "quant_offset1": spec(quant_offset1),
        "bias1": spec(bias1), "ctkv_scale": spec(ctkv_scale), "q_nope_scale": spec(q_nope_scale),
        "q_out0": spec(q_out0),
        "kv_cache_out0": spec(kv_cache_out0, cache_fmt) if kv_cache_out0 is not None else None,
        "q_out1": spec(q_out1) if cm != 0 else None,
        "kv_cache_out1": spec(kv_cache_out1, cache_fmt) if kv_cache_out1 is not None and cm != 0 else None,
        "inner_out": spec(inner_out) if enable_inner_out else None,
    }
    attrs = dict(cache_mode=cm, quant_mode=_QUANT_MODES[quant_mode], do_rms_norm=int8_weights)
    check(_mlaops.mla_preprocess(tensors, attrs))
    kv_out = kv_cache if kv_cache_out0 is None else kv_cache_out0
    kr_out = kv_cache_rope if kv_cache_out1 is None else kv_cache_out1
    return q_out0, kv_out, q_out1, kr_out, inner_out


# ---- the serving stacks' MLAPO op (docs/ops/mla_preprocess.md "The serving stacks' MLAPO op"):
# mlaops._C_ascend.mla_preprocess and mlaops._sgl_kernel_npu.mla_preprocess ----


def _nz_cache_view(cache, cache_mode):
    """A cache of the NZ modes (2, 3) as the 4-D FRACTAL_NZ view the operator takes. vllm-ascend
    passes them as allocated, [BlockNum, BlockSize, 1, W] (its binding reads dim 2 == 1 as this
    logical spelling); the bytes of a block are the NZ block [W/c0, BlockSize, c0], so the same
    memory is described with those dims (the block stride kept). Other shapes pass unchanged."""
    if cache is None or cache_mode not in (2, 3) or cache.ndim != 4 or int(cache.shape[2]) != 1:
        return cache
    bn, bs, w = int(cache.shape[0]), int(cache.shape[1]), int(cache.shape[3])
    c0 = 32 // cache.element_size() if is_torch(cache) else 32 // cache.itemsize
    if w % c0 or not _inner_dense(cache):
        return cache  # not the compact logical form: the operator's rules report the shape
    if is_torch(cache):
        return cache.as_strided((bn, w // c0, bs, c0), (cache.stride(0), bs * c0, c0, 1))
    es = cache.itemsize
    return np.lib.stride_tricks.as_strided(cache, (bn, w // c0, bs, c0), (cache.strides[0], bs * c0 * es, c0 * es, es))


def _inner_dense(cache):
    """dims 1..3 of a 4-D tensor row-major dense (size-1 dims any stride)."""
    strides = cache.stride() if is_torch(cache) else tuple(s // cache.itemsize for s in cache.strides)
    expect = 1
    for i in (3, 2, 1):
        if int(cache.shape[i]) != 1 and strides[i] != expect:
            return False
        expect *= int(cache.shape[i])
    return True


def _rope_dim(kv_cache, kv_cache_rope, gamma2, cache_mode):
    """Dr without cos: the rope cache's row ([.., Dr], or NZ [BN, Dr/16, BS, 16]); cacheMode 0
    kvCache's width beyond Hckv."""
    if cache_mode == 0 or kv_cache_rope is None:
        return int(kv_cache.shape[-1]) - int(gamma2.shape[0])
    if cache_mode in (2, 3):
        return int(kv_cache_rope.shape[1]) * int(kv_cache_rope.shape[3])
    return int(kv_cache_rope.shape[-1])


def mlapo(fn, cache_mode, quant_mode, enable_inner_out, *, hiddenState, wdqkv, descale0, gamma1, beta1, wuq,  # noqa: N803
          descale1, gamma2, cos, sin, wuk, kv_cache, kv_cache_rope, slotmapping, quant_scale0, quant_offset0, bias0,
          quant_scale1, quant_offset1, bias1, ctkv_scale, q_nope_scale, q_out0, kv_cache_out0, q_out1,
          kv_cache_out1, inner_out):
    """Runs the MLAPO op (cache_mode / quant_mode as enum values; the caller has checked the
    strings and its binding's rules). Allocates q_out0 / q_out1 / inner_out when None (inner_out
    only with enable_inner_out; otherwise it is neither written nor checked). The new cache rows
    go into kv_cache_out0 / kv_cache_out1, by default kv_cache / kv_cache_rope (in place).
    Returns (q_out0, kv_cache_out0, q_out1, kv_cache_out1, inner_out)."""
    kv_op, kr_op = _nz_cache_view(kv_cache, cache_mode), _nz_cache_view(kv_cache_rope, cache_mode)
    dr = int(cos.shape[-1]) if cos is not None else _rope_dim(kv_op, kr_op, gamma2, cache_mode)
    q_out0, q_out1, inner_out = _outputs(hiddenState, cache_mode, int(wuk.shape[0]), int(gamma2.shape[0]), dr,
                                         int(gamma1.shape[0]), enable_inner_out, q_out0, q_out1, inner_out)
    cache_fmt = ACL_FORMAT_NZ if cache_mode in (2, 3) else ACL_FORMAT_ND
    kv_out = kv_cache if kv_cache_out0 is None else kv_cache_out0
    kr_out = kv_cache_rope if kv_cache_out1 is None else kv_cache_out1
    tensors = {
        "input": spec(hiddenState), "quant_scale0": spec(quant_scale0), "quant_offset0": spec(quant_offset0),
        "wdqkv": _nz_if_4d(wdqkv), "descale0": spec(descale0), "bias0": spec(bias0), "gamma1": spec(gamma1),
        "beta1": spec(beta1), "quant_scale1": spec(quant_scale1), "quant_offset1": spec(quant_offset1),
        "wuq": _nz_if_4d(wuq), "descale1": spec(descale1), "bias1": spec(bias1), "gamma2": spec(gamma2),
        "cos": spec(cos), "sin": spec(sin), "wuk": _nz_if_4d(wuk), "kv_cache": spec(kv_op, cache_fmt),
        "kv_cache_rope": spec(kr_op, cache_fmt) if cache_mode != 0 else None, "slotmapping": spec(slotmapping),
        "ctkv_scale": spec(ctkv_scale), "q_nope_scale": spec(q_nope_scale), "q_out0": spec(q_out0),
        "kv_cache_out0": spec(_nz_cache_view(kv_out, cache_mode), cache_fmt),
        "q_out1": spec(q_out1) if cache_mode != 0 else None,
        "kv_cache_out1": spec(_nz_cache_view(kr_out, cache_mode), cache_fmt) if cache_mode != 0 else None,
        "inner_out": spec(inner_out) if enable_inner_out else None,
    }
    check(_mlaops.mlapo(tensors, dict(op=fn, cache_mode=cache_mode, quant_mode=quant_mode)))
    return q_out0, kv_out, q_out1, kr_out, inner_out
