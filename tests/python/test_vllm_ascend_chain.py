"""vllm-ascend's DeepSeek MLA decode chains end to end, against the float64 numpy references
(reference.py): the FA-quant (W8A8 + int8 KV cache) decode as vllm-ascend's mla_v1 calls it
(per-token dynamic int8 token_x -> npu_mla_prolog_v2 with int8 per-channel weights, a PA_NZ int8
cache and int64 slot mapping -> npu_fused_infer_attention_score_v2 with BSND_NBSD,
query_quant_mode 3 and the dequant scales), and the plain bf16 decode (BNSD_NBSD) and MTP decode
(TND_NTD, sparse_mode 3). Each chain first fills the caches with a context through the prolog
(the prefill's cache writes), then runs one decode step."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_cascade, assert_close, assert_fia_out, assert_int8
from reference import bf16, f64, fia_bnsd, mla_prolog

HE, HCQ, N, D, DR, HCKV = 256, 128, 8, 64, 64, 512
BS, BN = 128, 8
CTX = [130, 7, 60]  # context lengths of the three requests
MASK = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


def _quant_cols(w):
    """Per-output-channel symmetric int8 (the W8A8 weights): (int8 [K, M], fp32 scales (1, M))."""
    s = (np.max(np.abs(w), axis=0, keepdims=True) / 127.0).astype(np.float32)
    return np.clip(np.rint(w / s), -127, 127).astype(np.int8), s


def dynamic_quant(x):
    """npu_dynamic_quant: per-token int8 with scale max|x| / 127 -> (int8 [T, He], fp32 (T, 1))."""
    xf = f64(x)
    s = (np.max(np.abs(xf), axis=-1, keepdims=True) / 127.0).astype(np.float32)
    return torch.from_numpy(np.clip(np.rint(xf / s), -127, 127).astype(np.int8)), torch.from_numpy(s)


class Layer:
    """One MLA layer's weights (float and W8A8), its rope table and a block table."""

    def __init__(self, seed, w8a8):
        rng = np.random.default_rng(seed)
        g = lambda *s, sc=1.0: rng.standard_normal(s) * sc  # noqa: E731
        self.w8a8 = w8a8
        self.wdq, self.wuq = g(HE, HCQ, sc=HE ** -0.5), g(HCQ, N * (D + DR), sc=HCQ ** -0.5)
        self.wdkv, self.wuk = g(HE, HCKV + DR, sc=HE ** -0.5), bf16(g(N, D, HCKV, sc=D ** -0.5))
        self.gcq, self.gckv = bf16(1 + 0.2 * g(HCQ)), bf16(1 + 0.2 * g(HCKV))
        inv = 10000.0 ** (-np.arange(DR // 2) / (DR // 2))
        ang = np.arange(2048)[:, None] * inv[None, :]
        self.cos, self.sin = bf16(np.cos(np.concatenate([ang, ang], -1))), bf16(np.sin(np.concatenate([ang, ang], -1)))
        per = -(-(max(CTX) + 2) // BS)
        self.table = rng.permutation(BN)[:len(CTX) * per].reshape(len(CTX), per)
        self.qs_ckv = np.full((1, HCKV), 24.0, np.float32)  # the layer's static kv quant scale
        if w8a8:
            self.q = {k: _quant_cols(getattr(self, k)) for k in ("wdq", "wuq", "wdkv")}
        else:
            self.q = {k: (bf16(getattr(self, k)), None) for k in ("wdq", "wuq", "wdkv")}
        bt = lambda a: torch.from_numpy(np.asarray(a, np.float32)).to(torch.bfloat16)  # noqa: E731
        self.t = dict(wuk=bt(self.wuk), gcq=bt(self.gcq), gckv=bt(self.gckv))
        for k, (w, _) in self.q.items():
            self.t[k] = mlaops.npu_format_cast(torch.from_numpy(w) if w8a8 else bt(w), 29)
        self.kv = torch.zeros(BN, BS, 1, HCKV, dtype=torch.int8 if w8a8 else torch.bfloat16)
        self.kr = torch.zeros(BN, BS, 1, DR, dtype=torch.bfloat16)

    def slot(self, b, pos):
        return int(self.table[b, pos // BS]) * BS + pos % BS

    def prolog(self, hidden, positions, slots):
        """One npu_mla_prolog_v2 call as vllm-ascend makes it; returns its outputs and the numpy
        reference's (query, query_rope, kv rows, kr rows[, dequant_scale_q_nope])."""
        bt = lambda a: torch.from_numpy(np.asarray(a, np.float32)).to(torch.bfloat16)  # noqa: E731
        cos, sin = self.cos[positions], self.sin[positions]
        kw = dict(cache_mode="PA_NZ" if self.w8a8 else "PA_BSND")
        ref = dict(wuk=self.wuk, gcq=self.gcq, gckv=self.gckv, sin=sin, cos=cos)
        if self.w8a8:
            token_x, dsx = dynamic_quant(hidden)
            kw.update(dequant_scale_x=dsx.view(-1, 1), quant_scale_ckv=torch.from_numpy(self.qs_ckv))
            for k, name in (("wdq", "dq"), ("wuq", "uq_qr"), ("wdkv", "dkv_kr")):
                kw[f"dequant_scale_w_{name}"] = torch.from_numpy(self.q[k][1])
            ref.update(x=f64(token_x), dsw_uqqr=f64(self.q["wuq"][1]), qs_ckv=f64(self.qs_ckv),
                       full=(f64(dsx), f64(self.q["wdq"][1]), f64(self.q["wdkv"][1])))
        else:
            token_x = hidden
            ref.update(x=f64(hidden))
        ref.update(wdq=f64(self.q["wdq"][0]), wuqqr=f64(self.q["wuq"][0]), wdkvkr=f64(self.q["wdkv"][0]))
        out = mlaops.npu_mla_prolog_v2(token_x, self.t["wdq"], self.t["wuq"], self.t["wuk"], self.t["wdkv"],
                                       self.t["gcq"], self.t["gckv"], bt(sin), bt(cos),
                                       torch.tensor(slots, dtype=torch.int64), self.kv, self.kr, **kw)
        return out, mla_prolog(**ref)


def _hidden(rng, t):
    return torch.from_numpy(rng.standard_normal((t, HE)).astype(np.float32)).to(torch.bfloat16)


def run_chain(seed, w8a8, q_s=1):
    """Context prolog, then the decode step's prolog (q_s tokens per request). Returns the layer,
    the step's prolog outputs, its reference, and the per-request logical caches of the reference
    (int8 / bf16 kv rows, bf16 kr rows)."""
    rng = np.random.default_rng(seed)
    layer = Layer(seed, w8a8)
    ctx_pos = [(b, p) for b in range(len(CTX)) for p in range(CTX[b])]
    _, ref_ctx = layer.prolog(_hidden(rng, len(ctx_pos)), [p for _, p in ctx_pos],
                              [layer.slot(b, p) for b, p in ctx_pos])
    step = [(b, CTX[b] + i) for b in range(len(CTX)) for i in range(q_s)]
    out, ref = layer.prolog(_hidden(rng, len(step)), [p for _, p in step], [layer.slot(b, p) for b, p in step])
    kv = [np.concatenate([ref_ctx[2][[i for i, (bb, _) in enumerate(ctx_pos) if bb == b]],
                          ref[2][[i for i, (bb, _) in enumerate(step) if bb == b]]]) for b in range(len(CTX))]
    kr = [np.concatenate([ref_ctx[3][[i for i, (bb, _) in enumerate(ctx_pos) if bb == b]],
                          ref[3][[i for i, (bb, _) in enumerate(step) if bb == b]]]) for b in range(len(CTX))]
    return layer, out, ref, kv, kr


def _padded(rows):
    """Per-request rows [L_b, H] -> [B, 1, max L, H] (KV_N 1)."""
    m = max(r.shape[0] for r in rows)
    out = np.zeros((len(rows), 1, m, rows[0].shape[1]))
    for b, r in enumerate(rows):
        out[b, 0, :r.shape[0]] = r
    return out


def test_fa_quant_decode_chain():
    """W8A8 + C8: int8 query with dequant_scale_q_nope -> FIA's dequant_scale_query; the int8 NZ
    latent viewed (blocks, 1, 512/32, block_size, 32) as key and value, the rope cache with 16;
    key / value scale = 1 / quant_scale_ckv (vllm-ascend's fak_descale_float)."""
    layer, (q, q_pe, kv_out, kr_out, dq), ref, kv_rows, kr_rows = run_chain(90, w8a8=True)
    b = len(CTX)
    assert q.dtype == torch.int8 and dq.shape == (b, N, 1) and kv_out is layer.kv
    descale = torch.tensor([1.0 / layer.qs_ckv[0, 0]], dtype=torch.float32)
    scale = (D + DR) ** -0.5
    lens = [c + 1 for c in CTX]
    out, _ = mlaops.npu_fused_infer_attention_score_v2(
        q.view(b, 1, N, HCKV), layer.kv.view(BN, 1, HCKV // 32, BS, 32), layer.kv.view(BN, 1, HCKV // 32, BS, 32),
        query_rope=q_pe.view(b, 1, N, DR), key_rope=layer.kr.view(BN, 1, DR // 16, BS, 16),
        num_query_heads=N, num_key_value_heads=1, softmax_scale=scale,
        block_table=torch.from_numpy(layer.table.astype(np.int32)), block_size=BS, actual_seq_kvlen=lens,
        input_layout="BSND_NBSD", sparse_mode=0, query_quant_mode=3, key_quant_mode=0, value_quant_mode=0,
        dequant_scale_query=dq.view(b, 1, N), dequant_scale_key=descale, dequant_scale_value=descale)
    assert out.shape == (N, b, 1, HCKV) and out.dtype == torch.bfloat16
    o = f64(out).transpose(1, 0, 2, 3)
    # stage 1, the prolog against its reference: int8 query and cache rows within ±1, the scales
    q_i8, qr, dqs = ref[0], ref[1], ref[4]
    assert_int8(q, q_i8, what="query")
    assert_close(dq.reshape(b, N), dqs, rtol=1e-3, atol_rms=0, max_mean_rel=1e-3, min_cos=0.999, what="dq_nope")
    assert_cascade(q_pe, qr, ulps=4, what="query_rope")
    kv_lib = [_nz_rows(layer.kv, layer, bi, lens[bi], 32) for bi in range(b)]
    kr_lib = [_nz_rows(layer.kr, layer, bi, lens[bi], 16) for bi in range(b)]
    for bi in range(b):
        assert_int8(kv_lib[bi], kv_rows[bi], what=f"kv cache rows of request {bi}")
        assert_close(kr_lib[bi], kr_rows[bi], what=f"kr cache rows of request {bi}")
    # stage 2, attention over what the prolog wrote (the MLA full-quant formula of
    # docs/ops/fused_infer_attention_score.md): the views, layouts and scales vllm-ascend passes
    r = _fa_quant_ref(f64(q), f64(q_pe), f64(dq).reshape(b, N), kv_lib, kr_lib, layer.qs_ckv[0, 0], scale, lens)
    assert_fia_out(o, r, what="attention_out")
    # the whole chain against the reference chain (its own int8 rounding at every step): the
    # int8 ±1 flips of query and cache spread into the output; measured over seeds 90, 100..107:
    # relative L2 1.8e-3..2.1e-3, max |d| 0.013..0.046 rms
    r_chain = _fa_quant_ref(q_i8, qr, dqs, kv_rows, kr_rows, layer.qs_ckv[0, 0], scale, lens)
    rel = np.linalg.norm(o - r_chain) / np.linalg.norm(r_chain)
    assert rel <= 5e-3, rel
    assert np.max(np.abs(o - r_chain)) <= 0.1 * np.sqrt(np.mean(r_chain ** 2))


def _nz_rows(cache, layer, b, n, c0):
    """The first n positions of request b from a PA_NZ cache [BN, BS, 1, H] (memory
    [BN][H/c0][BS][c0]) as float64 rows [n, H]."""
    h = cache.shape[-1]
    nz = f64(cache.view(torch.int8) if cache.dtype == torch.int8 else cache).reshape(BN, h // c0, BS, c0)
    return np.stack([nz[layer.slot(b, p) // BS, :, p % BS, :].reshape(h) for p in range(n)])


def _fa_quant_ref(q_i8, qr, dqs, kv_rows, kr_rows, qs, scale, lens):
    """dq1 = dequant_scale_query · (1 / qs); s = scale · dq1 · (q·k + q_r·k_r); v = k / qs."""
    b = len(lens)
    dq1 = dqs / qs
    qf = (q_i8.reshape(b, N, HCKV) * dq1[..., None])[:, :, None, :]
    qrf = (qr.reshape(b, N, DR) * dq1[..., None])[:, :, None, :]
    k = _padded(kv_rows)
    return fia_bnsd(qf, k, k / qs, scale, [1] * b, lens, q_rope=qrf, k_rope=_padded(kr_rows))[0]


@pytest.mark.parametrize("mtp", [False, True])
def test_bf16_decode_chain(mtp):
    """Plain decode: BNSD_NBSD over the ND latent cache; MTP: two tokens per request in TND_NTD
    with sparse_mode 3 (right-down causal) and cumulative actual_seq_qlen."""
    q_s = 2 if mtp else 1
    layer, (q, q_pe, _, _, _), ref, kv_rows, kr_rows = run_chain(91 + mtp, w8a8=False, q_s=q_s)
    b = len(CTX)
    scale = (D + DR) ** -0.5
    lens = [c + q_s for c in CTX]
    kw = dict(key_rope=layer.kr.view(BN, BS, DR), num_query_heads=N, num_key_value_heads=1, softmax_scale=scale,
              block_table=torch.from_numpy(layer.table.astype(np.int32)), block_size=BS, actual_seq_kvlen=lens)
    k = layer.kv.view(BN, BS, HCKV)
    if mtp:
        out, _ = mlaops.npu_fused_infer_attention_score_v2(
            q, k, k, query_rope=q_pe, input_layout="TND_NTD", sparse_mode=3, atten_mask=MASK,
            actual_seq_qlen=[q_s * (i + 1) for i in range(b)], **kw)
        o = f64(out).reshape(N, b, q_s, HCKV).transpose(1, 0, 2, 3)
    else:
        out, _ = mlaops.npu_fused_infer_attention_score_v2(
            q.view(b, N, 1, HCKV), k, k, query_rope=q_pe.view(b, N, 1, DR), input_layout="BNSD_NBSD",
            sparse_mode=0, **kw)
        o = f64(out).transpose(1, 0, 2, 3)
    assert out.dtype == torch.bfloat16
    qf = ref[0].reshape(b, q_s, N, HCKV).transpose(0, 2, 1, 3)
    qrf = ref[1].reshape(b, q_s, N, DR).transpose(0, 2, 1, 3)
    kk = _padded(kv_rows)
    r, _ = fia_bnsd(qf, kk, kk, scale, [q_s] * b, lens, q_rope=qrf, k_rope=_padded(kr_rows), causal=mtp)
    assert_fia_out(o, r, what="attention_out")
