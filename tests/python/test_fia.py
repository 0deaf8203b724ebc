"""npu_fused_infer_attention_score(_v2) against the float64 numpy reference (reference.py)."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_fia_out
from reference import f64, fia_bnsd

MASK = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)  # sparse_mode 2/3/4


def _t(rng, *shape, dtype=torch.bfloat16):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(dtype)


def _lse_close(lse, ref):
    a, r = f64(lse).reshape(-1), np.asarray(ref).reshape(-1)
    assert np.all(np.abs(a - r) <= 1e-4 * np.abs(r) + 1e-5), np.max(np.abs(a - r))


def _from_bnsd(x, layout):
    """A [B, N, S, D] torch tensor in the given layout (TND needs equal S per batch)."""
    b, n, s, d = x.shape
    if layout == "BNSD":
        return x.contiguous()
    if layout == "BSND":
        return x.permute(0, 2, 1, 3).contiguous()
    if layout == "BSH":
        return x.permute(0, 2, 1, 3).reshape(b, s, n * d).contiguous()
    if layout == "TND":
        return x.permute(0, 2, 1, 3).reshape(b * s, n, d).contiguous()
    raise ValueError(layout)


def _to_bnsd(x, layout, b, n):
    if layout == "BNSD":
        return f64(x)
    if layout == "BSND":
        return f64(x).transpose(0, 2, 1, 3)
    if layout == "BSH":
        s = x.shape[1]
        return f64(x).reshape(b, s, n, -1).transpose(0, 2, 1, 3)
    if layout == "NBSD":
        return f64(x).transpose(1, 0, 2, 3)
    if layout == "TND":
        return f64(x).reshape(b, -1, n, x.shape[-1]).transpose(0, 2, 1, 3)
    raise ValueError(layout)


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_decode_contiguous(layout, dtype):
    rng = np.random.default_rng(11)
    b, n, kvn, d, skv = 3, 8, 8, 64, 40
    q = _t(rng, b, n, 1, d, dtype=dtype)
    k = _t(rng, b, kvn, skv, d, dtype=dtype)
    v = _t(rng, b, kvn, skv, d, dtype=dtype)
    kv_lens = [40, 17, 1]
    scale = d ** -0.5
    out, lse = mlaops.npu_fused_infer_attention_score(
        _from_bnsd(q, layout), _from_bnsd(k, layout), _from_bnsd(v, layout), num_heads=n,
        scale=scale, input_layout=layout, actual_seq_lengths_kv=kv_lens, softmax_lse_flag=True)
    assert out.dtype == dtype
    ref, ref_lse = fia_bnsd(f64(q), f64(k), f64(v), scale, [1] * b, kv_lens)
    assert_fia_out(_to_bnsd(out, layout, b, n), ref, fp16=dtype == torch.float16)
    assert lse.shape == (b, n, 1, 1)
    _lse_close(lse, ref_lse)


@pytest.mark.parametrize("layout", ["BSND", "BNSD"])
def test_prefill_causal_gqa(layout):
    rng = np.random.default_rng(12)
    b, n, kvn, d, s = 2, 8, 2, 64, 24
    q, k, v = _t(rng, b, n, s, d), _t(rng, b, kvn, s, d), _t(rng, b, kvn, s, d)
    lens = [24, 13]
    scale = 0.125
    out, lse = mlaops.npu_fused_infer_attention_score(
        _from_bnsd(q, layout), _from_bnsd(k, layout), _from_bnsd(v, layout), atten_mask=MASK,
        actual_seq_lengths=lens, actual_seq_lengths_kv=lens, num_heads=n, num_key_value_heads=kvn,
        scale=scale, input_layout=layout, sparse_mode=3)
    ref, _ = fia_bnsd(f64(q), f64(k), f64(v), scale, lens, lens, causal=True)
    got = _to_bnsd(out, layout, b, n)
    for bi, l in enumerate(lens):  # rows past a batch's length are not compared
        assert_fia_out(got[bi, :, :l], ref[bi, :, :l], what=f"batch {bi}")
    assert lse.shape == (1,) and float(lse[0]) == 0.0  # the flag-off placeholder


def test_tnd_prefill_mla_rope_lse():
    """vllm-ascend's prefill call: TND, rope, sparse 3, cumulative lengths, softmax_lse_flag."""
    rng = np.random.default_rng(13)
    n, d, dr, dv = 4, 32, 16, 32
    lens = [9, 9]
    b, s = 2, 9
    q, qr = _t(rng, b, n, s, d), _t(rng, b, n, s, dr)
    k, kr, v = _t(rng, b, n, s, d), _t(rng, b, n, s, dr), _t(rng, b, n, s, dv)
    cum = list(np.cumsum(lens))
    scale = (d + dr) ** -0.5
    out, lse = mlaops.npu_fused_infer_attention_score(
        _from_bnsd(q, "TND"), _from_bnsd(k, "TND"), _from_bnsd(v, "TND"),
        query_rope=_from_bnsd(qr, "TND"), key_rope=_from_bnsd(kr, "TND"), num_heads=n,
        num_key_value_heads=n, input_layout="TND", atten_mask=MASK, sparse_mode=3, scale=scale,
        antiquant_mode=0, block_table=None, block_size=0, softmax_lse_flag=True,
        actual_seq_lengths=cum, actual_seq_lengths_kv=cum)
    ref, ref_lse = fia_bnsd(f64(q), f64(k), f64(v), scale, lens, lens, q_rope=f64(qr), k_rope=f64(kr),
                            causal=True)
    assert out.shape == (sum(lens), n, dv)
    assert_fia_out(_to_bnsd(out, "TND", b, n), ref, what="attention_out")
    assert lse.shape == (sum(lens), n, 1)
    _lse_close(f64(lse).reshape(b, s, n).transpose(0, 2, 1), ref_lse)


def _paged(rng, kv_bnsd, block_size, num_blocks):
    """A BnBsH paged cache holding kv [B, 1, Skv, D] (KV_N = 1) and its block table."""
    b, kvn, skv, d = kv_bnsd.shape
    per = -(-skv // block_size)
    ids = rng.permutation(num_blocks)[:b * per].reshape(b, per)
    cache = torch.zeros(num_blocks, block_size, kvn * d, dtype=kv_bnsd.dtype)
    x = kv_bnsd.permute(0, 2, 1, 3).reshape(b, skv, kvn * d)
    for bi in range(b):
        for j in range(per):
            rows = x[bi, j * block_size:(j + 1) * block_size]
            cache[ids[bi, j], :rows.shape[0]] = rows
    return cache, torch.from_numpy(ids.astype(np.int32))


@pytest.mark.parametrize("out_layout", ["BNSD_NBSD", "BSND_NBSD", "BSND"])
def test_mla_decode_paged_v2(out_layout):
    """vllm-ascend's MLA decode: value = key (the latent), KV_N 1, rope, block_table, v2 names."""
    rng = np.random.default_rng(14)
    b, n, d, dr, skv, bs = 3, 8, 64, 16, 50, 16
    q, qr = _t(rng, b, n, 1, d), _t(rng, b, n, 1, dr)
    k, kr = _t(rng, b, 1, skv, d), _t(rng, b, 1, skv, dr)
    k_cache, table = _paged(np.random.default_rng(1), k, bs, 16)
    kr_cache, _ = _paged(np.random.default_rng(1), kr, bs, 16)
    kv_lens = [50, 33, 7]
    lin = out_layout.split("_")[0]
    scale = (d + dr) ** -0.5
    out, lse = mlaops.npu_fused_infer_attention_score_v2(
        _from_bnsd(q, lin), k_cache, k_cache, query_rope=_from_bnsd(qr, lin), key_rope=kr_cache,
        num_query_heads=n, num_key_value_heads=1, softmax_scale=scale, block_table=table, block_size=bs,
        actual_seq_kvlen=kv_lens, input_layout=out_layout, sparse_mode=0, return_softmax_lse=True)
    ref, ref_lse = fia_bnsd(f64(q), f64(k), f64(k), scale, [1] * b, kv_lens, q_rope=f64(qr), k_rope=f64(kr))
    lout = out_layout.split("_")[-1]
    assert_fia_out(_to_bnsd(out, lout, b, n), ref, what="attention_out")
    _lse_close(lse.reshape(b, n, 1), ref_lse)


def test_v2_lse_off_is_empty_and_key_list():
    rng = np.random.default_rng(15)
    b, n, d, skv = 2, 4, 32, 10
    q, k, v = _t(rng, b, n, 1, d), _t(rng, b, n, skv, d), _t(rng, b, n, skv, d)
    keys = [k[i:i + 1].contiguous() for i in range(b)]
    vals = [v[i:i + 1].contiguous() for i in range(b)]
    out, lse = mlaops.npu_fused_infer_attention_score_v2(q, keys, vals, num_query_heads=n, input_layout="BNSD",
                                                         softmax_scale=0.2)
    assert lse.shape == (0,)
    ref, _ = fia_bnsd(f64(q), f64(k), f64(v), 0.2, [1] * b, [skv] * b)
    assert_fia_out(out, ref, what="tensor-list kv")


def test_numpy_inputs():
    import ml_dtypes
    rng = np.random.default_rng(16)
    q = rng.standard_normal((2, 1, 64)).astype(ml_dtypes.bfloat16)
    k = rng.standard_normal((2, 12, 64)).astype(ml_dtypes.bfloat16)
    out, lse = mlaops.npu_fused_infer_attention_score(q, k, k, num_heads=2, scale=0.125)
    assert isinstance(out, np.ndarray) and out.dtype == ml_dtypes.bfloat16 and out.shape == (2, 1, 64)
    ref, _ = fia_bnsd(f64(q).reshape(2, 1, 2, 32).transpose(0, 2, 1, 3),
                      f64(k).reshape(2, 12, 2, 32).transpose(0, 2, 1, 3),
                      f64(k).reshape(2, 12, 2, 32).transpose(0, 2, 1, 3), 0.125, [1, 1], [12, 12])
    assert_fia_out(f64(out).reshape(2, 1, 2, 32).transpose(0, 2, 1, 3), ref)
