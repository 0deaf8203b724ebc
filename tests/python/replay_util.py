"""Shared pieces of the replay tests (test_replay_vllm_ascend.py, test_replay_sglang.py): the
model's state as the serving stacks hold it (paged latent caches as they allocate them, block
tables, W8A8 "layers" with their quant parameters, rope tables), and float64 numpy references
that read the caches' memory themselves. Nothing here calls the library or shares code with it:
the references build on tests/python/reference.py and reference_preprocess.py.

Dimensions are DeepSeek's where the operators demand them (Hckv 512, Dr 64, D = V_D 128, block
size 128); heads, tokens and the hidden size are small."""
import numpy as np
import torch

from compare import ULP_BF16, assert_close
from reference import bf16, f64, fia_bnsd

HCKV, DR, D = 512, 64, 128  # kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim = v_head_dim
N = 8                        # local heads (SGLang's FIA decode needs N / KV_N >= 8)
HE, HCQ = 256, 128           # hidden size, q_lora_rank
BS = 128                     # block (page) size; the NZ caches and MLA full quant demand 128
SCALE = (D + DR) ** -0.5     # softmax scale of the absorbed MLA (DeepSeek's qk_head_dim)
# vllm-ascend's AttentionMaskBuilder.get_splitfuse_attn_mask: int8 upper triangle, 2048 x 2048
INT8_MASK = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)
# SGLang's AscendAttnMaskBuilder.generate_mask_flag(2048) and vllm-ascend's spec_attn_mask: bool
BOOL_MASK = ~torch.ones((2048, 2048), dtype=torch.bool).tril_()


def bf(rng, *shape, scale=1.0, shift=0.0):
    """A bf16 torch tensor of N(shift, scale^2) values."""
    return torch.from_numpy((rng.standard_normal(shape) * scale + shift).astype(np.float32)).to(torch.bfloat16)


def rope_tables(positions, dim=DR):
    """(cos, sin) bf16 [T, dim]: the rotate-half tables [c, c] / [s, s] of the positions."""
    inv = 10000.0 ** (-np.arange(dim // 2) / (dim // 2))
    ang = np.asarray(positions, np.float64)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1).astype(np.float32)
    sin = np.concatenate([np.sin(ang)] * 2, -1).astype(np.float32)
    return torch.from_numpy(cos).to(torch.bfloat16), torch.from_numpy(sin).to(torch.bfloat16)


def cumsum(lens):
    return [int(x) for x in np.cumsum(lens)]


class Pages:
    """The latent caches of one MLA layer as vLLM / SGLang allocate them, [blocks, BS, 1, W] (nope
    W = 512, rope W = 64), filled with random rows everywhere, and a block table giving request b
    the blocks table[b]. nz: the rows live in FRACTAL_NZ blocks [W / c0, BS, c0] of the same
    memory (c0 = 32 bytes / element size), as the NZ cache modes write them; int8: an int8 nope
    cache (FA quant). table_width pads each table row with unused zero entries. layers > 1: the
    caches are layer `layer` of a [layers, blocks, BS, 1, W] pool (SGLang's NPUMLATokenToKVPool:
    views at a storage offset); first_block: blocks below it are never given out (SGLang keeps
    page 0 for padded tokens)."""

    def __init__(self, rng, lens, nz=False, int8=False, spare=2, table_width=None, layers=1, layer=0,
                 first_block=0):
        per = [-(-n // BS) for n in lens]
        self.blocks = first_block + sum(per) + spare
        ids = first_block + rng.permutation(self.blocks - first_block)
        width = table_width or max(per)
        table = np.zeros((len(lens), width), np.int32)
        at = 0
        for b, p in enumerate(per):
            table[b, :p] = ids[at:at + p]
            at += p
        self.table, self.nz, self.lens = table, nz, list(lens)
        shape = (layers, self.blocks, BS, 1)
        if int8:
            kv = torch.from_numpy(rng.integers(-127, 128, shape + (HCKV,)).astype(np.int8))
        else:
            kv = bf(rng, *shape, HCKV)
        self.kv, self.kr = kv[layer], bf(rng, *shape, DR)[layer]

    def block_table(self):
        return torch.from_numpy(self.table.copy())

    def slot(self, b, pos):
        return int(self.table[b, pos // BS]) * BS + pos % BS

    def rows(self, cache, b, n):
        """The first n positions of request b, float64 [n, W], read from the cache's memory."""
        w = cache.shape[-1]
        mem = f64(cache).reshape(self.blocks, -1)
        out = np.empty((n, w))
        for p in range(n):
            blk, j = divmod(self.slot(b, p), BS)
            if self.nz:
                c0 = 32 // cache.element_size()
                out[p] = mem[blk].reshape(w // c0, BS, c0)[:, j, :].reshape(w)
            else:
                out[p] = mem[blk].reshape(BS, w)[j]
        return out


def padded(rows_per_batch):
    """Per-request rows [L_b, W] -> [B, 1, max L, W] (one KV head)."""
    m = max(r.shape[0] for r in rows_per_batch)
    out = np.zeros((len(rows_per_batch), 1, m, rows_per_batch[0].shape[1]))
    for b, r in enumerate(rows_per_batch):
        out[b, 0, :r.shape[0]] = r
    return out


def mla_paged_ref(q, q_rope, pages, kv_lens, q_s=1, kv_scale=1.0, score_scale=None):
    """Absorbed MLA attention over the paged caches in float64: q [B, N, Q_S, 512] and q_rope
    [B, N, Q_S, 64] (the query rows per request, right-aligned to the KV: causal when Q_S > 1),
    key = value = the nope rows, key_rope = the rope rows. kv_scale multiplies the value rows
    (MLA full quant: V = int8 rows * keyScale); score_scale overrides the softmax scale.
    Returns (out [B, N, Q_S, 512], lse [B, N, Q_S])."""
    kv = [pages.rows(pages.kv, b, n) for b, n in enumerate(kv_lens)]
    kr = [pages.rows(pages.kr, b, n) for b, n in enumerate(kv_lens)]
    k = padded(kv)
    b = len(kv_lens)
    return fia_bnsd(q, k, k * kv_scale, SCALE if score_scale is None else score_scale, [q_s] * b, list(kv_lens),
                    q_rope=q_rope, k_rope=padded(kr), causal=q_s > 1)


def tokens_bnsd(x_tnd, q_s):
    """[T, N, W] float64 of B * q_s tokens -> [B, N, q_s, W]."""
    x = f64(x_tnd)
    return x.reshape(-1, q_s, x.shape[-2], x.shape[-1]).transpose(0, 2, 1, 3)


def tnd_causal_ref(q, qr, k, kr, v, q_lens, kv_lens):
    """TND prefill in float64: per request, causal (right-aligned) attention of q (+ rope) over
    its k / v rows. Returns (out [T, N, V_D], lse [T, N])."""
    out, lse = [], []
    qa, ka = 0, 0
    for lq, lk in zip(q_lens, kv_lens):
        sl_q, sl_k = slice(qa, qa + lq), slice(ka, ka + lk)
        o, l = fia_bnsd(f64(q)[sl_q].transpose(1, 0, 2)[None], f64(k)[sl_k].transpose(1, 0, 2)[None],
                        f64(v)[sl_k].transpose(1, 0, 2)[None], SCALE, [lq], [lk],
                        q_rope=f64(qr)[sl_q].transpose(1, 0, 2)[None], k_rope=f64(kr)[sl_k].transpose(1, 0, 2)[None],
                        causal=True)
        out.append(o[0].transpose(1, 0, 2))
        lse.append(l[0].T)
        qa, ka = qa + lq, ka + lk
    return np.concatenate(out), np.concatenate(lse)


def lse_merge(outs, lses):
    """npu_attention_update's merge of partial attentions in float64: outs [M, D], lses [M] each
    -> sum_i exp(lse_i - L) out_i with L = log sum_i exp(lse_i)."""
    lse = np.stack([f64(x) for x in lses])
    m = np.max(lse, axis=0)
    w = np.exp(lse - m)
    total = np.sum(w, axis=0)
    return sum(w[i][:, None] * f64(o) for i, o in enumerate(outs)) / total[:, None]


def assert_lse(lse, ref, what="softmax_lse"):
    """softmaxLse (fp32) within 1e-4 relative + 1e-4 absolute of the float64 reference (the
    rows' maxima are O(1..10); the fp32 exp-sum of the kernel against the double one)."""
    a, r = f64(lse).reshape(-1), np.asarray(ref, np.float64).reshape(-1)
    assert a.shape == r.shape, f"{what}: shape {a.shape} vs {r.shape}"
    bad = np.abs(a - r) > 1e-4 * np.abs(r) + 1e-4
    assert not bad.any(), f"{what}: {int(bad.sum())} of {r.size} off, max |d| {np.max(np.abs(a - r))}"


def dynamic_quant(x):
    """torch_npu.npu_dynamic_quant's result for a bf16 [T, H] tensor: per-token symmetric int8
    with scale max|x| / 127 -> (int8 [T, H], fp32 scale (T,)). Computed here (mlaops has no
    npu_dynamic_quant)."""
    xf = f64(x)
    s = (np.max(np.abs(xf), axis=-1) / 127.0).astype(np.float32)
    q = np.clip(np.rint(xf / s[:, None].astype(np.float64)), -127, 127).astype(np.int8)
    return torch.from_numpy(q), torch.from_numpy(s)


class W8A8Linear:
    """A W8A8 linear layer of vllm-ascend / SGLang after process_weights_after_loading: weight
    int8 [in, out] (transposed to [in, out] and cast to FRACTAL_NZ by the caller), per-output
    weight_scale (dynamic W8A8) and, for static W8A8 (MLAPO), input_scale / input_offset,
    deq_scale (fp32, bf16 model) and quant_bias (int32) per output channel."""

    def __init__(self, rng, k, m):
        self.w = rng.integers(-127, 128, (k, m)).astype(np.int8)       # [in, out]
        self.weight_scale = (rng.uniform(0.5, 1.5, m) / (127.0 * np.sqrt(k))).astype(np.float32)
        self.input_scale = torch.tensor([1 / 32], dtype=torch.bfloat16)
        self.input_offset = torch.tensor([1], dtype=torch.int8)
        self.deq_scale = (rng.uniform(0.5, 1.5, m) / (32.0 * 73.0 * np.sqrt(k))).astype(np.float32)
        self.quant_bias = rng.integers(-2000, 2000, m).astype(np.int32)


def rope_rows_deinterleaved(w, rope_dim=DR):
    """What vllm-ascend's and SGLang's trans_rope_weight do to a weight, scale or bias: along dim
    -2 the last rope_dim rows become their even rows followed by their odd ones (the MLAPO op
    rotates halves; the checkpoint's rope is interleaved). A new contiguous tensor."""
    head, tail = w[..., :-rope_dim, :], w[..., -rope_dim:, :]
    return torch.cat([head, tail[..., 0::2, :], tail[..., 1::2, :]], dim=-2).contiguous()


def nz_tiles(m, rows=16, cols=32):
    """What their transdata(m, block_size=(16, 32)) makes of a 2-D [R, C] tensor whose dims are
    multiples of the block: [C / 32, R, 32], the 32-column tiles one after the other (the
    FRACTAL_NZ storage order of an int8 matrix)."""
    r, c = m.shape
    assert r % rows == 0 and c % cols == 0, (r, c)
    return m.reshape(r, c // cols, cols).permute(1, 0, 2).contiguous()


def assert_mlapo_outputs(q_nope, kv_cache, q_rope, kr_cache, before, r, slots, nz):
    """The MLAPO op's outputs against reference_preprocess's values r: q_nope / q_rope under the
    bf16 rule at 4 ulps (int8 weights) with the rounding-cascade allowance of
    tests/python/test_mla_preprocess.py (0.1 % of the elements, at least 2, within 0.05 rms); the
    caches' written rows at 4 ulps and every other byte unchanged (before: the caches' float64
    values before the call)."""
    from reference_preprocess import scatter
    rtol = 4 * ULP_BF16
    for a, ref, what in ((q_nope, r["q_nope"], "q_out0"), (q_rope, r["q_rope"], "q_out1")):
        assert a.dtype == torch.bfloat16, what
        assert_close(a, ref, rtol=rtol, max_mean_rel=ULP_BF16, max_bad_frac=max(0.001, 2.0 / np.size(ref)),
                     cap_rms=0.05, what=what)
    c0 = 16 if nz else None
    for cache, rows, prev, what in ((kv_cache, r["kn"], before[0], "kv_cache"),
                                    (kr_cache, r["kr"], before[1], "kv_cache_rope")):
        if nz:
            blocks = cache.shape[0]
            mem = f64(cache).reshape(blocks, -1, BS, 16)
            want = scatter(prev.reshape(mem.shape), rows, slots, c0)
        else:
            mem = f64(cache)
            want = scatter(prev, rows, slots)
        assert_close(mem, want, rtol=rtol, what=what)


def bt(a):
    """A float array as a bf16 torch tensor."""
    return torch.from_numpy(np.asarray(a, np.float32)).to(torch.bfloat16)


__all__ = ["HCKV", "DR", "D", "N", "HE", "HCQ", "BS", "SCALE", "INT8_MASK", "BOOL_MASK", "bf", "bt", "bf16", "f64",
           "rope_tables", "cumsum", "Pages", "padded", "tokens_bnsd", "tnd_causal_ref", "mla_paged_ref", "lse_merge",
           "assert_lse", "dynamic_quant", "W8A8Linear", "rope_rows_deinterleaved", "nz_tiles", "assert_mlapo_outputs"]
