"""npu_mla_prolog_v3 (and FULL_QUANT_KV_NO_QUANT through v2) against the float64 numpy
reference: the mode tuples, query_norm, the α scales, the BSND / TND / PA_BLK cache modes."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_cascade, assert_close, assert_int8
from reference import bf16, f64, mla_prolog, rms_norm, scatter_cache
from test_mla_prolog import BLOCK_NUM, BLOCK_SIZE, DR, HCKV, HCQ, N, make_inputs

# make_inputs' quant -> (weight_quant_mode, kv_cache_quant_mode, query_quant_mode)
MODES = {None: (0, 0, 0), "partial": (1, 0, 0), "partial_kv": (1, 2, 0), "full_kv": (2, 1, 1)}


def _v3(args, kw, quant, **extra):
    w, kv, qq = MODES[quant]
    kw = dict(kw)
    if kv == 1:  # V3's per-tensor KV quant scale is (1): element 0 of V2's (1, Hckv)
        kw["quant_scale_ckv"] = kw["quant_scale_ckv"].reshape(-1)[:1].contiguous()
    if len(args) == 12:
        args, kw["cache_index"] = args[:9] + args[10:], args[9]
    return mlaops.npu_mla_prolog_v3(*args, **kw, weight_quant_mode=w, kv_cache_quant_mode=kv,
                                     query_quant_mode=qq, **extra)


@pytest.mark.parametrize("quant", [None, "partial", "partial_kv", "full_kv"])
def test_v3_equals_v2_for_the_same_mode(quant):
    args, kw, _, _ = make_inputs(40, 6, quant=quant)
    args2 = args[:10] + (args[10].clone(), args[11].clone())
    q2, qr2, kv2, kr2, dq2 = mlaops.npu_mla_prolog_v2(*args2, **kw)
    q3, qr3, dq3, qn, dqn = _v3(args, kw, quant)
    for a, b in ((q2, q3), (qr2, qr3), (kv2, args[10]), (kr2, args[11]), (dq2, dq3)):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert qn.shape == (1,) and dqn.shape == (1,)  # query_norm_flag off


@pytest.mark.parametrize("quant", [None, "partial"])
def test_v3_query_norm_and_alpha_scales(quant):
    t = 5
    args, kw, ref_in, slots = make_inputs(41, t, quant=quant)
    kv_before = f64(args[10])
    q, qr, _, qn, dqn = _v3(args, kw, quant, query_norm_flag=True, qc_qr_scale=2.0, kc_scale=0.5)
    # α_q scales RmsNorm(c_Q), α_kv RmsNorm(c_KV): powers of two, so gamma * α is exact
    ref = dict(ref_in, gcq=ref_in["gcq"] * 2.0, gckv=ref_in["gckv"] * 0.5)
    q_ref, qr_ref, kv_rows, _ = mla_prolog(**ref)
    assert_cascade(q, q_ref, ulps=4 if quant else 2, what="query")
    assert_cascade(qr, qr_ref, ulps=4 if quant else 2, what="query_rope")
    assert_close(args[10], scatter_cache(kv_before, kv_rows, slots, None), what="kv_cache")
    cn = rms_norm(bf16(ref_in["x"] @ ref_in["wdq"]), ref["gcq"], 1e-5)
    if quant is None:
        assert qn.dtype == torch.bfloat16 and qn.shape == (t, HCQ) and dqn.shape == (1,)
        assert_close(qn, bf16(cn), what="query_norm")
    else:
        assert qn.dtype == torch.int8 and qn.shape == (t, HCQ) and dqn.shape == (t, 1)
        m = np.max(np.abs(cn), axis=-1, keepdims=True)
        assert_close(dqn, m / 127.0, rtol=1e-3, atol_rms=0, max_mean_rel=1e-3, min_cos=0.999,
                     what="dequant_scale_q_norm")
        assert_int8(qn, np.clip(np.rint(cn * (127.0 / m)), -128, 127), what="query_norm")


def test_full_quant_kv_no_quant_v2_and_v3():
    """int8 token_x and weights, bf16 caches (FULL_QUANT_KV_NO_QUANT): bf16 query, (1,) scale."""
    t = 6
    args, kw, ref_in, slots = make_inputs(42, t, quant="full_kv")
    kw = {k: v for k, v in kw.items() if k != "quant_scale_ckv"}
    args = args[:10] + (torch.full_like(args[10], 3, dtype=torch.bfloat16), args[11])
    ref_in = {k: v for k, v in ref_in.items() if k != "qs_ckv"}
    kv_before = f64(args[10])
    args3 = args[:10] + (args[10].clone(), args[11].clone())
    q, qr, kv_out, kr_out, dq = mlaops.npu_mla_prolog_v2(*args, **kw)
    assert q.dtype == torch.bfloat16 and dq.shape == (1,)
    q_ref, qr_ref, kv_rows, kr_rows = mla_prolog(**ref_in)
    assert_cascade(q, q_ref, ulps=4, what="query")
    assert_cascade(qr, qr_ref, ulps=4, what="query_rope")
    assert_close(kv_out, scatter_cache(kv_before, kv_rows, slots, None), what="kv_cache")
    q3, qr3, dq3, _, _ = mlaops.npu_mla_prolog_v3(*args3[:9], *args3[10:], cache_index=args3[9], **kw,
                                                   weight_quant_mode=2, kv_cache_quant_mode=0)
    assert torch.equal(q, q3) and torch.equal(qr, qr3) and torch.equal(kv_out, args3[10])


@pytest.mark.parametrize("mode", ["BSND", "TND"])
def test_v3_token_order_caches(mode):
    """BSND / TND: no cache_index; row t of the cache is token t."""
    t = 6
    args, kw, ref_in, _ = make_inputs(43, t, bsh=mode == "BSND")
    shape = (1, t, 1, HCKV) if mode == "BSND" else (t, 1, HCKV)
    kv = torch.full(shape, 3.0, dtype=torch.bfloat16)
    kr = torch.full(shape[:-1] + (DR,), 3.0, dtype=torch.bfloat16)
    kw = dict(kw, cache_mode=mode)
    q, qr, _, _, _ = mlaops.npu_mla_prolog_v3(*args[:9], kv, kr, **kw)
    q_ref, _, kv_rows, kr_rows = mla_prolog(**ref_in)
    assert_cascade(q.reshape(t, N, HCKV), q_ref, what="query")
    assert_close(kv.reshape(t, HCKV), kv_rows, what="kv_cache")
    assert_close(kr.reshape(t, DR), kr_rows, what="kr_cache")


def test_v3_pa_blk_bsnd_block_ids():
    """PA_BLK_BSND: cache_index holds block ids per batch; token s of batch b goes to block
    cache_index[b, s // BlockSize], row s % BlockSize."""
    t = BLOCK_SIZE + 3  # two blocks for the one batch
    args, kw, ref_in, _ = make_inputs(44, t, bsh=True)
    kv = torch.full((BLOCK_NUM, BLOCK_SIZE, 1, HCKV), 3.0, dtype=torch.bfloat16)
    kr = torch.full((BLOCK_NUM, BLOCK_SIZE, 1, DR), 3.0, dtype=torch.bfloat16)
    ids = torch.tensor([[3, 1]], dtype=torch.int64)
    mlaops.npu_mla_prolog_v3(*args[:9], kv, kr, cache_index=ids, **dict(kw, cache_mode="PA_BLK_BSND"))
    _, _, kv_rows, _ = mla_prolog(**ref_in)
    slots = np.array([(3 if s < BLOCK_SIZE else 1) * BLOCK_SIZE + s % BLOCK_SIZE for s in range(t)])
    assert_close(kv, scatter_cache(np.full(kv.shape, 3.0), kv_rows, slots, None), what="kv_cache")


def test_v3_functional_leaves_the_caches():
    args, kw, _, _ = make_inputs(45, 4)
    kv0, kr0 = args[10].clone(), args[11].clone()
    outs = mlaops.npu_mla_prolog_v3_functional(*args[:9], *args[10:], cache_index=args[9], **kw)
    assert len(outs) == 7
    assert torch.equal(args[10], kv0) and torch.equal(args[11], kr0)
    ref = _v3(args, kw, None)
    for a, b in zip(outs[:5], ref):
        assert torch.equal(a, b)
    assert torch.equal(outs[5], args[10]) and torch.equal(outs[6], args[11])


def test_v3_errors():
    args, kw, _, _ = make_inputs(46, 4)
    kv0 = args[10].clone()
    v3 = args[:9] + args[10:]
    with pytest.raises(mlaops.Error) as e:  # the mode tuple says partial quant, the dtypes say none
        mlaops.npu_mla_prolog_v3(*v3, cache_index=args[9], **kw, weight_quant_mode=1)
    assert e.value.status == 161002 and "MP-20" in e.value.message and "npu_mla_prolog_v3" in e.value.message
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_prolog_v3(*v3, cache_index=args[9], **kw, tile_size=64)
    assert e.value.status == 161002 and "MP-21" in e.value.message
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_prolog_v3(*v3, cache_index=args[9], **kw, kv_cache_dtype=2)
    assert e.value.status == 161002 and "kv_cache_dtype" in e.value.message
    with pytest.raises(mlaops.Error) as e:  # PA_BSND needs cache_index
        mlaops.npu_mla_prolog_v3(*v3, **kw)
    assert e.value.status in (161001, 161002) and "MP-" in e.value.message
    assert torch.equal(args[10], kv0)
