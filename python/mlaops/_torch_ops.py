"""torch.ops.mlaops.*: the operators as torch custom operators (torch.library), with the
mutated caches declared in the schema and fake (meta) implementations so that torch.compile
and torch.export trace them (docs/python.md). Registered when mlaops is imported with torch
present.

The schemas are torch_npu's (generated from the Python signatures, so names, order and
defaults cannot drift), with two differences custom operators require: the caches are marked
mutated (``Tensor(a!) kv_cache``), and since an operator's outputs may not alias its inputs,
the prolog operators return only their new tensors: ``npu_mla_prolog`` (query, query_rope),
``npu_mla_prolog_v2`` (query, query_rope, dequant_scale_q_nope).
"""
import inspect

import torch

from ._fia import _out_dtype, _shapes, npu_fused_infer_attention_score, npu_fused_infer_attention_score_v2
from ._prolog import npu_mla_prolog, npu_mla_prolog_v2
from ._tensors import dtype_name

_INT_LISTS = {"actual_seq_lengths", "actual_seq_lengths_kv", "actual_shared_prefix_len", "actual_seq_qlen",
              "actual_seq_kvlen"}
_MUTATED = {"kv_cache": "a", "kr_cache": "b"}


def _schema(fn, returns):
    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind == p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.default is inspect.Parameter.empty:
            alias = f"({_MUTATED[p.name]}!)" if p.name in _MUTATED else ""
            parts.append(f"Tensor{alias} {p.name}")
            continue
        d = p.default
        if d is None:
            t = "SymInt[]?" if p.name in _INT_LISTS else "int?" if p.name.endswith("_dtype") else "Tensor?"
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

    # (name, signature, implementation, outputs, mutated (in the schema), fake)
    table = [("npu_mla_prolog", npu_mla_prolog, prolog_v1, 2, ("kv_cache", "kr_cache"), _prolog_fake(False)),
             ("npu_mla_prolog_v2", npu_mla_prolog_v2, prolog_v2, 3, ("kv_cache", "kr_cache"), _prolog_fake(True)),
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
