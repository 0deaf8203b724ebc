"""npu_format_cast / npu_format_cast_ / get_npu_format: ND <-> FRACTAL_NZ (docs/python.md
"FRACTAL_NZ tensors", docs/numerics.md).

torch tensors follow torch_npu: ``npu_format_cast(t, 29)`` is an NZ tensor with t's logical shape
whose storage holds the NZ bytes (python/mlaops/_nz.py). numpy arrays carry no format tag, so the
numpy path works on the storage itself, as the aclnn examples do: ``npu_format_cast(a, 29)`` returns
the 4-D storage array [..., C1, R1, 16, c0] (c0 = 32 / element size), ``npu_format_cast(s, 2)`` the
[..., R1*16, C1*c0] matrix back (with its zero padding), and a 4-D weight array passed to an
operator is taken as FRACTAL_NZ storage.
"""
import numpy as np

from ._args import checked
from ._tensors import is_torch, is_nz, dtype_name, ACL_FORMAT_ND, ACL_FORMAT_NZ

_ELEM = {"bf16": 2, "fp16": 2, "fp32": 4, "int8": 1, "uint8": 1, "int32": 4}
# aclDataType values of the dtypes a customize_dtype may name (the tensor's own dtype only)
_ACL_DTYPE = {"fp32": 0, "fp16": 1, "int8": 2, "int32": 3, "uint8": 4, "bf16": 27}


def _numpy_c0(x):
    size = _ELEM.get(dtype_name(x))
    if size is None:
        raise TypeError(f"npu_format_cast: unsupported dtype {dtype_name(x)}")
    return 32 // size


def _check_format(fn, acl_format):
    if acl_format not in (ACL_FORMAT_ND, ACL_FORMAT_NZ):
        raise ValueError(f"{fn}: mlaops supports acl_format 2 (ND) and 29 (FRACTAL_NZ); got {acl_format}")


def _numpy_cast(a, acl_format):
    c0 = _numpy_c0(a)
    if acl_format == ACL_FORMAT_NZ:
        if a.ndim >= 4 and a.shape[-2] == 16 and a.shape[-1] == c0:
            return a
        if a.ndim < 2:
            raise ValueError("npu_format_cast: FRACTAL_NZ needs a matrix ([..., K, N])")
        *lead, k, n = a.shape
        r1, c1 = -(-k // 16), -(-n // c0)
        pad = [(0, 0)] * len(lead) + [(0, r1 * 16 - k), (0, c1 * c0 - n)]
        x = np.pad(a, pad).reshape(*lead, r1, 16, c1, c0)
        return np.ascontiguousarray(np.moveaxis(x, len(lead) + 2, len(lead)))
    if a.ndim < 4 or a.shape[-2] != 16 or a.shape[-1] != c0:
        return a
    *lead, c1, r1, _, c0 = a.shape
    nd = len(lead)
    perm = list(range(nd)) + [nd + 1, nd + 2, nd, nd + 3]
    return np.ascontiguousarray(np.transpose(a, perm).reshape(*lead, r1 * 16, c1 * c0))


@checked(None, nz="any")
def npu_format_cast(input, acl_format, customize_dtype=None):
    """torch_npu.npu_format_cast(input, acl_format, customize_dtype=None) for 29 (FRACTAL_NZ) and
    2 (ND).

    torch: 29 gives an NZ tensor with input's logical shape (its storage [..., C1, R1, 16, c0],
    c0 = 16 for 2- and 4-byte types, 32 for 1-byte ones); 2 gives an ND tensor with the logical
    values; the format input already has returns input itself; rank < 2 warns and stays ND.
    numpy: the storage array and back (module docstring). customize_dtype may only name input's
    own dtype (a torch dtype or its aclDataType value).
    """
    _check_format("npu_format_cast", acl_format)
    if customize_dtype is not None:
        own = dtype_name(input)
        if not (customize_dtype == getattr(input, "dtype", None) or customize_dtype == _ACL_DTYPE.get(own)):
            raise ValueError(f"npu_format_cast: customize_dtype: mlaops supports the tensor's own dtype ({own}); "
                             f"got {customize_dtype!r}")
    if is_torch(input):
        from ._nz import cast
        return cast(input, acl_format)
    return _numpy_cast(input, acl_format)


def npu_format_cast_(input, acl_format):
    """torch_npu.npu_format_cast_(self, src): changes the storage format of self in place to
    acl_format (2 or 29, or the format of the tensor src) and returns self. An NZ tensor (from
    npu_format_cast) is re-laid out in place, every view of its storage following; a plain tensor
    is ND: to 2 it is returned as is, to 29 it raises TypeError (torch owns its memory layout:
    use t = npu_format_cast(t, 29)). numpy arrays: TypeError (they carry no format)."""
    if not is_torch(input):
        raise TypeError(f"npu_format_cast_(): argument 'self' must be a torch Tensor, not {type(input).__name__}")
    if is_torch(acl_format):
        acl_format = get_npu_format(acl_format)
    _check_format("npu_format_cast_", acl_format)
    from ._nz import cast_
    return cast_(input, acl_format)


def get_npu_format(input):
    """torch_npu.get_npu_format(tensor): 29 for an NZ tensor (every view of its storage), 2 for
    any other torch tensor. numpy arrays carry no format: TypeError."""
    if is_nz(input):
        return input.npu_format
    if is_torch(input):
        return ACL_FORMAT_ND
    raise TypeError(f"get_npu_format(): argument 'self' must be a torch Tensor, not {type(input).__name__} "
                    "(numpy arrays carry no format: a 4-D weight array is taken as FRACTAL_NZ storage)")
