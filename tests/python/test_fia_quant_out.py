"""npu_fused_infer_attention_score(_v2): INT8 KV antiquant, post-quant INT8 output, the .out
variants with the _get_max_workspace helpers (against the float64 numpy reference)."""
import numpy as np
import pytest
import torch

import mlaops
import mlaops.torch_npu as torch_npu
from compare import assert_fia_out, assert_int8
from reference import f64, fia_bnsd
from test_fia import _t


def _int8(rng, *shape):
    return torch.from_numpy(rng.integers(-100, 101, shape).astype(np.int8))


@pytest.mark.parametrize("offsets", [False, True])
@pytest.mark.parametrize("v2", [False, True])
def test_int8_kv_antiquant_per_channel(offsets, v2):
    """INT8 key / value, bf16 query, per-channel scales (1, KV_N, 1, D) in the query dtype:
    x = (x_int8 + offset) * scale (docs/ops/fused_infer_attention_score.md, KV antiquant)."""
    rng = np.random.default_rng(50)
    b, n, kvn, d, skv = 2, 4, 2, 64, 33
    q = _t(rng, b, n, 1, d)
    k, v = _int8(rng, b, kvn, skv, d), _int8(rng, b, kvn, skv, d)
    ks = torch.from_numpy(rng.uniform(0.005, 0.02, (1, kvn, 1, d)).astype(np.float32)).to(torch.bfloat16)
    vs = torch.from_numpy(rng.uniform(0.005, 0.02, (1, kvn, 1, d)).astype(np.float32)).to(torch.bfloat16)
    ko = torch.from_numpy(rng.integers(-3, 4, (1, kvn, 1, d)).astype(np.float32)).to(torch.bfloat16) if offsets else None
    vo = torch.from_numpy(rng.integers(-3, 4, (1, kvn, 1, d)).astype(np.float32)).to(torch.bfloat16) if offsets else None
    lens = [33, 20]
    if v2:
        out, _ = mlaops.npu_fused_infer_attention_score_v2(
            q, k, v, dequant_scale_key=ks, dequant_offset_key=ko, dequant_scale_value=vs, dequant_offset_value=vo,
            num_query_heads=n, num_key_value_heads=kvn, softmax_scale=d ** -0.5, input_layout="BNSD",
            actual_seq_kvlen=lens)
    else:
        out, _ = mlaops.npu_fused_infer_attention_score(
            q, k, v, key_antiquant_scale=ks, key_antiquant_offset=ko, value_antiquant_scale=vs,
            value_antiquant_offset=vo, num_heads=n, num_key_value_heads=kvn, scale=d ** -0.5,
            input_layout="BNSD", actual_seq_lengths_kv=lens)
    assert out.dtype == torch.bfloat16
    off = (lambda o: f64(o)) if offsets else (lambda o: 0.0)
    kd = (f64(k) + off(ko)) * f64(ks)
    vd = (f64(v) + off(vo)) * f64(vs)
    ref, _ = fia_bnsd(f64(q), kd, vd, d ** -0.5, [1] * b, lens)
    assert_fia_out(out, ref)


@pytest.mark.parametrize("per_channel", [False, True])
def test_post_quant_int8_output(per_channel):
    """quant_scale2 / quant_offset2: INT8 attention_out = sat(rint(x * scale + offset))."""
    rng = np.random.default_rng(51)
    b, n, d, s = 2, 4, 32, 16
    q, k, v = _t(rng, b, n, 1, d), _t(rng, b, n, s, d), _t(rng, b, n, s, d)
    shape = (n, d) if per_channel else (1,)
    qs = torch.from_numpy(rng.uniform(100, 200, shape).astype(np.float32))
    qo = torch.from_numpy(rng.integers(-5, 6, shape).astype(np.float32))
    out, _ = mlaops.npu_fused_infer_attention_score(q, k, v, quant_scale2=qs, quant_offset2=qo, num_heads=n,
                                                    scale=d ** -0.5, input_layout="BNSD")
    assert out.dtype == torch.int8 and out.shape == (b, n, 1, d)
    ref, _ = fia_bnsd(f64(q), f64(k), f64(v), d ** -0.5, [1] * b, [s] * b)
    scale = f64(qs).reshape(1, n, 1, d) if per_channel else f64(qs)[0]
    offset = f64(qo).reshape(1, n, 1, d) if per_channel else f64(qo)[0]
    expect = np.clip(np.rint(ref * scale + offset), -128, 127)
    assert_int8(out, expect, max_off_frac=0.05, what="post-quant attention_out")


@pytest.mark.parametrize("v2", [False, True])
def test_out_variant_and_workspace(v2):
    """vllm-ascend's graph-mode calls: ws = _get_max_workspace(**kw); f.out(**kw, workspace=ws,
    out=[attention_out, softmax_lse]); the lse placeholder is not written without the flag."""
    rng = np.random.default_rng(52)
    b, n, d, s = 2, 4, 32, 24
    q, k, v = _t(rng, b, s, n, d), _t(rng, b, s, n, d), _t(rng, b, s, n, d)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    if v2:
        fn, get_ws = torch_npu.npu_fused_infer_attention_score_v2, torch_npu._npu_fused_infer_attention_score_v2_get_max_workspace
        kw = dict(query=q, key=k, value=v, atten_mask=mask, num_query_heads=n, softmax_scale=0.1,
                  input_layout="BSND", sparse_mode=3, actual_seq_qlen=[24, 9], actual_seq_kvlen=[24, 9])
    else:
        fn, get_ws = torch_npu.npu_fused_infer_attention_score, torch_npu._npu_fused_infer_attention_score_get_max_workspace
        kw = dict(query=q, key=k, value=v, atten_mask=mask, num_heads=n, scale=0.1, input_layout="BSND",
                  sparse_mode=3, actual_seq_lengths=[24, 9], actual_seq_lengths_kv=[24, 9])
    expect, _ = fn(**kw)
    ws = get_ws(**kw)
    assert ws.dtype == torch.uint8 and ws.dim() == 1 and ws.numel() >= 1
    out = torch.full_like(expect, float("nan"))
    lse = torch.full((1,), 7.0)
    res = fn.out(**kw, workspace=ws, out=[out, lse])
    assert res[0] is out and res[1] is lse
    assert torch.equal(out, expect) and lse.item() == 7.0
    # positional query / key / value, no workspace, with the LSE written into the caller's tensor
    flag = {"return_softmax_lse" if v2 else "softmax_lse_flag": True}
    rest = {k2: v2_ for k2, v2_ in kw.items() if k2 not in ("query", "key", "value")}
    lse = torch.empty(b, n, s, 1)
    ref_out, ref_lse = fn(q, k, v, **rest, **flag)
    fn.out(q, k, v, **rest, **flag, out=[out, lse])
    assert torch.equal(out, ref_out) and torch.equal(lse, ref_lse)


def test_out_variant_errors_write_nothing():
    rng = np.random.default_rng(53)
    q, k = _t(rng, 2, 1, 64), _t(rng, 2, 8, 64)
    out = torch.full((2, 1, 64), 5.0, dtype=torch.bfloat16)
    with pytest.raises(mlaops.Error) as e:  # num_heads 3 does not divide H = 64
        mlaops.npu_fused_infer_attention_score.out(q, k, k, num_heads=3, out=[out, torch.empty(1)])
    assert e.value.status == 161002 and "FIA-" in e.value.message
    assert torch.all(out == 5.0)
    with pytest.raises(TypeError):
        mlaops.npu_fused_infer_attention_score.out(q, k, k, num_heads=2, not_a_keyword=1, out=[out, out])
    with pytest.raises(mlaops.Error):
        mlaops._npu_fused_infer_attention_score_get_max_workspace(q, k, k, num_heads=3)
