"""torch.ops.mlaops.npu_mla_prolog_v3 / npu_mla_preprocess: schemas, the function's results,
opcheck (fake implementations, declared mutations)."""
import pytest
import torch

import mlaops
from test_mla_preprocess import make as make_preprocess
from test_mla_prolog import make_inputs
from test_torch_ops import storage_form


def test_schemas_declare_the_mutated_caches():
    s = str(torch.ops.mlaops.npu_mla_prolog_v3.default._schema)
    assert "Tensor(a!) kv_cache" in s and "Tensor(b!) kr_cache" in s and "Tensor? cache_index=None" in s
    assert "int? kv_cache_dtype=None" in s and "bool query_norm_flag=False" in s
    s = str(torch.ops.mlaops.npu_mla_preprocess.default._schema)
    assert "Tensor(a!) kv_cache" in s and "Tensor(b!)? kv_cache_rope" in s and "Tensor? descale0" in s
    assert 'str cache_mode="krope_ctkv"' in s and "q_out0" not in s


@pytest.mark.parametrize("quant,flag", [(None, False), ("partial", True)])
def test_prolog_v3_op_matches_function_and_opcheck(quant, flag):
    args, kw, _, _ = make_inputs(60, 5, quant=quant)
    kw = dict(kw, cache_index=args[9], weight_quant_mode=1 if quant else 0, query_norm_flag=flag)
    v3 = args[:9] + args[10:]
    ref = v3[:9] + (v3[9].clone(), v3[10].clone())
    want = mlaops.npu_mla_prolog_v3(*ref, **kw)
    got = torch.ops.mlaops.npu_mla_prolog_v3(*v3, **kw)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert torch.equal(v3[9], ref[9]) and torch.equal(v3[10], ref[10])
    fresh = storage_form(v3[:9]) + (torch.zeros_like(v3[9]), torch.zeros_like(v3[10]))
    torch.library.opcheck(torch.ops.mlaops.npu_mla_prolog_v3.default, fresh, kw)


@pytest.mark.parametrize("cm,inner", [(0, False), (1, True), (2, False)])
def test_preprocess_op_matches_function_and_opcheck(cm, inner):
    args, kw, _, _ = make_preprocess(61, cm)
    kw = dict(kw, enable_inner_out=inner)
    ref = args[:13] + (args[13].clone(), None if args[14] is None else args[14].clone(), args[15])
    q0, _, q1, _, qd = mlaops.npu_mla_preprocess(*ref, **kw)
    got = torch.ops.mlaops.npu_mla_preprocess(*args, **kw)
    assert torch.equal(got[0], q0) and torch.equal(args[13], ref[13])
    assert got[1].shape == (0,) if cm == 0 else torch.equal(got[1], q1)
    assert got[2].shape == (0,) if not inner else torch.equal(got[2], qd)
    fresh = storage_form(args[:13]) + (torch.zeros_like(args[13]),
                                       None if args[14] is None else torch.zeros_like(args[14]), args[15])
    torch.library.opcheck(torch.ops.mlaops.npu_mla_preprocess.default, fresh, kw)
