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
computed by the tests in torch / numpy."""
import numpy as np
import pytest
import torch

import mlaops
import mlaops.torch_npu as torch_npu
from compare import assert_cascade, assert_close, assert_fia_out, assert_int8
from reference import mla_prolog, scatter_cache
from reference_preprocess import mla_preprocess as mlapo_reference
from replay_util import (BOOL_MASK, BS, D, DR, HCKV, HCQ, HE, INT8_MASK, N, SCALE, Pages, W8A8Linear, assert_lse,
                         assert_mlapo_outputs, bf, bt, cumsum, dynamic_quant, f64, lse_merge, mla_paged_ref, nz_tiles,
                         rope_rows_deinterleaved, rope_tables, tnd_causal_ref, tokens_bnsd)

CTX = (130, 7, 60)  # decode requests: tokens already in the cache before this step
ACL_FORMAT_FRACTAL_NZ = 29


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


def _check_decode(out, layout, ql_nope, q_pe, pages, lens, q_s):
    r, _ = mla_paged_ref(tokens_bnsd(ql_nope, q_s), tokens_bnsd(q_pe, q_s), pages, lens, q_s=q_s)
    b = len(lens)
    got = {"BNSD": lambda o: f64(o), "BSND": lambda o: f64(o).transpose(0, 2, 1, 3),
           "TND": lambda o: tokens_bnsd(o, q_s), "NBSD": lambda o: f64(o).transpose(1, 0, 2, 3),
           "NTD": lambda o: f64(o).reshape(N, b, q_s, HCKV).transpose(1, 0, 2, 3)}[layout](out)
    assert_fia_out(got, r)


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
    _check_decode(attn_output, input_layout, q_nope.reshape(num_tokens, N, HCKV), q_pe.reshape(num_tokens, N, DR),
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
    _check_decode(attn_output, input_layout, q_nope.reshape(num_tokens, N, HCKV), q_pe.reshape(num_tokens, N, DR),
                  pages, seq_lens_list, q_s)


V2_LAYOUTS = {"BNSD_NBSD": (1, False), "BSND_NBSD": (1, True), "TND_NTD": (2, False)}


def _v2_decode_kwargs(layout, pages, q_nope, q_pe, block_table, seq_lens_list):
    """[mla_v1] AscendMLAImpl._forward_decode (not FA quant, head_padding 0): the views, the
    layout and common_kwargs. Returns (q_nope, k_nope, common_kwargs, attn_output_shape)."""
    q_s, nz = V2_LAYOUTS[layout]
    k_nope, k_pe = pages.kv, pages.kr
    num_tokens = q_nope.size(0)
    block_size = BS
    actual_seq_lengths = None
    if nz:
        nz_fmt_last_dim = 16
        k_nope = k_nope.view(-1, 1, HCKV // nz_fmt_last_dim, block_size, nz_fmt_last_dim)
        k_pe = k_pe.view(-1, 1, DR // nz_fmt_last_dim, block_size, nz_fmt_last_dim)
    else:
        k_nope = k_nope.view(-1, 1, block_size, HCKV)
        k_pe = k_pe.view(-1, 1, block_size, DR)
    if q_s > 1:  # SpecDecoding with a speculative config
        input_layout = "TND_NTD"
        q_nope = q_nope.view(num_tokens, N, -1).contiguous()
        q_pe = q_pe.view(num_tokens, N, -1)
        attn_output_shape = (N, num_tokens, HCKV)
        sparse_mode = 3
        attn_mask = INT8_MASK
        actual_seq_lengths = [q_s * (i + 1) for i in range(len(CTX))]
    else:
        if nz:
            input_layout = "BSND_NBSD"
            q_nope = q_nope.view(num_tokens, 1, N, -1).contiguous()
            q_pe = q_pe.view(num_tokens, 1, N, -1)
        else:
            input_layout = "BNSD_NBSD"
            q_nope = q_nope.view(num_tokens, N, 1, -1).contiguous()
            q_pe = q_pe.view(num_tokens, N, 1, -1)
        attn_output_shape = (N, num_tokens, 1, HCKV)
        sparse_mode = 0
        attn_mask = None
    common_kwargs = {
        "query_rope": q_pe,
        "key_rope": k_pe,
        "num_query_heads": N,
        "num_key_value_heads": 1,
        "input_layout": input_layout,
        "atten_mask": attn_mask,
        "sparse_mode": sparse_mode,
        "softmax_scale": SCALE,
        "block_table": block_table,
        "block_size": block_size,
        "actual_seq_qlen": actual_seq_lengths,
        "actual_seq_kvlen": seq_lens_list,
    }
    return q_nope, k_nope, common_kwargs, attn_output_shape


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
    q_nope, k_nope, common_kwargs, attn_output_shape = _v2_decode_kwargs(layout, pages, ql_nope, q_pe0, block_table,
                                                                         seq_lens_list)
    q_pe = common_kwargs["query_rope"]
    num_tokens = q_nope.size(0)
    out_layout = layout.split("_")[1]
    eager, lse = torch_npu.npu_fused_infer_attention_score_v2(q_nope, k_nope, k_nope, **common_kwargs)
    assert eager.shape == attn_output_shape and lse.shape == (0,)
    _check_decode(eager, out_layout, ql_nope, q_pe0, pages, seq_lens_list, q_s)
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
    _check_decode(g_out[:, :num_tokens], out_layout, ql_nope, q_pe0, pages, seq_lens_list, q_s)
    assert not torch.any(g_out[:, num_tokens:].float() != 0)  # the padded request (no KV): 0


class FusedLayer:
    """The W8A8 layers of one DeepSeek MLA layer as vllm-ascend holds them after
    process_weights_after_loading: fused_qkv_a_proj [HE -> HCQ + HCKV + DR] and q_proj (q_b_proj)
    [HCQ -> N * 192], their int8 weights transposed to [in, out] and cast to FRACTAL_NZ
    (is_enable_nz), per-channel weight_scale (bf16, flattened) and the static quant parameters;
    the RmsNorm weights (q_a_layernorm with the anti-outlier bias), W_UK_T [N, D, HCKV], and the
    FA-quant layer's k scale (fa_k.scale, quant_kscale, fak_descale_float)."""

    def __init__(self, rng):
        self.fused = W8A8Linear(rng, HE, HCQ + HCKV + DR)
        self.q_proj = W8A8Linear(rng, HCQ, N * (D + DR))
        for layer in (self.fused, self.q_proj):
            loaded = torch.from_numpy(np.ascontiguousarray(layer.w.T))  # the checkpoint's [out, in]
            layer.weight = torch_npu.npu_format_cast(loaded.transpose(0, 1).contiguous(), ACL_FORMAT_FRACTAL_NZ)
            layer.weight_scale_t = bt(layer.weight_scale)
        self.gamma_cq, self.beta_cq = bf(rng, HCQ, scale=0.2, shift=1.0), bf(rng, HCQ, scale=0.1)
        self.gamma_ckv = bf(rng, HCKV, scale=0.2, shift=1.0)
        self.W_UK_T = bf(rng, N, D, HCKV, scale=D ** -0.5)
        fa_k_scale = torch.squeeze(torch.tensor([[1 / 24.0]], dtype=torch.float32)).unsqueeze(0)
        self.fak_descale_float = fa_k_scale.to(torch.float)
        self.quant_kscale = 1.0 / fa_k_scale.repeat(HCKV).view(1, HCKV).to(torch.float)


def _prolog_reference(layer, x_i8, dsx, cos, sin, dsw_dq, dsw_uq, dsw_dkv, qs_ckv):
    """reference.mla_prolog for full quant (+ KV quant when qs_ckv is given) on the logical
    int8 weights."""
    w = layer.fused.w.astype(np.float64)
    return mla_prolog(x=f64(x_i8), wdq=w[:, :HCQ], wuqqr=layer.q_proj.w.astype(np.float64), wuk=f64(layer.W_UK_T),
                      wdkvkr=w[:, HCQ:], gcq=f64(layer.gamma_cq), gckv=f64(layer.gamma_ckv), sin=f64(sin),
                      cos=f64(cos), dsw_uqqr=f64(dsw_uq), qs_ckv=qs_ckv, full=(f64(dsx).reshape(-1, 1), f64(dsw_dq),
                                                                                f64(dsw_dkv)))


def _decode_step(rng, int8_cache, nz):
    """One decode token per CTX request: caches holding CTX rows (random), the new token's
    position CTX[b] and slot, cos / sin as the decode metadata holds them ([T, 1, 1, 64])."""
    pages = Pages(rng, [c + 1 for c in CTX], nz=nz, int8=int8_cache)
    slots = [pages.slot(b, c) for b, c in enumerate(CTX)]
    cos, sin = rope_tables(list(CTX))
    slot_mapping = torch.full((16,), -1, dtype=torch.int64)  # the runner's buffer; the first bsz used
    slot_mapping[:len(CTX)] = torch.tensor(slots)
    return pages, slots, cos.unsqueeze(1).unsqueeze(2), sin.unsqueeze(1).unsqueeze(2), slot_mapping


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
    pages, slots, dcos, dsin, slot_mapping = _decode_step(rng, int8_cache=True, nz=True)
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
    pages, slots, dcos, dsin, slot_mapping = _decode_step(rng, int8_cache=fa_quant, nz=fa_quant)
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
    q_nope, k_nope, common_kwargs, _ = _v2_decode_kwargs("BNSD_NBSD", pages, decode_q_nope, decode_q_pe,
                                                         pages.block_table(), [c + 1 for c in CTX])
    attn_output, _ = torch_npu.npu_fused_infer_attention_score_v2(q_nope, k_nope, k_nope, **common_kwargs)
    _check_decode(attn_output, "NBSD", decode_q_nope, decode_q_pe, pages, [c + 1 for c in CTX], 1)


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
    pages, slots, dcos, dsin, slot_mapping = _decode_step(rng, int8_cache=False, nz=enable_kv_nz)
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
    pages, slots, dcos, dsin, slot_mapping = _decode_step(rng, int8_cache=False, nz=False)
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
