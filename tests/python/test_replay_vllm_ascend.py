"""vllm-ascend's MLA call sites replayed as its public sources write them: the argument order, the
keywords, the tensors' views (slices of the projections, split, view, transpose, expand,
.contiguous() exactly where the source calls it), the weight preprocessing and the namespace
(torch_npu.* is `mlaops.torch_npu`, torch.ops._C_ascend.* the registered op), on CPU tensors at
DeepSeek's head dims with few heads and tokens, each checked against the float64 references
(reference.py, reference_preprocess.py, replay_util.py).

Sources read (the search index's stored copies):
  [mla_v1]      maoxx241/vllm-ascend (a fork tracking vllm-project/vllm-ascend main)
                vllm_ascend/attention/mla_v1.py @ 32add8984b08c70e2b231b86f2dacc722f56d59a
  [mla_v1_mid]  vllm_ascend/attention/mla_v1.py, stored version id 55251949848 (the index names no
                commit; the era of device_op.py below: _process_weights_for_fused_fa_quant,
                _process_weights_for_fused_mlapo)
  [mla_v1_old]  vllm_ascend/attention/mla_v1.py, stored version id 1590382104 (no commit named;
                FIA v1 decode with _npu_fused_infer_attention_score_get_max_workspace)
  [device_op]   vllm-project/vllm-ascend vllm_ascend/device/device_op.py
                @ 0048b5e10ac793ce3738915f81046064f4f7f4a2
  [torchair]    vllm-project/vllm-ascend vllm_ascend/torchair/torchair_mla.py
                @ 007c0c27228808c69adaaab99c188d3164006eb9
  [utils]       vllm-project/vllm-ascend vllm_ascend/attention/utils.py
                @ 0017ab0c070542134944755f8f859d84e6c0841a (trans_rope_weight, transdata)
Torch ops the stacks call that mlaops does not provide (npu_dynamic_quant, npu_interleave_rope,
npu_kv_rmsnorm_rope_cache, npu_paged_cache_load, npu_attention_update, the linear layers) are
computed by the tests in torch / numpy.

This file: prefill and the attention-only decode (FIA v1 and v2). The FA-quant layer (MlaProlog
then FIA): test_replay_vllm_ascend_fa_quant.py; the fused MlaPreprocess (mlapo):
test_replay_vllm_ascend_mlapo.py; what they share (the decode requests, the FIA v2 decode views,
the W8A8 layer): replay_vllm_ascend.py."""
import numpy as np
import pytest
import torch

import mlaops
import mlaops.torch_npu as torch_npu
from compare import assert_fia_out
from replay_util import (BOOL_MASK, BS, D, DR, HCKV, INT8_MASK, N, SCALE, Pages, assert_lse, bf, cumsum, lse_merge,
                         tnd_causal_ref)
from replay_vllm_ascend import CTX, V2_LAYOUTS, check_decode, v2_decode_kwargs


def interleave_rope(x):
    """Stand-in for torch_npu.npu_interleave_rope (not in mlaops; rope_single calls it): a new
    contiguous tensor of x's shape. The attention checks read the query as passed."""
    return x.clone(memory_format=torch.contiguous_format)


def q_proj_and_k_up_proj(rng, t, w_uk_t):
    """[mla_v1] / [torchair] AscendMLAImpl._q_proj_and_k_up_proj on a q_proj output of t tokens:
    view + split, q_nope transposed to (N, B, P), bmm with W_UK_T, transposed back: ql_nope is a
    (B, N, L) view of an (N, B, L) tensor. q_pe is then rope_single's output (contiguous)."""
    q_nope, q_pe = bf(rng, t, N * (D + DR)).view(-1, N, D + DR).split([D, DR], dim=-1)
    q_nope = q_nope.transpose(0, 1)
    ql_nope = torch.bmm(q_nope, w_uk_t)
    return ql_nope.transpose(0, 1), interleave_rope(q_pe)


def _prefill_inputs(rng, q_lens):
    """The prefill tensors as mla_preprocess_prefill makes them ([mla_v1]): prefill_q the q_proj
    output viewed (T, N, qk_head_dim) and sliced into q_nope / q_pe (q_pe then rope_single's
    output); k_nope / value split from the kv_b_proj output; k_pe [T, 1, 64] expanded to N heads."""
    t = sum(q_lens)
    prefill_q = bf(rng, t, N * (D + DR)).view(-1, N, D + DR)
    prefill_q_pe = interleave_rope(prefill_q[..., D:])
    prefill_q_nope = prefill_q[..., :D]
    prefill_k_nope, prefill_value = bf(rng, t, N * 2 * D).view(-1, N, D + D).split([D, D], dim=-1)
    prefill_k_pe = bf(rng, t, 1, 1, DR).view(t, 1, -1)
    prefill_k_pe = prefill_k_pe.expand((*prefill_k_nope.shape[:-1], -1))
    return prefill_q_nope, prefill_q_pe, prefill_k_nope, prefill_k_pe, prefill_value


def _forward_prefill(q_nope, q_pe, k_nope, k_pe, value, actual_seq_lengths_q):
    """[mla_v1] AscendMLAImpl._forward_prefill's FIA call (head_padding 0, bf16)."""
    actual_seq_lengths_kv = actual_seq_lengths_q.copy()
    common_kwargs = {
        "num_heads": N,
        "num_key_value_heads": N,
        "input_layout": "TND",
        "atten_mask": INT8_MASK,
        "sparse_mode": 3,
        "scale": SCALE,
        "antiquant_mode": 0,
        "antiquant_scale": None,
        "block_table": None,
        "block_size": 0,
        "softmax_lse_flag": True,
        "actual_seq_lengths": actual_seq_lengths_q,
        "actual_seq_lengths_kv": actual_seq_lengths_kv,
    }
    common_kwargs["query_rope"] = q_pe
    common_kwargs["key_rope"] = k_pe.contiguous()
    query, key = q_nope, k_nope
    return torch_npu.npu_fused_infer_attention_score(query, key.contiguous(), value.contiguous(), **common_kwargs)


def test_forward_prefill_tnd_sparse3_lse():
    """[mla_v1] _forward_prefill: TND, sparse_mode 3 with the int8 2048 mask, softmax LSE;
    query = a slice of the q_proj output, key / value contiguous copies of the kv_b_proj split,
    key_rope the expanded k_pe made contiguous."""
    rng = np.random.default_rng(1)
    q_lens = [37, 20]
    q_nope, q_pe, k_nope, k_pe, value = _prefill_inputs(rng, q_lens)
    assert not q_nope.is_contiguous() and k_pe.stride(1) == 0
    out, lse = _forward_prefill(q_nope, q_pe, k_nope, k_pe, value, cumsum(q_lens))
    assert out.shape == (sum(q_lens), N, D) and lse.shape == (sum(q_lens), N, 1)
    r, rl = tnd_causal_ref(q_nope, q_pe, k_nope, k_pe, value, q_lens, q_lens)
    assert_fia_out(out, r)
    assert_lse(lse, rl)


def test_prefill_context_chunks_and_lse_merge():
    """[mla_v1] _compute_prefill_context: the cached context loaded chunk by chunk
    (npu_paged_cache_load, emulated), up-projected by kv_b_proj (emulated), attended by FIA TND
    sparse 0 with LSE (k_pe expanded and made contiguous, key / value .contiguous()), and merged
    with the new tokens' causal attention by npu_attention_update (emulated: the LSE merge). The
    merged output equals attention over context + new tokens."""
    rng = np.random.default_rng(2)
    ctx, q_lens = [150, 140], [5, 9]
    t = sum(q_lens)
    pages = Pages(rng, [c + q for c, q in zip(ctx, q_lens)])
    w_kv_b = bf(rng, HCKV, N * 2 * D, scale=HCKV ** -0.5)

    def kv_b_proj(x):
        return ((x.float() @ w_kv_b.float()).to(torch.bfloat16),)

    q_nope, q_pe, k_nope, k_pe, value = _prefill_inputs(rng, q_lens)
    actual_seq_lengths_q = cumsum(q_lens)
    prefix_output, prefix_lse = _forward_prefill(q_nope, q_pe, k_nope, k_pe, value, actual_seq_lengths_q)
    # the chunked context: chunk size 128 (the workspace / block-size rounding), both requests in both
    chunk, num_chunks = BS, 2
    starts = [[i * chunk] * len(ctx) for i in range(num_chunks)]
    chunk_seq_lens = [[max(0, min(c, (i + 1) * chunk) - i * chunk) for c in ctx] for i in range(num_chunks)]
    seq_tot = [sum(x) for x in chunk_seq_lens]
    cache_kv_c, cache_k_pe = pages.kv, pages.kr
    num_heads = cache_k_pe.size(2)
    latent_kv_dim = cache_kv_c.size(-1)
    h = N
    if prefix_lse.dim() == 2:
        prefix_lse = prefix_lse.transpose(0, 1).unsqueeze(-1)
    prefix_output = prefix_output.to(torch.float32)
    prefix_lse = prefix_lse.to(torch.float32)
    out_list = [prefix_output.reshape(t * h, D)]
    lse_list = [prefix_lse.reshape(t * h)]
    common_kwargs = {
        "num_heads": N,
        "num_key_value_heads": N,
        "input_layout": "TND",
        "atten_mask": None,
        "sparse_mode": 0,
        "scale": SCALE,
        "antiquant_mode": 0,
        "antiquant_scale": None,
        "softmax_lse_flag": True,
        "actual_seq_lengths": actual_seq_lengths_q,
    }
    ctx_k, ctx_v, ctx_kr = [[] for _ in ctx], [[] for _ in ctx], [[] for _ in ctx]
    for i in range(num_chunks):
        toks = seq_tot[i]
        kv_c_normed = torch.empty(toks, num_heads, latent_kv_dim, dtype=cache_kv_c.dtype)
        k_pe_c = torch.empty(toks, num_heads, DR, dtype=q_pe.dtype)
        at = 0
        for b, n in enumerate(chunk_seq_lens[i]):  # npu_paged_cache_load
            for p in range(starts[i][b], starts[i][b] + n):
                blk, j = divmod(pages.slot(b, p), BS)
                kv_c_normed[at], k_pe_c[at] = cache_kv_c[blk, j], cache_k_pe[blk, j]
                at += 1
        kv_c_normed = kv_c_normed.squeeze()
        kv_nope = kv_b_proj(kv_c_normed)[0].view(-1, N, D + D)
        k_nope_c, v = kv_nope.split([D, D], dim=-1)
        k_pe_c = k_pe_c.expand((*k_nope_c.shape[:-1], -1))
        common_kwargs["actual_seq_lengths_kv"] = cumsum(chunk_seq_lens[i])
        common_kwargs["query_rope"] = q_pe
        common_kwargs["key_rope"] = k_pe_c.contiguous()
        query, key = q_nope, k_nope_c
        chunk_out, chunk_lse = torch_npu.npu_fused_infer_attention_score(query, key.contiguous(), v.contiguous(),
                                                                          **common_kwargs)
        if chunk_lse.dim() == 2:
            chunk_lse = chunk_lse.transpose(0, 1).unsqueeze(-1)
        assert chunk_lse.shape == (t, N, 1)
        out_list.append(chunk_out.to(torch.float32).reshape(t * h, D))
        lse_list.append(chunk_lse.to(torch.float32).reshape(t * h))
        at = 0
        for b, n in enumerate(chunk_seq_lens[i]):
            ctx_k[b].append(k_nope_c[at:at + n])
            ctx_v[b].append(v[at:at + n])
            ctx_kr[b].append(k_pe_c[at:at + n])
            at += n
    merged = lse_merge(out_list, lse_list).reshape(t, h, D)
    # the whole attention: each new token sees its request's context and the new tokens up to itself
    ks, vs, krs = [], [], []
    qa = 0
    for b, lq in enumerate(q_lens):
        ks += [torch.cat(ctx_k[b]), k_nope[qa:qa + lq]]
        vs += [torch.cat(ctx_v[b]), value[qa:qa + lq]]
        krs += [torch.cat(ctx_kr[b]), k_pe[qa:qa + lq]]
        qa += lq
    kv_lens = [c + q for c, q in zip(ctx, q_lens)]
    r, _ = tnd_causal_ref(q_nope, q_pe, torch.cat(ks), torch.cat(krs), torch.cat(vs), q_lens, kv_lens)
    assert_fia_out(merged, r, what="merged attention_out")


def _decode_case(rng, q_s, nz):
    """A decode step of the CTX requests with q_s tokens each (MTP when 2): the caches holding
    CTX + q_s rows per request, the absorbed query as the source makes it, the block table as a
    row slice of the runner's wider table."""
    pages = Pages(rng, [c + q_s for c in CTX], nz=nz)
    w_uk_t = bf(rng, N, D, HCKV, scale=D ** -0.5)
    ql_nope, q_pe = q_proj_and_k_up_proj(rng, len(CTX) * q_s, w_uk_t)
    runner_table = torch.zeros(len(CTX) + 2, pages.table.shape[1] + 3, dtype=torch.int32)
    runner_table[:len(CTX), :pages.table.shape[1]] = pages.block_table()
    block_table = runner_table[:len(CTX), ...]
    return pages, ql_nope, q_pe, block_table, [c + q_s for c in CTX]


V1_LAYOUTS = {"BNSD": (1, False), "BSND_NZ": (1, True), "TND_MTP": (2, False)}


@pytest.mark.parametrize("layout", list(V1_LAYOUTS))
def test_torchair_decode_transposed_query(layout):
    """[torchair] AscendMLATorchairImpl._forward_decode (graph mode): FIA v1 over the paged
    latent cache with the absorbed query as _q_proj_and_k_up_proj returns it, a transposed view
    (no .contiguous()); BNSD over the ND cache, BSND over the NZ view of the cache (enable_kv_nz),
    TND with MTP (sparse 3, the bool spec mask, cumulative actual_seq_lengths)."""
    q_s, nz = V1_LAYOUTS[layout]
    rng = np.random.default_rng(3 + q_s + nz)
    pages, q_nope, q_pe, block_table, seq_lens_list = _decode_case(rng, q_s, nz)
    k_nope, k_pe = pages.kv, pages.kr
    num_tokens = q_nope.size(0)
    block_size = pages.kv.shape[1]
    actual_seq_lengths = None
    if nz:
        k_nope = k_nope.view(-1, 1, HCKV // 16, block_size, 16)
        k_pe = k_pe.view(-1, 1, DR // 16, block_size, 16)
        input_layout = "BSND"
    else:
        k_nope = k_nope.view(-1, 1, block_size, HCKV)
        k_pe = k_pe.view(-1, 1, block_size, DR)
        input_layout = "BNSD"
    if q_s > 1:  # SpecDecoding
        input_layout = "TND"
        q_nope = q_nope.view(num_tokens, N, -1)
        q_pe = q_pe.view(num_tokens, N, -1)
        sparse_mode = 3
        spec_attn_mask = BOOL_MASK
        actual_seq_lengths = [q_s * (i + 1) for i in range(len(CTX))]
    else:
        if nz:
            q_nope = q_nope.view(num_tokens, 1, N, -1)
            q_pe = q_pe.view(num_tokens, 1, N, -1)
        else:
            q_nope = q_nope.view(num_tokens, N, 1, -1)
            q_pe = q_pe.view(num_tokens, N, 1, -1)
        sparse_mode = 0
        spec_attn_mask = None
    assert not q_nope.is_contiguous()
    attn_output, _ = torch_npu.npu_fused_infer_attention_score(
        q_nope,
        k_nope,
        k_nope,
        query_rope=q_pe,
        key_rope=k_pe,
        num_heads=N,
        num_key_value_heads=1,
        input_layout=input_layout,
        atten_mask=spec_attn_mask,
        sparse_mode=sparse_mode,
        scale=SCALE,
        antiquant_mode=0,
        antiquant_scale=None,
        block_table=block_table,
        block_size=block_size,
        actual_seq_lengths_kv=seq_lens_list,
        actual_seq_lengths=actual_seq_lengths)
    check_decode(attn_output, input_layout, q_nope.reshape(num_tokens, N, HCKV), q_pe.reshape(num_tokens, N, DR),
                  pages, seq_lens_list, q_s)


@pytest.mark.parametrize("layout", list(V1_LAYOUTS))
def test_mla_v1_decode_graph_capture_v1(layout):
    """[mla_v1_old] AscendMLAImpl._forward_decode: the query made contiguous, FIA v1 with
    antiquant_mode 0 / antiquant_scale None; while capturing, the workspace from
    torch_npu._npu_fused_infer_attention_score_get_max_workspace and the .out form into
    torch.empty_like(q_nope) with a (num_tokens,) bf16 softmax_lse placeholder; eager, the plain
    call. Both equal, and against the reference."""
    q_s, nz = V1_LAYOUTS[layout]
    rng = np.random.default_rng(7 + q_s + nz)
    pages, q_nope, q_pe, block_table, seq_lens_list = _decode_case(rng, q_s, nz)
    k_nope, k_pe = pages.kv, pages.kr
    num_tokens = q_nope.size(0)
    block_size = BS
    actual_seq_lengths = None
    if nz:
        k_nope = k_nope.view(-1, 1, HCKV // 16, block_size, 16)
        k_pe = k_pe.view(-1, 1, DR // 16, block_size, 16)
        input_layout = "BSND"
    else:
        k_nope = k_nope.view(-1, 1, block_size, HCKV)
        k_pe = k_pe.view(-1, 1, block_size, DR)
        input_layout = "BNSD"
    if q_s > 1:
        input_layout = "TND"
        q_nope = q_nope.view(num_tokens, N, -1).contiguous()
        q_pe = q_pe.view(num_tokens, N, -1)
        sparse_mode = 3
        spec_attn_mask = BOOL_MASK
        actual_seq_lengths = [q_s * (i + 1) for i in range(len(CTX))]
    else:
        if nz:
            q_nope = q_nope.view(num_tokens, 1, N, -1).contiguous()
            q_pe = q_pe.view(num_tokens, 1, N, -1)
        else:
            q_nope = q_nope.view(num_tokens, N, 1, -1).contiguous()
            q_pe = q_pe.view(num_tokens, N, 1, -1)
        sparse_mode = 0
        spec_attn_mask = None
    common_kwargs = {
        'query_rope': q_pe,
        'key_rope': k_pe,
        'num_heads': N,
        'num_key_value_heads': 1,
        'input_layout': input_layout,
        'atten_mask': spec_attn_mask,
        'sparse_mode': sparse_mode,
        'scale': SCALE,
        'antiquant_mode': 0,
        'antiquant_scale': None,
        'block_table': block_table,
        'block_size': block_size,
        "actual_seq_lengths": actual_seq_lengths,
        "actual_seq_lengths_kv": seq_lens_list,
    }
    workspace = torch_npu._npu_fused_infer_attention_score_get_max_workspace(q_nope, k_nope, k_nope, **common_kwargs)
    attn_output = torch.empty_like(q_nope)
    softmax_lse = torch.empty(num_tokens, dtype=q_nope.dtype)
    torch_npu.npu_fused_infer_attention_score.out(q_nope, k_nope, k_nope, **common_kwargs, workspace=workspace,
                                                  out=[attn_output, softmax_lse])
    eager, _ = torch_npu.npu_fused_infer_attention_score(q_nope, k_nope, k_nope, **common_kwargs)
    assert torch.equal(attn_output, eager)
    check_decode(attn_output, input_layout, q_nope.reshape(num_tokens, N, HCKV), q_pe.reshape(num_tokens, N, DR),
                  pages, seq_lens_list, q_s)


@pytest.mark.parametrize("layout", list(V2_LAYOUTS))
def test_mla_v1_decode_v2_eager_capture_and_replay(layout):
    """[mla_v1] _forward_decode with FIA v2: BNSD_NBSD over the ND cache, BSND_NBSD over its NZ
    view (enable_kv_nz), TND_NTD for MTP (sparse 3, the int8 splitfuse mask). Eager
    npu_fused_infer_attention_score_v2; captured: the workspace from
    torch_npu._npu_fused_infer_attention_score_v2_get_max_workspace, then .out into
    torch.empty(attn_output_shape) with a (num_tokens,) bf16 softmax_lse placeholder;
    update_graph_params's replay of .out with every argument a keyword, on the captured graph
    batch (one request more, padded: seq len 0, zero block-table row)."""
    q_s, nz = V2_LAYOUTS[layout]
    rng = np.random.default_rng(11 + q_s + nz)
    pages, ql_nope, q_pe0, block_table, seq_lens_list = _decode_case(rng, q_s, nz)
    q_nope, k_nope, common_kwargs, attn_output_shape = v2_decode_kwargs(layout, pages, ql_nope, q_pe0, block_table,
                                                                         seq_lens_list)
    q_pe = common_kwargs["query_rope"]
    num_tokens = q_nope.size(0)
    out_layout = layout.split("_")[1]
    eager, lse = torch_npu.npu_fused_infer_attention_score_v2(q_nope, k_nope, k_nope, **common_kwargs)
    assert eager.shape == attn_output_shape and lse.shape == (0,)
    check_decode(eager, out_layout, ql_nope, q_pe0, pages, seq_lens_list, q_s)
    # capture
    workspace = torch_npu._npu_fused_infer_attention_score_v2_get_max_workspace(q_nope, k_nope, k_nope,
                                                                                **common_kwargs)
    attn_output = torch.empty(attn_output_shape, dtype=q_pe.dtype)
    softmax_lse = torch.empty(num_tokens, dtype=q_pe.dtype)
    torch_npu.npu_fused_infer_attention_score_v2.out(q_nope, k_nope, k_nope, **common_kwargs, workspace=workspace,
                                                     out=[attn_output, softmax_lse])
    assert torch.equal(attn_output, eager)
    # replay on a graph batch of one padded request more (update_graph_params)
    pad_tokens = num_tokens + q_s
    g_q = torch.zeros((pad_tokens,) + tuple(q_nope.shape[1:]), dtype=q_nope.dtype)
    g_q[:num_tokens] = q_nope
    g_qr = torch.zeros((pad_tokens,) + tuple(q_pe.shape[1:]), dtype=q_pe.dtype)
    g_qr[:num_tokens] = q_pe
    g_table = torch.zeros(len(CTX) + 1, block_table.shape[1], dtype=torch.int32)
    g_table[:len(CTX)] = block_table
    g_out = torch.empty((N, pad_tokens) + tuple(attn_output_shape[2:]), dtype=q_pe.dtype)
    g_lse = torch.empty(pad_tokens, dtype=q_pe.dtype)
    if q_s > 1:
        spec_multiple = q_s
        padded_lens = seq_lens_list + [0] * (pad_tokens // spec_multiple - len(seq_lens_list))
        actual_seq_lengths = [spec_multiple * (i + 1) for i in range(pad_tokens // spec_multiple)]
    else:
        padded_lens = seq_lens_list + [0] * (pad_tokens - len(seq_lens_list))
        actual_seq_lengths = None
    torch_npu.npu_fused_infer_attention_score_v2.out(
        g_q,
        k_nope,
        k_nope,
        query_rope=g_qr,
        key_rope=common_kwargs["key_rope"],
        num_query_heads=N,
        num_key_value_heads=1,
        input_layout=common_kwargs["input_layout"],
        atten_mask=common_kwargs["atten_mask"],
        sparse_mode=common_kwargs["sparse_mode"],
        softmax_scale=SCALE,
        block_table=g_table,
        block_size=BS,
        actual_seq_kvlen=padded_lens,
        actual_seq_qlen=actual_seq_lengths,
        workspace=workspace,
        out=[g_out, g_lse],
    )
    check_decode(g_out[:, :num_tokens], out_layout, ql_nope, q_pe0, pages, seq_lens_list, q_s)
    assert not torch.any(g_out[:, num_tokens:].float() != 0)  # the padded request (no KV): 0
