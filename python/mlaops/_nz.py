"""torch_npu's FRACTAL_NZ tensors on the CPU (docs/python.md "FRACTAL_NZ tensors").

``npu_format_cast(t, 29)`` on an NPU gives a tensor whose ``.shape`` / ``.stride()`` are the
logical ND ones while its storage holds the FRACTAL_NZ bytes ([..., C1, R1, 16, c0], zero
padding; docs/numerics.md). The format belongs to the storage, so every view of it reports 29.
NZTensor reproduces that as a torch wrapper subclass: the storage descriptor (_Storage: the NZ
bytes, the logical base shape, the format) is shared by all views; a view is ordinary PyTorch
metadata (sizes, strides, offset) in logical ND element units.

What torch ops see (``__torch_dispatch__``):
  * view ops (slicing, ``narrow``, ``t`` / ``transpose``, ``view``, ``detach`` ...) give NZ views of
    the same storage, nothing is re-laid out;
  * ``clone`` / ``.contiguous()`` of a slice whose strides are the base strides (``w[..., :q]``) gives
    a new NZ tensor of the sliced shape; any other view (a transpose ...) gives an ND tensor; a
    dtype conversion (``.to(torch.float16)``) keeps the format the same way;
  * ops that write an NZ tensor (``copy_``, ``zero_``, ``w[...] = x`` ...) write its logical values
    and re-pack the storage;
  * every other op reads the logical ND values (``.cpu()``, ``torch.equal``, printing, arithmetic)
    and returns ordinary tensors;
  * mlaops' own torch operators (torch.ops.mlaops / npu / custom / _C_ascend) get the NZ tensor
    itself, so the operator receives the NZ storage (python/mlaops/_tensors.py ``spec``).
"""
import warnings

import torch
from torch.utils._pytree import tree_map

ACL_FORMAT_ND = 2
ACL_FORMAT_NZ = 29

# The functions behind mlaops' own torch operators (filled by _torch_ops): called with NZ
# tensors as they are, so that the operator receives the NZ storage instead of ND values.
OWN_OPS = {}


def c0_of(dtype):
    """torch_npu's c0 for FRACTAL_NZ: 32 bytes / min(element size, 2) (16 for fp16 / bf16 / fp32,
    32 for int8 / uint8)."""
    return 32 // min(torch.empty((), dtype=dtype).element_size(), 2)


def storage_shape(shape, dtype):
    """NZ storage shape (..., ceil(N / c0), ceil(K / 16), 16, c0) of a logical (..., K, N)."""
    *lead, k, n = shape
    c0 = c0_of(dtype)
    return tuple(lead) + (-(-n // c0), -(-k // 16), 16, c0)


def pack(x):
    """ND values (..., K, N) -> NZ storage (..., C1, R1, 16, c0), zero padded."""
    *lead, k, n = x.shape
    c1, r1, _, c0 = storage_shape(x.shape, x.dtype)[-4:]
    padded = x.new_zeros(tuple(lead) + (r1 * 16, c1 * c0))
    padded[..., :k, :n] = x
    nd = len(lead)
    lead_axes = list(range(nd))
    return padded.reshape(tuple(lead) + (r1, 16, c1, c0)).permute(*lead_axes, nd + 2, nd, nd + 1, nd + 3).contiguous()


def unpack(s, k, n):
    """NZ storage (..., C1, R1, 16, c0) -> the contiguous ND values (..., K, N)."""
    *lead, c1, r1, _, c0 = s.shape
    nd = len(lead)
    lead_axes = list(range(nd))
    nd_full = s.permute(*lead_axes, nd + 1, nd + 2, nd, nd + 3).reshape(tuple(lead) + (r1 * 16, c1 * c0))
    return nd_full[..., :k, :n].contiguous()


def _row_major(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


class _Storage:
    """What torch_npu keeps in a storage descriptor: the bytes (NZ storage for format 29, the
    ND base tensor for 2), the logical base shape and the format."""

    __slots__ = ("data", "shape", "fmt")

    def __init__(self, data, shape, fmt):
        self.data, self.shape, self.fmt = data, tuple(int(s) for s in shape), fmt

    def logical(self):
        """The base's ND values: the data itself in format 2, an unpacked copy in format 29."""
        return self.data if self.fmt == ACL_FORMAT_ND else unpack(self.data, *self.shape[-2:])

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n


class NZTensor(torch.Tensor):
    """A tensor whose storage is FRACTAL_NZ (or, after ``npu_format_cast_(t, 2)``, ND), with
    torch_npu's logical ND shape. Made by ``npu_format_cast(t, 29)``; see the module docstring."""

    @staticmethod
    def __new__(cls, storage, size=None, stride=None, offset=0):
        size = storage.shape if size is None else tuple(size)
        stride = _row_major(size) if stride is None else tuple(stride)
        t = torch.Tensor._make_wrapper_subclass(cls, size, strides=stride, storage_offset=offset,
                                                dtype=storage.data.dtype, device=storage.data.device,
                                                requires_grad=False)
        t._nz = storage
        return t

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def from_nd(cls, x):
        """A new NZ tensor holding the values of the ND tensor x (rank >= 2)."""
        x = x.detach()
        return cls(_Storage(pack(x), x.shape, ACL_FORMAT_NZ))

    # --- what torch_npu's storage descriptor answers
    @property
    def npu_format(self):
        return self._nz.fmt

    def is_whole(self):
        """True when this tensor is its whole storage (the shape the storage was made for,
        row-major strides, offset 0), not a slice / transpose of it."""
        return (tuple(self.shape) == self._nz.shape and self.storage_offset() == 0
                and tuple(self.stride()) == _row_major(self._nz.shape))

    def same_stride_slice(self):
        """A slice / narrow that kept the base's strides (torch_npu's NZ slice copy applies)."""
        return self.dim() == len(self._nz.shape) and tuple(self.stride()) == _row_major(self._nz.shape)

    def values(self):
        """The logical ND values of this view (a strided view of a fresh unpacked copy in format
        29, of the ND data itself in format 2)."""
        return self._nz.logical().as_strided(self.shape, self.stride(), self.storage_offset())

    def nz_storage(self):
        """The storage tensor: [..., C1, R1, 16, c0] in format 29 (the bytes an operator reads)."""
        return self._nz.data

    def set_format_(self, fmt):
        """npu_format_cast_: re-lays the shared storage out in place (every view follows)."""
        st = self._nz
        if st.fmt == fmt:
            return self
        if fmt == ACL_FORMAT_NZ:
            st.data = pack(st.data.reshape(st.shape))
        else:
            st.data = unpack(st.data, *st.shape[-2:])
        st.fmt = fmt
        return self

    # --- reads through Python-level methods that do not dispatch
    def __repr__(self, *, tensor_contents=None):
        return repr(self.values())

    def __str__(self):
        return str(self.values())

    def __format__(self, spec):
        return self.values().__format__(spec)

    def numpy(self, *, force=False):
        return self.values().numpy(force=force)

    def tolist(self):
        return self.values().tolist()

    def __dlpack__(self, *args, **kwargs):
        return self.values().contiguous().__dlpack__(*args, **kwargs)

    def untyped_storage(self):
        return self._nz.data.untyped_storage()

    def data_ptr(self):
        return self._nz.data.data_ptr()

    def __deepcopy__(self, memo):
        st = self._nz
        return NZTensor(_Storage(st.data.clone(), st.shape, st.fmt), self.shape, self.stride(), self.storage_offset())

    def __reduce_ex__(self, protocol):
        st = self._nz
        return (_rebuild, (st.data.clone(), st.shape, st.fmt, tuple(self.shape), tuple(self.stride()),
                           self.storage_offset()))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        own = OWN_OPS.get(func)
        if own is not None:
            return own(*args, **kwargs)
        if func is torch.ops.aten.clone.default and isinstance(args[0], NZTensor):
            return _clone(args[0], **kwargs)
        if func is torch.ops.aten._to_copy.default and isinstance(args[0], NZTensor):
            return _to_copy(args[0], **kwargs)
        if func.is_view and isinstance(args[0], NZTensor):
            return _view(func, args, kwargs)
        written = _written(func, args, kwargs)
        if written:
            return _write(func, args, kwargs, written)
        return func(*tree_map(_plain, args), **tree_map(_plain, kwargs))


def _rebuild(data, shape, fmt, size, stride, offset):
    return NZTensor(_Storage(data, shape, fmt), size, stride, offset)


def _plain(a):
    return a.values() if isinstance(a, NZTensor) else a


def _meta_view(t):
    """A meta tensor with t's view metadata over a storage of the base's size."""
    base = torch.empty(t._nz.numel(), dtype=t.dtype, device="meta")
    return base.as_strided(t.shape, t.stride(), t.storage_offset())


def _view(func, args, kwargs):
    """A view op: its sizes / strides / offset computed on a meta twin, applied to the same
    storage descriptor."""
    t = args[0]
    if func is torch.ops.aten.view.dtype:  # a reinterpretation of the same bytes (same element size)
        dtype = args[1] if len(args) > 1 else kwargs["dtype"]
        if torch.empty((), dtype=dtype).element_size() != t.element_size():
            raise TypeError(f"view(dtype): an NZ tensor can be viewed as a dtype of the same element size only; "
                            f"{t.dtype} -> {dtype}")
        st = t._nz
        return NZTensor(_Storage(st.data.view(dtype), st.shape, st.fmt), t.shape, t.stride(), t.storage_offset())
    out = func(_meta_view(t), *tree_map(_plain, args[1:]), **tree_map(_plain, kwargs))

    def wrap(m):
        return NZTensor(t._nz, m.shape, m.stride(), m.storage_offset()) if isinstance(m, torch.Tensor) else m
    return tree_map(wrap, out)


def _clone(t, memory_format=None):
    """torch_npu's clone of an NZ view: a same-stride slice (the whole tensor included) stays NZ,
    anything else (a transpose ...) becomes an ND tensor with the logical values."""
    vals = t.values()
    if t._nz.fmt == ACL_FORMAT_NZ and t.same_stride_slice() and t.dim() >= 2:
        return NZTensor.from_nd(vals)
    if memory_format is None:
        return vals.clone()
    return vals.clone(memory_format=memory_format)


def _to_copy(t, **kwargs):
    """A dtype conversion (``.to(dtype)``, ``.half()`` ...) keeps the NZ format, as torch_npu's cast
    allocates its output in the input's format; a transposed view and a device change give ND."""
    vals = torch.ops.aten._to_copy.default(t.values(), **kwargs)
    if t._nz.fmt == ACL_FORMAT_NZ and t.same_stride_slice() and vals.device.type == "cpu":
        return NZTensor.from_nd(vals)
    return vals


def _written(func, args, kwargs):
    """The NZ tensors an op writes (arguments its schema marks Tensor(a!))."""
    out = []
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is None or not a.alias_info.is_write:
            continue
        v = args[i] if i < len(args) and not a.kwarg_only else kwargs.get(a.name)
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(x, NZTensor):
                out.append(x)
    return out


def _write(func, args, kwargs, written):
    """Runs a writing op on the logical values and re-packs every written storage."""
    bases = {}
    for t in written:
        bases.setdefault(id(t._nz), (t._nz, t._nz.logical()))
    stand_in = {}

    def sub(a):
        if not isinstance(a, NZTensor):
            return a
        if id(a._nz) in bases:
            v = bases[id(a._nz)][1].as_strided(a.shape, a.stride(), a.storage_offset())
            stand_in[id(v)] = a
            return v
        return a.values()
    out = func(*tree_map(sub, args), **tree_map(sub, kwargs))
    for st, base in bases.values():
        if st.fmt == ACL_FORMAT_NZ:
            st.data.copy_(pack(base))
    return tree_map(lambda r: stand_in.get(id(r), r) if isinstance(r, torch.Tensor) else r, out)


def cast(x, fmt):
    """npu_format_cast for torch tensors (docs/python.md): 29 -> an NZTensor with x's logical
    shape (rank < 2: a warning and x unchanged, as torch_npu does); 2 -> an ND tensor with the
    logical values; the format x already has -> x itself."""
    if isinstance(x, NZTensor):
        if x._nz.fmt == fmt:
            return x
        return NZTensor.from_nd(x.values()) if fmt == ACL_FORMAT_NZ else x.values().clone()
    if fmt == ACL_FORMAT_ND or _stays_nd(x, "npu_format_cast"):
        return x
    return NZTensor.from_nd(x)


def _stays_nd(x, fn):
    """torch_npu's rule for a rank < 2 tensor: no NZ, a warning, the tensor stays ND."""
    if x.dim() >= 2:
        return False
    warnings.warn(f"{fn}: FRACTAL_NZ needs a tensor of rank >= 2; a rank-{x.dim()} tensor stays ND", stacklevel=4)
    return True


def cast_(x, fmt):
    """npu_format_cast_ for torch tensors: an NZ tensor (from npu_format_cast) changes its storage
    format in place (every view of the storage follows); a plain tensor is ND and stays one
    (casting it to 29 in place needs a tensor npu_format_cast made)."""
    if isinstance(x, NZTensor):
        if fmt == ACL_FORMAT_NZ and len(x._nz.shape) < 2:
            return x
        return x.set_format_(fmt)
    if fmt == ACL_FORMAT_ND or _stays_nd(x, "npu_format_cast_"):
        return x
    raise TypeError("npu_format_cast_: a plain CPU tensor cannot change its storage format in place (its memory is "
                    "owned by torch); use t = npu_format_cast(t, 29), or npu_format_cast_ on a tensor that "
                    "npu_format_cast made")

