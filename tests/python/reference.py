"""Independent float64 references in numpy, written from the operator specs
(docs/ops/mla_prolog.md, docs/ops/fused_infer_attention_score.md). They share no code with
the library or its C++ reference: only numpy and ml_dtypes' bf16 rounding."""
import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16


def f64(x):
    """A torch tensor or numpy array as float64 numpy."""
    if hasattr(x, "detach"):
        x = x.detach()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    return np.asarray(x).astype(np.float64)


def bf16(x):
    """Round to bf16 (nearest, ties to even) and back to float64."""
    return np.asarray(x, np.float64).astype(np.float32).astype(BF16).astype(np.float64)


def rms_norm(v, gamma, eps):
    return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps) * gamma


def rope(v, cos, sin):
    """MlaProlog's RoPE: de-interleave (even elements, then odd), then rotate-half with cos and
    sin as given. v [..., Dr]; cos / sin broadcast against v."""
    h = v.shape[-1] // 2
    u = np.concatenate([v[..., 0::2], v[..., 1::2]], axis=-1)
    rot = np.concatenate([-u[..., h:], u[..., :h]], axis=-1)
    return u * cos + rot * sin


def clamp_rint(v):
    return np.clip(np.rint(v), -128, 127)


def nz_to_nd(storage, rows, cols):
    """[C1, R1, 16, c0] FRACTAL_NZ storage -> the [rows, cols] matrix."""
    c1, r1, _, c0 = storage.shape
    return storage.transpose(1, 2, 0, 3).reshape(r1 * 16, c1 * c0)[:rows, :cols]


def mla_prolog(x, wdq, wuqqr, wuk, wdkvkr, gcq, gckv, sin, cos, eps_cq=1e-5, eps_ckv=1e-5,
               dsw_uqqr=None, smooth=None, qs_ckv=None, qs_ckr=None, full=None):
    """MlaPrologV2 for token rows x [T, He] (float64 values of the bf16 inputs), logical ND
    weights. No quant when dsw_uqqr is None; else partial quant (int8 W_UQ_QR with per-channel
    dequant scales); qs_ckv / qs_ckr given: partial quant with int8 caches (per-channel).
    full = (dequant_scale_x [T, 1], dequant_scale_w_dq [1, Hcq], dequant_scale_w_dkv_kr
    [1, Hckv+Dr]): full quant (int8 x and weights); with qs_ckv, full quant + KV quant (per-tensor
    kv cache quant, int8 query per (token, head) with its dequant scale, rescaled query_rope).
    Returns query [T, N, Hckv], query_rope [T, N, Dr], kv rows [T, Hckv], kr rows [T, Dr]
    (and the dequant_scale_q_nope [T, N] in full quant + KV quant)."""
    t = x.shape[0]
    n, d, hckv = wuk.shape
    dr = sin.shape[-1]
    cq = (x @ wdq) * full[0] * full[1] if full else bf16(x @ wdq)
    cn = rms_norm(cq, gcq, eps_cq)
    if dsw_uqqr is None:
        qcqr = bf16(bf16(cn) @ wuqqr)
    else:
        if smooth is not None:
            cn = cn * smooth
        m = np.max(np.abs(cn), axis=-1, keepdims=True)
        a = clamp_rint(cn * (127.0 / m))
        qcqr = (a @ wuqqr) * (m / 127.0) * dsw_uqqr
    qcqr = qcqr.reshape(t, n, d + dr)
    qn = bf16(qcqr[:, :, :d])
    query = bf16(np.einsum("tnd,ndk->tnk", qn, wuk))
    query_rope = bf16(rope(qcqr[:, :, d:], cos[:, None, :], sin[:, None, :]))
    ck = (x @ wdkvkr) * full[0] * full[2] if full else bf16(x @ wdkvkr)
    kvn = rms_norm(ck[:, :hckv], gckv, eps_ckv)
    kr = rope(ck[:, hckv:], cos, sin)
    if full and qs_ckv is not None:  # FULL + KV quant: per-tensor kv, int8 query per (token, head)
        dqs = np.max(np.abs(query), axis=-1) / 127.0
        q_i8 = clamp_rint(query / dqs[..., None])
        qr = bf16(query_rope * qs_ckv[0, 0] / dqs[..., None])
        return q_i8, qr, clamp_rint(kvn * qs_ckv[0, 0]), bf16(kr), dqs
    if qs_ckv is None:
        kv_rows, kr_rows = bf16(kvn), bf16(kr)
    else:
        kv_rows, kr_rows = clamp_rint(kvn * qs_ckv), clamp_rint(bf16(kr) * qs_ckr)
    return query, query_rope, kv_rows, kr_rows


def scatter_cache(cache, rows, slots, nz):
    """Writes rows [T, H] into a [BlockNum, BlockSize, 1, H] cache (float64 copy) at the flat
    slots (< 0 skipped). PA_NZ blocks are laid out [H/c0][BlockSize][c0] (c0 = 32 / element
    size): the returned array is the cache's memory order in its own shape."""
    out = cache.copy()
    bn, bs, _, h = out.shape
    c0 = 32 // 2 if not nz else None
    flat = out.reshape(bn, bs * h)
    for t, p in enumerate(slots):
        if p < 0:
            continue
        blk, j = divmod(int(p), bs)
        if nz:
            c0 = nz
            for c in range(h):
                flat[blk, (c // c0) * bs * c0 + j * c0 + c % c0] = rows[t, c]
        else:
            flat[blk, j * h:(j + 1) * h] = rows[t]
    return flat.reshape(bn, bs, 1, h)


def attention(q, k, v, scale, q_rope=None, k_rope=None, causal_offset=None):
    """One (batch, head): softmax(scale * (q k^T + q_r k_r^T)) v in float64 with the query row i
    seeing key j when j <= i + causal_offset (None: every key). Returns (out [Sq, Dv], lse [Sq])."""
    s = q @ k.T
    if q_rope is not None:
        s = s + q_rope @ k_rope.T
    s = s * scale
    if causal_offset is not None:
        i = np.arange(q.shape[0])[:, None]
        j = np.arange(k.shape[0])[None, :]
        s = np.where(j <= i + causal_offset, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    z = np.sum(e, axis=-1, keepdims=True)
    return (e / z) @ v, (m + np.log(z))[:, 0]


def fia_bnsd(q, k, v, scale, q_lens, kv_lens, q_rope=None, k_rope=None, causal=False):
    """FusedInferAttentionScore on float64 BNSD tensors: q [B, N, Sq, D], k / v
    [B, KV_N, Skv, D] (GQA: head n reads kv head n // (N / KV_N)), per-batch actual lengths,
    sparse_mode 3 (right-down causal) when causal. Rows past a batch's query length are 0.
    Returns (out [B, N, Sq, Dv], lse [B, N, Sq])."""
    b, n, sq, _ = q.shape
    kvn = k.shape[1]
    out = np.zeros((b, n, sq, v.shape[-1]))
    lse = np.zeros((b, n, sq))
    for bi in range(b):
        lq, lk = q_lens[bi], kv_lens[bi]
        for h in range(n):
            g = h // (n // kvn)
            qr = None if q_rope is None else q_rope[bi, h, :lq]
            kr = None if k_rope is None else k_rope[bi, g, :lk]
            o, l = attention(q[bi, h, :lq], k[bi, g, :lk], v[bi, g, :lk], scale, qr, kr,
                             (lk - lq) if causal else None)
            out[bi, h, :lq] = o
            lse[bi, h, :lq] = l
    return out, lse
