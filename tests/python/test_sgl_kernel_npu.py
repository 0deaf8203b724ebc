"""mlaops._sgl_kernel_npu.mla_preprocess: sgl-kernel-npu's ``torch.ops.npu.mla_preprocess`` (the
serving stacks' MLAPO op: gamma0 / beta0 taken, not read), called as SGLang's forward_mlapo
writes the call (zero dummies for gamma0 / beta0, and for beta1 of length hidden when the q
RmsNorm has no bias), against the numpy reference (reference_preprocess.py without the
first-stage RmsNorm); its schema; the refusals write nothing."""
import inspect

import numpy as np
import pytest
import torch

import mlaops
import mlaops._sgl_kernel_npu as sgl
from compare import assert_close
from reference import f64
from reference_preprocess import mla_preprocess, scatter
from test_c_ascend import served
from test_mla_preprocess import BN, BS, DR, HCKV, HE, N, T, assert_outputs


def test_signature_is_the_schema():
    """sgl-kernel-npu's schema: 22 positional tensors, then keyword-only ctkv_scale=None,
    q_nope_scale=None, cache_mode=None, quant_mode=None and the four outputs (required)."""
    params = list(inspect.signature(sgl.mla_preprocess).parameters.values())
    names = [p.name for p in params]
    assert names == ["hiddenState", "gamma0", "beta0", "wdqkv", "descale0", "gamma1", "beta1", "wuq", "descale1",
                     "gamma2", "cos", "sin", "wuk", "kv_cache", "kv_cache_rope", "slotmapping", "quant_scale0",
                     "quant_offset0", "bias0", "quant_scale1", "quant_offset1", "bias1", "ctkv_scale", "q_nope_scale",
                     "cache_mode", "quant_mode", "q_out0", "kv_cache_out0", "q_out1", "kv_cache_out1"]
    assert all(p.kind == p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params[:22])
    assert all(p.kind == p.KEYWORD_ONLY for p in params[22:])
    assert [p.default for p in params[22:26]] == [None] * 4
    assert all(p.default is p.empty for p in params[26:])


def forward_mlapo(seed, cm, quant="per_tensor", with_bias=True, dtype="bf16", gamma0=None):
    """SGLang's forward_mlapo call on one case: returns (outputs, caches before, reference
    inputs, slots, keywords)."""
    pos, kw, ref_in, slots = served(seed, cm, quant, dtype)
    (hidden_states, wdqkv, deq_scale_kvq, q_a_weight, q_a_bias, wuq, q_b_deq_scale, kv_a_weight, cos, sin, w_kc,
     k_cache, v_cache, slot_mapping) = pos
    dummy = torch.zeros((hidden_states.shape[-1],), dtype=hidden_states.dtype)
    if not with_bias:
        q_a_bias = dummy
        ref_in = dict(ref_in, beta1=None)
    q_nope_out = torch.empty((T, w_kc.shape[0], HCKV), dtype=torch.int8 if cm == 2 else hidden_states.dtype)
    q_rope_out = torch.empty((T, w_kc.shape[0], DR), dtype=hidden_states.dtype)
    before = (f64(k_cache), f64(v_cache))
    g0 = dummy if gamma0 is None else gamma0
    extra = {k: kw[k] for k in ("ctkv_scale", "q_nope_scale") if k in kw}
    if quant != "per_tensor":  # the schema requires them; the per-token kernel does not read them
        kw = dict(kw, quant_scale0=dummy[:1], quant_offset0=torch.zeros(1, dtype=torch.int8),
                  bias0=torch.zeros(1, dtype=torch.int32), quant_scale1=dummy[:1],
                  quant_offset1=torch.zeros(1, dtype=torch.int8), bias1=torch.zeros(1, dtype=torch.int32))
    out = sgl.mla_preprocess(
        hidden_states, g0, dummy, wdqkv, deq_scale_kvq, q_a_weight, q_a_bias, wuq, q_b_deq_scale, kv_a_weight, cos,
        sin, w_kc, k_cache, v_cache, slot_mapping, quant_scale0=kw["quant_scale0"], quant_offset0=kw["quant_offset0"],
        bias0=kw["bias0"], quant_scale1=kw["quant_scale1"], quant_offset1=kw["quant_offset1"], bias1=kw["bias1"],
        cache_mode=kw["cache_mode"], quant_mode=kw["quant_mode"] if quant != "per_token" else None,
        q_out0=q_nope_out, kv_cache_out0=k_cache, q_out1=q_rope_out, kv_cache_out1=v_cache, **extra)
    assert len(out) == 4 and out[0] is q_nope_out and out[1] is k_cache and out[2] is q_rope_out and out[3] is v_cache
    return out, before, ref_in, slots, kw


@pytest.mark.parametrize("cm", [1, 2, 3])
@pytest.mark.parametrize("with_bias", [True, False])
def test_forward_mlapo_against_reference(cm, with_bias):
    out, before, ref_in, slots, kw = forward_mlapo(80 + cm, cm, with_bias=with_bias)
    assert_outputs(cm, "per_tensor", out, before, mla_preprocess(**ref_in), slots, kw)


def test_default_quant_mode_per_token_and_fp16():
    """quant_mode None is the binding's "per_token_quant_symm"; fp16 with int64 descales."""
    out, before, ref_in, slots, kw = forward_mlapo(84, 1, quant="per_token")
    assert_outputs(1, "per_token", out, before, mla_preprocess(**ref_in), slots, kw)
    out, before, ref_in, slots, kw = forward_mlapo(85, 1, dtype="fp16")
    assert_outputs(1, "per_tensor", out, before, mla_preprocess(**ref_in, dtype="fp16"), slots, kw, "fp16")


def test_gamma0_beta0_not_read():
    """The kernel's first stage does not read gamma0 / beta0: any values give the same result as
    the zero dummies (with gamma0 = 0 MlaPreprocess's form would normalise to zero)."""
    a = [o.clone() for o in forward_mlapo(86, 1)[0]]
    b = forward_mlapo(86, 1, gamma0=torch.randn(HE).to(torch.bfloat16))[0]
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_nzcache_as_sglang_views_the_caches():
    """SGLang with FIA NZ views its [blocks, block_size, 1, W] caches as [blocks, W/16,
    block_size, 16] before the call; the rows land in the NZ blocks."""
    pos, kw, ref_in, slots = served(87, 3, "per_tensor")
    k_alloc = torch.full((BN, BS, 1, HCKV), 3.0, dtype=torch.bfloat16)
    v_alloc = torch.full((BN, BS, 1, DR), 3.0, dtype=torch.bfloat16)
    k_cache, v_cache = k_alloc.view(BN, HCKV // 16, BS, 16), v_alloc.view(BN, DR // 16, BS, 16)
    q0 = torch.empty((T, N, HCKV), dtype=torch.bfloat16)
    q1 = torch.empty((T, N, DR), dtype=torch.bfloat16)
    dummy = torch.zeros(HE, dtype=torch.bfloat16)
    sgl.mla_preprocess(pos[0], dummy, dummy, *pos[1:11], k_cache, v_cache, pos[13], quant_scale0=kw["quant_scale0"],
                       quant_offset0=kw["quant_offset0"], bias0=kw["bias0"], quant_scale1=kw["quant_scale1"],
                       quant_offset1=kw["quant_offset1"], bias1=kw["bias1"], cache_mode="nzcache",
                       quant_mode="per_tensor_quant_asymm", q_out0=q0, kv_cache_out0=k_cache, q_out1=q1,
                       kv_cache_out1=v_cache)
    r = mla_preprocess(**ref_in)
    assert_close(k_cache, scatter(np.full((BN, HCKV // 16, BS, 16), 3.0), r["kn"], slots, 16), rtol=2 * 2.0 ** -7,
                 what="k_cache")
    assert_close(v_cache, scatter(np.full((BN, DR // 16, BS, 16), 3.0), r["kr"], slots, 16), rtol=2 * 2.0 ** -7,
                 what="v_cache")


def test_refusals_write_nothing():
    """The binding's maps (no "kvcache", two quant modes), int8 weights only, a missing output
    (Python's TypeError) and a None tensor (161001)."""
    pos, kw, _, _ = served(88, 1, "per_tensor")
    dummy = torch.zeros(HE, dtype=torch.bfloat16)
    args = (pos[0], dummy, dummy, *pos[1:14])
    outs = dict(q_out0=torch.empty((T, N, HCKV), dtype=torch.bfloat16), kv_cache_out0=pos[11],
                q_out1=torch.empty((T, N, DR), dtype=torch.bfloat16), kv_cache_out1=pos[12])
    quant = {k: kw[k] for k in ("quant_scale0", "quant_offset0", "bias0", "quant_scale1", "quant_offset1", "bias1")}
    kv0, kr0 = pos[11].clone(), pos[12].clone()

    def refused(status, words, *a, **k):
        with pytest.raises(mlaops.Error) as e:
            sgl.mla_preprocess(*a, **k)
        assert e.value.status == status, e.value.message
        for w in words:
            assert w in e.value.message, e.value.message
        assert torch.equal(pos[11], kv0) and torch.equal(pos[12], kr0)

    refused(161002, ("cache_mode", "MPP-06"), *args, *quant.values(), cache_mode="kvcache", **outs)
    refused(161002, ("quant_mode", "MPP-07"), *args, *quant.values(), quant_mode="no_quant", **outs)
    nq, _, _, _ = served(89, 1, None)
    refused(161002, ("wdqkv", "int8"), nq[0], dummy, dummy, nq[1], pos[2], *nq[3:6], pos[6], *nq[7:14],
            *quant.values(), **outs)  # bf16 weights (the schema's descales given)
    refused(161001, ("gamma0", "MPP-01"), pos[0], None, dummy, *pos[1:14], *quant.values(), **outs)
    with pytest.raises(TypeError):
        sgl.mla_preprocess(*args, *quant.values(), q_out0=outs["q_out0"], kv_cache_out0=pos[11], q_out1=outs["q_out1"])
    assert torch.equal(pos[11], kv0) and torch.equal(pos[12], kr0)
