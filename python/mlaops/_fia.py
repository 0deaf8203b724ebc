"""npu_fused_infer_attention_score / _v2 with torch_npu's signatures (docs/python.md,
docs/ops/fused_infer_attention_score.md)."""
import inspect

from . import _mlaops
from ._args import check_arguments, check_tensor, checked
from ._errors import Error, check
from ._tensors import spec, kind_of, dtype_name, empty, empty_bytes, zeros, host_ints

_LAYOUTS = {"BSH", "BSND", "BNSD", "TND", "NTD", "BSH_BNSD", "BSND_BNSD", "BNSD_BSND", "NTD_TND",
            "TND_NTD", "BSH_NBSD", "BSND_NBSD", "BNSD_NBSD"}


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _value_dim(value, layout_in, paged, kv_n):
    v = value[0]
    if paged:
        if v.ndim == 3:  # BnBsH [blockNum, blockSize, KV_N*V_D]
            return int(v.shape[2]) // kv_n
        if v.ndim == 5:  # NZ [blockNum, KV_N, V_D/c0, blockSize, c0]
            return int(v.shape[2]) * int(v.shape[4])
        return int(v.shape[-1])  # BnNBsD
    if layout_in == "BSH":
        return int(v.shape[-1]) // kv_n
    return int(v.shape[-1])


def _shapes(fn, query, value, layout, num_heads, kv_heads, paged):
    if layout not in _LAYOUTS:
        raise Error(161002, f"{fn}: input_layout: must be one of {', '.join(sorted(_LAYOUTS))}; got \"{layout}\"")
    lin, _, lout = layout.partition("_")
    lout = lout or lin
    n = int(num_heads)
    vd = _value_dim(value, lin, paged, int(kv_heads) or n)
    q = [int(s) for s in query.shape]
    if len(q) != {"BSH": 3, "BSND": 4, "BNSD": 4, "TND": 3, "NTD": 3}[lin]:
        return None, None  # the library rejects it with its own message
    b = s = t = 0
    if lin in ("BSH", "BSND"):
        b, s = q[0], q[1]
    elif lin == "BNSD":
        b, s = q[0], q[2]
    elif lin == "TND":
        t = q[0]
    else:
        t = q[1]
    out = {"BSH": (b, s, n * vd), "BSND": (b, s, n, vd), "BNSD": (b, n, s, vd), "NBSD": (n, b, s, vd),
           "TND": (t, n, vd), "NTD": (n, t, vd)}[lout]
    lse = (t, n, 1) if lin in ("TND", "NTD") else (b, n, s, 1)
    return out, lse


def _out_dtype(query, query_rope, quant_scale2):
    if quant_scale2 is not None:
        return "int8"
    if dtype_name(query) == "int8":
        return dtype_name(query_rope) if query_rope is not None else "fp16"
    return dtype_name(query)


def _run(fn, query, key, value, tensors, lens, attrs, out=None, workspace=None, plan_only=False):
    """Runs the operator into new outputs, or into out = [attention_out, softmax_lse] (the .out
    variants; softmax_lse is only written when the flag asks for it). plan_only: returns the
    planned workspace bytes instead."""
    kind = kind_of(query)
    key, value = _as_list(key), _as_list(value)
    if out is None:
        paged = tensors.get("block_table") is not None
        out_shape, lse_shape = _shapes(fn, query, value, attrs["input_layout"], attrs["num_heads"],
                                       attrs["num_key_value_heads"], paged)
        if out_shape is None:
            out_shape, lse_shape = (1,), (1,)
        res = empty(kind, out_shape, _out_dtype(query, tensors.get("query_rope"), tensors.get("quant_scale2")))
        lse = empty(kind, lse_shape, "fp32") if attrs["softmax_lse_flag"] else None
    else:
        if not isinstance(out, (list, tuple)) or len(out) != 2:
            raise TypeError(f"{fn}: out: expected [attention_out, softmax_lse]")
        res, lse = out
        check_tensor(fn, "out[0] (attention_out)", res, "FIA-01", True)
        if attrs["softmax_lse_flag"]:
            check_tensor(fn, "out[1] (softmax_lse)", lse, "FIA-01", True)
        else:
            lse = None  # a placeholder the caller passes; not written
        check_tensor(fn, "workspace", workspace, None, False)
    args = {name: spec(t) for name, t in tensors.items()}
    args["query"] = spec(query)
    args["key"] = [spec(k) for k in key]
    args["value"] = [spec(v) for v in value]
    args["attention_out"] = spec(res)
    args["softmax_lse"] = spec(lse)
    args["workspace"] = spec(workspace)
    status = _mlaops.fused_infer_attention_score(args, host_ints(lens[0]), host_ints(lens[1]),
                                                 host_ints(lens[2]), attrs, plan_only)
    check(status)
    if plan_only:
        return status[2]
    return res, lse


@checked("FIA-01")
def npu_fused_infer_attention_score(query, key, value, *, pse_shift=None, atten_mask=None,
                                    actual_seq_lengths=None, actual_seq_lengths_kv=None,
                                    dequant_scale1=None, quant_scale1=None, dequant_scale2=None,
                                    quant_scale2=None, quant_offset2=None, antiquant_scale=None,
                                    antiquant_offset=None, key_antiquant_scale=None,
                                    key_antiquant_offset=None, value_antiquant_scale=None,
                                    value_antiquant_offset=None, block_table=None,
                                    query_padding_size=None, kv_padding_size=None,
                                    key_shared_prefix=None, value_shared_prefix=None,
                                    actual_shared_prefix_len=None, query_rope=None, key_rope=None,
                                    key_rope_antiquant_scale=None, num_heads=1, scale=1.0,
                                    pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH",
                                    num_key_value_heads=0, sparse_mode=0, inner_precise=0, block_size=0,
                                    antiquant_mode=0, key_antiquant_mode=0, value_antiquant_mode=0,
                                    softmax_lse_flag=False):
    """torch_npu.npu_fused_infer_attention_score: returns (attention_out, softmax_lse).

    key / value: one tensor or a list of tensors (one per batch). softmax_lse is fp32
    (B, N, Q_S, 1) ((T, N, 1) for TND / NTD) when softmax_lse_flag, else a (1,) zero tensor.
    """
    out, lse = _v1(**locals())
    if lse is None:
        lse = zeros(kind_of(query), (1,), "fp32")
    return out, lse


def _v1(query, key, value, *, pse_shift, atten_mask, actual_seq_lengths, actual_seq_lengths_kv,
        dequant_scale1, quant_scale1, dequant_scale2, quant_scale2, quant_offset2, antiquant_scale,
        antiquant_offset, key_antiquant_scale, key_antiquant_offset, value_antiquant_scale,
        value_antiquant_offset, block_table, query_padding_size, kv_padding_size, key_shared_prefix,
        value_shared_prefix, actual_shared_prefix_len, query_rope, key_rope, key_rope_antiquant_scale,
        num_heads, scale, pre_tokens, next_tokens, input_layout, num_key_value_heads, sparse_mode,
        inner_precise, block_size, antiquant_mode, key_antiquant_mode, value_antiquant_mode,
        softmax_lse_flag, fn="npu_fused_infer_attention_score", **run):
    """The v1 keywords -> the operator's tensors and attributes; `run`: _run's out / workspace /
    plan_only."""
    tensors = dict(pse_shift=pse_shift, atten_mask=atten_mask, dequant_scale1=dequant_scale1,
                   quant_scale1=quant_scale1, dequant_scale2=dequant_scale2, quant_scale2=quant_scale2,
                   quant_offset2=quant_offset2, antiquant_scale=antiquant_scale,
                   antiquant_offset=antiquant_offset, key_antiquant_scale=key_antiquant_scale,
                   key_antiquant_offset=key_antiquant_offset, value_antiquant_scale=value_antiquant_scale,
                   value_antiquant_offset=value_antiquant_offset, block_table=block_table,
                   query_padding_size=query_padding_size, kv_padding_size=kv_padding_size,
                   key_shared_prefix=key_shared_prefix, value_shared_prefix=value_shared_prefix,
                   query_rope=query_rope, key_rope=key_rope, key_rope_antiquant_scale=key_rope_antiquant_scale)
    attrs = dict(num_heads=int(num_heads), scale=float(scale), pre_tokens=int(pre_tokens),
                 next_tokens=int(next_tokens), input_layout=str(input_layout),
                 num_key_value_heads=int(num_key_value_heads), sparse_mode=int(sparse_mode),
                 inner_precise=int(inner_precise), block_size=int(block_size),
                 antiquant_mode=int(antiquant_mode), softmax_lse_flag=bool(softmax_lse_flag),
                 key_antiquant_mode=int(key_antiquant_mode), value_antiquant_mode=int(value_antiquant_mode),
                 query_quant_mode=0)
    return _run(fn, query, key, value, tensors, (actual_seq_lengths, actual_seq_lengths_kv, actual_shared_prefix_len),
                attrs, **run)


@checked("FIA-01")
def npu_fused_infer_attention_score_v2(query, key, value, *, query_rope=None, key_rope=None,
                                       pse_shift=None, atten_mask=None, actual_seq_qlen=None,
                                       actual_seq_kvlen=None, block_table=None, dequant_scale_query=None,
                                       dequant_scale_key=None, dequant_offset_key=None,
                                       dequant_scale_value=None, dequant_offset_value=None,
                                       dequant_scale_key_rope=None, quant_scale_out=None,
                                       quant_offset_out=None, quant_scale_p=None, learnable_sink=None,
                                       num_query_heads=1, num_key_value_heads=0, softmax_scale=1.0,
                                       pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH",
                                       sparse_mode=0, block_size=0, query_quant_mode=0, key_quant_mode=0,
                                       value_quant_mode=0, inner_precise=0, return_softmax_lse=False,
                                       query_dtype=None, key_dtype=None, value_dtype=None,
                                       query_rope_dtype=None, key_rope_dtype=None,
                                       key_shared_prefix_dtype=None, value_shared_prefix_dtype=None,
                                       dequant_scale_query_dtype=None, dequant_scale_key_dtype=None,
                                       dequant_scale_value_dtype=None, dequant_scale_key_rope_dtype=None,
                                       out_dtype=None):
    """torch_npu.npu_fused_infer_attention_score_v2: returns (attention_out, softmax_lse).

    The keywords renamed from v1 map as torch_npu maps them (num_query_heads -> numHeads,
    softmax_scale -> scaleValue, dequant_scale_key -> keyAntiquantScale, quant_scale_out ->
    quantScale2, ...). softmax_lse is a (0,) tensor when return_softmax_lse is False. The
    reserved *_dtype overrides, quant_scale_p and dequant_scale_key_rope must be None.
    """
    out, lse = _v2(**locals())
    if lse is None:
        lse = empty(kind_of(query), (0,), "fp32")
    return out, lse


def _v2(query, key, value, *, query_rope, key_rope, pse_shift, atten_mask, actual_seq_qlen, actual_seq_kvlen,
        block_table, dequant_scale_query, dequant_scale_key, dequant_offset_key, dequant_scale_value,
        dequant_offset_value, dequant_scale_key_rope, quant_scale_out, quant_offset_out, quant_scale_p,
        learnable_sink, num_query_heads, num_key_value_heads, softmax_scale, pre_tokens, next_tokens,
        input_layout, sparse_mode, block_size, query_quant_mode, key_quant_mode, value_quant_mode,
        inner_precise, return_softmax_lse, query_dtype, key_dtype, value_dtype, query_rope_dtype,
        key_rope_dtype, key_shared_prefix_dtype, value_shared_prefix_dtype, dequant_scale_query_dtype,
        dequant_scale_key_dtype, dequant_scale_value_dtype, dequant_scale_key_rope_dtype, out_dtype,
        fn="npu_fused_infer_attention_score_v2", **run):
    """The v2 keywords -> the operator's tensors and attributes (as _v1)."""
    reserved = dict(quant_scale_p=quant_scale_p, dequant_scale_key_rope=dequant_scale_key_rope,
                    query_dtype=query_dtype, key_dtype=key_dtype, value_dtype=value_dtype,
                    query_rope_dtype=query_rope_dtype, key_rope_dtype=key_rope_dtype,
                    key_shared_prefix_dtype=key_shared_prefix_dtype,
                    value_shared_prefix_dtype=value_shared_prefix_dtype,
                    dequant_scale_query_dtype=dequant_scale_query_dtype,
                    dequant_scale_key_dtype=dequant_scale_key_dtype,
                    dequant_scale_value_dtype=dequant_scale_value_dtype,
                    dequant_scale_key_rope_dtype=dequant_scale_key_rope_dtype, out_dtype=out_dtype)
    for name, v in reserved.items():
        if v is not None:
            raise Error(161002, f"{fn}: {name}: is not supported yet (reserved; the CPU backend takes the "
                                f"tensors' own dtypes); allowed None, got {v!r}")
    tensors = dict(pse_shift=pse_shift, atten_mask=atten_mask, block_table=block_table,
                   quant_scale2=quant_scale_out, quant_offset2=quant_offset_out,
                   key_antiquant_scale=dequant_scale_key, key_antiquant_offset=dequant_offset_key,
                   value_antiquant_scale=dequant_scale_value, value_antiquant_offset=dequant_offset_value,
                   query_rope=query_rope, key_rope=key_rope, dequant_scale_query=dequant_scale_query,
                   learnable_sink=learnable_sink)
    attrs = dict(num_heads=int(num_query_heads), scale=float(softmax_scale), pre_tokens=int(pre_tokens),
                 next_tokens=int(next_tokens), input_layout=str(input_layout),
                 num_key_value_heads=int(num_key_value_heads), sparse_mode=int(sparse_mode),
                 inner_precise=int(inner_precise), block_size=int(block_size), antiquant_mode=0,
                 softmax_lse_flag=bool(return_softmax_lse), key_antiquant_mode=int(key_quant_mode),
                 value_antiquant_mode=int(value_quant_mode), query_quant_mode=int(query_quant_mode))
    return _run(fn, query, key, value, tensors, (actual_seq_qlen, actual_seq_kvlen, None), attrs, **run)


def _with_defaults(fn, kwargs):
    """fn's keyword defaults updated with the caller's keywords (TypeError for unknown ones)."""
    params = inspect.signature(fn).parameters
    unknown = set(kwargs) - set(params)
    if unknown:
        raise TypeError(f"{fn.__name__}() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    full = {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
    full.update(kwargs)
    return full


def _positional(fn, name, args, kwargs):
    """query, key, value given by position or by keyword (as torch_npu's callers do both), and
    fn's keywords with their defaults; the tensor arguments checked as fn checks them."""
    names = ("query", "key", "value")
    if len(args) > 3:
        raise TypeError(f"{fn.__name__}() takes 3 positional arguments but {len(args)} were given")
    vals = dict(zip(names, args))
    for n in names[len(args):]:
        if n not in kwargs:
            raise TypeError(f"{fn.__name__}() missing required argument: '{n}'")
        vals[n] = kwargs.pop(n)
    full = _with_defaults(fn, kwargs)
    check_arguments(name, "FIA-01", inspect.signature(fn), dict(vals, **full))
    return vals["query"], vals["key"], vals["value"], full


def _out_variant(fn, impl):
    def out_fn(*args, workspace=None, out, **kwargs):
        name = fn.__name__ + ".out"
        query, key, value, full = _positional(fn, name, args, kwargs)
        if out is None:  # (_run's out=None means "allocate")
            raise Error(161001, f"{name}: out: FIA-01 required tensor list is null; allowed "
                                f"[attention_out, softmax_lse], got None")
        res, lse = impl(query, key, value, **full, out=out, workspace=workspace, fn=name)
        return res, out[1]
    out_fn.__name__ = fn.__name__ + ".out"
    out_fn.__doc__ = (f"torch_npu.{fn.__name__}.out(query, key, value, *, <the same keywords>, workspace=None, "
                      "out=[attention_out, softmax_lse]): writes the result into the caller's tensors and returns "
                      "them. softmax_lse is written only when the LSE flag is set (else it may be any placeholder). "
                      "workspace (from the _get_max_workspace helper) is used when it is large enough.")
    return out_fn


def _workspace_getter(fn, impl, name):
    def get(*args, **kwargs):
        query, key, value, full = _positional(fn, name, args, kwargs)
        nbytes = impl(query, key, value, **full, plan_only=True, fn=name)
        return empty_bytes(kind_of(query), max(int(nbytes), 1))
    get.__name__ = name
    get.__doc__ = (f"torch_npu.{name}(<{fn.__name__}'s arguments>): a uint8 workspace tensor of the bytes the "
                   "operator plans for these arguments (at least 1), for the .out variant.")
    return get


npu_fused_infer_attention_score.out = _out_variant(npu_fused_infer_attention_score, _v1)
npu_fused_infer_attention_score_v2.out = _out_variant(npu_fused_infer_attention_score_v2, _v2)
_npu_fused_infer_attention_score_get_max_workspace = _workspace_getter(
    npu_fused_infer_attention_score, _v1, "_npu_fused_infer_attention_score_get_max_workspace")
_npu_fused_infer_attention_score_v2_get_max_workspace = _workspace_getter(
    npu_fused_infer_attention_score_v2, _v2, "_npu_fused_infer_attention_score_v2_get_max_workspace")
