"""npu_format_cast: ND <-> FRACTAL_NZ (docs/numerics.md, core/fractal_nz.h).

A logical matrix W [K, N] with element size b is stored as [C1, R1, 16, c0] with c0 = 32 / b
(16 for bf16/fp16, 32 for int8), R1 = ceil(K / 16), C1 = ceil(N / c0), zero padding:
W[r][c] = storage[c // c0][r // 16][r % 16][c % c0]. mlaops takes the 4-D storage tensor
wherever torch_npu takes a weight cast with npu_format_cast(w, 29).
"""
import numpy as np

from ._args import checked
from ._tensors import is_torch, dtype_name, ACL_FORMAT_ND, ACL_FORMAT_NZ

_ELEM = {"bf16": 2, "fp16": 2, "fp32": 4, "int8": 1, "uint8": 1, "int32": 4}


def _c0(x):
    size = _ELEM.get(dtype_name(x))
    if size is None:
        raise TypeError(f"npu_format_cast: unsupported dtype {dtype_name(x)}")
    return 32 // size


@checked(None)
def npu_format_cast(input, acl_format):
    """torch_npu.npu_format_cast(input, acl_format) for 29 (FRACTAL_NZ) and 2 (ND).

    29: a 2-D (or batched [..., K, N]) ND tensor -> its [..., C1, R1, 16, c0] storage (a new
    contiguous tensor). 2: a [..., C1, R1, 16, c0] storage -> the [..., R1*16, C1*c0] ND
    matrix (padding included). Returns the input itself when it already has that format.
    """
    if acl_format == ACL_FORMAT_NZ:
        if input.ndim >= 4 and input.shape[-2] == 16 and input.shape[-1] == _c0(input):
            return input
        if input.ndim < 2:
            raise ValueError("npu_format_cast: FRACTAL_NZ needs a matrix ([..., K, N])")
        c0 = _c0(input)
        *lead, k, n = input.shape
        r1, c1 = -(-k // 16), -(-n // c0)
        if is_torch(input):
            import torch
            x = torch.nn.functional.pad(input, (0, c1 * c0 - n, 0, r1 * 16 - k))
            x = x.reshape(*lead, r1, 16, c1, c0)
            nd = len(lead)
            perm = list(range(nd)) + [nd + 2, nd, nd + 1, nd + 3]
            return x.permute(*perm).contiguous()
        pad = [(0, 0)] * len(lead) + [(0, r1 * 16 - k), (0, c1 * c0 - n)]
        x = np.pad(input, pad).reshape(*lead, r1, 16, c1, c0)
        nd = len(lead)
        return np.ascontiguousarray(np.moveaxis(x, nd + 2, nd))
    if acl_format == ACL_FORMAT_ND:
        if input.ndim < 4 or input.shape[-2] != 16 or input.shape[-1] != _c0(input):
            return input
        *lead, c1, r1, s16, c0 = input.shape
        nd = len(lead)
        perm = list(range(nd)) + [nd + 1, nd + 2, nd, nd + 3]
        if is_torch(input):
            return input.permute(*perm).reshape(*lead, r1 * 16, c1 * c0).contiguous()
        return np.ascontiguousarray(np.transpose(input, perm).reshape(*lead, r1 * 16, c1 * c0))
    raise ValueError(f"npu_format_cast: mlaops supports acl_format 2 (ND) and 29 (FRACTAL_NZ); got {acl_format}")
