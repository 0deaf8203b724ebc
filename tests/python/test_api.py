"""The torch_npu argument conventions, npu_format_cast, errors and dtype plumbing."""
import inspect

import ml_dtypes
import numpy as np
import pytest
import torch

import mlaops
from reference import f64, nz_to_nd
from test_mla_prolog import make_inputs

# torch_npu's keyword-only parameters and defaults (op_plugin_functions.yaml)
PROLOG_KW = dict(dequant_scale_x=None, dequant_scale_w_dq=None, dequant_scale_w_uq_qr=None,
                 dequant_scale_w_dkv_kr=None, quant_scale_ckv=None, quant_scale_ckr=None,
                 smooth_scales_cq=None, rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05,
                 cache_mode="PA_BSND")
PROLOG_POS = ["token_x", "weight_dq", "weight_uq_qr", "weight_uk", "weight_dkv_kr", "rmsnorm_gamma_cq",
              "rmsnorm_gamma_ckv", "rope_sin", "rope_cos", "cache_index", "kv_cache", "kr_cache"]
FIA_V1_KW = dict(pse_shift=None, atten_mask=None, actual_seq_lengths=None, actual_seq_lengths_kv=None,
                 dequant_scale1=None, quant_scale1=None, dequant_scale2=None, quant_scale2=None,
                 quant_offset2=None, antiquant_scale=None, antiquant_offset=None, key_antiquant_scale=None,
                 key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None,
                 block_table=None, query_padding_size=None, kv_padding_size=None, key_shared_prefix=None,
                 value_shared_prefix=None, actual_shared_prefix_len=None, query_rope=None, key_rope=None,
                 key_rope_antiquant_scale=None, num_heads=1, scale=1.0, pre_tokens=2147483647,
                 next_tokens=2147483647, input_layout="BSH", num_key_value_heads=0, sparse_mode=0,
                 inner_precise=0, block_size=0, antiquant_mode=0, key_antiquant_mode=0,
                 value_antiquant_mode=0, softmax_lse_flag=False)
FIA_V2_KW = dict(query_rope=None, key_rope=None, pse_shift=None, atten_mask=None, actual_seq_qlen=None,
                 actual_seq_kvlen=None, block_table=None, dequant_scale_query=None, dequant_scale_key=None,
                 dequant_offset_key=None, dequant_scale_value=None, dequant_offset_value=None,
                 dequant_scale_key_rope=None, quant_scale_out=None, quant_offset_out=None, quant_scale_p=None,
                 learnable_sink=None, num_query_heads=1, num_key_value_heads=0, softmax_scale=1.0,
                 pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH", sparse_mode=0,
                 block_size=0, query_quant_mode=0, key_quant_mode=0, value_quant_mode=0, inner_precise=0,
                 return_softmax_lse=False, query_dtype=None, key_dtype=None, value_dtype=None,
                 query_rope_dtype=None, key_rope_dtype=None, key_shared_prefix_dtype=None,
                 value_shared_prefix_dtype=None, dequant_scale_query_dtype=None, dequant_scale_key_dtype=None,
                 dequant_scale_value_dtype=None, dequant_scale_key_rope_dtype=None, out_dtype=None)

# npu_mla_prolog_v3 (op_plugin_functions.yaml)
PROLOG_V3_POS = PROLOG_POS[:9] + ["kv_cache", "kr_cache"]
PROLOG_V3_KW = dict(cache_index=None, **{k: v for k, v in PROLOG_KW.items() if not k.startswith(("rms", "cache"))},
                    actual_seq_len=None, k_nope_clip_alpha=None, rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05,
                    cache_mode="PA_BSND", query_norm_flag=False, weight_quant_mode=0, kv_cache_quant_mode=0,
                    query_quant_mode=0, ckvkr_repo_mode=0, quant_scale_repo_mode=0, tile_size=128,
                    qc_qr_scale=1.0, kc_scale=1.0, token_x_dtype=None, weight_dq_dtype=None,
                    weight_uq_qr_dtype=None, weight_dkv_kr_dtype=None, kv_cache_dtype=None)
# torch_npu.atb.npu_mla_preprocess's positional order; vllm-ascend's mla_preprocess keywords
PREPROCESS_POS = ["input", "gamma0", "beta0", "wdqkv", "descale0", "gamma1", "beta1", "wuq", "descale1", "gamma2",
                  "cos", "sin", "wuk", "kv_cache", "kv_cache_rope", "slotmapping"]
PREPROCESS_KW = dict(quant_scale0=None, quant_offset0=None, bias0=None, quant_scale1=None, quant_offset1=None,
                     bias1=None, ctkv_scale=None, q_nope_scale=None, cache_mode="krope_ctkv",
                     quant_mode="per_tensor_quant_asymm", enable_inner_out=False, q_out0=None, kv_cache_out0=None,
                     q_out1=None, kv_cache_out1=None, inner_out=None)

# npu_incre_flash_attention / npu_prompt_flash_attention (op_plugin_functions.yaml)
IFA_KW = dict(padding_mask=None, atten_mask=None, pse_shift=None, actual_seq_lengths=None, antiquant_scale=None,
              antiquant_offset=None, block_table=None, dequant_scale1=None, quant_scale1=None, dequant_scale2=None,
              quant_scale2=None, quant_offset2=None, kv_padding_size=None, num_heads=1, scale_value=1.0,
              input_layout="BSH", num_key_value_heads=0, block_size=0, inner_precise=1)
PFA_KW = dict(padding_mask=None, atten_mask=None, pse_shift=None, actual_seq_lengths=None, deq_scale1=None,
              quant_scale1=None, deq_scale2=None, quant_scale2=None, quant_offset2=None, num_heads=1, scale_value=1.0,
              pre_tokens=2147473647, next_tokens=0, input_layout="BSH", num_key_value_heads=0,
              actual_seq_lengths_kv=None, sparse_mode=0)


def _check_signature(fn, positional, keywords):
    params = list(inspect.signature(fn).parameters.values())
    pos = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    kw = {p.name: p.default for p in params if p.kind == p.KEYWORD_ONLY}
    assert pos == positional
    assert list(kw) == list(keywords)
    assert kw == keywords


def test_signatures():
    _check_signature(mlaops.npu_mla_prolog, PROLOG_POS, PROLOG_KW)
    _check_signature(mlaops.npu_mla_prolog_v2, PROLOG_POS, PROLOG_KW)
    _check_signature(mlaops.npu_fused_infer_attention_score, ["query", "key", "value"], FIA_V1_KW)
    _check_signature(mlaops.npu_fused_infer_attention_score_v2, ["query", "key", "value"], FIA_V2_KW)
    _check_signature(mlaops.npu_mla_prolog_v3, PROLOG_V3_POS, PROLOG_V3_KW)
    _check_signature(mlaops.npu_mla_preprocess, PREPROCESS_POS, PREPROCESS_KW)
    _check_signature(mlaops.npu_incre_flash_attention, ["query", "key", "value"], IFA_KW)
    _check_signature(mlaops.npu_prompt_flash_attention, ["query", "key", "value"], PFA_KW)
    _check_signature(mlaops.npu_format_cast, ["input", "acl_format", "customize_dtype"], {})
    _check_signature(mlaops.npu_format_cast_, ["input", "acl_format"], {})


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int8])
@pytest.mark.parametrize("shape", [(64, 96), (40, 70), (3, 32, 48)])
def test_format_cast_round_trip(dtype, shape):
    """torch: the logical shape with NZ storage [..., C1, R1, 16, c0] and back; numpy: the storage
    array itself (the same bytes) and back to the padded matrix."""
    w = (torch.randn(shape) * 50).to(dtype)
    nz = mlaops.npu_format_cast(w, 29)
    c0 = 32 if dtype == torch.int8 else 16
    k, n = shape[-2:]
    storage = tuple(shape[:-2]) + (-(-n // c0), -(-k // 16), 16, c0)
    assert nz.shape == w.shape and nz.stride() == w.stride() and mlaops.get_npu_format(nz) == 29
    assert nz.nz_storage().shape == storage
    assert torch.equal(nz, w) and torch.equal(mlaops.npu_format_cast(nz, 2), w)
    if len(shape) == 2:  # the reference's own NZ reading agrees
        np.testing.assert_array_equal(nz_to_nd(f64(nz.nz_storage()), k, n), f64(w))
    wn = w.view(torch.int16).numpy().view(ml_dtypes.bfloat16) if dtype == torch.bfloat16 else w.numpy()
    sn = mlaops.npu_format_cast(wn, 29)
    np.testing.assert_array_equal(f64(sn), f64(nz.nz_storage()))
    back = mlaops.npu_format_cast(sn, 2)
    np.testing.assert_array_equal(f64(back[..., :k, :n]), f64(w))
    assert not f64(back[..., k:, :]).any() and not f64(back[..., :, n:]).any()
    assert mlaops.npu_format_cast(nz, 29) is nz and mlaops.npu_format_cast(w, 2) is w


def test_format_cast_rejects_other_formats():
    with pytest.raises(ValueError, match="acl_format"):
        mlaops.npu_format_cast(torch.zeros(16, 16, dtype=torch.bfloat16), 3)


def _snapshot(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def test_prolog_error_carries_status_and_message_and_writes_nothing():
    args, kw, _, _ = make_inputs(7, 4)
    args = list(args)
    args[5] = torch.ones(80, dtype=torch.bfloat16)  # rmsnorm_gamma_cq: 80 against Hcq 64
    before = _snapshot(args)
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_prolog_v2(*args, **kw)
    assert e.value.status == 161002
    assert e.value.message.startswith("mla_prolog: ") and "MP-" in e.value.message
    assert str(e.value).startswith("[161002] ")
    for a, b in zip(args, before):
        assert torch.equal(a, b)  # caches untouched


def test_prolog_bad_cache_mode():
    args, kw, _, _ = make_inputs(7, 4)
    kw["cache_mode"] = "PA_XYZ"
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_prolog_v2(*args, **kw)
    assert e.value.status == 161002 and "cache_mode" in e.value.message


def test_prolog_bad_cache_index_value():
    args, kw, _, _ = make_inputs(8, 4)
    args = list(args)
    args[9] = torch.tensor([0, 1, 2, 10 ** 6], dtype=torch.int64)
    kv = args[10].clone()
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_prolog_v2(*args, **kw)
    assert e.value.status == 161002 and "cache_index" in e.value.message.lower().replace("cacheindex", "cache_index")
    assert torch.equal(args[10], kv)


def test_fia_errors():
    q = torch.randn(2, 1, 64, dtype=torch.bfloat16)
    k = torch.randn(2, 8, 64, dtype=torch.bfloat16)
    with pytest.raises(mlaops.Error) as e:  # numHeads does not divide H
        mlaops.npu_fused_infer_attention_score(q, k, k, num_heads=3)
    assert e.value.status == 161002 and "FIA-08" in e.value.message
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_fused_infer_attention_score(q, k, k, num_heads=2, input_layout="XYZ")
    assert e.value.status == 161002 and "input_layout" in e.value.message
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_fused_infer_attention_score_v2(q, k, k, num_query_heads=2, out_dtype=1)
    assert e.value.status == 161002 and "out_dtype" in e.value.message
    with pytest.raises(mlaops.Error) as e:  # key dtype differs from query
        mlaops.npu_fused_infer_attention_score(q, k.half(), k.half(), num_heads=2)
    assert e.value.status == 161002


def test_bad_argument_types():
    q = torch.randn(2, 1, 64, dtype=torch.bfloat16)
    with pytest.raises(TypeError):
        mlaops.npu_fused_infer_attention_score(q, "not a tensor", q, num_heads=2)
    with pytest.raises(TypeError):  # complex has no aclDataType mlaops takes
        mlaops.npu_fused_infer_attention_score(q, torch.zeros(2, 1, 64, dtype=torch.complex64), q, num_heads=2)


def test_non_contiguous_input_views_are_read_as_their_values():
    q = torch.randn(2, 1, 128, dtype=torch.bfloat16)[:, :, ::2]  # strided
    k = torch.randn(2, 8, 64, dtype=torch.bfloat16)
    out, _ = mlaops.npu_fused_infer_attention_score(q, k, k, num_heads=2)
    want, _ = mlaops.npu_fused_infer_attention_score(q.contiguous(), k, k, num_heads=2)
    assert out.shape == (2, 1, 64) and torch.equal(out, want)


def test_runtime_helpers():
    assert mlaops.__version__
    assert mlaops.active_isa() in ("scalar", "avx2", "avx512")
    n = mlaops.num_threads()
    mlaops.set_num_threads(1)
    assert mlaops.num_threads() == 1
    mlaops.set_num_threads(0)
    assert mlaops.num_threads() == n


def test_drop_in_module():
    import mlaops.torch_npu as torch_npu
    for name in ("npu_mla_prolog", "npu_mla_prolog_v2", "npu_fused_infer_attention_score",
                 "npu_fused_infer_attention_score_v2", "npu_format_cast", "npu_mla_prolog_v3",
                 "npu_mla_prolog_v3_functional", "_npu_fused_infer_attention_score_get_max_workspace",
                 "_npu_fused_infer_attention_score_v2_get_max_workspace", "npu_format_cast_", "get_npu_format",
                 "npu_incre_flash_attention", "npu_prompt_flash_attention"):
        assert getattr(torch_npu, name) is getattr(mlaops, name)
    assert torch_npu.atb.npu_mla_preprocess is mlaops.npu_mla_preprocess
    assert callable(torch_npu.npu_fused_infer_attention_score.out)
    with pytest.raises(AttributeError):
        torch_npu.npu_rotary_mul  # not provided
