"""npu_mla_prolog(_v2) against the float64 numpy reference (reference.py)."""
import ml_dtypes
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_close, assert_cascade, assert_int8
from reference import bf16, f64, mla_prolog, nz_to_nd, scatter_cache

# small DeepSeek-like geometry: He, Hcq, N, D, Dr, Hckv
HE, HCQ, N, D, DR, HCKV = 128, 64, 4, 32, 32, 64
BLOCK_NUM, BLOCK_SIZE = 4, 16


def _bf(rng, *shape, scale=1.0):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * scale).to(torch.bfloat16)


def make_inputs(seed, t, quant=None, nz=True, cache_nz=False, bsh=False, hckv=HCKV):
    """torch inputs of one call. quant: None, 'partial', 'partial_kv', 'full_kv'."""
    rng = np.random.default_rng(seed)
    full = quant == "full_kv"
    i8 = lambda *s: torch.from_numpy(rng.integers(-127, 128, s).astype(np.int8))  # noqa: E731
    f32 = lambda lo, hi, *s: torch.from_numpy(rng.uniform(lo, hi, s).astype(np.float32))  # noqa: E731
    x = i8(t, HE) if full else _bf(rng, t, HE)
    wdq = i8(HE, HCQ) if full else _bf(rng, HE, HCQ, scale=HE ** -0.5)
    wdkv = i8(HE, hckv + DR) if full else _bf(rng, HE, hckv + DR, scale=HE ** -0.5)
    wuk = _bf(rng, N, D, hckv, scale=D ** -0.5)
    if quant:
        wuq = torch.from_numpy(rng.integers(-127, 128, (HCQ, N * (D + DR))).astype(np.int8))
        dsw = torch.from_numpy((rng.uniform(0.5, 1.5, (1, N * (D + DR))) / (127 * HCQ ** 0.5)).astype(np.float32))
    else:
        wuq = _bf(rng, HCQ, N * (D + DR), scale=HCQ ** -0.5)
        dsw = None
    gcq = _bf(rng, HCQ, scale=0.5) + 1
    gckv = _bf(rng, hckv, scale=0.5) + 1
    ang = rng.uniform(0, 6.28, (t, DR // 2))
    cos = torch.from_numpy(np.cos(np.concatenate([ang, ang], -1)).astype(np.float32)).to(torch.bfloat16)
    sin = torch.from_numpy(np.sin(np.concatenate([ang, ang], -1)).astype(np.float32)).to(torch.bfloat16)
    slots = rng.permutation(BLOCK_NUM * BLOCK_SIZE)[:t].astype(np.int64)
    slots[t // 2] = -1  # a skipped token
    kv_dtype = torch.int8 if quant in ("partial_kv", "full_kv") else torch.bfloat16
    kv_cache = torch.zeros(BLOCK_NUM, BLOCK_SIZE, 1, hckv, dtype=kv_dtype)
    kr_cache = torch.zeros(BLOCK_NUM, BLOCK_SIZE, 1, DR, dtype=torch.bfloat16 if full else kv_dtype)
    kv_cache.fill_(3)
    kr_cache.fill_(3)
    kw = {}
    if quant:
        kw["dequant_scale_w_uq_qr"] = dsw
    if quant == "partial_kv":
        kw["quant_scale_ckv"] = torch.from_numpy(rng.uniform(20, 40, (1, hckv)).astype(np.float32))
        kw["quant_scale_ckr"] = torch.from_numpy(rng.uniform(20, 40, (1, DR)).astype(np.float32))
    if full:
        kw["dequant_scale_x"] = f32(0.5 / 127, 1.5 / 127, t, 1)
        kw["dequant_scale_w_dq"] = f32(0.5 / 127, 1.5 / 127, 1, HCQ) / HE ** 0.5
        kw["dequant_scale_w_dkv_kr"] = f32(0.5 / 127, 1.5 / 127, 1, hckv + DR) / HE ** 0.5
        kw["quant_scale_ckv"] = f32(30, 30, 1, hckv)  # per tensor: element 0
    w = dict(weight_dq=wdq, weight_uq_qr=wuq, weight_dkv_kr=wdkv)
    if nz:
        w = {k: mlaops.npu_format_cast(v, 29) for k, v in w.items()}
    tok = x.reshape(1, t, HE) if bsh else x
    rs = (lambda a: a.reshape(1, t, -1)) if bsh else (lambda a: a)
    args = (tok, w["weight_dq"], w["weight_uq_qr"], wuk, w["weight_dkv_kr"], gcq, gckv, rs(sin), rs(cos),
            torch.from_numpy(slots).reshape(1, t) if bsh else torch.from_numpy(slots), kv_cache, kr_cache)
    kw["cache_mode"] = "PA_NZ" if cache_nz else "PA_BSND"
    ref_in = dict(x=f64(x), wdq=f64(wdq), wuqqr=f64(wuq), wuk=f64(wuk), wdkvkr=f64(wdkv), gcq=f64(gcq),
                  gckv=f64(gckv), sin=f64(sin), cos=f64(cos))
    if quant:
        ref_in["dsw_uqqr"] = f64(dsw)
    if quant == "partial_kv":
        ref_in["qs_ckv"] = f64(kw["quant_scale_ckv"])
        ref_in["qs_ckr"] = f64(kw["quant_scale_ckr"])
    if full:
        ref_in["qs_ckv"] = f64(kw["quant_scale_ckv"])
        ref_in["full"] = (f64(kw["dequant_scale_x"]), f64(kw["dequant_scale_w_dq"]), f64(kw["dequant_scale_w_dkv_kr"]))
    return args, kw, ref_in, slots


@pytest.mark.parametrize("quant", [None, "partial", "partial_kv"])
@pytest.mark.parametrize("cache_nz", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_prolog_v2_against_reference(quant, cache_nz, seed):
    t = 7
    args, kw, ref_in, slots = make_inputs(seed, t, quant=quant, cache_nz=cache_nz)
    kv_before, kr_before = f64(args[10]), f64(args[11])
    query, query_rope, kv_out, kr_out, dq_nope = mlaops.npu_mla_prolog_v2(*args, **kw)
    assert kv_out is args[10] and kr_out is args[11]  # updated in place
    assert query.dtype == torch.bfloat16 and query.shape == (t, N, HCKV)
    assert query_rope.shape == (t, N, DR)
    assert dq_nope.shape == (1,)
    q_ref, qr_ref, kv_rows, kr_rows = mla_prolog(**ref_in)
    ulps = 4 if quant else 2
    assert_cascade(query, q_ref, ulps=ulps, what="query")
    assert_cascade(query_rope, qr_ref, ulps=ulps, what="query_rope")
    c0 = (32 if quant == "partial_kv" else 16) if cache_nz else None
    kv_ref = scatter_cache(kv_before, kv_rows, slots, c0)
    kr_ref = scatter_cache(kr_before, kr_rows, slots, c0)
    if quant == "partial_kv":
        assert_int8(kv_out, kv_ref, what="kv_cache")
        assert_int8(kr_out, kr_ref, what="kr_cache")
    else:
        assert_close(kv_out, kv_ref, what="kv_cache")
        assert_close(kr_out, kr_ref, what="kr_cache")
    # the skipped token's slot and every unwritten slot keep the canary
    written = np.zeros(BLOCK_NUM * BLOCK_SIZE, bool)
    written[slots[slots >= 0]] = True
    if not cache_nz:
        assert np.all(f64(kv_out).reshape(-1, HCKV)[~written] == 3)


@pytest.mark.parametrize("cache_nz", [False, True])
def test_prolog_v2_full_quant_kv_quant(cache_nz):
    """vllm-ascend's FA-quant layer: int8 token_x and weights, int8 kv_cache (per tensor),
    int8 query with dequant_scale_q_nope (T, N, 1)."""
    t = 6
    args, kw, ref_in, slots = make_inputs(9, t, quant="full_kv", cache_nz=cache_nz)
    kv_before, kr_before = f64(args[10]), f64(args[11])
    query, query_rope, kv_out, kr_out, dq_nope = mlaops.npu_mla_prolog_v2(*args, **kw)
    assert query.dtype == torch.int8 and dq_nope.shape == (t, N, 1) and dq_nope.dtype == torch.float32
    q_ref, qr_ref, kv_rows, kr_rows, dqs = mla_prolog(**ref_in)
    assert_close(dq_nope.reshape(t, N), dqs, rtol=1e-3, atol_rms=0, max_mean_rel=1e-3, min_cos=0.999,
                 what="dequant_scale_q_nope")
    assert_int8(query, q_ref, what="query")
    assert_cascade(query_rope, qr_ref, ulps=4, what="query_rope")
    kv_ref = scatter_cache(kv_before, kv_rows, slots, 32 if cache_nz else None)
    kr_ref = scatter_cache(kr_before, kr_rows, slots, 16 if cache_nz else None)
    assert_int8(kv_out, kv_ref, what="kv_cache")
    assert_close(kr_out, kr_ref, what="kr_cache")


def test_prolog_v1_returns_four_and_matches_v2():
    args, kw, ref_in, slots = make_inputs(5, 6)
    args2 = args[:10] + (args[10].clone(), args[11].clone())
    out1 = mlaops.npu_mla_prolog(*args, **kw)
    out2 = mlaops.npu_mla_prolog_v2(*args2, **kw)
    assert len(out1) == 4 and len(out2) == 5
    for a, b in zip(out1, out2[:4]):
        assert torch.equal(a, b)


def test_prolog_bsh_tokens_and_nd_weights():
    t = 5
    args, kw, ref_in, slots = make_inputs(3, t, nz=False, bsh=True)
    query, query_rope, kv_out, _, _ = mlaops.npu_mla_prolog_v2(*args, **kw)
    assert query.shape == (1, t, N, HCKV) and query_rope.shape == (1, t, N, DR)
    q_ref, qr_ref, _, _ = mla_prolog(**ref_in)
    assert_cascade(query.reshape(t, N, HCKV), q_ref, what="query")


def test_prolog_numpy_inputs_match_torch():
    args, kw, ref_in, slots = make_inputs(4, 6)

    def to_np(x):
        if isinstance(x, torch.Tensor):
            if x.dtype == torch.bfloat16:
                return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
            return x.numpy().copy()
        return x

    np_args = tuple(to_np(a) for a in args)
    np_kw = {k: to_np(v) for k, v in kw.items()}
    t_out = mlaops.npu_mla_prolog_v2(*args, **kw)
    n_out = mlaops.npu_mla_prolog_v2(*np_args, **np_kw)
    assert isinstance(n_out[0], np.ndarray) and n_out[0].dtype == ml_dtypes.bfloat16
    for a, b in zip(t_out[:4], n_out[:4]):
        np.testing.assert_array_equal(f64(a), f64(b))
    assert n_out[2] is np_args[10]


def test_prolog_default_epsilon_matters():
    args, kw, ref_in, _ = make_inputs(6, 4)
    q1 = mlaops.npu_mla_prolog_v2(*args, **kw)[0]
    q2 = mlaops.npu_mla_prolog_v2(*args, **kw, rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05)[0]
    assert torch.equal(q1, q2)
