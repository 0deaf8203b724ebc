"""npu_mla_preprocess with fp16 input against the float64 numpy reference
(reference_preprocess.py, dtype "fp16"): descale0 / descale1 as int64 holding the fp32 bits,
quant scales, gammas, cos / sin and the float caches in fp16; every cache mode, int8 weights
(per tensor, per token) and weights in the input dtype."""
import numpy as np
import pytest
import torch

from compare import assert_close, assert_int8
from reference import f64
from reference_preprocess import mla_preprocess, quant_fp16, scatter
from test_mla_preprocess import DR, HCKV, N, T, make

import mlaops

ULP_FP16 = 2.0 ** -10


def to_fp16(args, kw):
    """make()'s bf16 call as an fp16 one (the values are exact in fp16); fp32 descales -> int64 bits."""
    def conv(i, a):
        if a is None or not torch.is_tensor(a):
            return a
        if a.dtype == torch.bfloat16:
            return a.to(torch.float16)
        if i in (4, 8) and a.dtype == torch.float32:  # descale0 / descale1
            return a.view(torch.int32).to(torch.int64)
        return a
    return tuple(conv(i, a) for i, a in enumerate(args)), {k: conv(-1, v) for k, v in kw.items()}


def assert_fp16(actual, ref, ulps, what):
    """The query / cache rule of docs/ops/mla_preprocess.md at fp16 ulps."""
    assert actual.dtype == torch.float16, what
    assert_close(actual, ref, rtol=ulps * ULP_FP16, max_mean_rel=ULP_FP16, max_bad_frac=0.001, cap_rms=0.05,
                 what=what)


@pytest.mark.parametrize("cm", [0, 1, 2, 3])
@pytest.mark.parametrize("quant", ["per_tensor", "per_token", None])
def test_fp16_cache_modes_against_reference(cm, quant):
    args, kw, ref_in, slots = make(40 + cm, cm, quant)
    args, kw = to_fp16(args, kw)
    assert args[0].dtype == torch.float16 and (quant is None or args[4].dtype == torch.int64)
    kv, kr = args[13], args[14]
    kv_before, kr_before = f64(kv), (f64(kr) if kr is not None else None)
    q0, kv_out, q1, kr_out, _ = mlaops.npu_mla_preprocess(*args, **kw)
    assert kv_out is kv and kr_out is kr
    r = mla_preprocess(**ref_in, dtype="fp16")
    ulps = 4 if quant else 2
    if cm == 0:
        assert_fp16(q0[..., :HCKV], r["q_nope"], ulps, "q_out0 nope")
        assert_fp16(q0[..., HCKV:], r["q_rope"], ulps, "q_out0 rope")
        rows = np.concatenate([r["kn"], r["kr"]], axis=-1)
        assert_fp16(kv_out, scatter(kv_before, rows, slots), ulps, "kv_cache")
        return
    assert q1.shape == (T, N, DR)
    assert_fp16(q1, r["q_rope"], ulps, "q_out1")
    assert_fp16(kr_out, scatter(kr_before, r["kr"], slots, {1: None, 2: 16, 3: 16}[cm]), ulps, "kv_cache_rope")
    if cm == 2:
        qs = f64(kw["q_nope_scale"])
        assert_int8(q0, np.clip(np.rint(r["q_nope"] * qs[None, :, None]), -128, 127), max_off_frac=0.03,
                    what="q_out0 int8")
        kv_rows = quant_fp16(r["kn_raw"] / f64(kw["ctkv_scale"])[0])
        assert_int8(kv_out, scatter(kv_before, kv_rows, slots, 32), max_off_frac=0.03, what="kv_cache int8")
    else:
        assert_fp16(q0, r["q_nope"], ulps, "q_out0")
        assert_fp16(kv_out, scatter(kv_before, r["kn"], slots, 16 if cm == 3 else None), ulps, "kv_cache")


def test_fp16_refuses_fp32_descale():
    """fp16 input takes the descales as int64 (fp32 bits); fp32 ones are refused, nothing written."""
    args, kw, _, _ = make(47, 1)
    f16, kw16 = to_fp16(args, kw)
    bad = list(f16)
    bad[4] = args[4]
    kv0 = f16[13].clone()
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_preprocess(*bad, **kw16)
    assert e.value.status == 161002 and "descale0" in e.value.message.lower(), e.value.message
    assert torch.equal(f16[13], kv0)
