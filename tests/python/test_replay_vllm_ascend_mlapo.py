"""vllm-ascend's fused MlaPreprocess (mlapo) replayed as its public sources write it: the weight
preprocessing of _process_weights_for_fused_mlapo step by step, then torch.ops._C_ascend's
mla_preprocess in mla_preprocess_only_decode and sfa_preprocess_with_mlapo, against the float64
reference. The sources ([mla_v1_mid], [device_op], [utils]) and the conventions:
test_replay_vllm_ascend.py."""
import numpy as np
import pytest
import torch

import mlaops.torch_npu as torch_npu
from compare import assert_close
from reference_preprocess import mla_preprocess as mlapo_reference
from replay_util import (BS, D, DR, HCKV, HCQ, HE, N, assert_mlapo_outputs, bf, f64, nz_tiles, rope_rows_deinterleaved)
from replay_vllm_ascend import CTX, FusedLayer, decode_step


def _process_weights_for_fused_mlapo(impl, act_dtype=torch.bfloat16):
    """[mla_v1_mid] AscendMLAImpl._process_weights_for_fused_mlapo, step by step on the NZ W8A8
    weights ([utils] trans_rope_weight / transdata are replay_util.rope_rows_deinterleaved /
    nz_tiles). Also keeps the logical [rows, K] matrices (before the tiling) for the reference."""
    q_lora_rank, kv_lora_rank, qk_rope_head_dim = HCQ, HCKV, DR
    kv_a_proj_wt = impl.fused.weight.data[..., q_lora_rank:].contiguous()
    q_a_proj_wt = impl.fused.weight.data[..., :q_lora_rank].contiguous()
    kv_a_proj_wt = kv_a_proj_wt.t().contiguous()
    kv_a_proj_wt = rope_rows_deinterleaved(kv_a_proj_wt, qk_rope_head_dim)
    kv_a_proj_wt = kv_a_proj_wt.t().contiguous()
    wd_qkv = torch.cat((kv_a_proj_wt, q_a_proj_wt), dim=-1)
    wd_qkv = wd_qkv.t().contiguous()
    impl.wd_qkv_logical = wd_qkv
    wd_qkv = nz_tiles(wd_qkv).unsqueeze(0).contiguous()
    impl.wd_qkv = torch_npu.npu_format_cast(wd_qkv, 29)

    def per_channel(vec):  # the deq_scale / quant_bias handling: kv part rope-reordered, then q part
        kv_part = vec[q_lora_rank:].contiguous()
        q_part = vec[:q_lora_rank].contiguous()
        kv_part = kv_part.reshape(kv_lora_rank + qk_rope_head_dim, -1).contiguous()
        kv_part = rope_rows_deinterleaved(kv_part, qk_rope_head_dim)
        kv_part = kv_part.view(kv_lora_rank + qk_rope_head_dim).contiguous()
        return torch.cat((kv_part, q_part), dim=-1).contiguous()

    impl.deq_scale_qkv = per_channel(impl.fused.deq_scale)
    impl.quant_bias_qkv = per_channel(impl.fused.quant_bias)
    wu_q = impl.q_proj.weight.data
    wu_q = wu_q.t().reshape(N, D + DR, -1)
    wu_q = rope_rows_deinterleaved(wu_q, qk_rope_head_dim)
    wu_q = wu_q.reshape(N * (D + DR), -1)
    impl.wu_q_logical = wu_q
    wu_q = nz_tiles(wu_q).unsqueeze(0).contiguous()
    impl.wu_q = torch_npu.npu_format_cast(wu_q, 29)
    for name, src in (("qb_deq_scl", impl.q_proj.deq_scale), ("qb_qt_bias", impl.q_proj.quant_bias)):
        v = src.data.reshape(N, D + DR, -1)
        v = rope_rows_deinterleaved(v, qk_rope_head_dim)
        setattr(impl, name, v.reshape(N * (D + DR)))
    impl.gamma1 = impl.gamma_cq
    impl.beta1 = impl.beta_cq
    impl.gamma2 = impl.gamma_ckv
    impl.quant_scale0 = impl.fused.input_scale.data
    impl.quant_offset0 = impl.fused.input_offset.data
    impl.quant_scale1 = impl.q_proj.input_scale.data
    impl.quant_offset1 = impl.q_proj.input_offset.data
    impl.ctkv_scale = torch.tensor([1], dtype=act_dtype)
    impl.q_nope_scale = torch.tensor([1], dtype=act_dtype)


def _mlapo_layer(rng):
    impl = FusedLayer(rng)
    for layer in (impl.fused, impl.q_proj):  # static W8A8: deq_scale fp32 (bf16 model), quant_bias int32
        layer.deq_scale = torch.from_numpy(layer.deq_scale)
        layer.quant_bias = torch.from_numpy(layer.quant_bias)
    _process_weights_for_fused_mlapo(impl)
    return impl


def _mlapo_ref(impl, hidden_states, cos, sin):
    p = {"quant": "per_tensor"}
    for i, (descale, bias, qs, qo) in enumerate(((impl.deq_scale_qkv, impl.quant_bias_qkv, impl.quant_scale0,
                                                  impl.quant_offset0),
                                                 (impl.qb_deq_scl, impl.qb_qt_bias, impl.quant_scale1,
                                                  impl.quant_offset1))):
        p.update({f"descale{i}": f64(descale), f"bias{i}": f64(bias), f"quant_scale{i}": f64(qs),
                  f"quant_offset{i}": f64(qo)})
    return mlapo_reference(f64(hidden_states), None, None, f64(impl.wd_qkv_logical), f64(impl.gamma1),
                           f64(impl.beta1), f64(impl.wu_q_logical), f64(impl.gamma2), f64(cos), f64(sin),
                           f64(impl.W_UK_T), p, HCKV, DR)


@pytest.mark.parametrize("enable_kv_nz", [False, True])
def test_c_ascend_mla_preprocess_only_decode(enable_kv_nz):
    """[device_op] BaseDeviceAdaptor.mla_preprocess_only_decode, not FA quant:
    torch.ops._C_ascend.mla_preprocess with the tensors positional and the rest by keyword,
    quant_mode "per_tensor_quant_asymm", cache_mode "krope_ctkv" or "nzcache" (enable_kv_nz) over
    the caches as allocated ([blocks, BS, 1, W]), the int64 slot mapping slice, the caller's q
    outputs, the caches as kv_cache_out0 / 1, enable_inner_out False with inner_out
    torch.tensor([]); the weights from _process_weights_for_fused_mlapo."""
    rng = np.random.default_rng(41 + enable_kv_nz)
    atten_obj = _mlapo_layer(rng)
    atten_obj.enable_kv_nz = enable_kv_nz
    pages, slots, dcos, dsin, slot_mapping = decode_step(rng, int8_cache=False, nz=enable_kv_nz)
    before = (f64(pages.kv), f64(pages.kr))
    bsz = len(CTX)
    hidden_states = bf(rng, bsz + 2, HE)[:bsz]
    cos_shape = dcos.shape
    cos = dcos.view(cos_shape[0], cos_shape[-1])
    sin = dsin.view(cos_shape[0], cos_shape[-1])
    decode_k_nope, decode_k_pe = pages.kv, pages.kr
    decode_q_nope = torch.empty((hidden_states.shape[0], atten_obj.W_UK_T.shape[0], decode_k_nope.shape[-1]),
                                dtype=hidden_states.dtype)
    decode_q_pe = torch.empty((hidden_states.shape[0], atten_obj.W_UK_T.shape[0], decode_k_pe.shape[-1]),
                              dtype=hidden_states.dtype)
    torch.ops._C_ascend.mla_preprocess(
        hidden_states,
        atten_obj.wd_qkv,
        atten_obj.deq_scale_qkv,
        atten_obj.gamma1,
        atten_obj.beta1,
        atten_obj.wu_q,
        atten_obj.qb_deq_scl,
        atten_obj.gamma2,
        cos,
        sin,
        atten_obj.W_UK_T,
        decode_k_nope,
        decode_k_pe,
        slot_mapping[:bsz],
        quant_scale0=atten_obj.quant_scale0,
        quant_offset0=atten_obj.quant_offset0,
        bias0=atten_obj.quant_bias_qkv,
        quant_scale1=atten_obj.quant_scale1,
        quant_offset1=atten_obj.quant_offset1,
        bias1=atten_obj.qb_qt_bias,
        ctkv_scale=atten_obj.ctkv_scale,
        q_nope_scale=atten_obj.q_nope_scale,
        cache_mode="nzcache" if atten_obj.enable_kv_nz else "krope_ctkv",
        quant_mode="per_tensor_quant_asymm",
        q_out0=decode_q_nope,
        kv_cache_out0=decode_k_nope,
        q_out1=decode_q_pe,
        kv_cache_out1=decode_k_pe,
        enable_inner_out=False,
        inner_out=torch.tensor([]),
    )
    decode_q_nope = decode_q_nope.view(bsz, N, HCKV)
    decode_q_pe = decode_q_pe.view(bsz, N, -1)
    r = _mlapo_ref(atten_obj, hidden_states, cos, sin)
    assert_mlapo_outputs(decode_q_nope, pages.kv, decode_q_pe, pages.kr, before, r, slots, enable_kv_nz)


def test_c_ascend_sfa_preprocess_with_mlapo_inner_out():
    """[device_op] BaseDeviceAdaptor.sfa_preprocess_with_mlapo: the same op with
    enable_inner_out True and q_c [T, q_lora_rank] as inner_out (cache_mode "krope_ctkv")."""
    rng = np.random.default_rng(45)
    sfa_impl = _mlapo_layer(rng)
    pages, slots, dcos, dsin, slot_mapping = decode_step(rng, int8_cache=False, nz=False)
    before = (f64(pages.kv), f64(pages.kr))
    num_input_tokens = len(CTX)
    hidden_states = bf(rng, num_input_tokens, HE)
    cos, sin = dcos.view(num_input_tokens, DR), dsin.view(num_input_tokens, DR)
    k_nope, k_pe = pages.kv, pages.kr
    ql_nope = torch.empty((num_input_tokens, sfa_impl.W_UK_T.shape[0], k_nope.shape[-1]), dtype=hidden_states.dtype)
    q_pe = torch.empty((num_input_tokens, sfa_impl.W_UK_T.shape[0], k_pe.shape[-1]), dtype=hidden_states.dtype)
    q_c = torch.empty((num_input_tokens, HCQ), dtype=hidden_states.dtype)
    torch.ops._C_ascend.mla_preprocess(
        hidden_states,
        sfa_impl.wd_qkv,
        sfa_impl.deq_scale_qkv,
        sfa_impl.gamma1,
        sfa_impl.beta1,
        sfa_impl.wu_q,
        sfa_impl.qb_deq_scl,
        sfa_impl.gamma2,
        cos,
        sin,
        sfa_impl.W_UK_T,
        k_nope,
        k_pe,
        slot_mapping[:num_input_tokens],
        quant_scale0=sfa_impl.quant_scale0,
        quant_offset0=sfa_impl.quant_offset0,
        bias0=sfa_impl.quant_bias_qkv,
        quant_scale1=sfa_impl.quant_scale1,
        quant_offset1=sfa_impl.quant_offset1,
        bias1=sfa_impl.qb_qt_bias,
        ctkv_scale=sfa_impl.ctkv_scale,
        q_nope_scale=sfa_impl.q_nope_scale,
        cache_mode="krope_ctkv",
        quant_mode="per_tensor_quant_asymm",
        enable_inner_out=True,
        q_out0=ql_nope,
        kv_cache_out0=k_nope,
        q_out1=q_pe,
        kv_cache_out1=k_pe,
        inner_out=q_c,
    )
    r = _mlapo_ref(sfa_impl, hidden_states, cos, sin)
    assert_mlapo_outputs(ql_nope, pages.kv, q_pe, pages.kr, before, r, slots, False)
    assert_close(q_c, r["q_down"], rtol=4 * 2.0 ** -7, what="inner_out (q_c)")
