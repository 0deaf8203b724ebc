"""torch.ops.mlaops.* (torch.library custom operators): schemas, fake implementations,
opcheck, torch.compile tracing."""
import numpy as np
import pytest
import torch

import mlaops
from test_mla_prolog import make_inputs

MASK = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


def storage_form(args):
    """The NZ weights (torch_npu NZ tensors) as their plain 4-D storage tensors, the aclnn
    examples' form of FRACTAL_NZ: torch.library.opcheck and torch.compile take plain tensors."""
    return tuple(a.nz_storage() if torch.is_tensor(a) and mlaops.get_npu_format(a) == 29 else a for a in args)


def _fia_cases():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 1, 64, generator=g).bfloat16()
    k = torch.randn(2, 9, 64, generator=g).bfloat16()
    yield "v1 BSH decode", torch.ops.mlaops.npu_fused_infer_attention_score, (q, k, k), dict(
        num_heads=2, scale=0.125, actual_seq_lengths_kv=[9, 4], softmax_lse_flag=True)
    qt = torch.randn(12, 4, 32, generator=g).bfloat16()
    kt = torch.randn(12, 4, 32, generator=g).bfloat16()
    yield "v1 TND causal", torch.ops.mlaops.npu_fused_infer_attention_score, (qt, kt, kt), dict(
        num_heads=4, num_key_value_heads=4, input_layout="TND", atten_mask=MASK, sparse_mode=3,
        actual_seq_lengths=[5, 12], actual_seq_lengths_kv=[5, 12], scale=0.2)
    qb = torch.randn(2, 8, 1, 64, generator=g).bfloat16()
    qr = torch.randn(2, 8, 1, 16, generator=g).bfloat16()
    cache = torch.randn(6, 16, 64, generator=g).bfloat16()
    rcache = torch.randn(6, 16, 16, generator=g).bfloat16()
    table = torch.tensor([[0, 3], [5, 1]], dtype=torch.int32)
    yield "v2 MLA paged", torch.ops.mlaops.npu_fused_infer_attention_score_v2, (qb, cache, cache), dict(
        query_rope=qr, key_rope=rcache, num_query_heads=8, num_key_value_heads=1, softmax_scale=0.1,
        input_layout="BNSD_NBSD", block_table=table, block_size=16, actual_seq_kvlen=[20, 7],
        return_softmax_lse=True)


def test_schemas_declare_the_mutated_caches():
    s = str(torch.ops.mlaops.npu_mla_prolog_v2.default._schema)
    assert "Tensor(a!) kv_cache" in s and "Tensor(b!) kr_cache" in s
    assert 'str cache_mode="PA_BSND"' in s and "float rmsnorm_epsilon_cq=1.0000000000000001e-05" in s
    s = str(torch.ops.mlaops.npu_fused_infer_attention_score.default._schema)
    assert "SymInt[]? actual_seq_lengths=None" in s and 'str input_layout="BSH"' in s and "!" not in s
    s = str(torch.ops.mlaops.npu_fused_infer_attention_score_v2.default._schema)
    assert "int? out_dtype=None" in s and "bool return_softmax_lse=False" in s


@pytest.mark.parametrize("op", ["npu_mla_prolog", "npu_mla_prolog_v2"])
def test_prolog_op_matches_function_and_opcheck(op):
    args, kw, _, _ = make_inputs(21, 6, quant="partial")
    fn = getattr(mlaops, op)
    ref_args = args[:10] + (args[10].clone(), args[11].clone())
    want = fn(*ref_args, **kw)
    got = getattr(torch.ops.mlaops, op)(*args, **kw)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert torch.equal(args[10], ref_args[10]) and torch.equal(args[11], ref_args[11])  # in place
    fresh = storage_form(args[:10]) + (torch.zeros_like(args[10]), torch.zeros_like(args[11]))
    torch.library.opcheck(getattr(torch.ops.mlaops, op).default, fresh, kw)


@pytest.mark.parametrize("case", list(range(3)))
def test_fia_op_matches_function_and_opcheck(case):
    name, op, args, kw = list(_fia_cases())[case]
    fn = mlaops.npu_fused_infer_attention_score_v2 if "v2" in name else mlaops.npu_fused_infer_attention_score
    want = fn(*args, **kw)
    got = op(*args, **kw)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    torch.library.opcheck(op.default, args, kw)


def test_torch_compile_traces_a_decode_step():
    args, kw, _, _ = make_inputs(22, 4)
    args = storage_form(args)
    kv_cache, kr_cache = args[10], args[11]

    def step(x):
        q, qr, _ = torch.ops.mlaops.npu_mla_prolog_v2(x, *args[1:], **kw)
        t, n, h = q.shape
        cache = kv_cache.view(-1, kv_cache.shape[1], h)
        rcache = kr_cache.view(-1, kr_cache.shape[1], kr_cache.shape[-1])
        table = torch.arange(cache.shape[0], dtype=torch.int32).view(1, -1).expand(t, -1).contiguous()
        out, _ = torch.ops.mlaops.npu_fused_infer_attention_score_v2(
            q.view(t, n, 1, h), cache, cache, query_rope=qr.view(t, n, 1, -1), key_rope=rcache,
            num_query_heads=n, num_key_value_heads=1, softmax_scale=0.1, input_layout="BNSD_NBSD",
            block_table=table, block_size=cache.shape[1], actual_seq_kvlen=[cache.shape[0] * cache.shape[1]] * t)
        return out.float().sum(dim=-1)

    eager = step(args[0])
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(args[0]), eager, rtol=0, atol=0)
