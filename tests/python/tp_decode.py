"""Tensor-parallel MLA decode layer across processes (run by test_tensor_parallel.py as
`torchrun --nproc-per-node 2 tp_decode.py`): each rank holds N / world heads of W_UQ_QR, W_UK,
W_UV and W_O, runs npu_mla_prolog_v2 and the paged npu_fused_infer_attention_score_v2 for its
heads (the latent KV cache, as in vllm-ascend, is the same on every rank), projects with its
slice of W_O, and the ranks all-reduce (gloo). Rank 0 compares with the whole layer computed
in one process and prints "TP OK <max abs diff> <rms>"."""
import os

import torch
import torch.distributed as dist

import mlaops

T, HE, HCQ, N, D, DR, HCKV, DV, BS, BLOCKS = 3, 256, 64, 8, 32, 32, 64, 32, 16, 8


def weights():
    g = torch.Generator().manual_seed(7)
    r = lambda *s: (torch.randn(*s, generator=g) * s[-2] ** -0.5).bfloat16()  # noqa: E731
    return dict(x=torch.randn(T, HE, generator=g).bfloat16(), wdq=r(HE, HCQ), wuqqr=r(HCQ, N * (D + DR)),
                wuk=r(N, D, HCKV), wdkv=r(HE, HCKV + DR), wuv=r(N, HCKV, DV), wo=r(N * DV, HE),
                gcq=torch.ones(HCQ).bfloat16(), gckv=torch.ones(HCKV).bfloat16(),
                cos=torch.ones(T, DR).bfloat16(), sin=torch.zeros(T, DR).bfloat16())


def layer(w, heads):
    """The decode layer for the heads `heads` (a slice): its partial output [T, HE] in fp32."""
    n = heads.stop - heads.start
    wuqqr = w["wuqqr"].view(HCQ, N, D + DR)[:, heads].reshape(HCQ, n * (D + DR)).contiguous()
    kv_cache = torch.zeros(BLOCKS, BS, 1, HCKV, dtype=torch.bfloat16)
    kr_cache = torch.zeros(BLOCKS, BS, 1, DR, dtype=torch.bfloat16)
    slots = torch.arange(T, dtype=torch.int64) * BS  # request t: block t, position 0
    q, qr, kv_cache, kr_cache, _ = mlaops.npu_mla_prolog_v2(
        w["x"], mlaops.npu_format_cast(w["wdq"], 29), mlaops.npu_format_cast(wuqqr, 29),
        w["wuk"][heads].contiguous(), mlaops.npu_format_cast(w["wdkv"], 29), w["gcq"], w["gckv"], w["sin"],
        w["cos"], slots, kv_cache, kr_cache)
    att, _ = mlaops.npu_fused_infer_attention_score_v2(
        q.view(T, n, 1, HCKV), kv_cache.view(BLOCKS, BS, HCKV), kv_cache.view(BLOCKS, BS, HCKV),
        query_rope=qr.view(T, n, 1, DR), key_rope=kr_cache.view(BLOCKS, BS, DR), num_query_heads=n,
        num_key_value_heads=1, softmax_scale=(D + DR) ** -0.5, input_layout="BNSD_NBSD",
        block_table=torch.arange(T, dtype=torch.int32).view(T, 1), block_size=BS, actual_seq_kvlen=[1] * T)
    o = torch.einsum("ntk,nkv->tnv", att.view(n, T, HCKV).float(), w["wuv"][heads].float())
    return o.reshape(T, n * DV) @ w["wo"][heads.start * DV:heads.stop * DV].float()


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mlaops.set_num_threads(1)
    w = weights()
    per = N // world
    out = layer(w, slice(rank * per, (rank + 1) * per))
    dist.all_reduce(out)
    if rank == 0:
        whole = layer(w, slice(0, N))
        diff = (out - whole).abs().max().item()
        rms = whole.pow(2).mean().sqrt().item()
        print(f"TP OK {diff:.3e} {rms:.3e}" if diff <= 1e-4 * rms + 1e-6 else f"TP MISMATCH {diff} {rms}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
