"""numpy kernels of the triangular, joining and scatter/index ops primitives (see coretorch.plugins.KERNELS)."""
from __future__ import annotations

import numpy as np


class _Interface:
    """An object exposing ``__array_interface__`` (how numpy builds a view at an arbitrary address)."""

    def __init__(self, interface: dict, base):
        self.__array_interface__ = interface
        self.base = base  # keeps the buffer alive for as long as the view lives


def _root(x: np.ndarray) -> np.ndarray:
    while True:
        b = x.base
        if isinstance(b, _Interface):  # a view made by _as_strided
            b = b.base
        if not isinstance(b, np.ndarray):
            return x
        x = b


def _ptr(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def _storage_offset(x: np.ndarray) -> int:
    """Element offset of x's first element from the start of the buffer it views."""
    return (_ptr(x) - _ptr(_root(x))) // x.itemsize if x.itemsize else 0


def _as_strided(x: np.ndarray, shape, strides, offset: int) -> np.ndarray:
    """A view of x's memory with element ``strides``, starting ``offset`` elements after x's first element."""
    isz = x.itemsize
    if 0 not in tuple(shape):  # memory safety: the view stays inside the buffer x views (the core checks more)
        root = _root(x)
        first = _ptr(x) + offset * isz
        lo = first + isz * sum((s - 1) * t for s, t in zip(shape, strides) if t < 0)
        hi = first + isz * (1 + sum((s - 1) * t for s, t in zip(shape, strides) if t > 0))
        if lo < _ptr(root) or hi > _ptr(root) + root.nbytes:
            raise RuntimeError("as_strided: the view would reach outside the tensor's storage")
    # a view whose stride 0 spans several elements is read-only, as numpy marks a broadcast: an in-place write into it
    # then gets PyTorch's overlap error (see _writable) where numpy would write each location several times
    ro = not x.flags.writeable or any(t == 0 and n > 1 for n, t in zip(shape, strides))
    face = {"shape": tuple(shape), "strides": tuple(s * isz for s in strides), "typestr": x.dtype.str,
            "data": (_ptr(x) + offset * isz, ro), "version": 3}
    out = np.asarray(_Interface(face, x))
    if out.dtype != x.dtype:  # typestr drops nothing for the dtypes in use; kept exact for bool
        out = out.view(x.dtype)
    return out


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")


_READ_ONLY = ("the tensor's memory is a read-only numpy array (torch.from_numpy of a non-writable array shares "
              "it): in-place writes are refused; copy the array, or make it writable, before converting it")


def _writable(x):
    """A writable alias of the read-only view ``x`` (numpy marks every view of a broadcast array read-only): a view
    of an expanded tensor that does not overlap itself (``x.expand(3, 2)[0]``, one element of it) is written as in
    PyTorch; one that does (a stride 0 over a size > 1) gets PyTorch's error, as does a read-only user array."""
    root = _root(x)
    if any(t == 0 and s > 1 for s, t in zip(x.shape, x.strides)):
        raise RuntimeError(_OVERLAP)
    if not root.flags.writeable:
        raise RuntimeError(_READ_ONLY)
    isz = x.itemsize
    return _as_strided(root, x.shape, tuple(t // isz for t in x.strides), _storage_offset(x))


_UFUNC = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _index_reduce(x: np.ndarray, key, values, op: str) -> None:
    """x[key] op= values, repeated indices combined (ufunc.at: unbuffered).  A key of integer arrays only on a
    contiguous x goes through one flat index: numpy's 1-D fast path of ufunc.at (3x faster than a tuple key)."""
    uf = _UFUNC[op]
    keys = key if isinstance(key, tuple) else (key,)
    if x.flags.c_contiguous and len(keys) == x.ndim and x.ndim > 1 and \
            all(isinstance(k, np.ndarray) and k.dtype.kind in "iu" for k in keys):
        flat = np.ravel_multi_index(np.broadcast_arrays(*keys), x.shape, mode="wrap")
        uf.at(x.reshape(-1), flat.reshape(-1), np.broadcast_to(values, flat.shape).reshape(-1))
        return
    uf.at(x, key, values)


def _tri(x: np.ndarray, diag: int, lower: bool) -> np.ndarray:
    r = np.tril(x, diag) if lower else np.triu(x, diag)  # the last two dims of any stack
    return r if r.flags.c_contiguous else np.ascontiguousarray(r)  # (row-major as PyTorch's; numpy keeps x's order)


KERNELS: dict = {  # primitive name -> kernel on numpy arrays
    "as_strided": _as_strided, "storage_offset": _storage_offset, "data_ptr": _ptr,
    "view_dtype": lambda x, dt: x.view(dt),
    "same_storage": lambda x, y: np.may_share_memory(x, y) and _root(x) is _root(y),  # (bounds first: fast)
    "index_reduce_": _index_reduce, "tri": _tri,
}
