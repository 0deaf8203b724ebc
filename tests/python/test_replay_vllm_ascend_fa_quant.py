"""vllm-ascend's FA-quant MLA layer replayed as its public sources write it: MlaPrologV2 / V3 with
the W8A8 weights as process_weights_after_loading leaves them, then FIA v2 over the int8 NZ cache
(eager and captured), against the float64 references. The sources ([mla_v1], [mla_v1_mid],
[device_op]) and the conventions: test_replay_vllm_ascend.py."""
import numpy as np
import pytest
import torch

import mlaops
import mlaops.torch_npu as torch_npu
from compare import assert_cascade, assert_close, assert_fia_out, assert_int8
from reference import mla_prolog, scatter_cache
from replay_util import (BS, DR, HCKV, HCQ, HE, N, SCALE, bf, dynamic_quant, f64, mla_paged_ref)
from replay_vllm_ascend import (ACL_FORMAT_FRACTAL_NZ, CTX, FusedLayer, check_decode, decode_step, v2_decode_kwargs)


def _prolog_reference(layer, x_i8, dsx, cos, sin, dsw_dq, dsw_uq, dsw_dkv, qs_ckv):
    """reference.mla_prolog for full quant (+ KV quant when qs_ckv is given) on the logical
    int8 weights."""
    w = layer.fused.w.astype(np.float64)
    return mla_prolog(x=f64(x_i8), wdq=w[:, :HCQ], wuqqr=layer.q_proj.w.astype(np.float64), wuk=f64(layer.W_UK_T),
                      wdkvkr=w[:, HCQ:], gcq=f64(layer.gamma_cq), gckv=f64(layer.gamma_ckv), sin=f64(sin),
                      cos=f64(cos), dsw_uqqr=f64(dsw_uq), qs_ckv=qs_ckv, full=(f64(dsx).reshape(-1, 1), f64(dsw_dq),
                                                                                f64(dsw_dkv)))


def _fa_quant_forward_decode(layer, pages, q_nope, q_pe, dequant_scale_q_nope, capture):
    """[mla_v1] _forward_decode, the FA-quant branch (not A5): BSND_NBSD over the int8 NZ cache
    viewed with c0 32 and the rope cache with c0 16, extra_fa_args with the dequant scales."""
    num_tokens = q_nope.size(0)
    block_size = BS
    nz_fmt_last_dim = 16
    k_nope = pages.kv.view(-1, 1, HCKV // (nz_fmt_last_dim * 2), block_size, nz_fmt_last_dim * 2)
    k_pe = pages.kr.view(-1, 1, DR // nz_fmt_last_dim, block_size, nz_fmt_last_dim)
    input_layout = "BSND_NBSD"
    q_nope = q_nope.view(num_tokens, 1, N, -1).contiguous()
    q_pe = q_pe.view(num_tokens, 1, N, -1).contiguous()
    dequant_scale_q_nope = dequant_scale_q_nope.view(num_tokens, 1, N)
    attn_output_shape = (N, num_tokens, 1, HCKV)
    common_kwargs = {
        "query_rope": q_pe,
        "key_rope": k_pe,
        "num_query_heads": N,
        "num_key_value_heads": 1,
        "input_layout": input_layout,
        "atten_mask": None,
        "sparse_mode": 0,
        "softmax_scale": SCALE,
        "block_table": pages.block_table(),
        "block_size": block_size,
        "actual_seq_qlen": None,
        "actual_seq_kvlen": [c + 1 for c in CTX],
    }
    extra_fa_args = {
        "query_quant_mode": 3,
        "key_quant_mode": 0,
        "value_quant_mode": 0,
        "dequant_scale_query": dequant_scale_q_nope,
        "dequant_scale_key": layer.fak_descale_float,
        "dequant_scale_value": layer.fak_descale_float,
    }
    common_kwargs.update(extra_fa_args)
    if not capture:
        attn_output, _ = torch_npu.npu_fused_infer_attention_score_v2(q_nope, k_nope, k_nope, **common_kwargs)
        return attn_output
    workspace = torch_npu._npu_fused_infer_attention_score_v2_get_max_workspace(q_nope, k_nope, k_nope,
                                                                                **common_kwargs)
    attn_output = torch.empty(attn_output_shape, dtype=q_pe.dtype)
    softmax_lse = torch.empty(num_tokens, dtype=q_pe.dtype)
    torch_npu.npu_fused_infer_attention_score_v2.out(q_nope, k_nope, k_nope, **common_kwargs, workspace=workspace,
                                                     out=[attn_output, softmax_lse])
    return attn_output


def _check_fa_quant_attention(out, layer, pages, q_i8, q_rope, dq):
    """MLA full quant (docs/ops/fused_infer_attention_score.md): dq1 = dequant_scale_query *
    keyScale; the score is scale * dq1 * (q_int8 . k_int8 + q_rope . k_rope), V = k_int8 * keyScale;
    computed on the query the prolog produced (the attention's own inputs)."""
    ks = float(layer.fak_descale_float[0])
    dq1 = f64(dq).reshape(-1, N, 1, 1) * ks
    q = f64(q_i8).reshape(-1, N, 1, HCKV) * dq1
    qr = f64(q_rope).reshape(-1, N, 1, DR) * dq1
    r, _ = mla_paged_ref(q, qr, pages, [c + 1 for c in CTX], kv_scale=ks)
    assert out.shape == (N, len(CTX), 1, HCKV) and out.dtype == torch.bfloat16
    assert_fia_out(f64(out).transpose(1, 0, 2, 3), r)


def _check_prolog_caches(pages, before_kv, before_kr, kv_rows, kr_rows, slots, int8):
    """The caches after the prolog: the new rows at the slots in the NZ blocks (c0 32 for int8,
    16 for bf16; int8 rows within 1, at most 2 % of them off), every other byte as before."""
    c0 = 32 if int8 else 16
    kv = f64(pages.kv)
    written = scatter_cache(np.zeros_like(before_kv), np.ones_like(kv_rows), slots, c0) != 0
    kv_want = scatter_cache(before_kv, kv_rows, slots, c0)
    assert np.array_equal(kv[~written], before_kv[~written]), "kv_cache: bytes outside the new rows changed"
    if int8:
        assert_int8(kv[written], kv_want[written], what="kv_cache rows")
    else:
        assert_close(kv[written], kv_want[written], what="kv_cache rows")
    assert_close(f64(pages.kr), scatter_cache(before_kr, kr_rows, slots, 16), what="kr_cache")


@pytest.mark.parametrize("capture", [False, True])
def test_fa_quant_prolog_v2_then_fia_v2(capture):
    """[device_op] BaseDeviceAdaptor.mla_preprocess_only_decode, FA-quant layer: npu_dynamic_quant
    (computed here) of the hidden states, then torch_npu.npu_mla_prolog_v2 with every tensor
    positional as written (weights from [mla_v1_mid] _process_weights_for_fused_fa_quant: NZ
    slices of the fused W8A8 weight made contiguous, q_proj's NZ weight, scales viewed (1, -1)
    as fp32, quant_kscale (1, Hckv)), the int64 slot mapping, the int8 PA_NZ cache; then
    [mla_v1] _forward_decode's FA-quant FIA v2 (eager, or captured with the v2 workspace getter
    and .out)."""
    rng = np.random.default_rng(21 + capture)
    atten_obj = FusedLayer(rng)
    # _process_weights_for_fused_fa_quant (not A5)
    atten_obj.gamma1 = atten_obj.gamma_cq
    atten_obj.gamma2 = atten_obj.gamma_ckv
    atten_obj.wu_q = atten_obj.q_proj.weight
    atten_obj.wd_q = atten_obj.fused.weight[..., :HCQ].contiguous()
    atten_obj.wd_kv = atten_obj.fused.weight[..., HCQ:].contiguous()
    atten_obj.dequant_scale_w_uq_qr = atten_obj.q_proj.weight_scale_t.view(1, -1).to(torch.float)
    atten_obj.dequant_scale_w_dq = atten_obj.fused.weight_scale_t[:HCQ].contiguous().view(1, -1).to(torch.float)
    atten_obj.dequant_scale_w_dkv_kr = atten_obj.fused.weight_scale_t[HCQ:].contiguous().view(1, -1).to(torch.float)
    assert mlaops.get_npu_format(atten_obj.wd_q) == 29 and mlaops.get_npu_format(atten_obj.wd_kv) == 29
    pages, slots, dcos, dsin, slot_mapping = decode_step(rng, int8_cache=True, nz=True)
    before_kv, before_kr = f64(pages.kv), f64(pages.kr)
    bsz = len(CTX)
    hidden_states = bf(rng, bsz + 2, HE)[:bsz]
    cos_shape = dcos.shape
    cos = dcos.view(cos_shape[0], cos_shape[-1])
    sin = dsin.view(cos_shape[0], cos_shape[-1])
    decode_k_nope, decode_k_pe = pages.kv, pages.kr
    quantized_x, pertoken_scale = dynamic_quant(hidden_states)
    decode_q_nope, decode_q_pe, decode_k_nope, decode_k_pe, dequant_scale_q_nope = torch_npu.npu_mla_prolog_v2(
        quantized_x,
        atten_obj.wd_q,
        atten_obj.wu_q,
        atten_obj.W_UK_T,
        atten_obj.wd_kv,
        atten_obj.gamma1,
        atten_obj.gamma2,
        sin,
        cos,
        slot_mapping[:bsz].to(torch.int64),
        decode_k_nope,
        decode_k_pe,
        dequant_scale_x=pertoken_scale.view(-1, 1),
        dequant_scale_w_dq=atten_obj.dequant_scale_w_dq,
        dequant_scale_w_uq_qr=atten_obj.dequant_scale_w_uq_qr,
        dequant_scale_w_dkv_kr=atten_obj.dequant_scale_w_dkv_kr,
        quant_scale_ckv=atten_obj.quant_kscale,
        cache_mode="PA_NZ",
    )
    assert decode_k_nope is pages.kv and decode_k_pe is pages.kr
    assert decode_q_nope.dtype == torch.int8 and dequant_scale_q_nope.shape == (bsz, N, 1)
    q_i8, qr, kv_rows, kr_rows, dqs = _prolog_reference(
        atten_obj, quantized_x, pertoken_scale, cos, sin, atten_obj.dequant_scale_w_dq,
        atten_obj.dequant_scale_w_uq_qr, atten_obj.dequant_scale_w_dkv_kr, f64(atten_obj.quant_kscale))
    assert_int8(decode_q_nope, q_i8, what="query")
    assert_close(dequant_scale_q_nope.reshape(bsz, N), dqs, rtol=1e-3, atol_rms=0, max_mean_rel=1e-3, min_cos=0.999,
                 what="dequant_scale_q_nope")
    assert_cascade(decode_q_pe, qr, ulps=4, what="query_rope")
    _check_prolog_caches(pages, before_kv, before_kr, kv_rows, kr_rows, slots, int8=True)
    out = _fa_quant_forward_decode(atten_obj, pages, decode_q_nope, decode_q_pe, dequant_scale_q_nope, capture)
    _check_fa_quant_attention(out, atten_obj, pages, decode_q_nope, decode_q_pe, dequant_scale_q_nope)


# vllm-ascend slices its (1, Hckv) quant_kscale to (1, 1) for V3's per-tensor KV quant (its
# comment: "quant_kscale is one scalar broadcast to (1, Hckv), so slice out the single per-tensor
# value"); the library takes (1), (1, 1) and (1, Hckv) there (docs/ops/mla_prolog.md).
@pytest.mark.parametrize("fa_quant", [True, False])
def test_prolog_v3_only_decode_then_fia_v2(fa_quant):
    """[mla_v1] AscendMLAImpl.mla_preprocess_only_decode (not A5): weights from
    _process_weights_for_fused (NZ slices of the fused W8A8 weight, .contiguous(), npu_format_cast
    to NZ; scales .to(float).unsqueeze(0)), npu_dynamic_quant (computed here), then
    torch_npu.npu_mla_prolog_v3 with every argument a keyword, weight_quant_mode 2; the FA-quant
    layer with kv_cache_quant_mode 1, query_quant_mode 1, quant_scale_ckv = quant_kscale[:, :1]
    (shape (1, 1)) and PA_NZ; the MLAPO layer (not FA quant, enable_kv_nz off) with PA_BSND and a
    bf16 cache. Then _forward_decode's FIA v2 (BSND_NBSD FA quant / BNSD_NBSD)."""
    rng = np.random.default_rng(31 + fa_quant)
    impl = FusedLayer(rng)
    impl.fa_quant_layer, impl.enable_kv_nz = fa_quant, False
    # _process_weights_for_fused (not native, not A5)
    fused_weight = impl.fused.weight
    weight_uq_qr = impl.q_proj.weight
    impl.weight_dq = fused_weight[..., :HCQ].contiguous()
    impl.weight_dkv_kr = fused_weight[..., HCQ:].contiguous()
    impl.weight_uq_qr = weight_uq_qr.contiguous()
    impl.weight_dq = torch_npu.npu_format_cast(impl.weight_dq, ACL_FORMAT_FRACTAL_NZ)
    impl.weight_uq_qr = torch_npu.npu_format_cast(impl.weight_uq_qr, ACL_FORMAT_FRACTAL_NZ)
    impl.weight_dkv_kr = torch_npu.npu_format_cast(impl.weight_dkv_kr, ACL_FORMAT_FRACTAL_NZ)
    impl.dequant_scale_w_uq_qr = impl.q_proj.weight_scale_t.to(torch.float).unsqueeze(0)
    weight_scale = impl.fused.weight_scale_t
    impl.dequant_scale_w_dq = weight_scale[:HCQ].to(torch.float).unsqueeze(0)
    impl.dequant_scale_w_dkv_kr = weight_scale[HCQ:].to(torch.float).unsqueeze(0)
    impl.mlapo_W_UK_T = impl.W_UK_T
    pages, slots, dcos, dsin, slot_mapping = decode_step(rng, int8_cache=fa_quant, nz=fa_quant)
    before_kv, before_kr = f64(pages.kv), f64(pages.kr)
    bsz = len(CTX)
    cache_index = slot_mapping[:bsz].to(torch.int64)
    kv_cache = (pages.kv, pages.kr)
    decode_k_nope, decode_k_pe = kv_cache[0], kv_cache[1]
    hidden_states = bf(rng, bsz + 2, HE)[:bsz]
    cos_shape = dcos.shape
    quantized_x, dynamic_scale = dynamic_quant(hidden_states)
    dequant_scale_x = dynamic_scale.view(-1, 1)
    cos = dcos.view(cos_shape[0], cos_shape[-1])
    sin = dsin.view(cos_shape[0], cos_shape[-1])
    prolog_op = torch_npu.npu_mla_prolog_v3
    cache_mode = "PA_NZ" if (impl.fa_quant_layer or impl.enable_kv_nz) else "PA_BSND"
    weight_quant_mode = 2
    quant_scale_ckv = impl.quant_kscale[:, :1] if impl.fa_quant_layer else None
    decode_q_nope, decode_q_pe, dequant_scale_q_nope, _, _ = prolog_op(
        kv_cache=decode_k_nope,
        kr_cache=decode_k_pe,
        token_x=quantized_x,
        weight_dq=impl.weight_dq,
        weight_uq_qr=impl.weight_uq_qr,
        weight_uk=impl.mlapo_W_UK_T,
        weight_dkv_kr=impl.weight_dkv_kr,
        rmsnorm_gamma_cq=impl.gamma_cq,
        rmsnorm_gamma_ckv=impl.gamma_ckv,
        rope_sin=sin,
        rope_cos=cos,
        cache_index=cache_index,
        dequant_scale_x=dequant_scale_x,
        dequant_scale_w_dq=impl.dequant_scale_w_dq,
        dequant_scale_w_uq_qr=impl.dequant_scale_w_uq_qr,
        dequant_scale_w_dkv_kr=impl.dequant_scale_w_dkv_kr,
        cache_mode=cache_mode,
        query_quant_mode=1 if impl.fa_quant_layer else 0,
        weight_quant_mode=weight_quant_mode,
        kv_cache_quant_mode=1 if impl.fa_quant_layer else 0,
        quant_scale_ckv=quant_scale_ckv,
    )
    decode_q_nope = decode_q_nope.view(bsz, N, HCKV)
    decode_q_pe = decode_q_pe.view(bsz, N, -1)
    ref = _prolog_reference(impl, quantized_x, dynamic_scale, cos, sin, impl.dequant_scale_w_dq,
                            impl.dequant_scale_w_uq_qr, impl.dequant_scale_w_dkv_kr,
                            f64(impl.quant_kscale[:, :1]) if fa_quant else None)
    if fa_quant:
        q_i8, qr, kv_rows, kr_rows, dqs = ref
        assert decode_q_nope.dtype == torch.int8
        assert_int8(decode_q_nope, q_i8, what="query")
        assert_close(dequant_scale_q_nope.reshape(bsz, N), dqs, rtol=1e-3, atol_rms=0, max_mean_rel=1e-3,
                     min_cos=0.999, what="dequant_scale_q_nope")
        assert_cascade(decode_q_pe, qr, ulps=4, what="query_rope")
        _check_prolog_caches(pages, before_kv, before_kr, kv_rows, kr_rows, slots, int8=True)
        out = _fa_quant_forward_decode(impl, pages, decode_q_nope, decode_q_pe, dequant_scale_q_nope, capture=False)
        _check_fa_quant_attention(out, impl, pages, decode_q_nope, decode_q_pe, dequant_scale_q_nope)
        return
    q_ref, qr, kv_rows, kr_rows = ref
    assert decode_q_nope.dtype == torch.bfloat16 and dequant_scale_q_nope.shape == (1,)
    assert_cascade(decode_q_nope, q_ref, ulps=4, what="query")
    assert_cascade(decode_q_pe, qr, ulps=4, what="query_rope")
    assert_close(f64(pages.kv), scatter_cache(before_kv, kv_rows, slots, None), what="kv_cache")
    assert_close(f64(pages.kr), scatter_cache(before_kr, kr_rows, slots, None), what="kr_cache")
    q_nope, k_nope, common_kwargs, _ = v2_decode_kwargs("BNSD_NBSD", pages, decode_q_nope, decode_q_pe,
                                                         pages.block_table(), [c + 1 for c in CTX])
    attn_output, _ = torch_npu.npu_fused_infer_attention_score_v2(q_nope, k_nope, k_nope, **common_kwargs)
    check_decode(attn_output, "NBSD", decode_q_nope, decode_q_pe, pages, [c + 1 for c in CTX], 1)
