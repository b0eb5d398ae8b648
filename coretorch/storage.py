"""coretorch.storage: what ``Tensor.untyped_storage()`` and ``Tensor.storage()`` return.

A storage here is a window onto the memory a tensor and its views share, not a separate allocation: it answers
what programs ask of PyTorch's storages (``data_ptr()`` to tell whether two tensors share memory, ``nbytes()``,
``size()``, ``element_size()``, ``device``, ``tolist()``, ``cpu()``) and reads the elements through the tensor.
"""
from __future__ import annotations

import warnings

from . import dtypes as _dt

__all__ = ["UntypedStorage", "TypedStorage"]

_TYPED_WARNING = ("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")


def _warn_typed_storage(stacklevel: int = 2) -> None:
    warnings.warn(_TYPED_WARNING, UserWarning, stacklevel=stacklevel + 1)


def _extent(shape: tuple, stride: tuple) -> int:
    return 0 if 0 in shape else 1 + sum((n - 1) * st for n, st in zip(shape, stride))


def root_window(t, root, size: int) -> tuple:
    """(offset of t's first element from root's, root's extent ``size``) in t's elements: a view(dtype) of another
    element size counts its root's memory in its own elements, as PyTorch's storage_offset()."""
    table = t._be
    if root.dtype.itemsize == t.dtype.itemsize:
        return table.storage_offset(t._data) - table.storage_offset(root._data), size
    rsz, tsz = root.dtype.itemsize, t.dtype.itemsize
    return (table.storage_offset(t._data) * tsz - table.storage_offset(root._data) * rsz) // tsz, size * rsz // tsz


def _window(t) -> tuple:
    """(offset of t's first element, size) in elements of the memory t views: it starts at the first element of
    the tensor t was (a chain of views, detaches included) made from; a base whose layout cannot be addressed that
    way (negative strides) gives way to t itself."""
    root = t
    while root._vbase is not None:
        root = root._vbase
    if root is not t:  # (the base's size and layout: what no guard keys, so a compiled step that reads them breaks)
        from ._compile.capture import varying_read  # (imported on use: compile imports the core)
        varying_read("the storage of a view reads its base's size, which the guards do not key")
    table = t._be
    rst, tst = tuple(root.stride()), tuple(t.stride())
    size = _extent(tuple(root.shape), rst)
    if root is t or root._be is not table or not table.has("storage_offset"):
        return 0, _extent(tuple(t.shape), tst)
    off, size = root_window(t, root, size)
    if min(rst, default=0) < 0 or min(tst, default=0) < 0 or off < 0 or off + _extent(tuple(t.shape), tst) > size:
        return 0, _extent(tuple(t.shape), tst)
    return off, size


def deepcopied_data(t, memo: dict) -> tuple:
    """(backend array, base) of ``t``'s deep copy, as PyTorch's ``Tensor.__deepcopy__``, which copies the storage
    once per deepcopy call (through the memo): the array has ``t``'s sizes and strides at its storage offset in a
    copy of the memory ``t`` views, shared by the tensors of one deepcopy that share memory; the base (for a view:
    a tensor over the whole copy, which its storage offset counts from) is None for a tensor that is no view."""
    from .tensor import _make
    table = t._be
    if not (table.has("as_strided") and table.has("storage_offset")):  # (a minimal backend: a copy of t alone)
        return table.contiguous(t._data), None
    off, n = _window(t)
    key = ("coretorch.storage", _Storage(t).data_ptr(), n, id(table))
    root = memo.get(key)
    if root is None:
        root = memo[key] = _make(table.contiguous(_Storage(t)._flat()._data), t.dtype, table)
        memo.setdefault(id(memo), []).append(t)  # (deepcopy's keep-alive list: the address stays t's)
    data = table.as_strided(root._data, tuple(t.shape), tuple(t.stride()), off)
    return data, (root if t._vbase is not None else None)


class _Storage:
    _is_storage = True  # what coretorch.is_storage looks for

    def __init__(self, tensor) -> None:
        self._t = tensor  # a tensor viewing this memory; its storage_offset locates the memory's start

    @classmethod
    def _of(cls, tensor):
        return cls(tensor)

    def _flat(self):
        """The whole memory as a 1-D tensor of the tensor's dtype (sharing it)."""
        from .tensor import _make
        t = self._t
        off, n = _window(t)
        table = t._be
        return _make(table.as_strided(t._data, (n,), (1,), -off), t.dtype, table)

    def data_ptr(self) -> int:
        """The address (on opencl: the buffer's handle) of the memory's first byte."""
        t = self._t
        return t.data_ptr() - _window(t)[0] * t.element_size()

    def nbytes(self) -> int:
        """The memory's size in bytes."""
        return _window(self._t)[1] * self._t.element_size()

    @property
    def device(self):
        """The device the memory lives on."""
        return self._t.device

    def get_device(self) -> int:
        """The device index (-1 on the cpu)."""
        d = self._t.device
        return -1 if d.type == "cpu" else (d.index or 0)

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def is_sparse(self) -> bool:
        return False

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device=None) -> bool:
        return False

    def __eq__(self, other) -> bool:
        return isinstance(other, _Storage) and type(other) is type(self) and self.data_ptr() == other.data_ptr() \
            and self._t._be is other._t._be

    def __hash__(self) -> int:
        return hash((self.data_ptr(), id(self._t._be)))


class UntypedStorage(_Storage):
    """Bytes of memory shared by a tensor and its views (PyTorch's ``torch.UntypedStorage``)."""

    def size(self) -> int:
        """The size in bytes."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        """1: an untyped storage counts bytes."""
        return 1

    def tolist(self) -> list:
        """The bytes as a list of ints."""
        return [int(b) for b in self._flat().numpy(force=True).view("uint8").tolist()]

    def untyped(self) -> "UntypedStorage":
        """This storage."""
        return self

    def cpu(self) -> "UntypedStorage":
        """This storage on the cpu (a copy when it lives on another device)."""
        return self if self._t.device.type == "cpu" else UntypedStorage(self._flat().cpu())

    def __repr__(self) -> str:
        return f"coretorch.storage.UntypedStorage(device={self.device}) of size {self.nbytes()}"


class TypedStorage(_Storage):
    """Elements of one dtype in the memory a tensor and its views share (PyTorch's deprecated ``TypedStorage``)."""

    @property
    def dtype(self) -> _dt.dtype:
        """The element type."""
        return self._t.dtype

    def size(self) -> int:
        """The number of elements."""
        return self.nbytes() // self._t.element_size()

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self._t.element_size()

    def tolist(self) -> list:
        """The elements as a list of Python numbers."""
        return self._flat().tolist()

    def __getitem__(self, i):
        return self._flat()[i].item() if isinstance(i, int) else self._flat()[i]

    def __iter__(self):
        return iter(self.tolist())

    def untyped(self) -> UntypedStorage:
        """The same memory as bytes."""
        return UntypedStorage(self._t)

    def cpu(self) -> "TypedStorage":
        """This storage on the cpu (a copy when it lives on another device)."""
        return self if self._t.device.type == "cpu" else TypedStorage(self._flat().cpu())

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        head = f"[coretorch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self.size()}]"
        return f"{body}\n{head}" if body else head
