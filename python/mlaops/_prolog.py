"""npu_mla_prolog / npu_mla_prolog_v2 / npu_mla_prolog_v3 with torch_npu's signatures (docs/python.md,
docs/ops/mla_prolog.md)."""
from . import _mlaops
from ._args import checked
from ._errors import Error, check
from ._tensors import spec, kind_of, dtype_name, empty, zeros, is_torch, ACL_FORMAT_NZ, ACL_FORMAT_ND

_CACHE_MODES = {"PA_BSND": 0, "PA_NZ": 1, "PA_BLK_BSND": 2, "PA_BLK_NZ": 3, "BSND": 4, "TND": 5}


def _weight(w):
    # npu_format_cast(w, 29) gives the 4-D [C1, R1, 16, c0] storage; a 2-D weight is ND.
    return spec(w, ACL_FORMAT_NZ if w is not None and w.ndim == 4 else ACL_FORMAT_ND)


def _tensors(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq, rmsnorm_gamma_ckv,
             rope_sin, rope_cos, cache_index, kv_cache, kr_cache, query, query_rope, opt, **more):
    """The extension module's tensor dict of every prolog version; `opt`: the optional inputs,
    `more`: version-specific entries (already specs)."""
    t = {
        "token_x": spec(token_x), "weight_dq": _weight(weight_dq), "weight_uq_qr": _weight(weight_uq_qr),
        "weight_uk": spec(weight_uk), "weight_dkv_kr": _weight(weight_dkv_kr),
        "rmsnorm_gamma_cq": spec(rmsnorm_gamma_cq), "rmsnorm_gamma_ckv": spec(rmsnorm_gamma_ckv),
        "rope_sin": spec(rope_sin), "rope_cos": spec(rope_cos), "cache_index": spec(cache_index),
        "kv_cache": spec(kv_cache), "kr_cache": spec(kr_cache),
        "query_out": spec(query), "query_rope_out": spec(query_rope),
    }
    t.update({name: spec(value) for name, value in opt.items()})
    t.update(more)
    return t


def _run(fn, token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
         rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache, kr_cache, opt,
         rmsnorm_epsilon_cq, rmsnorm_epsilon_ckv, cache_mode, v2):
    if cache_mode not in _CACHE_MODES:
        raise Error(161002, f"{fn}: cache_mode: must be one of {', '.join(_CACHE_MODES)}; got \"{cache_mode}\"")
    kind = kind_of(token_x)
    lead = tuple(token_x.shape[:-1])  # (T,) or (B, S)
    n, hckv = int(weight_uk.shape[0]), int(weight_uk.shape[-1])
    dr = int(rope_sin.shape[-1])
    full_kv_quant = dtype_name(token_x) == "int8" and dtype_name(kv_cache) == "int8"
    query = empty(kind, lead + (n, hckv), "int8" if full_kv_quant else "bf16")
    query_rope = empty(kind, lead + (n, dr), "bf16")
    t = 1
    for s in lead:
        t *= int(s)
    dq_nope = None
    if v2:  # (T, N, 1) in full quant + KV quant, else the (1) placeholder
        dq_nope = empty(kind, (t, n, 1), "fp32") if full_kv_quant else zeros(kind, (1,), "fp32")
    tensors = _tensors(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                       rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache, kr_cache, query, query_rope,
                       opt, dequant_scale_q_nope_out=spec(dq_nope) if full_kv_quant else None)
    check(_mlaops.mla_prolog(tensors, float(rmsnorm_epsilon_cq), float(rmsnorm_epsilon_ckv),
                             _CACHE_MODES[cache_mode]))
    if v2:
        return query, query_rope, kv_cache, kr_cache, dq_nope
    return query, query_rope, kv_cache, kr_cache


@checked("MP-01", optional=("cache_index",))  # cache_index: absent in BSND / TND (MP-26)
def npu_mla_prolog(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                   rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache, kr_cache, *,
                   dequant_scale_x=None, dequant_scale_w_dq=None, dequant_scale_w_uq_qr=None,
                   dequant_scale_w_dkv_kr=None, quant_scale_ckv=None, quant_scale_ckr=None,
                   smooth_scales_cq=None, rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05,
                   cache_mode="PA_BSND"):
    """torch_npu.npu_mla_prolog: returns (query, query_rope, kv_cache_out, kr_cache_out).

    kv_cache and kr_cache are updated in place and returned as the two cache outputs.
    """
    opt = dict(dequant_scale_x=dequant_scale_x, dequant_scale_w_dq=dequant_scale_w_dq,
               dequant_scale_w_uq_qr=dequant_scale_w_uq_qr, dequant_scale_w_dkv_kr=dequant_scale_w_dkv_kr,
               quant_scale_ckv=quant_scale_ckv, quant_scale_ckr=quant_scale_ckr,
               smooth_scales_cq=smooth_scales_cq)
    return _run("npu_mla_prolog", token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr,
                rmsnorm_gamma_cq, rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache,
                kr_cache, opt, rmsnorm_epsilon_cq, rmsnorm_epsilon_ckv, cache_mode, v2=False)


@checked("MP-01", optional=("cache_index",))
def npu_mla_prolog_v2(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                      rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache, kr_cache, *,
                      dequant_scale_x=None, dequant_scale_w_dq=None, dequant_scale_w_uq_qr=None,
                      dequant_scale_w_dkv_kr=None, quant_scale_ckv=None, quant_scale_ckr=None,
                      smooth_scales_cq=None, rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05,
                      cache_mode="PA_BSND"):
    """torch_npu.npu_mla_prolog_v2: returns (query, query_rope, kv_cache_out, kr_cache_out,
    dequant_scale_q_nope).

    dequant_scale_q_nope is fp32 (T, N, 1) in full quant with an int8 kv_cache (query is then
    int8), else a (1,) zero tensor. kv_cache and kr_cache are updated in place.
    """
    opt = dict(dequant_scale_x=dequant_scale_x, dequant_scale_w_dq=dequant_scale_w_dq,
               dequant_scale_w_uq_qr=dequant_scale_w_uq_qr, dequant_scale_w_dkv_kr=dequant_scale_w_dkv_kr,
               quant_scale_ckv=quant_scale_ckv, quant_scale_ckr=quant_scale_ckr,
               smooth_scales_cq=smooth_scales_cq)
    return _run("npu_mla_prolog_v2", token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr,
                rmsnorm_gamma_cq, rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache,
                kr_cache, opt, rmsnorm_epsilon_cq, rmsnorm_epsilon_ckv, cache_mode, v2=True)


_V3_RESERVED = ("token_x_dtype", "weight_dq_dtype", "weight_uq_qr_dtype", "weight_dkv_kr_dtype", "kv_cache_dtype")


@checked("MP-01")
def npu_mla_prolog_v3(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                      rmsnorm_gamma_ckv, rope_sin, rope_cos, kv_cache, kr_cache, *, cache_index=None,
                      dequant_scale_x=None, dequant_scale_w_dq=None, dequant_scale_w_uq_qr=None,
                      dequant_scale_w_dkv_kr=None, quant_scale_ckv=None, quant_scale_ckr=None,
                      smooth_scales_cq=None, actual_seq_len=None, k_nope_clip_alpha=None,
                      rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05, cache_mode="PA_BSND",
                      query_norm_flag=False, weight_quant_mode=0, kv_cache_quant_mode=0, query_quant_mode=0,
                      ckvkr_repo_mode=0, quant_scale_repo_mode=0, tile_size=128, qc_qr_scale=1.0,
                      kc_scale=1.0, token_x_dtype=None, weight_dq_dtype=None, weight_uq_qr_dtype=None,
                      weight_dkv_kr_dtype=None, kv_cache_dtype=None):
    """torch_npu.npu_mla_prolog_v3: returns (query, query_rope, dequant_scale_q_nope, query_norm,
    dequant_scale_q_norm); kv_cache and kr_cache are updated in place.

    query is int8 with dequant_scale_q_nope fp32 (T, N, 1) when weight_quant_mode 2 and
    kv_cache_quant_mode 1, else bf16 with a (1,) zero dequant_scale_q_nope. With query_norm_flag,
    query_norm is the W_UQ_QR operand [T, Hcq] / [B, S, Hcq] (bf16 with weight_quant_mode 0, else
    int8 with its per-token dequant_scale_q_norm fp32 (T, 1)); outputs not produced are (1,) zero
    tensors. The mode tuple must match the tensors' dtypes (MP-20, MP-21 of
    docs/ops/mla_prolog.md); with kv_cache_quant_mode 1, quant_scale_ckv has shape (1). The reserved
    *_dtype overrides must be None.
    """
    fn = "npu_mla_prolog_v3"
    for name in _V3_RESERVED:
        v = locals()[name]
        if v is not None:
            raise Error(161002, f"{fn}: {name}: is not supported yet (reserved; the CPU backend takes the "
                                f"tensors' own dtypes); allowed None, got {v!r}")
    if cache_mode not in _CACHE_MODES:
        raise Error(161002, f"{fn}: cache_mode: must be one of {', '.join(_CACHE_MODES)}; got \"{cache_mode}\"")
    kind = kind_of(token_x)
    lead = tuple(int(s) for s in token_x.shape[:-1])
    t = 1
    for s in lead:
        t *= s
    n, hckv = int(weight_uk.shape[0]), int(weight_uk.shape[-1])
    dr, hcq = int(rope_sin.shape[-1]), int(rmsnorm_gamma_cq.shape[0])
    int8_query = int(weight_quant_mode) == 2 and int(kv_cache_quant_mode) == 1
    query = empty(kind, lead + (n, hckv), "int8" if int8_query else "bf16")
    query_rope = empty(kind, lead + (n, dr), "bf16")
    dq_nope = empty(kind, (t, n, 1), "fp32") if int8_query else zeros(kind, (1,), "fp32")
    quantized = int(weight_quant_mode) != 0
    query_norm = empty(kind, lead + (hcq,), "int8" if quantized else "bf16") if query_norm_flag else None
    dq_norm = empty(kind, (t, 1), "fp32") if query_norm_flag and quantized else None
    opt = dict(dequant_scale_x=dequant_scale_x, dequant_scale_w_dq=dequant_scale_w_dq,
               dequant_scale_w_uq_qr=dequant_scale_w_uq_qr, dequant_scale_w_dkv_kr=dequant_scale_w_dkv_kr,
               quant_scale_ckv=quant_scale_ckv, quant_scale_ckr=quant_scale_ckr, smooth_scales_cq=smooth_scales_cq)
    tensors = _tensors(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                       rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache, kr_cache, query, query_rope,
                       opt, dequant_scale_q_nope_out=spec(dq_nope) if int8_query else None,
                       query_norm_out=spec(query_norm), dequant_scale_q_norm_out=spec(dq_norm),
                       actual_seq_len=spec(actual_seq_len), k_nope_clip_alpha=spec(k_nope_clip_alpha))
    v3 = dict(op=fn, weight_quant_mode=int(weight_quant_mode), kv_cache_quant_mode=int(kv_cache_quant_mode),
              query_quant_mode=int(query_quant_mode), ckvkr_repo_mode=int(ckvkr_repo_mode),
              quant_scale_repo_mode=int(quant_scale_repo_mode), tile_size=int(tile_size),
              qc_qr_scale=float(qc_qr_scale), kc_scale=float(kc_scale))
    check(_mlaops.mla_prolog(tensors, float(rmsnorm_epsilon_cq), float(rmsnorm_epsilon_ckv),
                             _CACHE_MODES[cache_mode], v3))
    if query_norm is None:
        query_norm = zeros(kind, (1,), "fp32")
    if dq_norm is None:
        dq_norm = zeros(kind, (1,), "fp32")
    return query, query_rope, dq_nope, query_norm, dq_norm


@checked("MP-01", signature_of=npu_mla_prolog_v3)
def npu_mla_prolog_v3_functional(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                                 rmsnorm_gamma_ckv, rope_sin, rope_cos, kv_cache, kr_cache, **kwargs):
    """torch_npu.npu_mla_prolog_v3_functional: npu_mla_prolog_v3 on copies of the caches; returns
    its five outputs and the two updated caches (kv_cache and kr_cache are not modified)."""
    kv_new, kr_new = _copy(kv_cache), _copy(kr_cache)
    outs = npu_mla_prolog_v3(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                             rmsnorm_gamma_ckv, rope_sin, rope_cos, kv_new, kr_new, **kwargs)
    return outs + (kv_new, kr_new)


def _copy(x):
    return x.clone() if is_torch(x) else x.copy()
