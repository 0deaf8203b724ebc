"""torch.ops.mlaops.*: the operators as torch custom operators (torch.library), with the
mutated caches declared in the schema and fake (meta) implementations so that torch.compile
and torch.export trace them (docs/python.md). Registered when mlaops is imported with torch
present.

The schemas are torch_npu's (generated from the Python signatures, so names, order and
defaults cannot drift), with two differences custom operators require: the caches are marked
mutated (``Tensor(a!) kv_cache``), and since an operator's outputs may not alias its inputs,
the prolog operators return only their new tensors: ``npu_mla_prolog`` (query, query_rope),
``npu_mla_prolog_v2`` (query, query_rope, dequant_scale_q_nope), ``npu_mla_prolog_v3`` its five;
``npu_mla_preprocess`` mutates kv_cache and kv_cache_rope in place (``Tensor(b!)? kv_cache_rope``:
None in cacheMode 0), has no out keywords, and returns (q_out0, q_out1, inner_out), the ones a mode
does not produce as (0,) tensors.
"""
import inspect

import torch

from ._args import INT_LISTS
from ._fia import _out_dtype, _shapes, npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2
from ._preprocess import npu_mla_preprocess
from ._prolog import npu_mla_prolog, npu_mla_prolog_v2, npu_mla_prolog_v3
from ._tensors import dtype_name

_MUTATED = {"kv_cache": "a", "kr_cache": "b", "kv_cache_rope": "b"}
# positional tensors a mode may leave out (npu_mla_preprocess: the dequant scales of the
# unquantized path, the rope cache of cacheMode 0)
_OPTIONAL_POSITIONAL = {"descale0", "descale1", "kv_cache_rope"}
# npu_mla_preprocess's caller-provided outputs: the custom operator returns new tensors instead
_OUT_KEYWORDS = {"q_out0", "kv_cache_out0", "q_out1", "kv_cache_out1", "inner_out"}


def _schema(fn, returns):
    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.name in _OUT_KEYWORDS:
            continue
        if p.kind == p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.default is inspect.Parameter.empty:
            alias = f"({_MUTATED[p.name]}!)" if p.name in _MUTATED else ""
            opt = "?" if p.name in _OPTIONAL_POSITIONAL else ""
            parts.append(f"Tensor{alias}{opt} {p.name}")
            continue
        d = p.default
        if d is None:
            t = "SymInt[]?" if p.name in INT_LISTS else "int?" if p.name.endswith("_dtype") else "Tensor?"
            parts.append(f"{t} {p.name}=None")
        elif isinstance(d, bool):
            parts.append(f"bool {p.name}={d}")
        elif isinstance(d, int):
            parts.append(f"int {p.name}={d}")
        elif isinstance(d, float):
            parts.append(f"float {p.name}={d!r}")
        else:
            parts.append(f'str {p.name}="{d}"')
    return "(" + ", ".join(parts) + ") -> (" + ", ".join(["Tensor"] * returns) + ")"


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


def _register():
    ops = {}

    def prolog_v1(*args, **kw):
        q, qr, _, _ = npu_mla_prolog(*args, **kw)
        return q, qr

    def prolog_v2(*args, **kw):
        q, qr, _, _, dq = npu_mla_prolog_v2(*args, **kw)
        return q, qr, dq

    def fia_v1(*args, **kw):
        return npu_fused_infer_attention_score(*args, **kw)

    def fia_v2(*args, **kw):
        return npu_fused_infer_attention_score_v2(*args, **kw)

    def preprocess(*args, **kw):
        q0, _, q1, _, inner = npu_mla_preprocess(*args, **kw)
        (_, dt1), (_, dti) = _preprocess_shapes(args[0], args[5], args[9], args[10], args[12], args[3], kw)[1:]
        if q1 is None:
            q1 = args[0].new_empty((0,), dtype=dt1)
        if inner is None:
            inner = args[0].new_empty((0,), dtype=dti)
        return q0, q1, inner

    # (name, signature, implementation, outputs, mutated (in the schema), fake)
    table = [("npu_mla_prolog", npu_mla_prolog, prolog_v1, 2, ("kv_cache", "kr_cache"), _prolog_fake(False)),
             ("npu_mla_prolog_v2", npu_mla_prolog_v2, prolog_v2, 3, ("kv_cache", "kr_cache"), _prolog_fake(True)),
             ("npu_mla_prolog_v3", npu_mla_prolog_v3, npu_mla_prolog_v3, 5, ("kv_cache", "kr_cache"),
              _prolog_v3_fake),
             ("npu_mla_preprocess", npu_mla_preprocess, preprocess, 3, ("kv_cache", "kv_cache_rope"),
              _preprocess_fake),
             ("npu_fused_infer_attention_score", npu_fused_infer_attention_score, fia_v1, 2, (), _fia_fake(False)),
             ("npu_fused_infer_attention_score_v2", npu_fused_infer_attention_score_v2, fia_v2, 2, (),
              _fia_fake(True))]
    lib = torch.library.Library("mlaops", "DEF")  # noqa: TOR901 - kwarg-only tensors need the low-level API
    for name, sig, impl, returns, _, fake in table:
        lib.define(name + _schema(sig, returns))
        lib.impl(name, impl, "CPU")
        torch.library.register_fake(f"mlaops::{name}", fake, lib=lib)
        ops[name] = getattr(torch.ops.mlaops, name)
    ops["_lib"] = lib
    return ops


OPS = _register()
