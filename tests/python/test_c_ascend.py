"""mlaops._C_ascend.mla_preprocess: vllm-ascend's positional form of its custom op (no gamma0 /
beta0, optional beta1 and cos / sin), the serving stacks' MLAPO op, against the numpy reference
(reference_preprocess.py with gamma0 = beta0 = None: no first-stage RmsNorm), called as
vllm-ascend's mla_v1.py writes the call; the binding's refusals write nothing."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_close
from reference import f64
from reference_preprocess import mla_preprocess, scatter
from test_mla_preprocess import BN, BS, DR, HCKV, HCQ, N, T, assert_outputs, make
from test_mla_preprocess_fp16 import to_fp16

QUANT = {"per_tensor": "per_tensor_quant_asymm", "per_token": "per_token_quant_symm", None: "no_quant"}


def vllm_positional(args, kw, cos=True):
    """make()'s call in the custom op's order: gamma0 / beta0 dropped, every argument positional
    (quant scales ... q_nope_scale, cache_mode, quant_mode, enable_inner_out, the five outputs)."""
    (x, _, _, wdqkv, descale0, g1, b1, wuq, descale1, g2, c, s, wuk, kv, kr, slots) = args
    return (x, wdqkv, descale0, g1, b1, wuq, descale1, g2, c if cos else None, s if cos else None, wuk, kv, kr,
            slots, kw.get("quant_scale0"), kw.get("quant_offset0"), kw.get("bias0"), kw.get("quant_scale1"),
            kw.get("quant_offset1"), kw.get("bias1"), kw.get("ctkv_scale"), kw.get("q_nope_scale"),
            kw["cache_mode"], kw.get("quant_mode", "per_tensor_quant_asymm"), False, None, kv, None, kr, None)


def served(seed, cm, quant, dtype="bf16"):
    """make()'s case as the MLAPO op's: (positional tensors of the custom op, keywords, reference
    inputs without the first-stage RmsNorm, slots)."""
    args, kw, ref_in, slots = make(seed, cm, quant)
    if dtype == "fp16":
        args, kw = to_fp16(args, kw)
    (x, _, _, wdqkv, descale0, g1, b1, wuq, descale1, g2, c, s, wuk, kv, kr, sm) = args
    kw = dict(kw, quant_mode=QUANT[quant])
    return (x, wdqkv, descale0, g1, b1, wuq, descale1, g2, c, s, wuk, kv, kr, sm), kw, \
        dict(ref_in, gamma0=None, beta0=None), slots


def run_and_check(cm, quant, pos, kw, ref_in, slots, dtype="bf16", **extra):
    kv, kr = pos[11], pos[12]
    before = (f64(kv), f64(kr) if kr is not None else None)
    out = mlaops._C_ascend.mla_preprocess(*pos, **kw, **extra)
    assert len(out) == 5 and out[1] is kv and out[3] is kr
    r = mla_preprocess(**ref_in, dtype=dtype)
    assert_outputs(cm, quant, out[:4], before, r, slots, kw, dtype)
    return out, r


@pytest.mark.parametrize("cm", [0, 1, 2, 3])
@pytest.mark.parametrize("quant", ["per_tensor", "per_token", None])
def test_every_cache_and_quant_mode_against_reference(cm, quant):
    run_and_check(cm, quant, *served(60 + cm, cm, quant))


def test_every_argument_positional():
    """The custom op's order, every argument positional (quant scales ... outputs)."""
    args, kw, ref_in, slots = make(68, 2, "per_tensor")
    before = (f64(args[13]), f64(args[14]))
    out = mlaops._C_ascend.mla_preprocess(*vllm_positional(args, kw))
    assert out[1] is args[13] and out[3] is args[14] and out[4] is None
    assert_outputs(2, "per_tensor", out[:4], before, mla_preprocess(**dict(ref_in, gamma0=None, beta0=None)), slots,
                   kw)


@pytest.mark.parametrize("cm", [1, 2])
def test_fp16_per_tensor_against_reference(cm):
    """fp16 input, descale0 / descale1 as int64 holding the fp32 bits."""
    pos, kw, ref_in, slots = served(64 + cm, cm, "per_tensor", "fp16")
    assert pos[0].dtype == torch.float16 and pos[2].dtype == torch.int64
    run_and_check(cm, "per_tensor", pos, kw, ref_in, slots, "fp16")


def test_mla_v1_decode_call_with_inner_out():
    """vllm-ascend mla_v1.py's call: the tensors positional, the rest by keyword, the outputs and
    q_c (inner_out) allocated by the caller, the caches updated in place."""
    pos, kw, ref_in, slots = served(70, 1, "per_tensor")
    (hidden_states, wd_qkv, deq_scale_qkv, gamma1, beta1, wu_q, qb_deq_scl, gamma2, cos, sin, w_uk_t, k_nope, k_pe,
     slot_mapping) = pos
    ql_nope = torch.empty((T, w_uk_t.shape[0], k_nope.shape[-1]), dtype=hidden_states.dtype)
    q_pe = torch.empty((T, w_uk_t.shape[0], k_pe.shape[-1]), dtype=hidden_states.dtype)
    q_c = torch.empty((T, HCQ), dtype=hidden_states.dtype)
    kv_before, kr_before = f64(k_nope), f64(k_pe)
    out = mlaops._C_ascend.mla_preprocess(
        hidden_states, wd_qkv, deq_scale_qkv, gamma1, beta1, wu_q, qb_deq_scl, gamma2, cos, sin, w_uk_t, k_nope,
        k_pe, slot_mapping, quant_scale0=kw["quant_scale0"], quant_offset0=kw["quant_offset0"], bias0=kw["bias0"],
        quant_scale1=kw["quant_scale1"], quant_offset1=kw["quant_offset1"], bias1=kw["bias1"], ctkv_scale=None,
        q_nope_scale=None, cache_mode="krope_ctkv", quant_mode="per_tensor_quant_asymm", enable_inner_out=True,
        q_out0=ql_nope, kv_cache_out0=k_nope, q_out1=q_pe, kv_cache_out1=k_pe, inner_out=q_c)
    assert out[0] is ql_nope and out[1] is k_nope and out[2] is q_pe and out[3] is k_pe and out[4] is q_c
    r = mla_preprocess(**ref_in)
    assert_outputs(1, "per_tensor", out[:4], (kv_before, kr_before), r, slots, kw)
    assert_close(q_c, r["q_down"], what="inner_out")


def test_nzcache_with_caches_as_vllm_allocates_them():
    """cache_mode "nzcache" with the caches vllm-ascend allocates, [BlockNum, BlockSize, 1, W]: the
    binding reads dim 2 == 1 as that spelling of the NZ block [W/16, BlockSize, 16]."""
    pos, kw, ref_in, slots = served(71, 3, "per_tensor")
    pos = list(pos)
    pos[11] = torch.full((BN, BS, 1, HCKV), 3.0, dtype=torch.bfloat16)
    pos[12] = torch.full((BN, BS, 1, DR), 3.0, dtype=torch.bfloat16)
    kv, kr = pos[11], pos[12]
    out = mlaops._C_ascend.mla_preprocess(*pos, **kw)
    assert out[1] is kv and out[3] is kr
    r = mla_preprocess(**ref_in)
    nz = np.full((BN, HCKV // 16, BS, 16), 3.0), np.full((BN, DR // 16, BS, 16), 3.0)
    assert_close(f64(kv).reshape(nz[0].shape), scatter(nz[0], r["kn"], slots, 16), rtol=2 * 2.0 ** -7,
                 what="kv_cache (NZ bytes)")
    assert_close(f64(kr).reshape(nz[1].shape), scatter(nz[1], r["kr"], slots, 16), rtol=2 * 2.0 ** -7,
                 what="kv_cache_rope (NZ bytes)")


def test_default_quant_mode_is_per_token_and_beta1_optional():
    """quant_mode None is the binding's "per_token_quant_symm"; beta1 None is a q RmsNorm
    without bias."""
    pos, kw, ref_in, slots = served(72, 1, "per_token")
    pos = list(pos)
    pos[4] = None  # beta1
    del kw["quant_mode"]
    run_and_check(1, "per_token", tuple(pos), kw, dict(ref_in, beta1=None), slots)


@pytest.mark.parametrize("quant", ["per_tensor", None])
def test_no_rope_writes_unrotated_values(quant):
    """cos = sin = None: q_rope and the rope cache rows are the projections as computed."""
    pos, kw, ref_in, slots = served(73, 1, quant)
    pos = list(pos)
    pos[8] = pos[9] = None
    run_and_check(1, quant, tuple(pos), kw, dict(ref_in, cos=None, sin=None), slots)


def test_longer_beta1_accepted():
    """A beta1 longer than Hcq (the kernel reads the first Hcq): the same result."""
    pos, kw, _, _ = served(74, 1, "per_tensor")
    out = [o.clone() for o in mlaops._C_ascend.mla_preprocess(*pos, **kw)[:4]]
    pos2, kw2, _, _ = served(74, 1, "per_tensor")
    pos2 = list(pos2)
    pos2[4] = torch.cat([pos2[4], torch.full((100,), 7.0, dtype=torch.bfloat16)])
    out2 = mlaops._C_ascend.mla_preprocess(*pos2, **kw2)[:4]
    for a, b in zip(out, out2):
        assert torch.equal(a, b)


def _refused(pos, kw, status, *words):
    kv0 = pos[11].clone()
    kr0 = pos[12].clone() if pos[12] is not None else None
    with pytest.raises(mlaops.Error) as e:
        mlaops._C_ascend.mla_preprocess(*pos, **kw)
    assert e.value.status == status, e.value.message
    for w in words:
        assert w in e.value.message, e.value.message
    assert torch.equal(pos[11], kv0) and (kr0 is None or torch.equal(pos[12], kr0))


def test_refusals_write_nothing():
    """The binding's and tiling's refusals (an unknown mode string, per_token_quant_asymm, which
    has no kernel, per_token_quant_symm with fp16, a quant mode that does not fit the weights, a
    token count outside [1, 1024]) and a lone cos (MPP-20)."""
    pos, kw, _, _ = served(75, 1, "per_tensor")
    _refused(pos, dict(kw, cache_mode="paged"), 161002, "cache_mode", "MPP-06")
    _refused(pos, dict(kw, quant_mode="int4"), 161002, "quant_mode", "MPP-07")
    _refused(pos, dict(kw, quant_mode="per_token_quant_asymm"), 161002, "quant_mode", "not implemented")
    _refused(pos, dict(kw, quant_mode="no_quant"), 161002, "quant_mode", "MPP-11")
    p16, kw16, _, _ = served(76, 1, "per_token", "fp16")
    _refused(p16, kw16, 161002, "hiddenState", "per_token_quant_symm", "bf16")
    empty = list(pos)
    empty[0], empty[13] = pos[0][:0], pos[13][:0]
    _refused(empty, kw, 161002, "token count", "[1, 1024]")
    lone = list(pos)
    lone[8] = None
    _refused(lone, kw, 161001, "MPP-20", "cos")
    nq, kwq, _, _ = served(77, 1, None)
    _refused(nq, dict(kwq, quant_mode="per_tensor_quant_asymm"), 161002, "quant_mode", "MPP-11")
    short = list(pos)
    short[4] = pos[4][:HCQ - 1]
    _refused(short, kw, 161002, "beta1", "MPP-09")
