"""npu_incre_flash_attention / npu_prompt_flash_attention (torch_npu's signatures, run through the
aclnn C entry points aclnnIncreFlashAttentionV4 / aclnnPromptFlashAttentionV3) against the float64
numpy reference (reference.py), and the entry points' own rules (IFA-01, IFA-02, PFA-01, PFA-02),
torch_npu's internal-format gate (NZ-02) and the FIA-01 null rule."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_fia_out
from reference import attention, f64, fia_bnsd
from test_fia import MASK, _from_bnsd, _t, _to_bnsd

ifa, pfa = mlaops.npu_incre_flash_attention, mlaops.npu_prompt_flash_attention


def _masked_decode(q, k, v, scale, kv_lens, mask):
    """Decode (Q_S = 1) in float64 BNSD with a [B, KV_S] mask (True = masked out)."""
    b, n, _, _ = q.shape
    kvn = k.shape[1]
    out = np.zeros((b, n, 1, v.shape[-1]))
    for bi in range(b):
        keep = ~mask[bi, :kv_lens[bi]]
        for h in range(n):
            g = h // (n // kvn)
            o, _ = attention(q[bi, h], k[bi, g, :kv_lens[bi]][keep], v[bi, g, :kv_lens[bi]][keep], scale)
            out[bi, h] = o
    return out


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_ifa_decode_gqa(layout, dtype):
    rng = np.random.default_rng(31)
    b, n, kvn, d, skv = 3, 8, 2, 64, 40
    q, k, v = _t(rng, b, n, 1, d, dtype=dtype), _t(rng, b, kvn, skv, d, dtype=dtype), _t(rng, b, kvn, skv, d, dtype=dtype)
    kv_lens = [40, 17, 1]
    scale = d ** -0.5
    out = ifa(_from_bnsd(q, layout), _from_bnsd(k, layout), _from_bnsd(v, layout), actual_seq_lengths=kv_lens,
              num_heads=n, num_key_value_heads=kvn, scale_value=scale, input_layout=layout)
    assert out.dtype == dtype and out.shape == _from_bnsd(q, layout).shape
    ref, _ = fia_bnsd(f64(q), f64(k), f64(v), scale, [1] * b, kv_lens)
    assert_fia_out(_to_bnsd(out, layout, b, n), ref, fp16=dtype == torch.float16)


def test_ifa_mask_and_ignored_padding_mask():
    rng = np.random.default_rng(32)
    b, n, d, skv = 2, 4, 64, 24
    q, k, v = _t(rng, b, n, 1, d), _t(rng, b, n, skv, d), _t(rng, b, n, skv, d)
    mask = torch.from_numpy(rng.random((b, 1, 1, skv)) < 0.3)
    mask[:, :, :, 0] = False
    out = ifa(q, k, v, atten_mask=mask, num_heads=n, scale_value=0.1, input_layout="BNSD")
    ref = _masked_decode(f64(q), f64(k), f64(v), 0.1, [skv] * b, f64(mask).reshape(b, skv) > 0)
    assert_fia_out(out, ref)
    # padding_mask is reserved: torch_npu does not pass it on
    again = ifa(q, k, v, atten_mask=mask, padding_mask=torch.ones(b, skv), num_heads=n, scale_value=0.1,
                input_layout="BNSD")
    assert torch.equal(again, out)


def test_ifa_paged_bnsd():
    rng = np.random.default_rng(33)
    b, n, kvn, d, bs, blocks = 2, 8, 2, 64, 16, 7
    q = _t(rng, b, n, 1, d)
    kc, vc = _t(rng, blocks, kvn, bs, d), _t(rng, blocks, kvn, bs, d)
    table = torch.tensor([[3, 0, 5], [6, 1, -1]], dtype=torch.int32)
    kv_lens = [40, 20]
    out = ifa(q, kc, vc, block_table=table, block_size=bs, actual_seq_lengths=kv_lens, num_heads=n,
              num_key_value_heads=kvn, scale_value=0.125, input_layout="BNSD")

    def gather(c):
        return np.stack([np.concatenate([f64(c)[blk] for blk in row[:3] if blk >= 0] +
                                        [np.zeros((kvn, bs * 3, d))], axis=1)[:, :bs * 3] for row in table.tolist()])
    ref, _ = fia_bnsd(f64(q), gather(kc), gather(vc), 0.125, [1] * b, kv_lens)
    assert_fia_out(out, ref)


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
def test_pfa_causal_gqa(layout):
    rng = np.random.default_rng(34)
    b, n, kvn, d, s = 2, 8, 2, 64, 24
    q, k, v = _t(rng, b, n, s, d), _t(rng, b, kvn, s, d), _t(rng, b, kvn, s, d)
    lens = [24, 13]
    out = pfa(_from_bnsd(q, layout), _from_bnsd(k, layout), _from_bnsd(v, layout), atten_mask=MASK, sparse_mode=3,
              actual_seq_lengths=lens, actual_seq_lengths_kv=lens, num_heads=n, num_key_value_heads=kvn,
              scale_value=0.125, input_layout=layout)
    assert out.dtype == torch.bfloat16 and out.shape == _from_bnsd(q, layout).shape
    ref, _ = fia_bnsd(f64(q), f64(k), f64(v), 0.125, lens, lens, causal=True)
    got = _to_bnsd(out, layout, b, n)
    for bi, ln in enumerate(lens):  # rows past a batch's query length are not compared
        assert_fia_out(got[bi, :, :ln], ref[bi, :, :ln])


def test_pfa_defaults_bnsd_bsnd_and_high_precision_sparse():
    rng = np.random.default_rng(35)
    b, n, d, s = 2, 4, 64, 12
    q, k, v = _t(rng, b, n, s, d), _t(rng, b, n, s, d), _t(rng, b, n, s, d)
    # torch_npu's defaults (pre_tokens 2147473647, next_tokens 0, sparse_mode 0, no mask): full attention
    out = pfa(q, k, v, num_heads=n, scale_value=0.125, input_layout="BNSD")
    ref, _ = fia_bnsd(f64(q), f64(k), f64(v), 0.125, [s] * b, [s] * b)
    assert_fia_out(out, ref)
    # BNSD_BSND: the output in BSND, (B, S, N, D)
    out_bsnd = pfa(q, k, v, num_heads=n, scale_value=0.125, input_layout="BNSD_BSND")
    assert out_bsnd.shape == (b, s, n, d) and torch.equal(out_bsnd, out.permute(0, 2, 1, 3))
    # sparse_mode 13 is torch_npu's sparse_mode 3 with inner_precise 0
    causal = pfa(q, k, v, atten_mask=MASK, sparse_mode=3, num_heads=n, scale_value=0.125, input_layout="BNSD")
    hp = pfa(q, k, v, atten_mask=MASK, sparse_mode=13, num_heads=n, scale_value=0.125, input_layout="BNSD")
    ref_c, _ = fia_bnsd(f64(q), f64(k), f64(v), 0.125, [s] * b, [s] * b, causal=True)
    assert_fia_out(causal, ref_c)
    assert_fia_out(hp, ref_c)


def test_pfa_tnd_output_takes_the_value_head_dim():
    rng = np.random.default_rng(36)
    n, dk, dv, s = 4, 64, 32, 8
    q, k, v = _t(rng, 2, n, s, dk), _t(rng, 2, n, s, dk), _t(rng, 2, n, s, dv)
    args = (_from_bnsd(q, "TND"), _from_bnsd(k, "TND"), _from_bnsd(v, "TND"))
    kw = dict(atten_mask=MASK, actual_seq_lengths=[s, 2 * s], actual_seq_lengths_kv=[s, 2 * s], num_heads=n,
              num_key_value_heads=n, scale_value=0.125, input_layout="TND")
    # TND MHA BF16 runs with innerPrecise 0 only (FIA-19's vendor range): torch_npu passes 1 unless
    # sparse_mode is 10..14, so sparse_mode 3 is refused and 13 (3 in high precision) runs
    with pytest.raises(mlaops.Error, match="aclnnPromptFlashAttentionV3: innerPrecise: FIA-19"):
        pfa(*args, sparse_mode=3, **kw)
    out = pfa(*args, sparse_mode=13, **kw)
    assert out.shape == (2 * s, n, dv)
    ref, _ = fia_bnsd(f64(q), f64(k), f64(v), 0.125, [s] * 2, [s] * 2, causal=True)
    assert_fia_out(_to_bnsd(out, "TND", 2, n), ref)


# --- the entry points' own rules and torch_npu's gate

def _decode_inputs(s=1):
    g = torch.Generator().manual_seed(7)
    return (torch.randn(2, 4, s, 64, generator=g).bfloat16(), torch.randn(2, 4, 16, 64, generator=g).bfloat16(),
            torch.randn(2, 4, 16, 64, generator=g).bfloat16())


def _refused(fn, args, kw, status, text):
    before = [a.clone() for a in args if torch.is_tensor(a)]
    with pytest.raises(mlaops.Error) as e:
        fn(*args, **kw)
    assert e.value.status == status and text in e.value.message, e.value.message
    assert all(torch.equal(a, b) for a, b in zip([a for a in args if torch.is_tensor(a)], before))
    return e.value.message


def test_ifa_01_one_query_token():
    msg = _refused(ifa, _decode_inputs(s=2), dict(num_heads=4, input_layout="BNSD"), 161002, "IFA-01")
    assert msg.startswith("aclnnIncreFlashAttentionV4: query: IFA-01")


def test_ifa_02_layouts():
    q, k, v = _decode_inputs()
    for layout in ("TND", "BNSD_BSND", "XYZ"):
        msg = _refused(ifa, (q, k, v), dict(num_heads=4, input_layout=layout), 161002, "IFA-02")
        assert msg.startswith("aclnnIncreFlashAttentionV4: inputLayout: IFA-02")


def test_pfa_01_layouts_and_02_empty_output():
    q, k, v = _decode_inputs(s=4)
    msg = _refused(pfa, (q, k, v), dict(num_heads=4, input_layout="XYZ"), 161002, "PFA-01")
    assert msg.startswith("aclnnPromptFlashAttentionV3: inputLayout: PFA-01")
    _refused(pfa, (q, k, v), dict(num_heads=4, input_layout="SH"), 161002, "PFA-01")
    # PFA-02: an empty attention_out is a successful call that does nothing (before any other rule)
    empty = torch.zeros(0, 4, 64, dtype=torch.bfloat16)
    out = pfa(empty, empty, empty, num_heads=4, input_layout="BSH")
    assert out.shape == (0, 4, 64)


def test_fia_01_null_and_key_lists():
    q, k, v = _decode_inputs()
    for fn in (ifa, pfa):
        _refused(fn, (q, None, v), dict(num_heads=4, input_layout="BNSD"), 161001, f"{fn.__name__}: key: FIA-01")
    with pytest.raises(TypeError, match="argument 'key' \\(position 2\\) must be Tensor, not list"):
        pfa(q, [k], v, num_heads=4, input_layout="BNSD")
    # IFA takes key / value lists (the entry point's tensor lists): one tensor per batch
    whole = ifa(q, k, v, num_heads=4, input_layout="BNSD")
    per_batch = ifa(q, [k[:1], k[1:]], [v[:1], v[1:]], num_heads=4, input_layout="BNSD")
    assert torch.equal(whole, per_batch)


def test_nz_02_internal_format_refused():
    q, k, v = _decode_inputs()
    nz = mlaops.npu_format_cast(k, 29)
    msg = _refused(ifa, (q, nz, v), dict(num_heads=4, input_layout="BNSD"), 161002, "NZ-02")
    assert msg.startswith("npu_incre_flash_attention: key: NZ-02 Current operator npu_incre_flash_attention do not "
                          "support internal format")
    _refused(pfa, (mlaops.npu_format_cast(q, 29), k, v), dict(num_heads=4, input_layout="BNSD"), 161002,
             "npu_prompt_flash_attention: query: NZ-02")


def test_output_dtype_rules():
    q, k, v = _decode_inputs()
    out = ifa(q, k, v, num_heads=4, input_layout="BNSD", quant_scale2=torch.tensor([2.0]))
    assert out.dtype == torch.int8
    ref = ifa(q, k, v, num_heads=4, input_layout="BNSD")
    assert np.max(np.abs(f64(out) - np.clip(np.rint(f64(ref) * 2), -128, 127))) <= 1


def test_torch_ops_names_and_opcheck():
    q, k, v = _decode_inputs()
    kw = dict(num_heads=4, input_layout="BNSD", scale_value=0.125)
    want = ifa(q, k, v, **kw)
    for op in (torch.ops.mlaops.npu_incre_flash_attention, torch.ops.npu.npu_incre_flash_attention):
        assert torch.equal(op(q, k, v, **kw), want)
    torch.library.opcheck(torch.ops.mlaops.npu_incre_flash_attention.default, (q, k, v), kw)
    qp = _decode_inputs(s=16)[0]
    kwp = dict(kw, atten_mask=MASK, sparse_mode=3, actual_seq_lengths=[16, 9], actual_seq_lengths_kv=[16, 9])
    want = pfa(qp, k, v, **kwp)
    for op in (torch.ops.mlaops.npu_prompt_flash_attention, torch.ops.npu.npu_prompt_flash_attention):
        assert torch.equal(op(qp, k, v, **kwp), want)
    torch.library.opcheck(torch.ops.mlaops.npu_prompt_flash_attention.default, (qp, k, v), kwp)
    assert "int pre_tokens=2147473647, int next_tokens=0" in str(torch.ops.npu.npu_prompt_flash_attention.default._schema)
