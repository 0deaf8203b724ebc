"""torch_npu's FRACTAL_NZ tensors (docs/python.md "FRACTAL_NZ tensors"): npu_format_cast(t, 29)
keeps the logical shape and strides with NZ storage, get_npu_format, npu_format_cast_, views,
.contiguous() / clone / .to of NZ views, reads of the logical values, the operators reading the
NZ storage (vllm-ascend's sliced weights, SGLang's pre-transformed 4-D MLAPO weights), NZ-01,
and the numpy path."""
import copy
import pickle
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch

import mlaops
from reference import f64, nz_to_nd
from test_mla_preprocess import make as make_preprocess
from test_mla_prolog import make_inputs, HE, HCQ, HCKV, DR

cast, fmt = mlaops.npu_format_cast, mlaops.get_npu_format


def _w(*shape, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * 20).to(dtype)


# --- what npu_format_cast(t, 29) returns

@pytest.mark.parametrize("dtype,c0", [(torch.bfloat16, 16), (torch.float16, 16), (torch.float32, 16),
                                      (torch.int8, 32), (torch.uint8, 32)])
@pytest.mark.parametrize("shape", [(15, 17), (64, 96), (3, 40, 70)])
def test_cast_keeps_the_logical_shape_with_nz_storage(dtype, c0, shape):
    w = _w(*shape, dtype=dtype)
    nz = cast(w, 29)
    *lead, k, n = shape
    assert nz.shape == w.shape and nz.stride() == w.stride() and nz.storage_offset() == 0 and nz.is_contiguous()
    assert fmt(nz) == 29 and fmt(w) == 2 and nz.dtype == dtype
    storage = tuple(lead) + (-(-n // c0), -(-k // 16), 16, c0)
    assert nz.nz_storage().shape == storage  # padding allocated
    assert nz.untyped_storage().nbytes() == np.prod(storage) * w.element_size()
    assert nz.data_ptr() == nz.nz_storage().data_ptr()
    if not lead:  # the bytes are the NZ layout of docs/numerics.md
        np.testing.assert_array_equal(nz_to_nd(f64(nz.nz_storage()), k, n), f64(w))
    assert torch.equal(nz, w) and torch.equal(cast(nz, 2), w) and type(cast(nz, 2)) is torch.Tensor
    assert cast(nz, 29) is nz and cast(w, 2) is w  # the same format: the tensor itself


def test_rank_below_two_stays_nd_with_a_warning():
    v = _w(16)
    with pytest.warns(UserWarning, match="rank >= 2"):
        assert cast(v, 29) is v
    assert fmt(v) == 2


def test_reads_give_the_logical_values():
    w = _w(20, 40)
    nz = cast(w, 29)
    assert repr(nz) == repr(w) and str(nz) == str(w)
    assert nz.tolist() == w.tolist() and nz.cpu() is nz and torch.equal(nz.float(), w.float())
    assert torch.equal(nz + 1, w + 1) and type(nz + 1) is torch.Tensor
    assert nz.sum().item() == w.sum().item()
    f = cast(w.float(), 29)
    np.testing.assert_array_equal(f.numpy(), w.float().numpy())
    np.testing.assert_array_equal(np.asarray(f), w.float().numpy())
    assert torch.equal(torch.from_dlpack(f), w.float())
    # deepcopy and pickle keep the NZ tensor
    for c in (copy.deepcopy(nz), pickle.loads(pickle.dumps(nz))):
        assert fmt(c) == 29 and torch.equal(c, w) and c.nz_storage().data_ptr() != nz.nz_storage().data_ptr()


def test_nn_parameter_and_data_keep_the_format():
    nz = cast(_w(32, 48), 29)
    p = torch.nn.Parameter(nz, requires_grad=False)
    assert isinstance(p, torch.nn.Parameter) and fmt(p) == 29 and torch.equal(p, nz)
    assert fmt(nz.data) == 29 and fmt(nz.detach()) == 29
    assert nz.data.nz_storage() is nz.nz_storage()  # the same storage


# --- views, .contiguous(), clone (torch_npu's rules on A2/A3)

def test_views_share_the_storage_and_its_format():
    w = _w(40, 64)
    nz = cast(w, 29)
    for v in (nz[:, :20], nz[8:24], nz.narrow(1, 16, 32), nz.T, nz.transpose(0, 1), nz[3], nz.view(-1)):
        assert fmt(v) == 29 and v.nz_storage() is nz.nz_storage()
    assert torch.equal(nz[:, :20], w[:, :20]) and torch.equal(nz.T, w.T) and torch.equal(nz[3], w[3])
    assert nz[:, :20].stride() == (64, 1) and nz.T.stride() == (1, 64)


def test_same_stride_slice_copy_stays_nz_other_copies_are_nd():
    w = _w(40, 70)
    nz = cast(w, 29)
    s = nz[..., :20].contiguous()  # vllm-ascend: fused_qkv_a_proj.weight.data[..., :q_lora_rank].contiguous()
    assert fmt(s) == 29 and s.shape == (40, 20) and s.is_contiguous() and s.nz_storage().shape == (2, 3, 16, 16)
    assert torch.equal(s, w[:, :20])
    assert fmt(nz[..., 20:].clone()) == 29 and torch.equal(nz[..., 20:].clone(), w[:, 20:])
    t = nz.T.contiguous()  # any other pattern: the logical values in an ND tensor
    assert fmt(t) == 2 and type(t) is torch.Tensor and torch.equal(t, w.T)
    assert fmt(nz[::2].contiguous()) == 2 and torch.equal(nz[::2].contiguous(), w[::2])
    rows = nz[8:24]  # a row slice is contiguous already: .contiguous() is the view itself
    assert rows.contiguous() is rows
    # npu_format_cast(view, 2): the logical values (a transpose too, as on A2/A3)
    assert torch.equal(cast(nz.T, 2), w.T) and fmt(cast(nz.T, 2)) == 2
    # a dtype conversion keeps the format
    h = nz.to(torch.float16)
    assert fmt(h) == 29 and h.dtype == torch.float16 and torch.equal(h, w.half())
    assert fmt(nz.T.half()) == 2


def test_writes_go_through_the_logical_view():
    w = _w(40, 70)
    nz = cast(w, 29)
    nz[0, 0] = 5.0
    nz[:, 50:].zero_()
    view = nz[10:12, :8]
    view.copy_(torch.ones(2, 8, dtype=torch.bfloat16))
    want = w.clone()
    want[0, 0] = 5.0
    want[:, 50:] = 0
    want[10:12, :8] = 1
    assert fmt(nz) == 29 and torch.equal(nz, want)
    np.testing.assert_array_equal(nz_to_nd(f64(nz.nz_storage()), 40, 70), f64(want))  # re-packed
    assert not f64(nz.nz_storage()).reshape(-1)[f64(cast(want, 29).nz_storage()).reshape(-1) == 0].any()


def test_format_cast_in_place():
    w = _w(32, 48)
    nz = cast(w, 29)
    view = nz[:, :16]
    assert mlaops.npu_format_cast_(nz, 2) is nz
    assert fmt(nz) == 2 and fmt(view) == 2 and torch.equal(nz, w) and torch.equal(view, w[:, :16])
    assert mlaops.npu_format_cast_(nz, cast(w, 29)) is nz  # the format of another tensor
    assert fmt(nz) == 29 and fmt(view) == 29 and torch.equal(nz, w) and nz.nz_storage().shape == (3, 2, 16, 16)
    assert mlaops.npu_format_cast_(w, 2) is w
    with pytest.raises(TypeError, match="cannot change its storage format in place"):
        mlaops.npu_format_cast_(w, 29)
    with pytest.raises(ValueError, match="acl_format"):
        mlaops.npu_format_cast_(nz, 3)
    with pytest.raises(TypeError, match="numpy arrays carry no format"):
        fmt(w.float().numpy())


def test_customize_dtype():
    w = _w(32, 32)
    assert fmt(cast(w, 29, customize_dtype=torch.bfloat16)) == 29
    assert fmt(cast(w, 29, customize_dtype=27)) == 29  # ACL_BF16
    with pytest.raises(ValueError, match="customize_dtype"):
        cast(w, 29, customize_dtype=3)


# --- the operators read the NZ storage

def _prolog_with(args, weights):
    a = list(args)
    a[1], a[2], a[4] = weights
    a[10], a[11] = args[10].clone(), args[11].clone()
    return a


def test_prolog_vllm_ascend_sliced_fused_weight():
    """vllm-ascend's MLA weights: the fused qkv_a weight [He, Hcq + Hckv + Dr] cast to NZ, then
    sliced and .contiguous(): fresh NZ tensors, read by the prolog as NZ storage."""
    args, kw, _, _ = make_inputs(41, 5, nz=False)
    wdq, wuq, wdkv = args[1], args[2], args[4]
    fused = cast(torch.cat([wdq, wdkv], dim=-1), 29)
    sliced = (fused[..., :HCQ].contiguous(), cast(wuq, 29), fused[..., HCQ:].contiguous())
    assert all(fmt(s) == 29 and s.is_whole() for s in sliced)
    want = mlaops.npu_mla_prolog_v2(*_prolog_with(args, (cast(wdq, 29), cast(wuq, 29), cast(wdkv, 29))), **kw)
    got = mlaops.npu_mla_prolog_v2(*_prolog_with(args, sliced), **kw)
    for a, b in zip(got, want):
        assert torch.equal(a, b)
    # the same weights as the plain 4-D storage (the aclnn examples' form) and as numpy storage arrays
    plain = mlaops.npu_mla_prolog_v2(*_prolog_with(args, tuple(s.nz_storage() for s in sliced)), **kw)
    assert all(torch.equal(a, b) for a, b in zip(plain, want))


def test_nz_01_views_are_refused_and_nothing_is_written():
    args, kw, _, _ = make_inputs(42, 4, nz=False)
    wide = cast(torch.cat([args[1], args[1]], dim=-1), 29)
    a = _prolog_with(args, (wide[..., :HCQ], cast(args[2], 29), cast(args[4], 29)))
    kv, kr = a[10].clone(), a[11].clone()
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_prolog_v2(*a, **kw)
    assert e.value.status == 161002
    assert e.value.message.startswith("npu_mla_prolog_v2: weight_dq: NZ-01 a FRACTAL_NZ argument is read as its NZ "
                                      "storage, so it must be a whole NZ tensor")
    assert f"got a view ({HE}, {HCQ}) strides ({2 * HCQ}, 1) offset 0" in e.value.message
    assert torch.equal(a[10], kv) and torch.equal(a[11], kr)
    with pytest.raises(mlaops.Error, match="weight_dq: NZ-01"):  # a transpose is a view too
        mlaops.npu_mla_prolog_v2(*_prolog_with(args, (cast(args[1].T.contiguous(), 29).T, a[2], a[4])), **kw)


def test_prolog_through_torch_ops_reads_nz():
    args, kw, _, _ = make_inputs(43, 4)
    assert fmt(args[1]) == 29
    ref = _prolog_with(args, (args[1], args[2], args[4]))
    want = mlaops.npu_mla_prolog_v2(*ref, **kw)
    for op, n in ((torch.ops.mlaops.npu_mla_prolog_v2, 3), (torch.ops.npu.npu_mla_prolog_v2, 5)):
        a = _prolog_with(args, (args[1], args[2], args[4]))
        got = op(*a, **kw)
        assert len(got) == n and torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        assert torch.equal(a[10], ref[10])


def _transdata(nd, c0):
    """SGLang's / vllm-ascend's transdata: [rows, K] -> the NZ tiles [K / c0, rows, c0] (rows a
    multiple of 16)."""
    r, c = nd.shape
    return nd.reshape(r // 16, 16, c // c0, c0).permute(2, 0, 1, 3).reshape(c // c0, r, c0)


@pytest.mark.parametrize("quant", ["per_tensor", None])
def test_preprocess_sglang_pre_transformed_weights(quant):
    """SGLang casts the pre-tiled [1, K / c0, rows, c0] weights with npu_format_cast(w, 29): torch_npu
    keeps the 4-D logical shape (its NZ storage is 6-D and holds the same bytes, since the last dim
    is c0), and the operator reads those bytes as ATB's [1, C1, R1*16, c0] form."""
    args, kw, _, _ = make_preprocess(44, 1, quant)
    c0 = 32 if quant else 16
    pre = [cast(_transdata(args[i].values(), c0).unsqueeze(0).contiguous(), 29) for i in (3, 7)]
    for p, i in zip(pre, (3, 7)):
        rows, k = args[i].shape
        assert p.shape == (1, k // c0, rows, c0) and fmt(p) == 29  # the logical shape stays 4-D
        assert p.nz_storage().shape == (1, k // c0, 1, rows // 16, 16, c0)
    ref = list(args)
    ref[13], ref[14] = args[13].clone(), args[14].clone()
    want = mlaops.npu_mla_preprocess(*ref, **kw)
    a = list(args)
    a[3], a[7] = pre
    got = mlaops.npu_mla_preprocess(*a, **kw)
    for x, y in zip(got, want):
        assert (x is None and y is None) or torch.equal(x, y)


def test_numpy_path_takes_storage_arrays():
    """numpy arrays carry no format: npu_format_cast gives the 4-D storage array, and a 4-D weight
    array is taken as FRACTAL_NZ (the same result as the torch NZ tensors)."""
    args, kw, _, _ = make_inputs(45, 4)

    def to_np(x):
        if not torch.is_tensor(x):
            return x
        if fmt(x) == 29:  # the storage bytes, the numpy path's NZ form
            x = x.nz_storage()
        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
        return x.numpy().copy()
    want = mlaops.npu_mla_prolog_v2(*_prolog_with(args, (args[1], args[2], args[4])), **kw)
    got = mlaops.npu_mla_prolog_v2(*[to_np(a) for a in args], **{k: to_np(v) for k, v in kw.items()})
    for a, b in zip(want[:2], got[:2]):
        np.testing.assert_array_equal(f64(a), f64(b))
    w = to_np(args[1].values())
    assert mlaops.npu_format_cast(w, 29).shape == args[1].nz_storage().shape
    np.testing.assert_array_equal(f64(mlaops.npu_format_cast(w, 29)), f64(args[1].nz_storage()))


def test_nz_kv_cache_for_fia_is_what_torch_npu_passes():
    """A cache cast to NZ reaches FIA as torch_npu hands it over (format 29, the logical view, the NZ
    storage dims); the 5-D NZ caches vllm-ascend uses are ND tensors viewed in the NZ block order."""
    q = _w(2, 1, 64)
    k = _w(2, 8, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nzk = cast(k, 29)
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_fused_infer_attention_score(q, nzk, k, num_heads=2)
    assert e.value.status == 161002  # refused by the operator's own format rule
    assert "key: FIA-04 format; allowed {ND, NCHW}, got FRACTAL_NZ" in e.value.message
