"""Strided views of every input, as torch_npu passes them (docs/python.md, docs/c-api.md "Strided
inputs"): each operator called with its inputs as dense tensors and again with every input
replaced by a view holding the same values in another layout (rows padded, storage order
reversed, a storage offset) gives bit-identical outputs and caches; a strided output or cache is
refused with nothing written."""
import numpy as np
import pytest
import torch

import mlaops
import mlaops.torch_npu as torch_npu
from test_fia import MASK, _from_bnsd, _paged, _t
from test_mla_preprocess import make as make_preprocess
from test_mla_prolog import make_inputs as make_prolog


def restride(x, mode):
    """x's values as a non-contiguous view: 'padded' (every dim after the first padded, the data at
    an offset), 'reversed' (the dims stored in reverse order); a vector: every other element."""
    if x is None or not isinstance(x, torch.Tensor) or x.numel() <= 1 or mlaops.get_npu_format(x) == 29:
        return x  # nothing to restride; an NZ tensor is read as its storage
    if sum(d > 1 for d in x.shape) == 1:  # a vector, maybe with dims of 1: every other element
        base = torch.zeros(2 * x.numel() + 3, dtype=x.dtype)
        view = base.as_strided(x.shape, [2] * x.dim(), 3)
    elif mode == "padded":
        big = torch.full([x.shape[0]] + [s + 1 for s in x.shape[1:]], -7, dtype=x.dtype)
        flat = torch.zeros(big.numel() + 5, dtype=x.dtype)
        big = flat[5:].view(big.shape)
        view = big[tuple(slice(0, s) for s in x.shape)]
    else:
        perm = list(range(x.dim()))[::-1]
        view = torch.empty([x.shape[p] for p in perm], dtype=x.dtype).permute(*perm)
    view.copy_(x)
    assert torch.equal(view, x) and not view.is_contiguous()
    return view


def clones(args, kw):
    cl = lambda a: a.clone() if isinstance(a, torch.Tensor) else a  # noqa: E731
    return tuple(cl(a) for a in args), {k: cl(v) for k, v in kw.items()}


def same(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
        return
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert torch.equal(a.view(torch.uint8) if a.dtype != torch.bool else a, b.view(torch.uint8) if b.dtype != torch.bool else b)


MODES = ["padded", "reversed"]


@pytest.mark.parametrize("mode", MODES)
def test_fia_mla_decode_paged(mode):
    rng = np.random.default_rng(3)
    b, n, d, dr, skv, bs = 3, 8, 64, 16, 40, 16
    q, qr = _t(rng, b, n, 1, d), _t(rng, b, n, 1, dr)
    k, kr = _t(rng, b, 1, skv, d), _t(rng, b, 1, skv, dr)
    k_cache, table = _paged(np.random.default_rng(1), k, bs, 12)
    kr_cache, _ = _paged(np.random.default_rng(1), kr, bs, 12)

    def call(s):
        return torch_npu.npu_fused_infer_attention_score_v2(
            s(q), s(k_cache), s(k_cache), query_rope=s(qr), key_rope=s(kr_cache), num_query_heads=n,
            num_key_value_heads=1, softmax_scale=0.1, block_table=s(table), block_size=bs,
            actual_seq_kvlen=[40, 23, 5], input_layout="BNSD", return_softmax_lse=True)

    same(call(lambda x: x), call(lambda x: restride(x, mode)))


@pytest.mark.parametrize("mode", MODES)
def test_fia_prefill_tnd_slices_and_expand(mode):
    """vllm-ascend's prefill: q_nope / q_pe slices of one projection, k_nope / v from one split,
    k_pe [T, 1, Dr] expanded over the heads (stride 0)."""
    rng = np.random.default_rng(4)
    t, n, d, dr = 12, 4, 32, 16
    q_proj = _t(rng, t, n, d + dr)
    kv_proj = _t(rng, t, n, 2 * d)
    k_pe = _t(rng, t, 1, dr)
    q_nope, q_pe = q_proj[..., :d], q_proj[..., d:]
    k_nope, v = kv_proj.split([d, d], dim=-1)
    k_rope = k_pe.expand(t, n, dr)
    assert not q_nope.is_contiguous() and k_rope.stride(1) == 0
    cum = [5, 12]

    def call(qn, qp, kn, vv, kr):
        return torch_npu.npu_fused_infer_attention_score(
            qn, kn, vv, query_rope=qp, key_rope=kr, num_heads=n, num_key_value_heads=n, input_layout="TND",
            scale=(d + dr) ** -0.5, atten_mask=MASK, sparse_mode=3, actual_seq_lengths=cum,
            actual_seq_lengths_kv=cum, softmax_lse_flag=True)

    dense = call(q_nope.contiguous(), q_pe.contiguous(), k_nope.contiguous(), v.contiguous(), k_rope.contiguous())
    same(dense, call(q_nope, q_pe, k_nope, v, k_rope))
    same(dense, call(*(restride(x.contiguous(), mode) for x in (q_nope, q_pe, k_nope, v, k_rope))))


def test_fia_eager_decode_transposed_query():
    """SGLang's eager decode: the query from bmm(...).transpose(0, 1) ([B, N, D] with strides of [N, B, D])."""
    rng = np.random.default_rng(5)
    b, n, d, skv = 4, 8, 64, 20
    q_nbd = _t(rng, n, b, d)
    k, v = _t(rng, b, 1, skv, d), _t(rng, b, 1, skv, d)

    def call(query):
        return torch_npu.npu_fused_infer_attention_score(
            query.view(b, 1, n, d) if query.is_contiguous() else query.unsqueeze(1), k.permute(0, 2, 1, 3),
            v.permute(0, 2, 1, 3), num_heads=n, num_key_value_heads=1, input_layout="BSND", scale=0.125)

    same(call(q_nbd.transpose(0, 1).contiguous()), call(q_nbd.transpose(0, 1)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("quant", [None, "partial_kv", "full_kv"])
def test_mla_prolog_v2(mode, quant):
    args, kw, _, _ = make_prolog(7, 5, quant=quant, nz=quant is not None)
    a1, k1 = clones(args, kw)
    a2, k2 = clones(args, kw)
    a2 = tuple(restride(x, mode) if i not in (10, 11) else x for i, x in enumerate(a2))  # not the caches
    k2 = {k: restride(v, mode) for k, v in k2.items()}
    same(mlaops.npu_mla_prolog_v2(*a1, **k1), mlaops.npu_mla_prolog_v2(*a2, **k2))


def test_mla_prolog_transposed_and_padded_nd_weights():
    """SGLang passes a transposed ND weight (strides [1, He]); a row-padded one is a slice."""
    args, kw, _, _ = make_prolog(8, 4, nz=False)
    a1, k1 = clones(args, kw)
    a2, k2 = clones(args, kw)
    a2 = list(a2)
    a2[1] = a2[1].t().contiguous().t()  # weight_dq [He, Hcq] stored transposed
    a2[2] = torch.nn.functional.pad(a2[2], (0, 8))[:, :a2[2].shape[1]]  # weight_uq_qr rows padded
    assert a2[1].stride() == (1, a2[1].shape[0]) and not a2[2].is_contiguous()
    same(mlaops.npu_mla_prolog_v2(*a1, **k1), mlaops.npu_mla_prolog_v2(*a2, **k2))


@pytest.mark.parametrize("cm", [0, 1, 2, 3])
def test_mla_preprocess(cm):
    args, kw, _, _ = make_preprocess(9, cm)
    a1, k1 = clones(args, kw)
    a2, k2 = clones(args, kw)
    a2 = tuple(restride(x, "reversed" if i % 2 else "padded") if i not in (3, 7, 13, 14) else x
               for i, x in enumerate(a2))  # not the NZ weights, not the caches
    k2 = {k: restride(v, "padded") for k, v in k2.items()}
    same(torch_npu.atb.npu_mla_preprocess(*a1, **k1), torch_npu.atb.npu_mla_preprocess(*a2, **k2))
    same(a1[13], a2[13])
    same(a1[14], a2[14])


def test_strided_outputs_and_caches_are_refused_and_nothing_written():
    args, kw, _, _ = make_prolog(10, 4)
    args = list(args)
    cache = torch.zeros(args[10].shape[:-1] + (args[10].shape[-1] + 4,), dtype=args[10].dtype).fill_(3)
    args[10] = cache[..., :args[10].shape[-1]]
    before = cache.clone()
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_prolog_v2(*args, **kw)
    assert e.value.status == 161002 and "kvCacheRef: MP-05" in str(e.value)
    assert torch.equal(cache, before)

    rng = np.random.default_rng(6)
    q, k, v = _t(rng, 2, 4, 1, 16), _t(rng, 2, 4, 8, 16), _t(rng, 2, 4, 8, 16)
    out = torch.zeros(2, 4, 1, 24, dtype=torch.bfloat16)
    with pytest.raises(mlaops.Error) as e:  # the .out form into a strided attention_out
        torch_npu.npu_fused_infer_attention_score.out(q, k, v, num_heads=4, input_layout="BNSD",
                                                      out=[out[..., :16], torch.zeros(1)])
    assert e.value.status == 161002 and "FIA-17" in str(e.value)
    assert torch.all(out == 0)
