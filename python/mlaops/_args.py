"""The tensor-argument checks every public function makes before it allocates or writes anything
(docs/python.md "Errors"):

* a required tensor given as None raises ``mlaops.Error`` 161001 (aclnn's null-pointer status),
  "<function>: <parameter>: <rule id> required tensor is null; allowed a tensor, got None";
* an object that is no tensor where a tensor is expected (a list, a float, a string ...) raises
  ``TypeError`` in the words torch's argument parser uses for torch_npu's functions:
  "<function>(): argument '<parameter>' (position <n>) must be Tensor, not <type>".

Which parameters are tensors comes from the function's signature: a positional parameter without
a default is a required tensor (unless the function lists it as optional or it is a known
non-tensor), a parameter whose default is None is an optional tensor unless it is a host integer
list (INT_LISTS), a ``*_dtype`` override or a known non-tensor. key / value take a tensor or a
non-empty list of tensors.

FRACTAL_NZ tensors (python/mlaops/_nz.py) are checked here too, by the function's ``nz`` policy:
an operator takes a whole NZ tensor and refuses a view of one (NZ-01); the functions torch_npu
gates with "do not support internal format" refuse any NZ tensor (NZ-02); the format functions
take any.
"""
import functools
import inspect

import numpy as np

from ._errors import Error
from ._tensors import is_torch, is_nz, ACL_FORMAT_NZ

# torch_npu's SymInt[]? arguments: host integer lists (Python lists, tuples, tensors or arrays)
INT_LISTS = frozenset({"actual_seq_lengths", "actual_seq_lengths_kv", "actual_shared_prefix_len", "actual_seq_qlen",
                       "actual_seq_kvlen"})
# parameters that are not tensors although they have no default or a None default, with their
# torch schema types (python/mlaops/_torch_ops.py)
NON_TENSOR_TYPES = {"acl_format": "int", "customize_dtype": "int?", "cache_mode": "str?", "quant_mode": "str?",
                    "enable_inner_out": "bool?"}
_NOT_TENSORS = frozenset(NON_TENSOR_TYPES)
# one tensor or a list of tensors (one per batch)
_TENSOR_LISTS = frozenset({"key", "value"})


def is_tensor(x):
    """A torch tensor, a numpy array or another object with __dlpack__ (what _tensors.spec takes)."""
    return is_torch(x) or isinstance(x, np.ndarray) or hasattr(x, "__dlpack__")


def check_nz(fn, name, x, nz):
    """The FRACTAL_NZ policy for one tensor x: "operator" (a whole NZ tensor, not a view: NZ-01),
    "reject" (no NZ tensor at all, torch_npu's internal-format gate: NZ-02) or "any"."""
    if nz == "any" or not is_nz(x) or x.npu_format != ACL_FORMAT_NZ:
        return
    if nz == "reject":
        raise Error(161002, f"{fn}: {name}: NZ-02 Current operator {fn} do not support internal format; "
                            f"allowed an ND tensor (format 2), got FRACTAL_NZ (29) {tuple(x.shape)}")
    if not x.is_whole():
        raise Error(161002, f"{fn}: {name}: NZ-01 a FRACTAL_NZ argument is read as its NZ storage, so it must be a "
                            f"whole NZ tensor; allowed the {tuple(x._nz.shape)} tensor npu_format_cast made (a slice: "
                            f"its .contiguous() copy; ND values: npu_format_cast(x, 2)), got a view "
                            f"{tuple(x.shape)} strides {tuple(x.stride())} offset {x.storage_offset()}")


def check_tensor(fn, name, x, rule, required, position=None, lists=False, nz="operator"):
    """One argument: None (Error 161001 when required), a tensor, or (lists) a non-empty list /
    tuple of tensors; anything else raises TypeError. NZ tensors by the `nz` policy (check_nz)."""
    prefix = f"{rule} " if rule else ""
    if x is None:
        if required:
            raise Error(161001, f"{fn}: {name}: {prefix}required tensor is null; allowed a tensor, got None")
        return
    if is_tensor(x):
        check_nz(fn, name, x, nz)
        return
    if lists and isinstance(x, (list, tuple)):
        if not x:
            raise Error(161001, f"{fn}: {name}: {prefix}required tensor list is empty; "
                                f"allowed a tensor or a non-empty list of tensors, got an empty {type(x).__name__}")
        for j, item in enumerate(x):
            check_tensor(fn, f"{name}[{j}]", item, rule, True, nz=nz)
        return
    where = f" (position {position})" if position is not None else ""
    want = "Tensor or a list of Tensors" if lists else "Tensor"
    raise TypeError(f"{fn}(): argument '{name}'{where} must be {want}, not {type(x).__name__}")


def check_arguments(fn, rule, sig, arguments, optional=frozenset(), nz="operator", tensor_lists=_TENSOR_LISTS):
    """Checks the tensor parameters of one call: `sig` the function's signature, `arguments`
    name -> value (absent: the default), `optional` the positional tensors that may be None,
    `nz` the FRACTAL_NZ policy (check_nz), `tensor_lists` the parameters that may be lists."""
    for i, (name, p) in enumerate(sig.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name in _NOT_TENSORS:
            continue
        x = arguments.get(name, p.default)
        position = i + 1 if p.kind == p.POSITIONAL_OR_KEYWORD else None
        if p.default is p.empty:
            check_tensor(fn, name, x, rule, name not in optional, position, lists=name in tensor_lists, nz=nz)
        elif p.default is None and name not in INT_LISTS and not name.endswith("_dtype"):
            check_tensor(fn, name, x, rule, False, position, nz=nz)


def checked(rule, optional=(), name=None, signature_of=None, nz="operator", tensor_lists=_TENSOR_LISTS):
    """Decorator: check_arguments on every call of the function before its body runs. rule: the
    operator's rule id for a null required tensor (MP-01, MPP-01, FIA-01; None for npu_format_cast);
    optional: positional tensors the function takes as None (the operator checks them per mode);
    name: the function's name in messages (default __name__); signature_of: the function whose
    signature describes the call (for a wrapper taking **kwargs); nz: the FRACTAL_NZ policy
    (check_nz); tensor_lists: the parameters that take a list of tensors too (key / value)."""
    optional, lists = frozenset(optional), frozenset(tensor_lists)

    def wrap(f):
        sig = inspect.signature(signature_of or f)
        fn = name or f.__name__

        @functools.wraps(f)
        def call(*args, **kwargs):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                return f(*args, **kwargs)  # Python's own error for a call that does not fit
            check_arguments(fn, rule, sig, bound.arguments, optional, nz, lists)
            return f(*args, **kwargs)
        return call
    return wrap
