"""What vllm-ascend's replay tests share (test_replay_vllm_ascend.py, test_replay_vllm_ascend_fa_quant.py,
test_replay_vllm_ascend_mlapo.py): the decode requests (CTX), the FIA v2 decode call's views and
keywords as [mla_v1] builds them and its check against the float64 reference, the W8A8 layer as
vllm-ascend holds it after loading, and one decode step's caches. The sources named in brackets:
test_replay_vllm_ascend.py."""
import numpy as np
import torch

import mlaops.torch_npu as torch_npu
from compare import assert_fia_out
from replay_util import (BS, D, DR, HCKV, HCQ, HE, INT8_MASK, N, SCALE, Pages, W8A8Linear, bf, bt, f64, mla_paged_ref,
                         rope_tables, tokens_bnsd)


CTX = (130, 7, 60)  # decode requests: tokens already in the cache before this step


ACL_FORMAT_FRACTAL_NZ = 29


def check_decode(out, layout, ql_nope, q_pe, pages, lens, q_s):
    r, _ = mla_paged_ref(tokens_bnsd(ql_nope, q_s), tokens_bnsd(q_pe, q_s), pages, lens, q_s=q_s)
    b = len(lens)
    got = {"BNSD": lambda o: f64(o), "BSND": lambda o: f64(o).transpose(0, 2, 1, 3),
           "TND": lambda o: tokens_bnsd(o, q_s), "NBSD": lambda o: f64(o).transpose(1, 0, 2, 3),
           "NTD": lambda o: f64(o).reshape(N, b, q_s, HCKV).transpose(1, 0, 2, 3)}[layout](out)
    assert_fia_out(got, r)


V2_LAYOUTS = {"BNSD_NBSD": (1, False), "BSND_NBSD": (1, True), "TND_NTD": (2, False)}


def v2_decode_kwargs(layout, pages, q_nope, q_pe, block_table, seq_lens_list):
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


def decode_step(rng, int8_cache, nz):
    """One decode token per CTX request: caches holding CTX rows (random), the new token's
    position CTX[b] and slot, cos / sin as the decode metadata holds them ([T, 1, 1, 64])."""
    pages = Pages(rng, [c + 1 for c in CTX], nz=nz, int8=int8_cache)
    slots = [pages.slot(b, c) for b, c in enumerate(CTX)]
    cos, sin = rope_tables(list(CTX))
    slot_mapping = torch.full((16,), -1, dtype=torch.int64)  # the runner's buffer; the first bsz used
    slot_mapping[:len(CTX)] = torch.tensor(slots)
    return pages, slots, cos.unsqueeze(1).unsqueeze(2), sin.unsqueeze(1).unsqueeze(2), slot_mapping
