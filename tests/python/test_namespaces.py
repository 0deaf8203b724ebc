"""The names real code calls (docs/python.md "torch.ops"): torch.ops.npu.* (torch_npu's functions
with torch_npu's schemas and return tuples), torch.ops.custom.* (the CANN torch extension's
MlaPrologV3, which SGLang calls), torch.ops._C_ascend.mla_preprocess (vllm-ascend's), each equal
to the mlaops function; and that none is registered where its real provider is present."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import mlaops
from test_c_ascend import vllm_positional
from test_mla_preprocess import make as make_preprocess
from test_mla_prolog import make_inputs

# torch_npu's functions in mlaops.torch_npu, each under torch.ops.npu
NPU_OPS = ["npu_mla_prolog", "npu_mla_prolog_v2", "npu_mla_prolog_v3", "npu_mla_prolog_v3_functional",
           "npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
           "_npu_fused_infer_attention_score_get_max_workspace",
           "_npu_fused_infer_attention_score_v2_get_max_workspace", "npu_incre_flash_attention",
           "npu_prompt_flash_attention", "npu_format_cast", "npu_format_cast_", "get_npu_format"]


def test_every_torch_npu_function_is_under_torch_ops_npu():
    import mlaops.torch_npu as torch_npu
    assert sorted(NPU_OPS) == sorted(n for n in torch_npu.__all__ if n != "atb")
    for name in NPU_OPS:
        assert hasattr(torch.ops.npu, name), name
    for name in ("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2"):
        schema = str(getattr(torch.ops.npu, name).out._schema)
        assert schema.endswith("Tensor? workspace=None, Tensor(a!) attention_out, Tensor(b!) softmax_lse) -> "
                               "(Tensor(a!), Tensor(b!))")
    # torch_npu's schemas: the prologs return the caches too; V3 marks them mutated
    assert str(torch.ops.npu.npu_mla_prolog_v2.default._schema).endswith(
        "-> (Tensor, Tensor, Tensor, Tensor, Tensor)")
    assert "Tensor kv_cache, Tensor kr_cache" in str(torch.ops.npu.npu_mla_prolog_v2.default._schema)
    assert "Tensor(a!) kv_cache, Tensor(b!) kr_cache" in str(torch.ops.npu.npu_mla_prolog_v3.default._schema)
    assert "int acl_format, int? customize_dtype=None" in str(torch.ops.npu.npu_format_cast.default._schema)


def _fresh(args):
    return list(args[:10]) + [args[10].clone(), args[11].clone()]


def test_prologs_under_npu_and_custom_equal_the_functions():
    args, kw, _, _ = make_inputs(71, 4)
    ref = _fresh(args)
    want = mlaops.npu_mla_prolog_v2(*ref, **kw)
    a = _fresh(args)
    got = torch.ops.npu.npu_mla_prolog_v2(*a, **kw)
    assert len(got) == 5 and got[2] is a[10] and got[3] is a[11]  # torch_npu's tuple: the caches in place
    assert all(torch.equal(x, y) for x, y in zip(got, want)) and torch.equal(a[10], ref[10])
    v3_kw = dict(kw, cache_index=args[9])
    ref = _fresh(args)
    want = mlaops.npu_mla_prolog_v3(*(ref[:9] + ref[10:]), **v3_kw)
    for op in (torch.ops.custom.npu_mla_prolog_v3, torch.ops.npu.npu_mla_prolog_v3):
        a = _fresh(args)
        got = op(*(a[:9] + a[10:]), **v3_kw)
        assert all(torch.equal(x, y) for x, y in zip(got, want)) and torch.equal(a[10], ref[10])
    a = _fresh(args)
    got = torch.ops.custom.npu_mla_prolog_v3_functional(*(a[:9] + a[10:]), **v3_kw)
    assert len(got) == 7 and torch.equal(got[5], ref[10]) and not torch.equal(a[10], ref[10])


def test_fia_out_and_workspace_under_npu():
    g = torch.Generator().manual_seed(72)
    q, k = torch.randn(2, 1, 64, generator=g).bfloat16(), torch.randn(2, 8, 64, generator=g).bfloat16()
    kw = dict(num_heads=2, softmax_lse_flag=True)
    want, lse = mlaops.npu_fused_infer_attention_score(q, k, k, **kw)
    ws = torch.ops.npu._npu_fused_infer_attention_score_get_max_workspace(q, k, k, **kw)
    assert ws.dtype == torch.uint8 and ws.numel() >= 1
    out, out_lse = torch.empty_like(want), torch.empty_like(lse)
    res = torch.ops.npu.npu_fused_infer_attention_score.out(q, k, k, **kw, workspace=ws, attention_out=out,
                                                            softmax_lse=out_lse)
    assert res[0] is out and res[1] is out_lse and torch.equal(out, want) and torch.equal(out_lse, lse)
    got, _ = torch.ops.npu.npu_fused_infer_attention_score_v2(q, k, k, num_query_heads=2)
    assert torch.equal(got, want)


def test_format_functions_under_npu():
    w = torch.randn(32, 48).bfloat16()
    nz = torch.ops.npu.npu_format_cast(w, 29)
    assert torch.ops.npu.get_npu_format(nz) == 29 and torch.ops.npu.get_npu_format(w) == 2
    assert torch.equal(nz, w) and torch.ops.npu.npu_format_cast(nz[:, :16], 2).shape == (32, 16)
    assert torch.ops.npu.npu_format_cast_(nz, 2) is nz and torch.ops.npu.get_npu_format(nz) == 2
    assert torch.ops.npu.npu_format_cast_(nz, torch.ops.npu.npu_format_cast(w, 29)) is nz
    assert mlaops.get_npu_format(nz) == 29


@pytest.mark.parametrize("cm", [0, 1])
def test_c_ascend_mla_preprocess_equals_the_function(cm):
    """torch.ops._C_ascend.mla_preprocess -> mlaops._C_ascend.mla_preprocess (no_quant form)."""
    a1, kw1, _, _ = make_preprocess(73, cm, None)
    want = mlaops._C_ascend.mla_preprocess(*vllm_positional(a1, kw1))
    a2, kw2, _, _ = make_preprocess(73, cm, None)
    got = torch.ops._C_ascend.mla_preprocess(*vllm_positional(a2, kw2))
    assert len(got) == 5 and got[1] is a2[13] and got[4] is None
    for x, y in zip(got, want):
        assert (x is None and y is None) or torch.equal(x, y)
    assert torch.equal(a1[13], a2[13])
    assert "str? cache_mode=None, str? quant_mode=None, bool? enable_inner_out=None" in str(
        torch.ops._C_ascend.mla_preprocess.default._schema)


def test_registered_names_and_the_mlaops_namespace():
    from mlaops._torch_ops import OPS
    assert OPS["_skipped"] == []  # no real provider in this environment
    assert {k.split("::")[0] for k in OPS if "::" in k} >= {"mlaops", "npu", "custom", "_C_ascend"}
    # torch.ops.mlaops keeps its own schemas (mutated caches declared, only the new tensors returned)
    assert str(torch.ops.mlaops.npu_mla_prolog_v2.default._schema).endswith("-> (Tensor, Tensor, Tensor)")


def _probe(setup, tmp_path):
    """Imports mlaops in a fresh interpreter after `setup`; returns which names it registered."""
    code = textwrap.dedent(setup) + textwrap.dedent("""
        import torch, mlaops
        names = {"npu": ["npu_mla_prolog_v2", "npu_format_cast"], "custom": ["npu_mla_prolog_v3"],
                 "_C_ascend": ["mla_preprocess"], "mlaops": ["npu_mla_prolog_v2"]}
        print(sorted(f"{ns}::{n}" for ns, ops in names.items() for n in ops if hasattr(getattr(torch.ops, ns), n)))
        from mlaops._torch_ops import OPS
        print(sorted(OPS["_skipped"]))
    """)
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    registered, skipped = out.stdout.strip().splitlines()[-2:]
    return eval(registered), eval(skipped)  # noqa: S307 - our own printout


def test_never_shadows_a_loaded_provider(tmp_path):
    """A module named torch_npu already imported: no torch.ops.npu names from mlaops (the real
    torch_npu registers them); the other namespaces are unaffected."""
    registered, skipped = _probe("""
        import sys, types
        sys.modules["torch_npu"] = types.ModuleType("torch_npu")
    """, tmp_path)
    assert "npu::npu_mla_prolog_v2" not in registered and "npu::npu_format_cast" not in registered
    assert {"custom::npu_mla_prolog_v3", "_C_ascend::mla_preprocess", "mlaops::npu_mla_prolog_v2"} <= set(registered)
    assert "npu::npu_fused_infer_attention_score.out" in skipped and "custom::npu_mla_prolog_v3" not in skipped


def test_never_shadows_an_installed_provider(tmp_path):
    """vllm_ascend and custom_ops installed (importable, not imported): their names stay free for
    them (registering them first would make their own registration fail)."""
    for pkg in ("vllm_ascend", "custom_ops"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("raise ImportError('must not be imported by mlaops')\n")
    registered, skipped = _probe("", tmp_path)
    assert "_C_ascend::mla_preprocess" not in registered and "custom::npu_mla_prolog_v3" not in registered
    assert {"npu::npu_mla_prolog_v2", "mlaops::npu_mla_prolog_v2"} <= set(registered)
    assert {"_C_ascend::mla_preprocess", "custom::npu_mla_prolog_v3", "custom::npu_mla_prolog_v3_functional"} <= \
        set(skipped)


def test_sgl_kernel_npu_name_is_registered_by_module_path(tmp_path):
    """torch.ops.npu.mla_preprocess is registered from mlaops._sgl_kernel_npu.mla_preprocess when
    that module is in the package (here a stand-in with sgl-kernel-npu's signature and its four
    outputs, forwarding to npu_mla_preprocess), and the call reaches it."""
    code = textwrap.dedent("""
        import sys, types
        fake = types.ModuleType("mlaops._sgl_kernel_npu")

        def mla_preprocess(hiddenState, gamma0, beta0, wdqkv, descale0, gamma1, beta1, wuq, descale1, gamma2, cos,
                           sin, wuk, kv_cache, kv_cache_rope, slotmapping, quant_scale0, quant_offset0, bias0,
                           quant_scale1, quant_offset1, bias1, *, ctkv_scale=None, q_nope_scale=None,
                           cache_mode=None, quant_mode=None, q_out0=None, kv_cache_out0=None, q_out1=None,
                           kv_cache_out1=None):
            import mlaops
            return mlaops.npu_mla_preprocess(
                hiddenState, gamma0, beta0, wdqkv, descale0, gamma1, beta1, wuq, descale1, gamma2, cos, sin, wuk,
                kv_cache, kv_cache_rope, slotmapping, quant_scale0=quant_scale0, quant_offset0=quant_offset0,
                bias0=bias0, quant_scale1=quant_scale1, quant_offset1=quant_offset1, bias1=bias1,
                ctkv_scale=ctkv_scale, q_nope_scale=q_nope_scale, cache_mode=cache_mode or "krope_ctkv",
                quant_mode=quant_mode or "per_tensor_quant_asymm",
                q_out0=q_out0, kv_cache_out0=kv_cache_out0, q_out1=q_out1, kv_cache_out1=kv_cache_out1)[:4]
        fake.mla_preprocess = mla_preprocess
        sys.modules["mlaops._sgl_kernel_npu"] = fake
        import torch, mlaops
        from test_mla_preprocess import make
        schema = str(torch.ops.npu.mla_preprocess.default._schema)
        assert "Tensor(a!)? q_out0=None" in schema and schema.endswith("-> (Tensor?, Tensor?, Tensor?, Tensor?)")
        args, kw, _, _ = make(74, 1)
        quant = [kw.pop(k) for k in ("quant_scale0", "quant_offset0", "bias0", "quant_scale1", "quant_offset1",
                                     "bias1")]
        want = mlaops.npu_mla_preprocess(*args[:13], args[13].clone(), args[14].clone(), args[15], **kw,
                                         **dict(zip(("quant_scale0", "quant_offset0", "bias0", "quant_scale1",
                                                     "quant_offset1", "bias1"), quant)))
        got = torch.ops.npu.mla_preprocess(*args, *quant, **kw)
        assert len(got) == 4 and got[1] is args[13]
        assert all(torch.equal(a, b) for a, b in zip(got, want[:4]))
        print("ok")
    """)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr


def test_never_shadows_an_op_already_registered(tmp_path):
    """Another library defined torch.ops.custom.npu_mla_prolog_v3 first: mlaops leaves it alone."""
    registered, skipped = _probe("""
        import torch
        lib = torch.library.Library("custom", "FRAGMENT")
        lib.define("npu_mla_prolog_v3(Tensor x) -> Tensor")
    """, tmp_path)
    import_ok = "custom::npu_mla_prolog_v3" in registered  # the other library's op
    assert import_ok and "custom::npu_mla_prolog_v3" in skipped
