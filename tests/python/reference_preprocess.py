"""An independent float64 reference of MlaPreprocess in numpy, written from
docs/ops/mla_preprocess.md ("What it computes", "Cache modes"). It shares no code with the
library or its C++ reference: only numpy and ml_dtypes' rounding."""
import numpy as np

from reference import bf16, rms_norm


def fp16(x):
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def dtype_round(x, dtype):
    return bf16(x) if dtype == "bf16" else fp16(x)


def quant_fp16(v):
    """int8(clamp_fp16(fp16(v))): fp16 round to nearest even, clamp to [-128, 127], then round half
    to even (the kernel's double rounding)."""
    return np.rint(np.clip(fp16(v), -128, 127))


def rope_half(v, cos, sin):
    """MlaPreprocess's RoPE: rotate_half(v) = [-v[Dr/2:], v[:Dr/2]], no de-interleave."""
    h = v.shape[-1] // 2
    return v * cos + np.concatenate([-v[..., h:], v[..., :h]], axis=-1) * sin


def _stage(x, gamma, beta, w, p, i, dtype, eps):
    """One quantized projection: x [T, K] -> dtype [T, rows] (w the logical [rows, K] matrix).
    p["quant"]: "per_tensor" (quant_scale{i}, quant_offset{i}, bias{i}) or "per_token". gamma
    None: no RmsNorm (the MLAPO op's first stage quantises x itself)."""
    y = x if gamma is None else rms_norm(x, gamma, eps) + beta
    if p["quant"] == "per_tensor":
        a = quant_fp16(y * (1.0 / p[f"quant_scale{i}"]) + p[f"quant_offset{i}"])
        return dtype_round((a @ w.T + p[f"bias{i}"]) * p[f"descale{i}"], dtype)
    s = np.max(np.abs(y), axis=-1, keepdims=True) / 127.0
    a = quant_fp16(y * (1.0 / s))
    return dtype_round((a @ w.T) * p[f"descale{i}"] * s, dtype)


def mla_preprocess(x, gamma0, beta0, wdqkv, gamma1, beta1, wuq, gamma2, cos, sin, wuk, p, hckv, dr,
                   dtype="bf16", eps=1e-6):
    """x [T, He] float64 values; wdqkv [Hckv+Dr+Hcq, He], wuq [N*(D+Dr), Hcq] logical matrices;
    wuk [N, D, Hckv]; p: the quant parameters (p["quant"] None for weights in the input dtype).
    Returns q_nope [T, N, Hckv], q_rope [T, N, Dr], kv rows [T, Hckv] (dtype-rounded, and the
    unrounded RmsNorm for cacheMode 2 as kn_raw), kr rows [T, Dr], q_down [T, Hcq].
    The serving stacks' MLAPO op: gamma0 = beta0 = None (its first stage quantises x without a
    RmsNorm), beta1 None (no bias), cos = sin = None (no rotation)."""
    t = x.shape[0]
    n, d, _ = wuk.shape
    if beta1 is None:
        beta1 = np.zeros(gamma1.shape[0])
    if cos is None:
        cos, sin = np.ones((t, dr)), np.zeros((t, dr))
    if p["quant"] is None:
        m1 = dtype_round(x @ wdqkv.T, dtype)
    else:
        m1 = _stage(x, gamma0, beta0, wdqkv, p, 0, dtype, eps)
    ckv, kpe, cq = m1[:, :hckv], m1[:, hckv:hckv + dr], m1[:, hckv + dr:]
    q_down = dtype_round(rms_norm(cq, gamma1, eps) + beta1, dtype)
    if p["quant"] is None:
        m2 = dtype_round(q_down @ wuq.T, dtype)
    else:
        m2 = _stage(cq, gamma1, beta1, wuq, p, 1, dtype, eps)
    m2 = m2.reshape(t, n, d + dr)
    q_nope = dtype_round(np.einsum("tnd,ndk->tnk", m2[:, :, :d], wuk), dtype)
    q_rope = dtype_round(rope_half(m2[:, :, d:], cos[:, None, :], sin[:, None, :]), dtype)
    kn_raw = rms_norm(ckv, gamma2, eps)
    kr = dtype_round(rope_half(kpe, cos, sin), dtype)
    return dict(q_nope=q_nope, q_rope=q_rope, kn=dtype_round(kn_raw, dtype), kn_raw=kn_raw, kr=kr, q_down=q_down)


def scatter(cache, rows, slots, c0=None):
    """rows [T, H] into a float64 copy of a paged cache at the flat slots (-1 skipped): ND
    [BlockNum, BlockSize, 1, H], or NZ [BlockNum, H/c0, BlockSize, c0] (c0 given)."""
    out = cache.copy()
    for t, slot in enumerate(slots):
        if slot < 0:
            continue
        if c0 is None:
            blk, j = divmod(int(slot), out.shape[1])
            out[blk, j, 0, :] = rows[t]
        else:
            blk, j = divmod(int(slot), out.shape[2])
            out[blk, :, j, :] = rows[t].reshape(-1, c0)
    return out
