"""npu_mla_prolog_v3's per-tile KV quant (kv_cache_quant_mode 3) and the PA_BLK_NZ cache mode
against the float64 numpy reference (reference.py; docs/ops/mla_prolog.md "Per-tile KV quant",
"Cache modes")."""
import numpy as np
import pytest
import torch

import mlaops
from compare import assert_cascade, assert_close, assert_int8
from reference import bf16, mla_prolog, rms_norm, rope, scatter_cache
from test_mla_prolog import BLOCK_NUM, BLOCK_SIZE, DR, N, make_inputs

TILE = 128


def tile_quant(c, alpha):
    """Per token, tiles of 128 channels: clip to ±α·max|c|, scale s = α·max|c| / 127 (fp32),
    q = sat_int8(rint(c' · fp32(1/s))). Returns (q [T, H], s [T, H/128]); an all-zero tile: 0, 0."""
    t, h = c.shape
    g = c.reshape(t, h // TILE, TILE)
    a = np.max(np.abs(g), axis=-1, keepdims=True)
    s = (alpha * a / 127.0).astype(np.float32).astype(np.float64)
    cl = np.clip(g, -alpha * a, alpha * a)
    inv = np.where(s > 0, (1.0 / np.where(s > 0, s, 1)).astype(np.float32), 0).astype(np.float64)
    q = np.clip(np.rint((cl * inv).astype(np.float32)), -128, 127)
    return q.reshape(t, h), s[..., 0]


@pytest.mark.parametrize("quant,w_mode", [("partial", 1), ("full_kv", 2)])
@pytest.mark.parametrize("alpha", [1.0, 0.6])
def test_v3_per_tile_kv_quant(quant, w_mode, alpha):
    """Tuples (1, 3, 0) and (2, 3, 0): the int8 kv row [q (Hckv) | bf16 rope (2·Dr bytes) | fp32
    tile scales], the kr cache empty, a bf16 query."""
    t, hckv = 6, 2 * TILE
    args, kw, ref_in, slots = make_inputs(60 + w_mode, t, quant=quant, hckv=hckv)
    kw = {k: v for k, v in kw.items() if k not in ("quant_scale_ckv", "quant_scale_ckr")}
    ref_in = {k: v for k, v in ref_in.items() if k not in ("qs_ckv", "qs_ckr")}
    dtile = hckv + 2 * DR + 4 * (hckv // TILE)
    kv = torch.full((BLOCK_NUM, BLOCK_SIZE, 1, dtile), 3, dtype=torch.int8)
    kv_before = kv.clone()
    kr = torch.empty(0, dtype=torch.int8)
    q, qr, dq, _, _ = mlaops.npu_mla_prolog_v3(
        *args[:9], kv, kr, cache_index=args[9], **kw, weight_quant_mode=w_mode, kv_cache_quant_mode=3,
        k_nope_clip_alpha=torch.tensor([alpha], dtype=torch.float32), ckvkr_repo_mode=1, quant_scale_repo_mode=1)
    assert q.dtype == torch.bfloat16 and q.shape == (t, N, hckv) and dq.shape == (1,)
    q_ref, qr_ref, _, _ = mla_prolog(**ref_in)
    assert_cascade(q, q_ref, ulps=4, what="query")
    assert_cascade(qr, qr_ref, ulps=4, what="query_rope")
    # the kv rows the spec defines, from c = RmsNorm(c_KV) (fp32) and the RoPE'd key
    x = ref_in["x"]
    if quant == "full_kv":
        ck = (x @ ref_in["wdkvkr"]) * ref_in["full"][0] * ref_in["full"][2]
    else:
        ck = bf16(x @ ref_in["wdkvkr"])
    c = rms_norm(ck[:, :hckv], ref_in["gckv"], 1e-5)
    q_rows, s_rows = tile_quant(c, alpha)
    kr_rows = bf16(rope(ck[:, hckv:], ref_in["cos"], ref_in["sin"]))
    rows = kv.reshape(-1, dtile).numpy()
    written = np.zeros(rows.shape[0], bool)
    for i, p in enumerate(slots):
        if p < 0:
            continue
        written[p] = True
        row = rows[p]
        assert_int8(row[:hckv], q_rows[i], max_off_frac=0.02, what=f"token {i} int8 kv")
        rope_vals = torch.from_numpy(row[hckv:hckv + 2 * DR].copy()).view(torch.bfloat16)
        assert_close(rope_vals, kr_rows[i], what=f"token {i} rope")
        scales = row[hckv + 2 * DR:].copy().view(np.float32).astype(np.float64)
        assert np.allclose(scales, s_rows[i], rtol=1e-4, atol=0), (scales, s_rows[i])
    assert torch.equal(kv.reshape(-1, dtile)[torch.from_numpy(~written)],
                       kv_before.reshape(-1, dtile)[torch.from_numpy(~written)])


def test_v3_per_tile_all_zero_tile():
    """A token whose kv channels of one tile are all zero (zero gamma there): scale 0, values 0."""
    t, hckv = 3, 2 * TILE
    args, kw, ref_in, slots = make_inputs(64, t, quant="partial", hckv=hckv)
    gckv = args[6].clone()
    gckv[:TILE] = 0
    args = args[:6] + (gckv,) + args[7:]
    kw = {k: v for k, v in kw.items() if k not in ("quant_scale_ckv", "quant_scale_ckr")}
    dtile = hckv + 2 * DR + 4 * (hckv // TILE)
    kv = torch.full((BLOCK_NUM, BLOCK_SIZE, 1, dtile), 3, dtype=torch.int8)
    mlaops.npu_mla_prolog_v3(*args[:9], kv, torch.empty(0, dtype=torch.int8), cache_index=args[9], **kw,
                             weight_quant_mode=1, kv_cache_quant_mode=3, ckvkr_repo_mode=1, quant_scale_repo_mode=1,
                             k_nope_clip_alpha=torch.tensor([1.0], dtype=torch.float32))
    for p in slots[slots >= 0]:
        row = kv.reshape(-1, dtile)[p].numpy()
        assert np.all(row[:TILE] == 0)
        s = row[hckv + 2 * DR:].copy().view(np.float32)
        assert s[0] == 0 and s[1] > 0


def test_v3_per_tile_errors_write_nothing():
    """MP-22 (clip alpha missing) and MP-28 (alpha not > 0, read at run time): 161002, no byte."""
    args, kw, _, _ = make_inputs(65, 4, quant="partial", hckv=TILE)
    kw = {k: v for k, v in kw.items() if k not in ("quant_scale_ckv", "quant_scale_ckr")}
    kv = torch.full((BLOCK_NUM, BLOCK_SIZE, 1, TILE + 2 * DR + 4), 3, dtype=torch.int8)
    kv0 = kv.clone()
    common = dict(cache_index=args[9], weight_quant_mode=1, kv_cache_quant_mode=3, ckvkr_repo_mode=1,
                  quant_scale_repo_mode=1)
    for alpha, rule in ((None, "MP-22"), (torch.tensor([0.0]), "MP-28")):
        with pytest.raises(mlaops.Error) as e:
            mlaops.npu_mla_prolog_v3(*args[:9], kv, torch.empty(0, dtype=torch.int8), **kw, **common,
                                     k_nope_clip_alpha=alpha)
        assert e.value.status == 161002 and rule in e.value.message, e.value.message
        assert torch.equal(kv, kv0)


@pytest.mark.parametrize("bsh", [True, False])
def test_v3_pa_blk_nz_block_ids(bsh):
    """PA_BLK_NZ: PA_BLK's token -> block mapping with PA_NZ's address inside the block
    ([H/16][BlockSize][16] for bf16). tokenX [B, S, He] (block ids [B, ⌈S/BlockSize⌉]) or
    [T, He] with actual_seq_len (prefix sums) and 1-D block ids."""
    t = BLOCK_SIZE + 3
    args, kw, ref_in, _ = make_inputs(66, t, bsh=bsh)
    hckv = args[3].shape[-1]
    kv = torch.full((BLOCK_NUM, BLOCK_SIZE, 1, hckv), 3.0, dtype=torch.bfloat16)
    kr = torch.full((BLOCK_NUM, BLOCK_SIZE, 1, DR), 3.0, dtype=torch.bfloat16)
    extra = {}
    if bsh:
        ids = torch.tensor([[3, 1]], dtype=torch.int64)
        slots = [(3 if s < BLOCK_SIZE else 1) * BLOCK_SIZE + s % BLOCK_SIZE for s in range(t)]
    else:  # two batches: 5 tokens (block 2), then BLOCK_SIZE - 2 tokens (block 0)
        ids = torch.tensor([2, 0], dtype=torch.int64)
        extra["actual_seq_len"] = torch.tensor([5, t], dtype=torch.int32)
        slots = [2 * BLOCK_SIZE + s if s < 5 else (s - 5) for s in range(t)]
    mlaops.npu_mla_prolog_v3(*args[:9], kv, kr, cache_index=ids, **dict(kw, cache_mode="PA_BLK_NZ"), **extra)
    _, _, kv_rows, kr_rows = mla_prolog(**ref_in)
    slots = np.array(slots)
    assert_close(kv, scatter_cache(np.full(kv.shape, 3.0), kv_rows, slots, 16), what="kv_cache")
    assert_close(kr, scatter_cache(np.full(kr.shape, 3.0), kr_rows, slots, 16), what="kr_cache")
