"""SGLang's Ascend MLA call sites replayed as its public sources write them: the argument order,
the keywords, the tensors' views (the q / k splits of forward_extend, the transposed absorbed
query of the eager decode, the per-layer cache views of the KV pool, the NZ cache views), the
weight preprocessing (mla_preprocess.py's transposed / sliced / tiled weights, its
npu_format_cast through torch.ops.npu) and the namespaces (torch.ops.npu.*, torch.ops.custom.*,
torch_npu.* = `mlaops.torch_npu`), on CPU tensors at DeepSeek's head dims with few heads and
tokens, each checked against the float64 references (reference.py, reference_preprocess.py,
replay_util.py).

Sources read (the search index's stored copies):
  [backend]  sgl-project/sglang python/sglang/srt/hardware_backend/npu/attention/ascend_backend.py
             @ 009c68085e684e0cf2829d129ad026180c1f8c32 (forward_extend, forward_mtp,
             forward_decode_graph, forward_decode, AscendAttnMaskBuilder)
  [mlapre]   sgl-project/sglang python/sglang/srt/hardware_backend/npu/attention/mla_preprocess.py
             @ 03108f8afeeb0866581bc3d33142d250f341c265 (NPUFusedMLAPreprocess: preprocess_weights,
             mlaprolog_preprocess_weight, get_sin_cos, forward_mlapo, forward_mlaprolog)
  [npu_utils] sgl-project/sglang python/sglang/srt/hardware_backend/npu/utils.py
             @ 019f01320e873d16f45e336e09c72ed70b80f88a (npu_format_cast -> torch.ops.npu)
  [pool]     sgl-project/sglang python/sglang/srt/hardware_backend/npu/memory_pool_npu.py
             @ 003fca8027387a3d6565b2c08e497e3020ac6211 (NPUMLATokenToKVPool: per-layer views
             of [layers, pages + 1, page_size, 1, W], page 0 kept for padded tokens)
  [radix]    sgl-project/sglang python/sglang/srt/layers/radix_attention.py
             @ 0088621c02f1d374bc12a4e9ffb7ecbdd62abd40; the DeepseekV2 attention's q / k / v
             (forward_normal: k = torch.empty_like(q) filled by slices; forward_absorb:
             torch.bmm(q_nope.transpose(0, 1), w_kc).transpose(0, 1)) as the stored
             deepseek_v2.py versions write them.
Ops mlaops does not provide (the linear layers, rotary embedding, npu_ring_mla of the prefix
path) are computed by the tests in torch."""
import numpy as np
import pytest
import torch

import mlaops
import mlaops.torch_npu as torch_npu
from compare import assert_cascade, assert_close, assert_fia_out, assert_int8
from reference import bf16, mla_prolog, rms_norm, scatter_cache
from reference_preprocess import mla_preprocess as mlapo_reference
from replay_util import (BOOL_MASK, BS, D, DR, HCKV, HCQ, HE, N, SCALE, Pages, W8A8Linear, assert_mlapo_outputs, bf,
                         f64, mla_paged_ref, nz_tiles, rope_rows_deinterleaved, rope_tables, tnd_causal_ref,
                         tokens_bnsd)

SEQ = (130, 7, 60)  # decode requests: tokens in the cache before this step
PAGE = BS


def npu_format_cast(tensor, acl_format=29, disable_acl_format_weight=False):
    """[npu_utils] npu_format_cast on an NPU: the tensor as it is with
    SGLANG_NPU_DISABLE_ACL_FORMAT_WEIGHT or when the last two dims are not NZ-aligned, else
    torch.ops.npu.npu_format_cast(tensor, 29)."""
    if disable_acl_format_weight:
        return tensor
    k, n = tensor.shape[-2], tensor.shape[-1]
    aligned = k % 16 == 0 and n % (32 if tensor.dtype == torch.int8 else 16) == 0
    return torch.ops.npu.npu_format_cast(tensor, acl_format) if aligned else tensor


class MqaLayer:
    """What the backend reads of DeepseekV2's attn_mqa RadixAttention (absorbed: head_dim
    kv_lora_rank + qk_rope_head_dim, v_head_dim kv_lora_rank, one KV head)."""
    tp_q_head_num, tp_k_head_num, tp_v_head_num = N, 1, 1
    qk_head_dim, v_head_dim, scaling, layer_id = HCKV + DR, HCKV, SCALE, 1


class MhaLayer(MqaLayer):
    """attn_mha (forward_normal): qk_head_dim 192, v_head_dim 128, num_kv_heads = num_heads."""
    tp_k_head_num = tp_v_head_num = N
    qk_head_dim, v_head_dim = D + DR, D


def _pool(rng, lens, nz):
    """NPUMLATokenToKVPool for two layers; get_kv_buffer(1) gives views at a storage offset."""
    return Pages(rng, lens, nz=nz, layers=2, layer=1, first_block=1)


def _block_tables(pages, seq_lens):
    """init_forward_metadata: req_to_token[req_pool_indices, :seq_lens_max][:, ::page_size] // page_size
    over an int32 req_to_token holding each request's token slots."""
    req_to_token = torch.zeros(8, 4096, dtype=torch.int32)
    req_pool_indices = torch.tensor([5, 2, 7])
    for b, n in enumerate(seq_lens.tolist()):
        req_to_token[req_pool_indices[b], :n] = torch.tensor([pages.slot(b, p) for p in range(n)], dtype=torch.int32)
    seq_lens_max = seq_lens.max()
    return req_to_token[req_pool_indices, :seq_lens_max][:, ::PAGE] // PAGE


def _absorbed_query(rng, t):
    """DeepseekV2 forward_absorb: q_nope_out = torch.bmm(q_nope.transpose(0, 1), w_kc).transpose(0, 1),
    a (T, N, 512) view of an (N, T, 512) tensor; q_pe the rotary embedding's new tensor."""
    q_nope, _ = bf(rng, t, N * (D + DR)).view(-1, N, D + DR).split([D, DR], dim=-1)
    w_kc = bf(rng, N, HCKV, D, scale=D ** -0.5).transpose(1, 2)  # post_load_weights' column-major w_kc
    q_nope_out = torch.bmm(q_nope.transpose(0, 1), w_kc)
    return q_nope_out.transpose(0, 1), bf(rng, t, N, DR)


def test_forward_extend_mla_tnd():
    """[backend] forward_extend, MLA without a cached prefix: q / k / v as DeepseekV2's
    forward_normal builds them (q_pe written into q, k = empty_like(q) filled by slices, v a
    split of the kv_b_proj output), RadixAttention's k / v views, the non-padded slice, then
    q.split / k.split at v_head_dim and torch.ops.npu.npu_fused_infer_attention_score in TND with
    the bool fia_mask, sparse_mode 3, next_tokens 0 and the numpy cumsum of extend_seq_lens as
    both actual lengths; the padded rows appended as zeros."""
    rng = np.random.default_rng(51)
    extend_seq_lens_cpu = [23, 40]
    t, pad = sum(extend_seq_lens_cpu), 3
    layer = MhaLayer()
    q = bf(rng, t + pad, N * (D + DR)).view(-1, N, D + DR)
    q_pe = bf(rng, t + pad, N, DR)
    kv = bf(rng, t + pad, N * (D + D)).view(-1, N, D + D)
    k_nope, v = kv.split([D, D], dim=-1)
    k_pe = bf(rng, t + pad, 1, DR)
    q[..., D:] = q_pe
    k = torch.empty_like(q)
    k[..., :D] = k_nope
    k[..., D:] = k_pe
    k = k.view(-1, layer.tp_k_head_num, layer.qk_head_dim)  # RadixAttention.forward ("k_rope" absent)
    v = v.view(-1, layer.tp_v_head_num, layer.v_head_dim)
    seq_lens_list_cumsum = np.cumsum(extend_seq_lens_cpu)
    fia_mask = BOOL_MASK
    num_token_non_padded_cpu = t
    num_token_padding = q.shape[0]
    q, k, v = [data[:num_token_non_padded_cpu] for data in [q, k, v]]
    q_nope, q_rope = q.split([layer.v_head_dim, DR], dim=-1)
    k_nope, k_rope = k.split([layer.v_head_dim, DR], dim=-1)
    attn_output, _ = torch.ops.npu.npu_fused_infer_attention_score(
        q_nope,
        k_nope,
        v,
        query_rope=q_rope,
        key_rope=k_rope,
        num_heads=layer.tp_q_head_num,
        input_layout="TND",
        atten_mask=fia_mask,
        sparse_mode=3,
        actual_seq_lengths=seq_lens_list_cumsum,
        actual_seq_lengths_kv=seq_lens_list_cumsum,
        scale=layer.scaling,
        next_tokens=0,
    )
    attn_output = attn_output.reshape(-1, layer.tp_q_head_num, layer.v_head_dim)
    if num_token_padding != num_token_non_padded_cpu:
        attn_output = torch.cat([attn_output, attn_output.new_zeros(num_token_padding - attn_output.shape[0],
                                                                    *attn_output.shape[1:])], dim=0)
    r, _ = tnd_causal_ref(q_nope, q_rope, k_nope, k_rope, v, extend_seq_lens_cpu, extend_seq_lens_cpu)
    assert_fia_out(attn_output[:t], r)
    assert not torch.any(attn_output[t:].float() != 0)


def _nz_or_paged(c_kv, k_rope, nz, bnsd):
    """The backend's cache views: _reshape_kv_for_fia_nz (SGLANG_USE_FIA_NZ), else BnNBsD
    (forward_mtp) or BnBsH (the decodes)."""
    if nz:
        return (c_kv.view(-1, 1, 1 * HCKV // 16, PAGE, 16), k_rope.view(-1, 1, 1 * DR // 16, PAGE, 16))
    if bnsd:
        return c_kv.view(-1, 1, PAGE, HCKV), k_rope.view(-1, 1, PAGE, DR)
    return c_kv.view(-1, PAGE, 1 * HCKV), k_rope.view(-1, PAGE, 1 * DR)


@pytest.mark.parametrize("nz", [False, True])
def test_forward_mtp_mla_target_verify(nz):
    """[backend] forward_mtp, MLA, target verify (2 draft tokens per request), not graph mode:
    q.view(-1, N, 512).contiguous() of the transposed absorbed query, the KV pool's per-layer
    caches viewed BnNBsD (or NZ with SGLANG_USE_FIA_NZ), the numpy arange of cumulative query
    lengths and the KV lengths list; torch_npu._npu_fused_infer_attention_score_get_max_workspace,
    then torch_npu.npu_fused_infer_attention_score.out into torch.empty_like(q_nope) with a (1,)
    softmax_lse placeholder, TND, sparse_mode 3 with the bool mtp_mask."""
    rng = np.random.default_rng(52 + nz)
    draft = 2
    seq_lens_cpu = torch.tensor(SEQ, dtype=torch.int64)
    layer = MqaLayer()
    pages = _pool(rng, [s + draft for s in SEQ], nz)
    seq_lens_cpu_int = seq_lens_cpu.int() + draft  # init_forward_metadata, target verify
    block_tables = _block_tables(pages, seq_lens_cpu + draft)
    num_token_non_padded_cpu = len(SEQ) * draft
    q, q_rope = _absorbed_query(rng, num_token_non_padded_cpu + 2)  # DP attention's padded tokens
    c_kv, k_rope = pages.kv, pages.kr
    c_kv_cache, k_rope_cache = _nz_or_paged(c_kv, k_rope, nz, bnsd=True)
    q_nope = q.view(-1, layer.tp_q_head_num, HCKV).contiguous()
    q_rope = q_rope.view(-1, layer.tp_q_head_num, DR)
    num_token_padding = q.shape[0]
    q_nope = q_nope[:num_token_non_padded_cpu]
    q_rope = q_rope[:num_token_non_padded_cpu]
    actual_seq_lengths_kv = seq_lens_cpu_int.cpu().int().tolist()
    actual_seq_lengths = np.arange(draft, draft + q_nope.shape[0], draft)
    workspace = torch_npu._npu_fused_infer_attention_score_get_max_workspace(
        q_nope,
        c_kv_cache,
        c_kv_cache,
        query_rope=q_rope,
        key_rope=k_rope_cache,
        num_heads=layer.tp_q_head_num,
        num_key_value_heads=layer.tp_k_head_num,
        input_layout="TND",
        scale=layer.scaling,
        antiquant_mode=0,
        antiquant_scale=None,
        block_table=block_tables,
        block_size=PAGE,
        sparse_mode=3,
        atten_mask=BOOL_MASK,
        actual_seq_lengths=actual_seq_lengths,
        actual_seq_lengths_kv=actual_seq_lengths_kv,
    )
    attn_output = torch.empty_like(q_nope, dtype=q.dtype, device=q.device)
    softmax_lse = torch.empty(1, dtype=q.dtype, device=q.device)
    torch_npu.npu_fused_infer_attention_score.out(
        q_nope,
        c_kv_cache,
        c_kv_cache,
        query_rope=q_rope,
        key_rope=k_rope_cache,
        num_heads=layer.tp_q_head_num,
        num_key_value_heads=layer.tp_k_head_num,
        input_layout="TND",
        scale=layer.scaling,
        antiquant_mode=0,
        antiquant_scale=None,
        block_table=block_tables,
        block_size=PAGE,
        sparse_mode=3,
        atten_mask=BOOL_MASK,
        actual_seq_lengths=actual_seq_lengths,
        actual_seq_lengths_kv=actual_seq_lengths_kv,
        workspace=workspace,
        out=[attn_output, softmax_lse],
    )
    attn_output = attn_output.view(-1, layer.tp_q_head_num * layer.v_head_dim)
    if num_token_non_padded_cpu != num_token_padding:
        attn_output = torch.cat([attn_output, attn_output.new_zeros(num_token_padding - attn_output.shape[0],
                                                                    *attn_output.shape[1:])], dim=0)
    r, _ = mla_paged_ref(tokens_bnsd(q_nope, draft), tokens_bnsd(q_rope, draft), pages, actual_seq_lengths_kv,
                         q_s=draft)
    assert_fia_out(tokens_bnsd(attn_output[:num_token_non_padded_cpu].view(-1, N, HCKV), draft), r)


@pytest.mark.parametrize("nz", [False, True])
def test_forward_decode_graph_mla(nz):
    """[backend] forward_decode_graph, MLA: q.view(-1, 1, N, 512).contiguous(), the caches
    viewed BnBsH (or NZ), the graph's block table (a row slice of its [max_bs, max_pages] buffer,
    zero beyond each request's pages) over a captured batch one larger than the real one (the
    padded request's seq len 0); the max-workspace getter, then .out into
    torch.empty_like(q_nope) with a (1,) softmax_lse placeholder, BSND, sparse_mode 0."""
    rng = np.random.default_rng(54 + nz)
    layer = MqaLayer()
    pages = _pool(rng, [s + 1 for s in SEQ], nz)
    bs = len(SEQ) + 1
    seq_lens = torch.tensor([s + 1 for s in SEQ] + [0], dtype=torch.int64)
    graph_block_tables = torch.empty((8, 4096 // PAGE), dtype=torch.int32)
    block_tables = graph_block_tables[:bs, :]  # init_forward_metadata_capture_cuda_graph
    max_len = int(seq_lens[:bs].max())
    max_seq_pages = (max_len + PAGE - 1) // PAGE
    block_tables[:len(SEQ), :max_seq_pages].copy_(_block_tables(pages, seq_lens[:len(SEQ)]))
    block_tables[:bs, max_seq_pages:].fill_(0)
    block_tables[len(SEQ):, :].fill_(0)
    q = torch.zeros(bs, N, HCKV, dtype=torch.bfloat16)
    q_rope = torch.zeros(bs, N, DR, dtype=torch.bfloat16)
    q_real, qr_real = _absorbed_query(rng, len(SEQ))
    q[:len(SEQ)], q_rope[:len(SEQ)] = q_real, qr_real
    c_kv, k_rope = pages.kv, pages.kr
    c_kv_cache, k_rope_cache = _nz_or_paged(c_kv, k_rope, nz, bnsd=False)
    q_nope = q.view(-1, 1, layer.tp_q_head_num, HCKV).contiguous()
    q_rope = q_rope.view(-1, 1, layer.tp_q_head_num, DR)
    actual_seq_len_kv = seq_lens.int().tolist()  # forward_metadata.seq_lens_cpu_list
    workspace = torch_npu._npu_fused_infer_attention_score_get_max_workspace(
        q_nope,
        c_kv_cache,
        c_kv_cache,
        query_rope=q_rope,
        key_rope=k_rope_cache,
        num_heads=layer.tp_q_head_num,
        num_key_value_heads=layer.tp_k_head_num,
        block_table=block_tables,
        block_size=PAGE,
        input_layout="BSND",
        scale=layer.scaling,
        actual_seq_lengths_kv=actual_seq_len_kv,
        antiquant_mode=0,
        antiquant_scale=None,
        sparse_mode=0,
    )
    output = torch.empty_like(q_nope, dtype=q.dtype, device=q.device)
    softmax_lse = torch.empty(1, dtype=q.dtype, device=q.device)
    torch_npu.npu_fused_infer_attention_score.out(
        q_nope,
        c_kv_cache,
        c_kv_cache,
        query_rope=q_rope,
        key_rope=k_rope_cache,
        num_heads=layer.tp_q_head_num,
        num_key_value_heads=layer.tp_k_head_num,
        block_table=block_tables,
        block_size=PAGE,
        input_layout="BSND",
        scale=layer.scaling,
        actual_seq_lengths_kv=actual_seq_len_kv,
        antiquant_mode=0,
        antiquant_scale=None,
        sparse_mode=0,
        workspace=workspace,
        out=[output, softmax_lse],
    )
    out = output.view(-1, layer.tp_q_head_num * HCKV)
    r, _ = mla_paged_ref(tokens_bnsd(q_real, 1), tokens_bnsd(qr_real, 1), pages, [s + 1 for s in SEQ])
    assert_fia_out(tokens_bnsd(out[:len(SEQ)].view(-1, N, HCKV), 1), r)
    assert not torch.any(out[len(SEQ):].float() != 0)  # the padded request (seq len 0): 0


@pytest.mark.parametrize("nz", [False, True])
def test_forward_decode_eager_fia_transposed_query(nz):
    """[backend] forward_decode, MLA, ASCEND_USE_FIA with N / KV_N >= 8 (MLAPO wrote the caches,
    so no save): the absorbed query as forward_absorb passes it, a transposed view, viewed
    (batch_size, -1, N, 512) without .contiguous(); the caches viewed BnBsH (or NZ);
    torch.ops.npu.npu_fused_infer_attention_score in BSND with the block tables and the int32
    seq_lens_cpu_int tensor as actual_seq_lengths_kv."""
    rng = np.random.default_rng(56 + nz)
    layer = MqaLayer()
    pages = _pool(rng, [s + 1 for s in SEQ], nz)
    seq_lens_cpu = torch.tensor([s + 1 for s in SEQ], dtype=torch.int64)
    seq_lens_cpu_int = seq_lens_cpu.int()
    block_tables = _block_tables(pages, seq_lens_cpu)
    batch_size = len(SEQ)
    q, q_rope = _absorbed_query(rng, batch_size)
    kv_c, k_pe = pages.kv, pages.kr
    if nz:
        kv_c, k_pe = _nz_or_paged(kv_c, k_pe, True, bnsd=False)
    else:
        kv_c = kv_c.view(-1, PAGE, layer.tp_k_head_num * HCKV)
        k_pe = k_pe.view(-1, PAGE, layer.tp_k_head_num * DR)
    q = q.view(batch_size, -1, layer.tp_q_head_num, HCKV)
    q_rope = q_rope.view(batch_size, -1, layer.tp_q_head_num, DR)
    assert not q.is_contiguous()
    attn_output, _ = torch.ops.npu.npu_fused_infer_attention_score(
        q,
        kv_c,
        kv_c,
        query_rope=q_rope,
        key_rope=k_pe,
        num_heads=layer.tp_q_head_num,
        num_key_value_heads=layer.tp_k_head_num,
        input_layout="BSND",
        atten_mask=None,
        sparse_mode=0,
        scale=layer.scaling,
        antiquant_mode=0,
        antiquant_scale=None,
        block_table=block_tables,
        block_size=PAGE,
        actual_seq_lengths_kv=seq_lens_cpu_int,
    )
    out = attn_output.view(batch_size, layer.tp_q_head_num * HCKV)
    r, _ = mla_paged_ref(tokens_bnsd(q.reshape(-1, N, HCKV), 1), tokens_bnsd(q_rope.reshape(-1, N, DR), 1), pages,
                         seq_lens_cpu.tolist())
    assert_fia_out(tokens_bnsd(out.view(-1, N, HCKV), 1), r)


class FusedMLAPreprocess:
    """NPUFusedMLAPreprocess's inputs: fused_qkv_a_proj_with_mqa, q_a_layernorm (an RMSNorm:
    no bias), kv_a_layernorm, q_b_proj, w_kc (.contiguous() of post_load_weights' column-major
    [N, D, Hckv]), a rotary embedding's bf16 cos_sin_cache, variance_epsilon 1e-6."""

    def __init__(self, rng, w8a8_qkv, disable_acl_format_weight=False):
        self.q_lora_rank, self.kv_lora_rank, self.num_local_heads = HCQ, HCKV, N
        self.qk_nope_head_dim, self.qk_rope_head_dim = D, DR
        self.qkv = W8A8Linear(rng, HE, HCQ + HCKV + DR)
        self.qb = W8A8Linear(rng, HCQ, N * (D + DR))
        self.gamma_cq = bf(rng, HCQ, scale=0.2, shift=1.0)
        self.gamma_ckv = bf(rng, HCKV, scale=0.2, shift=1.0)
        self.eps = 1e-6
        self.w_kc = bf(rng, N, HCKV, D, scale=D ** -0.5).transpose(1, 2).contiguous()
        cos, sin = rope_tables(np.arange(4096))
        self.cos_sin_cache = torch.cat([cos[:, :DR // 2], sin[:, :DR // 2]], dim=-1)
        # NPUW8A8Int8LinearMethod.process_weights_after_loading: [out, in] -> [in, out] -> NZ
        self.cast = lambda t: npu_format_cast(t, disable_acl_format_weight=disable_acl_format_weight)
        self.qb_weight = self.cast(torch.from_numpy(np.ascontiguousarray(self.qb.w.T)).transpose(0, 1).contiguous())
        self.qb_weight_scale = torch.from_numpy(self.qb.weight_scale).to(torch.bfloat16).flatten()
        if w8a8_qkv:
            self.qkv_weight = self.cast(torch.from_numpy(np.ascontiguousarray(self.qkv.w.T)).transpose(0, 1)
                                        .contiguous())
        else:  # unquantized fused_qkv_a_proj_with_mqa: nn.Linear's bf16 [out, in]
            self.qkv_bf16 = bf(rng, HCQ + HCKV + DR, HE, scale=HE ** -0.5)

    def get_sin_cos(self, positions):
        cos_sin = self.cos_sin_cache[positions]
        cos, sin = cos_sin.chunk(2, dim=-1)
        cos = cos.repeat(1, 2)
        sin = sin.repeat(1, 2)
        return cos, sin


def _mla_step(rng, nz=False):
    """One decode token per SEQ request in the KV pool (layer 1, page 0 kept), its positions
    and out_cache_loc (int64, as the scheduler holds it)."""
    pages = _pool(rng, [s + 1 for s in SEQ], nz)
    positions = torch.tensor(SEQ, dtype=torch.int64)
    out_cache_loc = torch.tensor([pages.slot(b, s) for b, s in enumerate(SEQ)], dtype=torch.int64)
    return pages, positions, out_cache_loc


@pytest.mark.parametrize("disable_acl_format_weight", [False, True])
def test_forward_mlaprolog_v3_partial_quant_query_norm(disable_acl_format_weight):
    """[mlapre] forward_mlaprolog: mlaprolog_preprocess_weight (fused_qkv_a_proj's bf16 [out, in]
    weight transposed in place to a strided view, sliced, .clone(), npu_format_cast through
    torch.ops.npu; with SGLANG_NPU_DISABLE_ACL_FORMAT_WEIGHT the clones stay transposed ND
    weights, strides (1, He), and q_b_proj's int8 weight stays ND: refused, MP-03), q_b_proj's
    weight and its scale .view(1, -1).to(float), get_sin_cos, the KV pool's per-layer caches,
    cache_index = slot_mapping.to(int64), then torch.ops.custom.npu_mla_prolog_v3(**kwargs):
    PA_BSND, query_norm_flag, weight_quant_mode 1, epsilons 1e-6."""
    rng = np.random.default_rng(61 + disable_acl_format_weight)
    m = FusedMLAPreprocess(rng, w8a8_qkv=False, disable_acl_format_weight=disable_acl_format_weight)
    # mlaprolog_preprocess_weight
    qkv_a_proj_weight = m.qkv_bf16.data.transpose(0, 1)
    qkv_a_proj_weight_q = qkv_a_proj_weight[:, : m.q_lora_rank].clone()
    qkv_a_proj_weight_kv = qkv_a_proj_weight[:, m.q_lora_rank:].clone()
    assert not qkv_a_proj_weight_q.is_contiguous()
    q_a_proj_weight = m.cast(qkv_a_proj_weight_q)
    kv_a_proj_weight = m.cast(qkv_a_proj_weight_kv)
    assert mlaops.get_npu_format(kv_a_proj_weight) == (2 if disable_acl_format_weight else 29)
    q_b_proj_weight_scale = m.qb_weight_scale.view(1, -1).to(torch.float)
    pages, positions, out_cache_loc = _mla_step(rng)
    before_kv, before_kr = f64(pages.kv), f64(pages.kr)
    hidden_states = bf(rng, len(SEQ), HE)
    cos, sin = m.get_sin_cos(positions)
    k_cache, v_cache = pages.kv, pages.kr
    slot_mapping = out_cache_loc.to(dtype=torch.int32)
    mla_prolog_input_args = {
        "token_x": hidden_states,
        "weight_dq": q_a_proj_weight,
        "weight_uq_qr": m.qb_weight,
        "weight_uk": m.w_kc,
        "weight_dkv_kr": kv_a_proj_weight,
        "rmsnorm_gamma_cq": m.gamma_cq,
        "rmsnorm_gamma_ckv": m.gamma_ckv,
        "rope_sin": sin,
        "rope_cos": cos,
        "kv_cache": k_cache,
        "kr_cache": v_cache,
        "cache_index": slot_mapping.to(dtype=torch.int64),
        "dequant_scale_w_uq_qr": q_b_proj_weight_scale,
        "rmsnorm_epsilon_cq": m.eps,
        "rmsnorm_epsilon_ckv": m.eps,
        "cache_mode": "PA_BSND",
        "query_norm_flag": True,
        "weight_quant_mode": 1,
    }
    if disable_acl_format_weight:
        # MlaPrologV3WeightNz takes the three LoRA weights in FRACTAL_NZ only (docs/ops/mla_prolog.md
        # MP-03; the library's extension, ND weights, is BF16 only): the int8 ND q_b_proj weight is
        # refused, as CANN refuses an ND weight there, and nothing is written
        with pytest.raises(mlaops.Error) as e:
            torch.ops.custom.npu_mla_prolog_v3(**mla_prolog_input_args)
        assert e.value.status == 161002 and "MP-03" in e.value.message and "weightUqQr" in e.value.message
        assert np.array_equal(f64(k_cache), before_kv) and np.array_equal(f64(v_cache), before_kr)
        return
    q_nope, q_pe, dequant_scale_q_nope, qr, dequant_q_norm = torch.ops.custom.npu_mla_prolog_v3(
        **mla_prolog_input_args)
    dequant_q_norm = dequant_q_norm.view(hidden_states.shape[0])
    x, wdq = f64(hidden_states), f64(m.qkv_bf16).T[:, :HCQ]
    ref_q, ref_qr, kv_rows, kr_rows = mla_prolog(
        x=x, wdq=wdq, wuqqr=m.qb.w.astype(np.float64), wuk=f64(m.w_kc), wdkvkr=f64(m.qkv_bf16).T[:, HCQ:],
        gcq=f64(m.gamma_cq), gckv=f64(m.gamma_ckv), sin=f64(sin), cos=f64(cos), eps_cq=m.eps, eps_ckv=m.eps,
        dsw_uqqr=f64(q_b_proj_weight_scale))
    assert_cascade(q_nope, ref_q, ulps=4, what="query")
    assert_cascade(q_pe, ref_qr, ulps=4, what="query_rope")
    assert dequant_scale_q_nope.shape == (1,)
    slots = out_cache_loc.tolist()
    assert_close(f64(k_cache), scatter_cache(before_kv, kv_rows, slots, None), what="kv_cache")
    assert_close(f64(v_cache), scatter_cache(before_kr, kr_rows, slots, None), what="kr_cache")
    cn = rms_norm(bf16(x @ wdq), f64(m.gamma_cq), m.eps)
    amax = np.max(np.abs(cn), axis=-1, keepdims=True)
    assert qr.dtype == torch.int8 and qr.shape == (len(SEQ), HCQ)
    assert_int8(qr, np.clip(np.rint(cn * (127.0 / amax)), -128, 127), what="query_norm")
    assert_close(dequant_q_norm, amax[:, 0] / 127.0, rtol=1e-3, atol_rms=0, max_mean_rel=1e-3, min_cos=0.999,
                 what="dequant_scale_q_norm")


def _preprocess_weights(m, hidden_states):
    """[mlapre] NPUFusedMLAPreprocess.preprocess_weights on the W8A8 static layers (SGLang's
    trans_rope_weight / transdata are replay_util.rope_rows_deinterleaved / nz_tiles; the NZ cast
    is [npu_utils] npu_format_cast). Keeps the logical matrices for the reference."""
    m.dummy = torch.zeros((hidden_states.shape[-1]), dtype=hidden_states.dtype)
    m.qkv_a_proj_input_offset = torch.tensor([1.0], dtype=torch.bfloat16).to(dtype=torch.int8)
    m.q_b_proj_input_offset = torch.tensor([2.0], dtype=torch.bfloat16).to(dtype=torch.int8)
    w_q = m.qkv_weight.data[:, : m.q_lora_rank].clone()
    w_kv = m.qkv_weight.data[:, m.q_lora_rank:].clone()
    w_kv_t = w_kv.t().contiguous()
    w_kv_t = rope_rows_deinterleaved(w_kv_t, m.qk_rope_head_dim)
    w_kv = w_kv_t.t().contiguous()
    w_new = torch.cat((w_kv, w_q), dim=-1)
    m.wdqkv_logical = w_new.t().contiguous()
    m.qkv_a_proj_weight_nz = npu_format_cast(nz_tiles(m.wdqkv_logical).unsqueeze(0).contiguous())

    def kv_first(vec):
        q_part = vec[: m.q_lora_rank].clone()
        kv_part = vec[m.q_lora_rank:].clone()
        kv_part = kv_part.reshape(m.kv_lora_rank + m.qk_rope_head_dim, -1).contiguous()
        kv_part = rope_rows_deinterleaved(kv_part, m.qk_rope_head_dim)
        kv_part = kv_part.view(m.kv_lora_rank + m.qk_rope_head_dim).contiguous()
        return torch.cat((kv_part, q_part), dim=-1)

    m.qkv_a_proj_deq_scale_kvq = kv_first(torch.from_numpy(m.qkv.deq_scale))
    m.qkv_a_proj_quant_bias_kvq = kv_first(torch.from_numpy(m.qkv.quant_bias))
    q_b_proj_weight = m.qb_weight.data.clone()
    q_b_proj_weight = q_b_proj_weight.t().reshape(m.num_local_heads, m.qk_nope_head_dim + m.qk_rope_head_dim, -1)
    q_b_proj_weight = rope_rows_deinterleaved(q_b_proj_weight, m.qk_rope_head_dim)
    m.wuq_logical = q_b_proj_weight.reshape(m.num_local_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), -1)
    m.q_b_proj_weight_nz = npu_format_cast(nz_tiles(m.wuq_logical).unsqueeze(0).contiguous())
    for name, vec in (("q_b_proj_deq_scale", m.qb.deq_scale), ("q_b_proj_quant_bias", m.qb.quant_bias)):
        v = torch.from_numpy(vec).clone().reshape(m.num_local_heads, m.qk_nope_head_dim + m.qk_rope_head_dim, -1)
        v = rope_rows_deinterleaved(v, m.qk_rope_head_dim)
        setattr(m, name, v.reshape(m.num_local_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)))


@pytest.mark.parametrize("fia_nz", [False, True])
def test_forward_mlapo_torch_ops_npu(fia_nz):
    """[mlapre] forward_mlapo: preprocess_weights, get_sin_cos, the KV pool's per-layer caches
    (viewed [blocks, 512 / 16, page, 16] with SGLANG_USE_FIA_NZ), out_cache_loc as int32, the
    zero dummy for gamma0 / beta0 and for beta1 (q_a_layernorm has no bias; length hidden), then
    torch.ops.npu.mla_preprocess (sgl-kernel-npu) with the 16 tensors positional and the rest by
    keyword: per_tensor_quant_asymm, "krope_ctkv" or "nzcache", the caches as kv_cache_out0 / 1."""
    rng = np.random.default_rng(63 + fia_nz)
    m = FusedMLAPreprocess(rng, w8a8_qkv=True)
    pages, positions, out_cache_loc = _mla_step(rng, nz=fia_nz)
    before = (f64(pages.kv), f64(pages.kr))
    hidden_states = bf(rng, len(SEQ), HE)
    input_dtype = hidden_states.dtype
    _preprocess_weights(m, hidden_states)
    cos, sin = m.get_sin_cos(positions)
    k_cache, v_cache = pages.kv, pages.kr
    slot_mapping = out_cache_loc.to(dtype=torch.int32)
    q_nope_out = torch.empty((hidden_states.shape[0], m.w_kc.shape[0], k_cache.shape[-1]), dtype=input_dtype)
    q_rope_out = torch.empty((hidden_states.shape[0], m.w_kc.shape[0], v_cache.shape[-1]), dtype=input_dtype)
    if fia_nz:
        kv_shape, kv_rope_shape = k_cache.shape, v_cache.shape
        num_blocks, block_size, num_heads, _ = kv_shape
        k_cache = k_cache.view(num_blocks, num_heads * m.kv_lora_rank // 16, block_size, 16)
        v_cache = v_cache.view(num_blocks, num_heads * m.qk_rope_head_dim // 16, block_size, 16)
    q_a_layernorm_bias = m.dummy
    torch.ops.npu.mla_preprocess(
        hidden_states,
        m.dummy,
        m.dummy,
        m.qkv_a_proj_weight_nz,
        m.qkv_a_proj_deq_scale_kvq,
        m.gamma_cq,
        q_a_layernorm_bias,
        m.q_b_proj_weight_nz,
        m.q_b_proj_deq_scale,
        m.gamma_ckv,
        cos,
        sin,
        m.w_kc,
        k_cache,
        v_cache,
        slot_mapping,
        quant_scale0=m.qkv.input_scale,
        quant_offset0=m.qkv_a_proj_input_offset,
        bias0=m.qkv_a_proj_quant_bias_kvq,
        quant_scale1=m.qb.input_scale,
        quant_offset1=m.q_b_proj_input_offset,
        bias1=m.q_b_proj_quant_bias,
        cache_mode="nzcache" if fia_nz else "krope_ctkv",
        quant_mode="per_tensor_quant_asymm",
        q_out0=q_nope_out,
        kv_cache_out0=k_cache,
        q_out1=q_rope_out,
        kv_cache_out1=v_cache,
    )
    if fia_nz:
        k_cache = k_cache.view(kv_shape)
        v_cache = v_cache.view(kv_rope_shape)
    p = {"quant": "per_tensor"}
    for i, (descale, bias, qs, qo) in enumerate(((m.qkv_a_proj_deq_scale_kvq, m.qkv_a_proj_quant_bias_kvq,
                                                  m.qkv.input_scale, m.qkv_a_proj_input_offset),
                                                 (m.q_b_proj_deq_scale, m.q_b_proj_quant_bias, m.qb.input_scale,
                                                  m.q_b_proj_input_offset))):
        p.update({f"descale{i}": f64(descale), f"bias{i}": f64(bias), f"quant_scale{i}": f64(qs),
                  f"quant_offset{i}": f64(qo)})
    r = mlapo_reference(f64(hidden_states), None, None, f64(m.wdqkv_logical), f64(m.gamma_cq), None,
                        f64(m.wuq_logical), f64(m.gamma_ckv), f64(cos), f64(sin), f64(m.w_kc), p, HCKV, DR,
                        eps=m.eps)
    assert_mlapo_outputs(q_nope_out, k_cache, q_rope_out, v_cache, before, r, out_cache_loc.tolist(), fia_nz)
