"""The operators as torch custom operators (torch.library), registered when mlaops is imported
with torch present (docs/python.md "torch.ops"):

* ``torch.ops.mlaops.*``: mlaops' own namespace, made for torch.compile / torch.export: the
  mutated caches are declared (``Tensor(a!) kv_cache``), every operator has a fake (meta)
  implementation, and since an operator's outputs may not alias its inputs the prolog operators
  return only their new tensors: ``npu_mla_prolog`` (query, query_rope), ``npu_mla_prolog_v2``
  (query, query_rope, dequant_scale_q_nope), ``npu_mla_prolog_v3`` its five;
  ``npu_mla_preprocess`` mutates kv_cache and kv_cache_rope in place (``Tensor(b!)? kv_cache_rope``:
  None in cacheMode 0), has no out keywords, and returns (q_out0, q_out1, inner_out), the ones a
  mode does not produce as (0,) tensors.
* the names real code calls, with the vendors' schemas and return tuples: ``torch.ops.npu.*``
  (torch_npu's functions; sgl-kernel-npu's ``mla_preprocess``), ``torch.ops.custom.*`` (the CANN
  torch extension's ``npu_mla_prolog_v3`` / ``_functional``, which SGLang calls) and
  ``torch.ops._C_ascend.mla_preprocess`` (vllm-ascend's). Each is registered only while its real
  provider (torch_npu, sgl_kernel_npu, custom_ops, vllm_ascend) is neither imported nor
  installed and the name is free, so mlaops never shadows the real operator.

The schemas are generated from the Python signatures (names, order and defaults cannot drift).
Calls with NZ tensors (python/mlaops/_nz.py) reach the Python functions with the NZ tensors as
they are (``_nz.OWN_OPS``), so the operators read the NZ storage.
"""
import importlib
import importlib.util
import inspect
import sys
from collections import namedtuple

import torch

from ._args import INT_LISTS, NON_TENSOR_TYPES
from ._fia import (_out_dtype, _shapes, npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2,
                   _npu_fused_infer_attention_score_get_max_workspace,
                   _npu_fused_infer_attention_score_v2_get_max_workspace)
from ._flash import npu_incre_flash_attention, npu_prompt_flash_attention, _pfa_out_shape
from ._flash import _out_dtype as _flash_out_dtype
from ._format import get_npu_format, npu_format_cast, npu_format_cast_
from ._nz import OWN_OPS
from ._preprocess import npu_mla_preprocess
from ._prolog import npu_mla_prolog, npu_mla_prolog_v2, npu_mla_prolog_v3, npu_mla_prolog_v3_functional

# torch.ops.mlaops: the caches an operator writes in place
_MUTATED = {"kv_cache": "a", "kr_cache": "b", "kv_cache_rope": "b"}
# torch_npu's npu_mla_prolog_v3: its caches are Tensor(a!) / Tensor(b!)
_V3_MUTATED = {"kv_cache": "a", "kr_cache": "b"}
# the vendors' MlaPreprocess ops: the output tensors the caller passes are written
_OUT_MUTATED = {"q_out0": "a", "kv_cache_out0": "b", "q_out1": "c", "kv_cache_out1": "d", "inner_out": "e"}
# positional tensors the functions take as None (MlaPreprocess: the dequant scales of the
# unquantized path, the rope cache of cacheMode 0)
_OPTIONAL_POSITIONAL = {"descale0", "descale1", "kv_cache_rope"}
# vllm-ascend's mla_preprocess schema: beta1, cos and sin are Tensor? too
_C_ASCEND_TYPES = {"beta1": "Tensor?", "cos": "Tensor?", "sin": "Tensor?"}
# PromptFlashAttention's lengths are int[]? in torch_npu's schema (IFA / FIA: SymInt[]?)
_PFA_TYPES = {"actual_seq_lengths": "int[]?", "actual_seq_lengths_kv": "int[]?"}
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "int8": torch.int8}


def _schema(fn, returns, mutated=_MUTATED, drop=frozenset(), extra=(), types=None):
    """The schema of fn's Python signature: `returns` a number of Tensors or the return types,
    `mutated` parameter -> alias letter (Tensor(a!)), `drop` parameters left out, `extra` keyword
    parameters appended, `types` type overrides."""
    types = dict(NON_TENSOR_TYPES, **(types or {}))
    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.name in drop:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: a torch schema needs named parameters, not *{p.name}")
        if p.kind == p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        alias = f"({mutated[p.name]}!)" if p.name in mutated else ""
        d = p.default
        if d is inspect.Parameter.empty:
            if p.name in types:
                parts.append(f"{types[p.name]} {p.name}")
            else:
                opt = "?" if p.name in _OPTIONAL_POSITIONAL else ""
                parts.append(f"Tensor{alias}{opt} {p.name}")
        elif d is None:
            t = types.get(p.name) or ("SymInt[]?" if p.name in INT_LISTS else "int?" if p.name.endswith("_dtype")
                                      else f"Tensor{alias}?")
            parts.append(f"{t} {p.name}=None")
        elif isinstance(d, bool):
            parts.append(f"bool {p.name}={d}")
        elif isinstance(d, int):
            parts.append(f"int {p.name}={d}")
        elif isinstance(d, float):
            parts.append(f"float {p.name}={d!r}")
        else:
            parts.append(f'str {p.name}="{d}"')
    if extra:
        parts += ([] if star else ["*"]) + list(extra)
    rets = ["Tensor"] * returns if isinstance(returns, int) else list(returns)
    return "(" + ", ".join(parts) + ") -> (" + ", ".join(rets) + ")"


# --- fake (meta) implementations
def _prolog_fake(v2):
    def fake(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq, rmsnorm_gamma_ckv,
             rope_sin, rope_cos, cache_index, kv_cache, kr_cache, **kw):
        lead = tuple(token_x.shape[:-1])
        n, hckv, dr = weight_uk.shape[0], weight_uk.shape[-1], rope_sin.shape[-1]
        full_kv = token_x.dtype == torch.int8 and kv_cache.dtype == torch.int8
        q = token_x.new_empty(lead + (n, hckv), dtype=torch.int8 if full_kv else torch.bfloat16)
        qr = token_x.new_empty(lead + (n, dr), dtype=torch.bfloat16)
        if not v2:
            return q, qr
        t = 1
        for s in lead:
            t *= s
        dq = token_x.new_empty((t, n, 1) if full_kv else (1,), dtype=torch.float32)
        return q, qr, dq
    return fake


def _prolog_v3_fake(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                    rmsnorm_gamma_ckv, rope_sin, rope_cos, kv_cache, kr_cache, **kw):
    lead = tuple(token_x.shape[:-1])
    t = 1
    for s in lead:
        t *= s
    n, hckv, dr, hcq = weight_uk.shape[0], weight_uk.shape[-1], rope_sin.shape[-1], rmsnorm_gamma_cq.shape[0]
    w = kw.get("weight_quant_mode", 0)
    int8_query = w == 2 and kw.get("kv_cache_quant_mode", 0) == 1
    q = token_x.new_empty(lead + (n, hckv), dtype=torch.int8 if int8_query else torch.bfloat16)
    qr = token_x.new_empty(lead + (n, dr), dtype=torch.bfloat16)
    dq = token_x.new_empty((t, n, 1) if int8_query else (1,), dtype=torch.float32)
    flag = kw.get("query_norm_flag", False)
    if flag:
        qn = token_x.new_empty(lead + (hcq,), dtype=torch.int8 if w != 0 else torch.bfloat16)
    else:
        qn = token_x.new_empty((1,), dtype=torch.float32)
    dqn = token_x.new_empty((t, 1) if flag and w != 0 else (1,), dtype=torch.float32)
    return q, qr, dq, qn, dqn


def _preprocess_shapes(input, gamma1, gamma2, cos, wuk, wdqkv, kw):
    """((q_out0 shape, dtype), (q_out1 shape, dtype), (inner_out shape, dtype)) of the op; the outputs
    a mode does not produce are (0,) tensors."""
    from ._preprocess import _CACHE_MODES
    cm = _CACHE_MODES.get(kw.get("cache_mode", "krope_ctkv"), 1)
    t, n, hckv, dr, hcq = input.shape[0], wuk.shape[0], gamma2.shape[0], cos.shape[-1], gamma1.shape[0]
    dt = input.dtype
    q0 = ((t, n, hckv + dr) if cm == 0 else (t, n, hckv), torch.int8 if cm == 2 else dt)
    q1 = ((0,) if cm == 0 else (t, n, dr), dt)
    inner = ((t, hcq) if kw.get("enable_inner_out", False) else (0,), dt)
    return q0, q1, inner


def _preprocess_fake(input, gamma0, beta0, wdqkv, descale0, gamma1, beta1, wuq, descale1, gamma2, cos, sin, wuk,
                     kv_cache, kv_cache_rope, slotmapping, **kw):
    return tuple(input.new_empty(shape, dtype=dt)
                 for shape, dt in _preprocess_shapes(input, gamma1, gamma2, cos, wuk, wdqkv, kw))


def _fia_fake(v2):
    def fake(query, key, value, **kw):
        heads = kw.get("num_query_heads" if v2 else "num_heads", 1)
        flag = kw.get("return_softmax_lse" if v2 else "softmax_lse_flag", False)
        out_shape, lse_shape = _shapes("fake", query, [value], kw.get("input_layout", "BSH"), heads,
                                       kw.get("num_key_value_heads", 0), kw.get("block_table") is not None)
        qs = kw.get("quant_scale_out" if v2 else "quant_scale2")
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8}[
            _out_dtype(query, kw.get("query_rope"), qs)]
        out = query.new_empty(out_shape or (1,), dtype=dt)
        lse = query.new_empty(lse_shape if flag else ((0,) if v2 else (1,)), dtype=torch.float32)
        return out, lse
    return fake


def _ifa_fake(query, key, value, **kw):
    return query.new_empty(query.shape, dtype=_DTYPES[_flash_out_dtype(query, kw.get("quant_scale2"))])


def _pfa_fake(query, key, value, **kw):
    shape = _pfa_out_shape(query, value, kw.get("input_layout", "BSH"))
    return query.new_empty(shape, dtype=_DTYPES[_flash_out_dtype(query, kw.get("quant_scale2"))])


# --- implementations where the registered op differs from the Python function
def _prolog_v1_new(*args, **kw):
    q, qr, _, _ = npu_mla_prolog(*args, **kw)
    return q, qr


def _prolog_v2_new(*args, **kw):
    q, qr, _, _, dq = npu_mla_prolog_v2(*args, **kw)
    return q, qr, dq


def _preprocess_new(*args, **kw):
    q0, _, q1, _, inner = npu_mla_preprocess(*args, **kw)
    (_, dt1), (_, dti) = _preprocess_shapes(args[0], args[5], args[9], args[10], args[12], args[3], kw)[1:]
    if q1 is None:
        q1 = args[0].new_empty((0,), dtype=dt1)
    if inner is None:
        inner = args[0].new_empty((0,), dtype=dti)
    return q0, q1, inner


def _fia_out(fn):
    """torch_npu's ``.out`` overload: attention_out / softmax_lse as keywords (the Python
    function's ``.out`` takes out=[attention_out, softmax_lse])."""
    def impl(query, key, value, *, workspace=None, attention_out, softmax_lse, **kw):
        return fn.out(query, key, value, workspace=workspace, out=[attention_out, softmax_lse], **kw)
    return impl


_FIA_OUT_EXTRA = ("Tensor? workspace=None", "Tensor(a!) attention_out", "Tensor(b!) softmax_lse")
_FIA_OUT_RETURNS = ("Tensor(a!)", "Tensor(b!)")


def _lazy(module, name):
    """A function of an mlaops module that may not be in this build (None when absent)."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


# One registration: the op's namespace and name (with its overload), the Python function whose
# signature gives the schema, the implementation (None: the function itself), the returns, the
# mutated parameters, dropped parameters, extra keyword parameters, type overrides, the fake
# implementation, and the modules that provide the real op (never shadowed).
Op = namedtuple("Op", "ns name fn impl returns mutated drop extra types fake providers",
                defaults=(None, 1, _MUTATED, frozenset(), (), None, None, ()))

_TORCH_NPU = ("torch_npu",)


def _table():
    c_ascend = _lazy("mlaops._C_ascend", "mla_preprocess")
    sgl = _lazy("mlaops._sgl_kernel_npu", "mla_preprocess")
    ops = [
        # torch.ops.mlaops
        Op("mlaops", "npu_mla_prolog", npu_mla_prolog, _prolog_v1_new, 2, fake=_prolog_fake(False)),
        Op("mlaops", "npu_mla_prolog_v2", npu_mla_prolog_v2, _prolog_v2_new, 3, fake=_prolog_fake(True)),
        Op("mlaops", "npu_mla_prolog_v3", npu_mla_prolog_v3, None, 5, fake=_prolog_v3_fake),
        Op("mlaops", "npu_mla_preprocess", npu_mla_preprocess, _preprocess_new, 3, drop=frozenset(_OUT_MUTATED),
           fake=_preprocess_fake),
        Op("mlaops", "npu_fused_infer_attention_score", npu_fused_infer_attention_score, None, 2, {},
           fake=_fia_fake(False)),
        Op("mlaops", "npu_fused_infer_attention_score_v2", npu_fused_infer_attention_score_v2, None, 2, {},
           fake=_fia_fake(True)),
        Op("mlaops", "npu_incre_flash_attention", npu_incre_flash_attention, None, 1, {}, fake=_ifa_fake),
        Op("mlaops", "npu_prompt_flash_attention", npu_prompt_flash_attention, None, 1, {}, types=_PFA_TYPES,
           fake=_pfa_fake),
        # torch.ops.npu: torch_npu's functions, torch_npu's schemas and return tuples
        Op("npu", "npu_mla_prolog", npu_mla_prolog, None, 4, {}, providers=_TORCH_NPU),
        Op("npu", "npu_mla_prolog_v2", npu_mla_prolog_v2, None, 5, {}, providers=_TORCH_NPU),
        Op("npu", "npu_mla_prolog_v3", npu_mla_prolog_v3, None, 5, _V3_MUTATED, fake=_prolog_v3_fake,
           providers=_TORCH_NPU),
        Op("npu", "npu_mla_prolog_v3_functional", npu_mla_prolog_v3, npu_mla_prolog_v3_functional, 7, {},
           providers=_TORCH_NPU),
        Op("npu", "npu_fused_infer_attention_score", npu_fused_infer_attention_score, None, 2, {},
           fake=_fia_fake(False), providers=_TORCH_NPU),
        Op("npu", "npu_fused_infer_attention_score.out", npu_fused_infer_attention_score,
           _fia_out(npu_fused_infer_attention_score), _FIA_OUT_RETURNS, {}, extra=_FIA_OUT_EXTRA,
           providers=_TORCH_NPU),
        Op("npu", "npu_fused_infer_attention_score_v2", npu_fused_infer_attention_score_v2, None, 2, {},
           fake=_fia_fake(True), providers=_TORCH_NPU),
        Op("npu", "npu_fused_infer_attention_score_v2.out", npu_fused_infer_attention_score_v2,
           _fia_out(npu_fused_infer_attention_score_v2), _FIA_OUT_RETURNS, {}, extra=_FIA_OUT_EXTRA,
           providers=_TORCH_NPU),
        Op("npu", "_npu_fused_infer_attention_score_get_max_workspace", npu_fused_infer_attention_score,
           _npu_fused_infer_attention_score_get_max_workspace, 1, {}, providers=_TORCH_NPU),
        Op("npu", "_npu_fused_infer_attention_score_v2_get_max_workspace", npu_fused_infer_attention_score_v2,
           _npu_fused_infer_attention_score_v2_get_max_workspace, 1, {}, providers=_TORCH_NPU),
        Op("npu", "npu_incre_flash_attention", npu_incre_flash_attention, None, 1, {}, fake=_ifa_fake,
           providers=_TORCH_NPU),
        Op("npu", "npu_prompt_flash_attention", npu_prompt_flash_attention, None, 1, {}, types=_PFA_TYPES,
           fake=_pfa_fake, providers=_TORCH_NPU),
        Op("npu", "npu_format_cast", npu_format_cast, None, 1, {}, providers=_TORCH_NPU),
        Op("npu", "npu_format_cast_", npu_format_cast_, None, ("Tensor(a!)",), {"input": "a"},
           types={"acl_format": "Tensor"}, providers=_TORCH_NPU),
        Op("npu", "npu_format_cast_.acl_format", npu_format_cast_, None, ("Tensor(a!)",), {"input": "a"},
           providers=_TORCH_NPU),
        Op("npu", "get_npu_format", get_npu_format, None, ("int",), {}, providers=_TORCH_NPU),
        # torch.ops.custom: the CANN torch extension's MlaPrologV3 (SGLang's call)
        Op("custom", "npu_mla_prolog_v3", npu_mla_prolog_v3, None, 5, _V3_MUTATED, fake=_prolog_v3_fake,
           providers=("custom_ops",)),
        Op("custom", "npu_mla_prolog_v3_functional", npu_mla_prolog_v3, npu_mla_prolog_v3_functional, 7, {},
           providers=("custom_ops",)),
    ]
    if sgl is not None:  # sgl-kernel-npu's torch.ops.npu.mla_preprocess: 4 outputs
        ops.append(Op("npu", "mla_preprocess", sgl, None, ("Tensor?",) * 4, _OUT_MUTATED,
                      providers=("sgl_kernel_npu",)))
    if c_ascend is not None:  # vllm-ascend's torch.ops._C_ascend.mla_preprocess: 5 outputs
        ops.append(Op("_C_ascend", "mla_preprocess", c_ascend, None, ("Tensor?",) * 5, _OUT_MUTATED,
                      types=_C_ASCEND_TYPES, providers=("vllm_ascend",)))
    return ops


def provided(ns, name, providers):
    """True when the real op may exist: a provider module is imported or installed, or
    torch.ops.<ns>.<name> is already registered."""
    for module in providers:
        if module in sys.modules:
            return True
        try:
            if importlib.util.find_spec(module) is not None:
                return True
        except (ImportError, ValueError):
            return True
    return hasattr(getattr(torch.ops, ns), name.partition(".")[0])


def _register():
    ops, skipped, libs = {}, [], {}
    table = _table()
    # decided before any registration: an op registered here must not hide its own overloads
    taken = {(op.ns, op.name.partition(".")[0]) for op in table
             if op.ns != "mlaops" and provided(op.ns, op.name, op.providers)}
    for op in table:
        base, _, overload = op.name.partition(".")
        if (op.ns, base) in taken:
            skipped.append(f"{op.ns}::{op.name}")
            continue
        if op.ns not in libs:  # noqa: TOR901 - kwarg-only tensors need the low-level API
            libs[op.ns] = torch.library.Library(op.ns, "DEF" if op.ns == "mlaops" else "FRAGMENT")
        lib = libs[op.ns]
        impl = op.impl or op.fn
        lib.define(op.name + _schema(op.fn, op.returns, op.mutated, op.drop, op.extra, op.types))
        lib.impl(op.name, impl, "CPU")
        if op.fake is not None:
            torch.library.register_fake(f"{op.ns}::{op.name}", op.fake, lib=lib)
        handle = getattr(getattr(getattr(torch.ops, op.ns), base), overload or "default")
        OWN_OPS[handle] = impl
        ops[f"{op.ns}::{op.name}"] = handle
    ops["_libs"] = libs
    ops["_skipped"] = skipped
    return ops


OPS = _register()
