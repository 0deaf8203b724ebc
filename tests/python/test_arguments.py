"""Required tensor arguments given as None or as an object that is no tensor, for every public
operator function and every torch.ops.mlaops operator (docs/python.md "Errors"): None raises mlaops.Error
161001 naming the function and the parameter, a list / float raises TypeError in torch's words
(torch's own schema error for torch.ops.mlaops), and no cache or output byte is written."""
import inspect

import pytest
import torch

import mlaops
from test_c_ascend import vllm_positional
from test_mla_preprocess import make as make_preprocess
from test_mla_prolog import make_inputs

# the positional tensors each function takes as None (the operator then checks them per mode)
OPTIONAL = {"npu_mla_prolog": {"cache_index"}, "npu_mla_prolog_v2": {"cache_index"},
            "npu_mla_preprocess": {"descale0", "descale1", "kv_cache_rope"},
            "_C_ascend.mla_preprocess": {"descale0", "beta1", "descale1", "cos", "sin", "kv_cache_rope"}}
NOT_TENSORS = {"acl_format"}
RULE = {"npu_mla_prolog": "MP-01", "npu_mla_prolog_v2": "MP-01", "npu_mla_prolog_v3": "MP-01",
        "npu_mla_prolog_v3_functional": "MP-01", "npu_mla_preprocess": "MPP-01", "_C_ascend.mla_preprocess": "MPP-01"}
WRONG = {"list": [1.0], "float": 1.0}


def _fia_inputs():
    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 1, 64, generator=g).bfloat16()
    k = torch.randn(2, 8, 64, generator=g).bfloat16()
    return (q, k, k.clone()), dict(num_heads=2), dict(num_query_heads=2)


def _calls():
    """(name, function, positional args, keywords, caches / outputs that must stay unchanged) of
    valid calls; every function's call is made with small inputs."""
    p_args, p_kw, _, _ = make_inputs(7, 4)
    v3_args = p_args[:9] + p_args[10:]
    v3_kw = dict(p_kw, cache_index=p_args[9])
    pp_args, pp_kw, _, _ = make_preprocess(1, 1)
    c_args, c_kw, _, _ = make_preprocess(2, 1, None)
    c_pos = vllm_positional(c_args, c_kw)
    fia, v1_kw, v2_kw = _fia_inputs()
    out = torch.full((2, 1, 64), 5.0, dtype=torch.bfloat16)
    fa, fa2 = mlaops.npu_fused_infer_attention_score, mlaops.npu_fused_infer_attention_score_v2
    return [
        ("npu_mla_prolog", mlaops.npu_mla_prolog, p_args, p_kw, p_args[10:]),
        ("npu_mla_prolog_v2", mlaops.npu_mla_prolog_v2, p_args, p_kw, p_args[10:]),
        ("npu_mla_prolog_v3", mlaops.npu_mla_prolog_v3, v3_args, v3_kw, v3_args[9:]),
        ("npu_mla_prolog_v3_functional", mlaops.npu_mla_prolog_v3_functional, v3_args, v3_kw, v3_args[9:]),
        ("npu_mla_preprocess", mlaops.npu_mla_preprocess, pp_args, pp_kw, pp_args[13:15]),
        ("_C_ascend.mla_preprocess", mlaops._C_ascend.mla_preprocess, c_pos, {}, c_args[13:15]),
        ("npu_fused_infer_attention_score", fa, fia, v1_kw, ()),
        ("npu_fused_infer_attention_score_v2", fa2, fia, v2_kw, ()),
        ("npu_fused_infer_attention_score.out", fa.out, fia, dict(v1_kw, out=[out, torch.empty(1)]), (out,)),
        ("npu_fused_infer_attention_score_v2.out", fa2.out, fia, dict(v2_kw, out=[out, torch.empty(1)]), (out,)),
        ("_npu_fused_infer_attention_score_get_max_workspace",
         mlaops._npu_fused_infer_attention_score_get_max_workspace, fia, v1_kw, ()),
        ("_npu_fused_infer_attention_score_v2_get_max_workspace",
         mlaops._npu_fused_infer_attention_score_v2_get_max_workspace, fia, v2_kw, ()),
        ("npu_format_cast", mlaops.npu_format_cast, (torch.ones(32, 32, dtype=torch.bfloat16), 29), {}, ()),
        ("npu_incre_flash_attention", mlaops.npu_incre_flash_attention, fia, v1_kw, ()),
        ("npu_prompt_flash_attention", mlaops.npu_prompt_flash_attention, fia, v1_kw, ()),
    ]


def _required(name, fn):
    """The required tensor parameters by the signature (key / value of the FIA getters and .out:
    their operator's)."""
    if name.endswith(".out") or name.startswith("_npu"):
        return ["query", "key", "value"]
    params = inspect.signature(fn).parameters.values()
    return [p.name for p in params if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD
            and p.name not in OPTIONAL.get(name, set()) | NOT_TENSORS]


CALLS = _calls()
CASES = [(i, n) for i, (name, fn, *_) in enumerate(CALLS) for n in _required(name, fn)]


def _run_with(i, param, bad):
    name, fn, args, kw, watched = CALLS[i]
    args = list(args)
    pos = _required(name, fn).index(param) if name.endswith(".out") or name.startswith("_npu") else \
        list(inspect.signature(fn).parameters).index(param)
    args[pos] = bad
    before = [t.clone() for t in watched]
    try:
        fn(*args, **kw)
    finally:
        for t, b in zip(watched, before):
            assert torch.equal(t, b), f"{name}: a watched tensor was written"
    pytest.fail(f"{name} accepted {param}={bad!r}")


def test_every_function_and_its_required_tensors_are_covered():
    counts = {}
    for i, _ in CASES:
        counts[CALLS[i][0]] = counts.get(CALLS[i][0], 0) + 1
    prolog, fia = 11, 3  # the prologs' positional tensors less cache_index (V1 / V2) or with it a keyword (V3)
    assert counts == {"npu_mla_prolog": prolog, "npu_mla_prolog_v2": prolog, "npu_mla_prolog_v3": prolog,
                      "npu_mla_prolog_v3_functional": prolog, "npu_mla_preprocess": 13, "_C_ascend.mla_preprocess": 8,
                      **{name: fia for name, *_ in CALLS[6:12]}, "npu_format_cast": 1,
                      "npu_incre_flash_attention": fia, "npu_prompt_flash_attention": fia}
    for i, (name, fn, args, kw, _) in enumerate(CALLS):  # each call is valid as given
        if "attention" in name or name.startswith("_npu") or name == "npu_format_cast":
            fn(*args, **kw)


@pytest.mark.parametrize("i,param", CASES, ids=[f"{CALLS[i][0]}-{p}" for i, p in CASES])
def test_none_for_a_required_tensor(i, param):
    name = CALLS[i][0]
    with pytest.raises(mlaops.Error) as e:
        _run_with(i, param, None)
    assert e.value.status == 161001
    rule = RULE.get(name, "FIA-01" if "attention" in name else "")
    assert e.value.message.startswith(f"{name}: {param}: {rule}".replace(":  ", ": "))
    assert "required tensor is null" in e.value.message


@pytest.mark.parametrize("wrong", list(WRONG))
@pytest.mark.parametrize("i,param", CASES, ids=[f"{CALLS[i][0]}-{p}" for i, p in CASES])
def test_wrong_type_for_a_required_tensor(i, param, wrong):
    name = CALLS[i][0]
    with pytest.raises(TypeError) as e:
        _run_with(i, param, WRONG[wrong])
    lists = param in ("key", "value") and name != "npu_prompt_flash_attention"  # PFA: single key / value
    bad = "float" if lists and wrong == "list" else wrong  # key / value lists: [1.0] is a list of a float
    assert f"{name}(): argument '{param}" in str(e.value) and str(e.value).endswith(f", not {bad}")


def test_key_value_lists_and_out():
    (q, k, v), kw, _ = _fia_inputs()
    fa = mlaops.npu_fused_infer_attention_score
    for key, status, where in (([], 161001, "key:"), ([k[:1], None], 161001, "key[1]:")):
        with pytest.raises(mlaops.Error) as e:
            fa(q, key, v, **kw)
        assert e.value.status == status and e.value.message.startswith(f"npu_fused_infer_attention_score: {where}")
    out = torch.full((2, 1, 64), 5.0, dtype=torch.bfloat16)
    with pytest.raises(mlaops.Error) as e:
        fa.out(q, k, v, **kw, out=None)
    assert e.value.status == 161001 and "out:" in e.value.message
    with pytest.raises(mlaops.Error) as e:
        fa.out(q, k, v, **kw, out=[None, torch.empty(1)])
    assert e.value.status == 161001 and "out[0] (attention_out)" in e.value.message
    with pytest.raises(mlaops.Error) as e:  # softmax_lse is written with the flag: required
        fa.out(q, k, v, **kw, softmax_lse_flag=True, out=[out, None])
    assert e.value.status == 161001 and "out[1] (softmax_lse)" in e.value.message
    with pytest.raises(TypeError, match="attention_out"):
        fa.out(q, k, v, **kw, out=[[1.0], torch.empty(1)])
    with pytest.raises(TypeError, match="argument 'workspace' must be Tensor, not float"):
        fa.out(q, k, v, **kw, workspace=1.0, out=[out, torch.empty(1)])
    assert torch.all(out == 5.0)
    with pytest.raises(TypeError, match="argument 'atten_mask' must be Tensor, not list"):  # an optional tensor
        fa(q, k, v, **kw, atten_mask=[1])


# torch.ops.mlaops.*: the required Tensor arguments of each schema
OPS = {"npu_mla_prolog": 0, "npu_mla_prolog_v2": 1, "npu_mla_prolog_v3": 2, "npu_mla_preprocess": 4,
       "npu_fused_infer_attention_score": 6, "npu_fused_infer_attention_score_v2": 7,
       "npu_incre_flash_attention": 13, "npu_prompt_flash_attention": 14}


def _op_required(op):
    schema = getattr(torch.ops.mlaops, op).default._schema
    return [a.name for a in schema.arguments if str(a.type) == "Tensor" and not a.kwarg_only]


OP_CASES = [(op, n) for op in OPS for n in _op_required(op)]


def _op_call(op, param, bad):
    _, _, args, kw, watched = CALLS[OPS[op]]
    kw = {k: v for k, v in kw.items() if k not in ("q_out0", "kv_cache_out0", "q_out1", "kv_cache_out1", "inner_out")}
    args = list(args)
    args[_op_args(op).index(param)] = bad
    before = [t.clone() for t in watched]
    try:
        getattr(torch.ops.mlaops, op)(*args, **kw)
    finally:
        for t, b in zip(watched, before):
            assert torch.equal(t, b), f"{op}: a watched tensor was written"
    pytest.fail(f"torch.ops.mlaops.{op} accepted {param}={bad!r}")


def _op_args(op):
    return [a.name for a in getattr(torch.ops.mlaops, op).default._schema.arguments if not a.kwarg_only]


def test_op_cases_cover_every_schema():
    assert len(OP_CASES) == 12 + 12 + 11 + 13 + 3 + 3 + 3 + 3


@pytest.mark.parametrize("op,param", OP_CASES, ids=[f"{o}-{p}" for o, p in OP_CASES])
def test_torch_ops_none_and_wrong_type(op, param):
    """None reaches the function (mlaops.Error 161001); a list is refused by torch's schema check
    (RuntimeError naming the operator and the argument)."""
    with pytest.raises(mlaops.Error) as e:
        _op_call(op, param, None)
    # the prolog functions take cache_index None (BSND / TND): the operator's MP-01 refuses it in PA_BSND
    where = "mla_prolog: cacheIndex: MP-01" if param == "cache_index" else f"{op}: {param}: "
    assert e.value.status == 161001 and e.value.message.startswith(where)
    with pytest.raises(RuntimeError, match=f"mlaops::{op}\\(\\) Expected a value of type 'Tensor' for argument "
                                           f"'{param}' but instead found type 'list'"):
        _op_call(op, param, [1.0])
