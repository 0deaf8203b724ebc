"""npu_mla_preprocess against the float64 numpy reference (reference_preprocess.py): every cache
mode, INT8 weights (per-tensor and per-token quant) and weights in the input dtype, the in-place
cache update, inner_out, errors."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_cascade, assert_close, assert_int8
from reference import f64
from reference_preprocess import mla_preprocess, quant_fp16, scatter

HE, HCQ, N, D, DR, HCKV = 64, 64, 2, 32, 32, 64
BN, BS, T = 4, 8, 5
MODES = {0: "kvcache", 1: "krope_ctkv", 2: "int8_nzcache", 3: "nzcache"}


def _bf(rng, *shape, scale=1.0, shift=0.0):
    return torch.from_numpy((rng.standard_normal(shape) * scale + shift).astype(np.float32)).to(torch.bfloat16)


def make(seed, cm, quant="per_tensor"):
    """(positional args, keywords, reference inputs, slots) of one call in cache mode cm."""
    rng = np.random.default_rng(seed)
    rows0, rows1 = HCKV + DR + HCQ, N * (D + DR)
    kw, p = {}, {"quant": quant}
    if quant is None:
        wdqkv = _bf(rng, rows0, HE, scale=HE ** -0.5)
        wuq = _bf(rng, rows1, HCQ, scale=HCQ ** -0.5)
        descale0 = descale1 = None
        kw["quant_mode"] = "no_quant"
    else:
        wdqkv = torch.from_numpy(rng.integers(-127, 128, (rows0, HE)).astype(np.int8))
        wuq = torch.from_numpy(rng.integers(-127, 128, (rows1, HCQ)).astype(np.int8))
        amp = 32.0 if quant == "per_tensor" else 127.0
        descale0 = torch.from_numpy((rng.uniform(0.5, 1.5, rows0) / (amp * 73 * HE ** 0.5)).astype(np.float32))
        descale1 = torch.from_numpy((rng.uniform(0.5, 1.5, rows1) / (amp * 73 * HCQ ** 0.5)).astype(np.float32))
        p["descale0"], p["descale1"] = f64(descale0), f64(descale1)
        if quant == "per_tensor":
            for i, rows in ((0, rows0), (1, rows1)):
                kw[f"quant_scale{i}"] = torch.tensor([1 / 32], dtype=torch.bfloat16)
                kw[f"quant_offset{i}"] = torch.tensor([i + 1], dtype=torch.int8)
                kw[f"bias{i}"] = torch.from_numpy(rng.integers(-2000, 2000, rows).astype(np.int32))
                for name in ("quant_scale", "quant_offset", "bias"):
                    p[f"{name}{i}"] = f64(kw[f"{name}{i}"])
        else:
            kw["quant_mode"] = "per_token_quant_symm"
    x = _bf(rng, T, HE)
    g0, b0 = _bf(rng, HE, scale=0.2, shift=1.0), _bf(rng, HE, scale=0.1)
    g1, b1 = _bf(rng, HCQ, scale=0.2, shift=1.0), _bf(rng, HCQ, scale=0.1)
    g2 = _bf(rng, HCKV, scale=0.2, shift=1.0)
    wuk = _bf(rng, N, D, HCKV, scale=D ** -0.5)
    ang = rng.uniform(0, 6.28, (T, DR // 2))
    cos = torch.from_numpy(np.cos(np.concatenate([ang, ang], -1)).astype(np.float32)).to(torch.bfloat16)
    sin = torch.from_numpy(np.sin(np.concatenate([ang, ang], -1)).astype(np.float32)).to(torch.bfloat16)
    slots = rng.permutation(BN * BS)[:T].astype(np.int32)
    slots[2] = -1
    if cm == 0:
        kv = torch.full((BN, BS, 1, HCKV + DR), 3.0, dtype=torch.bfloat16)
        kr = None
    elif cm == 1:
        kv = torch.full((BN, BS, 1, HCKV), 3.0, dtype=torch.bfloat16)
        kr = torch.full((BN, BS, 1, DR), 3.0, dtype=torch.bfloat16)
    else:
        kv = torch.full((BN, HCKV // 32, BS, 32), 3, dtype=torch.int8) if cm == 2 else \
            torch.full((BN, HCKV // 16, BS, 16), 3.0, dtype=torch.bfloat16)
        kr = torch.full((BN, DR // 16, BS, 16), 3.0, dtype=torch.bfloat16)
    if cm == 2:
        kw["ctkv_scale"] = torch.tensor([1 / 32], dtype=torch.bfloat16)
        kw["q_nope_scale"] = _bf(rng, N, scale=2, shift=20)
    kw["cache_mode"] = MODES[cm]
    args = (x, g0, b0, mlaops.npu_format_cast(wdqkv, 29), descale0, g1, b1, mlaops.npu_format_cast(wuq, 29),
            descale1, g2, cos, sin, wuk, kv, kr, torch.from_numpy(slots))
    ref_in = dict(x=f64(x), gamma0=f64(g0), beta0=f64(b0), wdqkv=f64(wdqkv), gamma1=f64(g1), beta1=f64(b1),
                  wuq=f64(wuq), gamma2=f64(g2), cos=f64(cos), sin=f64(sin), wuk=f64(wuk), p=p, hckv=HCKV, dr=DR)
    return args, kw, ref_in, slots


@pytest.mark.parametrize("cm", [0, 1, 2, 3])
@pytest.mark.parametrize("quant", ["per_tensor", "per_token", None])
def test_cache_modes_against_reference(cm, quant):
    check_against_reference(cm, quant, *make(20 + cm, cm, quant))


def check_against_reference(cm, quant, args, kw, ref_in, slots, dtype="bf16"):
    """One call in cache mode cm against the reference: float outputs under the bf16 rules at
    the input dtype's ulps (2, 4 with int8 weights), int8 outputs ±1."""
    kv, kr = args[13], args[14]
    kv_before, kr_before = f64(kv), (f64(kr) if kr is not None else None)
    q0, kv_out, q1, kr_out, inner = mlaops.npu_mla_preprocess(*args, **kw)
    assert kv_out is kv and kr_out is kr and inner is None  # in place; inner_out off by default
    assert_outputs(cm, quant, (q0, kv_out, q1, kr_out), (kv_before, kr_before), mla_preprocess(**ref_in, dtype=dtype),
                   slots, kw, dtype)


def assert_outputs(cm, quant, outs, before, r, slots, kw, dtype="bf16"):
    """q_out0, the kv cache (output), q_out1 and the rope cache (output) of a call in cache mode
    cm against the reference's values r (`before`: the caches' values before the call, the rows
    the call does not write)."""
    fdt, ulp = (torch.bfloat16, 2.0 ** -7) if dtype == "bf16" else (torch.float16, 2.0 ** -10)
    ulps = 4 if quant else 2

    def cascade(a, r, what):
        # at most 0.1 % of the elements (and at least 2) beyond the bound, each within 0.05 rms: a
        # dequantised value one dtype ulp apart (the kernel's fp32 steps against the reference's one
        # double rounding) flips int8 activations of the next stage, which moves a token's near-zero
        # outputs (observed: the MLAPO op per-token without beta1, seed 72 in test_c_ascend.py, 2 of
        # 320 q_rope elements at 0.0076 rms; 40 other seeds bit-identical)
        assert a.dtype == fdt, what
        assert_close(a, r, rtol=ulps * ulp, max_mean_rel=ulp, max_bad_frac=max(0.001, 2.0 / np.size(r)), cap_rms=0.05,
                     what=what)

    def close(a, r, what):
        assert a.dtype == fdt, what
        assert_close(a, r, rtol=ulps * ulp, what=what)

    q0, kv_out, q1, kr_out = outs
    kv_before, kr_before = before
    if cm == 0:
        assert q1 is None and q0.shape == (T, N, HCKV + DR)
        cascade(q0[..., :HCKV], r["q_nope"], "q_out0 nope")
        cascade(q0[..., HCKV:], r["q_rope"], "q_out0 rope")
        close(kv_out, scatter(kv_before, np.concatenate([r["kn"], r["kr"]], axis=-1), slots), "kv_cache")
        return
    assert q1.shape == (T, N, DR)
    cascade(q1, r["q_rope"], "q_out1")
    close(kr_out, scatter(kr_before, r["kr"], slots, {1: None, 2: 16, 3: 16}[cm]), "kv_cache_rope")
    if cm == 2:
        assert q0.dtype == torch.int8 and kv_out.dtype == torch.int8
        qs = f64(kw["q_nope_scale"])
        assert_int8(q0, np.clip(np.rint(r["q_nope"] * qs[None, :, None]), -128, 127), max_off_frac=0.03,
                    what="q_out0 int8")
        kv_rows = quant_fp16(r["kn_raw"] / f64(kw["ctkv_scale"])[0])
        assert_int8(kv_out, scatter(kv_before, kv_rows, slots, 32), max_off_frac=0.03, what="kv_cache int8")
    else:
        assert q0.shape == (T, N, HCKV)
        cascade(q0, r["q_nope"], "q_out0")
        close(kv_out, scatter(kv_before, r["kn"], slots, 16 if cm == 3 else None), "kv_cache")


def test_vllm_ascend_call_with_out_tensors_and_inner_out():
    """vllm-ascend's keywords: the outputs passed in (q_out0, kv_cache_out0 = the cache, ...),
    enable_inner_out with inner_out = q_c [T, Hcq]."""
    args, kw, ref_in, slots = make(31, 1)
    q_nope = torch.full((T, N, HCKV), float("nan"), dtype=torch.bfloat16)
    q_pe = torch.full((T, N, DR), float("nan"), dtype=torch.bfloat16)
    q_c = torch.full((T, HCQ), float("nan"), dtype=torch.bfloat16)
    res = mlaops.npu_mla_preprocess(*args, **kw, enable_inner_out=True, q_out0=q_nope, kv_cache_out0=args[13],
                                    q_out1=q_pe, kv_cache_out1=args[14], inner_out=q_c)
    assert res[0] is q_nope and res[2] is q_pe and res[4] is q_c
    r = mla_preprocess(**ref_in)
    assert_cascade(q_nope, r["q_nope"], ulps=4, what="q_out0")
    assert_close(q_c, r["q_down"], what="inner_out")


def test_distinct_cache_outputs_receive_only_the_new_rows():
    args, kw, ref_in, slots = make(32, 1)
    kv, kr = args[13], args[14]
    kv0, kr0 = kv.clone(), kr.clone()
    kv_new = torch.zeros_like(kv)
    kr_new = torch.zeros_like(kr)
    _, kv_out, _, kr_out, _ = mlaops.npu_mla_preprocess(*args, **kw, kv_cache_out0=kv_new, kv_cache_out1=kr_new)
    assert kv_out is kv_new and kr_out is kr_new
    assert torch.equal(kv, kv0) and torch.equal(kr, kr0)  # the input caches are not touched
    written = np.zeros(BN * BS, bool)
    written[slots[slots >= 0]] = True
    assert np.all(f64(kv_new).reshape(BN * BS, -1)[~written] == 0)
    assert np.all(f64(kv_new).reshape(BN * BS, -1)[written] != 0)


def test_errors_write_nothing():
    args, kw, _, _ = make(33, 1)
    bad = list(args)
    bad[15] = torch.tensor([0, 1, BN * BS, 3, 4], dtype=torch.int32)  # a slot past the cache
    kv0, kr0 = args[13].clone(), args[14].clone()
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_preprocess(*bad, **kw)
    assert e.value.status == 161002 and "MPP-17" in e.value.message and "slot" in e.value.message.lower()
    assert torch.equal(args[13], kv0) and torch.equal(args[14], kr0)
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_preprocess(*args, **{**kw, "cache_mode": "paged"})
    assert e.value.status == 161002 and "cache_mode" in e.value.message
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_preprocess(*args, **{**kw, "quant_mode": "no_quant"})  # int8 weights
    assert e.value.status == 161002 and "quant_mode" in e.value.message
    bad = list(args)
    bad[12] = args[12].float()  # wuk fp32
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_preprocess(*bad, **kw)
    assert e.value.status == 161002 and "wuk" in e.value.message
    assert torch.equal(args[13], kv0) and torch.equal(args[14], kr0)
