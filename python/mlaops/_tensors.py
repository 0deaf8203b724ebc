"""Tensor plumbing shared by the operator wrappers: torch tensors and numpy arrays in, the
(array, acl_dtype, acl_format) tuples the extension module takes, outputs of the caller's kind."""
import numpy as np

try:  # torch is optional: numpy arrays work without it
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None

import ml_dtypes

if torch is not None:
    from ._nz import NZTensor
else:  # pragma: no cover
    NZTensor = None

ACL_BF16 = 27
ACL_FORMAT_ND = 2
ACL_FORMAT_NZ = 29

# aclDataType values of the output dtypes the wrappers allocate
_NP = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "fp32": np.float32, "int8": np.int8}


def is_torch(x):
    return torch is not None and isinstance(x, torch.Tensor)


def is_nz(x):
    """An NZ tensor (npu_format_cast(t, 29) of a torch tensor, python/mlaops/_nz.py)."""
    return NZTensor is not None and isinstance(x, NZTensor)


def spec(x, fmt=ACL_FORMAT_ND):
    """The extension module's tuple for one tensor argument (None stays None). `fmt` is the format
    a plain tensor is passed with; an NZ tensor passes its own: in FRACTAL_NZ its NZ storage with
    the logical shape (what torch_npu hands aclCreateTensor: view dims, storage dims; the caller
    has refused views, NZ-01), after npu_format_cast_(t, 2) its ND values."""
    if x is None:
        return None
    if is_nz(x):
        if x.npu_format != ACL_FORMAT_NZ:
            return spec(x.values())
        assert x.is_whole(), "NZ views are refused before (python/mlaops/_args.py, NZ-01)"
        return (x.nz_storage(), -1, ACL_FORMAT_NZ, tuple(int(s) for s in x.shape))
    if is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"mlaops runs on the CPU; got a tensor on {x.device}")
        return (x.detach(), -1, fmt)
    if isinstance(x, np.ndarray):
        if x.dtype == ml_dtypes.bfloat16:  # numpy's DLPack has no bf16: pass the bits
            return (x.view(np.uint16), ACL_BF16, fmt)
        return (x, -1, fmt)
    return (x, -1, fmt)  # any other __dlpack__ object


def kind_of(*xs):
    """'torch' when the first tensor argument is a torch tensor, else 'numpy'."""
    for x in xs:
        if x is not None:
            return "torch" if is_torch(x) else "numpy"
    return "numpy"


def dtype_name(x):
    """'bf16', 'fp16', 'fp32', 'int8', 'int32', 'int64', ... of a tensor or array."""
    if is_torch(x):
        return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
                torch.int8: "int8", torch.int32: "int32", torch.int64: "int64",
                torch.uint8: "uint8", torch.bool: "bool"}.get(x.dtype, str(x.dtype))
    d = np.dtype(x.dtype)
    if d == ml_dtypes.bfloat16:
        return "bf16"
    return {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32", np.dtype(np.int8): "int8",
            np.dtype(np.int32): "int32", np.dtype(np.int64): "int64", np.dtype(np.uint8): "uint8",
            np.dtype(np.bool_): "bool"}.get(d, str(d))


def empty(kind, shape, dtype):
    """A new uninitialised tensor ('torch') or array ('numpy') of an mlaops dtype name."""
    shape = tuple(int(s) for s in shape)
    if kind == "torch":
        td = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
              "int8": torch.int8}[dtype]
        return torch.empty(shape, dtype=td)
    return np.empty(shape, dtype=_NP[dtype])


def empty_bytes(kind, n):
    """A new contiguous uint8 buffer of n bytes (a workspace)."""
    if kind == "torch":
        return torch.empty((int(n),), dtype=torch.uint8)
    return np.empty((int(n),), dtype=np.uint8)


def zeros(kind, shape, dtype):
    out = empty(kind, shape, dtype)
    out[...] = 0
    return out


def host_ints(x):
    """A torch_npu SymInt[]? argument (list, tuple, tensor or array) as a list of ints, or None."""
    if x is None:
        return None
    if is_torch(x):
        return [int(v) for v in x.reshape(-1).tolist()]
    if isinstance(x, np.ndarray):
        return [int(v) for v in x.reshape(-1).tolist()]
    return [int(v) for v in x]
