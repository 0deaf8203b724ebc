"""npu_fused_infer_attention_score(_v2)'s two INT8-query paths against float64 numpy references
written from docs/ops/fused_infer_attention_score.md: MLA full quant ("MLA full quant": INT8 query
with dequant_scale_query, query_quant_mode 3, INT8 NZ latent cache, BF16 rope) and INT8 full
quantisation ("Full quantisation (INT8 query)": the GQA / MHA prefill with deqScale1,
quantScale1, deqScale2)."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_close, assert_fia_out
from reference import f64, fia_bnsd

MASK = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


def paged_nz(rows, block_size, ids, num_blocks, c0, dtype):
    """rows [B, S, H] (S <= ids.shape[1] * block_size) -> an NZ paged cache
    [num_blocks, 1, H/c0, block_size, c0] holding row s of batch b at block ids[b, s // bs]."""
    b, s, h = rows.shape
    cache = torch.zeros(num_blocks, 1, h // c0, block_size, c0, dtype=dtype)
    for bi in range(b):
        for j in range(s):
            cache[ids[bi, j // block_size], 0, :, j % block_size, :] = rows[bi, j].reshape(h // c0, c0)
    return cache


def mla_full_quant_inputs(seed, b, n, q_s, kv_lens, bs=128, d=512, dr=64):
    """The int8 query / cache, bf16 ropes, scales and the float64 reference inputs (BNSD)."""
    rng = np.random.default_rng(seed)
    skv = max(kv_lens)
    per = -(-skv // bs)
    num_blocks = b * per + 1
    ids = rng.permutation(num_blocks)[:b * per].reshape(b, per)
    q = torch.from_numpy(rng.integers(-127, 128, (b, q_s, n, d)).astype(np.int8))
    dq = torch.from_numpy(rng.uniform(0.5, 1.5, (b, q_s, n)).astype(np.float32) / 127 / d ** 0.5)
    k = torch.from_numpy(rng.integers(-127, 128, (b, skv, d)).astype(np.int8))
    qr = torch.from_numpy(rng.standard_normal((b, q_s, n, dr)).astype(np.float32) * 40).to(torch.bfloat16)
    kr = torch.from_numpy(rng.standard_normal((b, skv, dr)).astype(np.float32)).to(torch.bfloat16)
    kscale = torch.tensor([1.0 / 60], dtype=torch.float32)
    vscale = torch.tensor([1.0 / 50], dtype=torch.float32)
    k_cache = paged_nz(k, bs, ids, num_blocks, 32, torch.int8)
    kr_cache = paged_nz(kr, bs, ids, num_blocks, 16, torch.bfloat16)
    # s = scale · dq · kscale · (q_i8 · k_i8 + q_r · k_r), v = v_i8 · vscale (the doc's formula)
    dq1 = f64(dq)[..., None] * f64(kscale)[0]
    ref = dict(q=(f64(q) * dq1).transpose(0, 2, 1, 3), k=f64(k)[:, None], v=f64(k)[:, None] * f64(vscale)[0],
               q_rope=(f64(qr) * dq1).transpose(0, 2, 1, 3), k_rope=f64(kr)[:, None])
    table = torch.from_numpy(ids.astype(np.int32))
    return q, dq, qr, k_cache, kr_cache, kscale, vscale, table, ref


@pytest.mark.parametrize("layout,q_s", [("BSND_NBSD", 1), ("BSND", 1), ("TND_NTD", 2)])
def test_mla_full_quant_v2(layout, q_s):
    """vllm-ascend's FA-quant decode: INT8 query, dequant_scale_query (the query's shape without
    D), query_quant_mode 3, the INT8 NZ latent as key and value, per-tensor FP32 key / value
    scales, BF16 output; TND_NTD with sparse_mode 3 for MTP (two query tokens per batch)."""
    b, n, bs = 3, 8, 128
    kv_lens = [200, 37, 129]
    q, dq, qr, k_cache, kr_cache, ks, vs, table, ref = mla_full_quant_inputs(70 + q_s, b, n, q_s, kv_lens)
    scale = (512 + 64) ** -0.5
    kw = dict(query_rope=qr, key_rope=kr_cache, dequant_scale_query=dq, dequant_scale_key=ks, dequant_scale_value=vs,
              query_quant_mode=3, num_query_heads=n, num_key_value_heads=1, softmax_scale=scale, block_table=table,
              block_size=bs, actual_seq_kvlen=kv_lens, input_layout=layout, return_softmax_lse=True)
    if layout.startswith("TND"):
        kw.update(query_rope=qr.reshape(b * q_s, n, -1), dequant_scale_query=dq.reshape(b * q_s, n),
                  actual_seq_qlen=[q_s * (i + 1) for i in range(b)], sparse_mode=3, atten_mask=MASK)
        out, lse = mlaops.npu_fused_infer_attention_score_v2(q.reshape(b * q_s, n, -1), k_cache, k_cache, **kw)
    else:
        out, lse = mlaops.npu_fused_infer_attention_score_v2(q, k_cache, k_cache, **kw)
    assert out.dtype == torch.bfloat16
    r, r_lse = fia_bnsd(ref["q"], ref["k"], ref["v"], scale, [q_s] * b, kv_lens, q_rope=ref["q_rope"],
                        k_rope=ref["k_rope"], causal=q_s > 1)
    if layout == "BSND":
        o = f64(out).transpose(0, 2, 1, 3)
    elif layout == "BSND_NBSD":
        o = f64(out).transpose(1, 0, 2, 3)
    else:  # NTD: (N, T, D)
        o = f64(out).reshape(n, b, q_s, -1).transpose(1, 0, 2, 3)
    assert_fia_out(o, r, what="attention_out")
    lse_bnsd = f64(lse).reshape(b, q_s, n).transpose(0, 2, 1)  # (B, N, Q_S, 1) or (T, N, 1)
    assert np.max(np.abs(lse_bnsd - r_lse)) <= 1e-4 * np.max(np.abs(r_lse)) + 1e-5


def test_mla_full_quant_errors():
    """FIA-27: query_quant_mode must be 3 with dequant_scale_query; the output is not written."""
    b, n = 1, 4
    q, dq, qr, k_cache, kr_cache, ks, vs, table, _ = mla_full_quant_inputs(79, b, n, 1, [50])
    kw = dict(query_rope=qr, key_rope=kr_cache, dequant_scale_query=dq, dequant_scale_key=ks, dequant_scale_value=vs,
              num_query_heads=n, num_key_value_heads=1, softmax_scale=0.05, block_table=table, block_size=128,
              actual_seq_kvlen=[50], input_layout="BSND")
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_fused_infer_attention_score_v2(q, k_cache, k_cache, **kw, query_quant_mode=0)
    assert e.value.status == 161002 and "FIA-27" in e.value.message, e.value.message


# ---- INT8 full quantisation (GQA / MHA prefill) ----

def trunc19(x):
    """The 19-bit scale: the float32 bits & 0xffffe000."""
    bits = np.array([x], np.float32).view(np.uint32) & np.uint32(0xffffe000)
    return float(bits.view(np.float32)[0])


def fp16(x):
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def full_quant_ref(q, k, v, deq1, qs1, deq2, scale, q_lens, kv_lens, causal):
    """The doc's steps (one KV chunk: KV lengths <= 1024) on int BNSD arrays: fp32 q·k·deq1
    clamped to ±65504, fp16 score times fp16(scale), exp, P = int8(round_half_even(fp16(fp16(e) ·
    fp16(qs1)))), o = deq2 · Σ P v, out = fp16(o / Σ e)."""
    b, n, sq, _ = q.shape
    kvn = k.shape[1]
    d1, d2 = trunc19(deq1), trunc19(deq2)
    qs_h, sc_h = fp16(qs1), fp16(np.float32(scale))
    out = np.zeros((b, n, sq, v.shape[-1]))
    for bi in range(b):
        lq, lk = q_lens[bi], kv_lens[bi]
        assert lk <= 1024
        for h in range(n):
            g = h // (n // kvn)
            qk = q[bi, h, :lq] @ k[bi, g, :lk].T
            x = np.clip((qk.astype(np.float32) * np.float32(d1)).astype(np.float64), -65504, 65504)
            s = fp16(fp16(x) * sc_h)
            if causal:
                i, j = np.arange(lq)[:, None], np.arange(lk)[None, :]
                s = np.where(j <= i + lk - lq, s, -np.inf)
            e = np.exp(s - np.max(s, axis=-1, keepdims=True))
            p = np.clip(np.rint(fp16(fp16(e) * qs_h)), -128, 127)
            out[bi, h, :lq] = fp16(d2 * (p @ v[bi, g, :lk]) / np.sum(e, axis=-1, keepdims=True))
    return out


@pytest.mark.parametrize("layout,causal", [("BSND", False), ("BNSD", True), ("BSH", False)])
def test_int8_full_quant_gqa_prefill(layout, causal):
    """INT8 query / key / value, FP32 deqScale1 / quantScale1 / deqScale2 (one element each), FP16
    output; GQA (N 4, KV_N 2), Q_S 8, per-batch KV lengths; sparse 3 with the template when causal."""
    rng = np.random.default_rng(80 + causal)
    b, n, kvn, sq, skv, d = 2, 4, 2, 8, 96, 64
    q = rng.integers(-127, 128, (b, n, sq, d)).astype(np.int8)
    k = rng.integers(-127, 128, (b, kvn, skv, d)).astype(np.int8)
    v = rng.integers(-127, 128, (b, kvn, skv, d)).astype(np.int8)
    kv_lens = [96, 61]
    deq1, qs1, deq2, scale = 1.0 / 2500, 110.0, 1.0 / 110, 1.0 / 8
    def lay(x, heads):  # noqa: E306
        t = torch.from_numpy(x)
        if layout == "BNSD":
            return t.contiguous()
        t = t.permute(0, 2, 1, 3).contiguous()
        return t if layout == "BSND" else t.reshape(t.shape[0], t.shape[1], heads * d)
    kw = dict(dequant_scale1=torch.tensor([deq1], dtype=torch.float32),
              quant_scale1=torch.tensor([qs1], dtype=torch.float32),
              dequant_scale2=torch.tensor([deq2], dtype=torch.float32), num_heads=n, num_key_value_heads=kvn,
              scale=scale, input_layout=layout, actual_seq_lengths_kv=kv_lens)
    if causal:
        kw.update(sparse_mode=3, atten_mask=MASK)
    out, _ = mlaops.npu_fused_infer_attention_score(lay(q, n), lay(k, kvn), lay(v, kvn), **kw)
    assert out.dtype == torch.float16
    o = f64(out)
    if layout == "BSH":
        o = o.reshape(b, sq, n, d)
    if layout != "BNSD":
        o = o.transpose(0, 2, 1, 3)
    r = full_quant_ref(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), deq1, qs1, deq2, scale,
                       [sq] * b, kv_lens, causal)
    # the doc's bound: within one fp16 ulp of the exact value (P equal to the reference's)
    assert_close(o, r, rtol=2.0 ** -10, atol_rms=1e-3, max_mean_rel=2.0 ** -10, min_cos=0.99999,
                 what="attention_out")
