"""mlaops._C_ascend.mla_preprocess: vllm-ascend's newer positional form of its custom op (no
gamma0 / beta0, optional cos / sin) for weights in the input dtype, against the numpy reference
and npu_mla_preprocess; the int8 modes and a lone cos / sin refused without a byte written."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_cascade
from reference import f64
from reference_preprocess import mla_preprocess
from test_mla_preprocess import DR, HCKV, N, T, check_against_reference, make


def vllm_positional(args, kw, cos=True):
    """make()'s call in the custom op's order: gamma0 / beta0 dropped, every argument positional
    (quant scales ... q_nope_scale, cache_mode, quant_mode, enable_inner_out, the five outputs)."""
    (x, _, _, wdqkv, descale0, g1, b1, wuq, descale1, g2, c, s, wuk, kv, kr, slots) = args
    return (x, wdqkv, descale0, g1, b1, wuq, descale1, g2, c if cos else None, s if cos else None, wuk, kv, kr,
            slots, None, None, None, None, None, None, kw.get("ctkv_scale"), kw.get("q_nope_scale"),
            kw["cache_mode"], kw["quant_mode"], False, None, kv, None, kr, None)


@pytest.mark.parametrize("cm", [0, 1, 2, 3])
def test_positional_form_no_quant(cm):
    """Equal to npu_mla_preprocess (whose gamma0 / beta0 no_quant does not read) and so to the
    reference, in every cache mode."""
    args, kw, ref_in, slots = make(50 + cm, cm, None)
    check_against_reference(cm, None, args, kw, ref_in, slots)
    a2, kw2, _, _ = make(50 + cm, cm, None)
    out = mlaops._C_ascend.mla_preprocess(*vllm_positional(a2, kw2))
    expect = mlaops.npu_mla_preprocess(*make(50 + cm, cm, None)[0], **kw2)
    assert len(out) == 5 and out[1] is a2[13] and out[3] is a2[14] and out[4] is None
    for a, b in zip(out[:4], expect[:4]):
        assert (a is None and b is None) or torch.equal(a, b)


def test_optional_rope_writes_unrotated_values():
    """cos = sin = None: q_rope and the rope cache rows are the unrotated projections."""
    args, kw, ref_in, slots = make(55, 1, None)
    q0, kv, q1, kr, _ = mlaops._C_ascend.mla_preprocess(*vllm_positional(args, kw, cos=False))
    ones, zeros = np.ones((T, DR)), np.zeros((T, DR))
    r = mla_preprocess(**dict(ref_in, cos=ones, sin=zeros))
    assert_cascade(q1, r["q_rope"], what="q_out1")
    assert_cascade(q0, r["q_nope"], what="q_out0")
    written = f64(kr).reshape(-1, DR)[[p for p in slots if p >= 0]]
    assert np.array_equal(written, r["kr"][[i for i, p in enumerate(slots) if p >= 0]])
    assert q0.shape == (T, N, HCKV) and kv is args[13]


def test_refusals_write_nothing():
    """An int8 quant mode (161002) and a lone cos (161001): refused, the caches unchanged."""
    args, kw, _, _ = make(56, 1, "per_tensor")
    kv0, kr0 = args[13].clone(), args[14].clone()
    with pytest.raises(mlaops.Error) as e:
        mlaops._C_ascend.mla_preprocess(*vllm_positional(args, dict(kw, quant_mode="per_tensor_quant_asymm")))
    assert e.value.status == 161002 and "quant_mode" in e.value.message and "no_quant" in e.value.message
    assert torch.equal(args[13], kv0) and torch.equal(args[14], kr0)
    args, kw, _, _ = make(57, 1, None)
    kv0, kr0 = args[13].clone(), args[14].clone()
    pos = list(vllm_positional(args, kw))
    pos[8] = None  # cos None, sin given
    with pytest.raises(mlaops.Error) as e:
        mlaops._C_ascend.mla_preprocess(*pos)
    assert e.value.status == 161001 and "cos" in e.value.message
    assert torch.equal(args[13], kv0) and torch.equal(args[14], kr0)
