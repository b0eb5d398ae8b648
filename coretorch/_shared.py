"""Tensors across processes: pickling, ``share_memory_()`` and the shared buffers behind it.

* ``pickle.dumps(t)`` stores the tensor by value (a host copy, its dtype, device and ``requires_grad``); loading
  rebuilds it on the same device (an opencl tensor comes back on opencl when that device is available, else on
  cpu with a warning).  Pickling is for inter-process transfer: ``coretorch.load`` still never unpickles files.
* ``t.share_memory_()`` (cpu) moves the tensor's data into a shared buffer: a ``memfd`` (an anonymous file, or an
  unlinked temporary file where memfd is missing) mapped ``MAP_SHARED``.  A forked child inherits the mapping, so
  its writes are seen by the parent; through ``multiprocessing`` pickling (``Process`` arguments under spawn,
  ``Queue``, ``Pool``) a shared tensor travels as its file descriptor (PyTorch's ``file_descriptor`` strategy) and
  the receiver maps the same memory.  The memory is freed when the last mapping and descriptor are gone.
* Unlike PyTorch, ``share_memory_()`` rebinds the tensor's own data (views taken *before* the call keep the old,
  private memory), and a cpu tensor that is not shared travels through a Queue by value (PyTorch moves it into
  shared memory first).
"""
from __future__ import annotations

import mmap
import os
import tempfile
import warnings
import weakref
from multiprocessing import reduction as _reduction
from typing import Any

import numpy as np

from ._backend import get_table
from .device import device as _Device
from .tensor import Tensor, _make, _user_state

__all__ = ["share_memory_", "is_shared"]


class _SharedMap(mmap.mmap):
    """A shared mapping and the descriptor it maps (kept open: it is what travels to other processes)."""
    fd: int
    addr: int  # the mapping's address


_by_inode: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (dev, inode) -> mapping, per process


def _map_fd(fd: int, size: int) -> _SharedMap:
    m = _SharedMap(fd, size)  # MAP_SHARED, read-write
    m.fd = fd
    m.addr = np.frombuffer(m, np.uint8).__array_interface__["data"][0]
    weakref.finalize(m, os.close, fd)
    st = os.fstat(fd)
    _by_inode[(st.st_dev, st.st_ino)] = m
    return m


def _new_buffer(nbytes: int) -> _SharedMap:
    size = max(int(nbytes), 1)  # mmap refuses length 0
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("coretorch_shared", os.MFD_CLOEXEC)
    else:  # an unlinked temporary file: no name left behind either
        with tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, size)
    return _map_fd(fd, size)


def _shared_map(a: np.ndarray):
    """The shared mapping under array ``a`` (None when ``a`` is private memory)."""
    b: Any = a
    while b is not None:
        if isinstance(b, _SharedMap):
            return b
        b = getattr(b, "base", None) if isinstance(b, np.ndarray) else getattr(b, "obj", None)
    return None


def is_shared(self: Tensor) -> bool:
    """True when the tensor's data lives in shared memory (``share_memory_()``, or received as shared)."""
    return self._be.type == "cpu" and isinstance(self._data, np.ndarray) and _shared_map(self._data) is not None


def share_memory_(self: Tensor) -> Tensor:
    """Move the data into shared memory (cpu; a no-op when already shared or on another device), in place."""
    if self._be.type != "cpu" or is_shared(self):
        return self
    a = self._data
    m = _new_buffer(a.nbytes)
    new = np.ndarray(a.shape, a.dtype, buffer=m)
    new[...] = a
    self._data = new
    grad = self.grad
    if grad is not None and grad is not self:
        share_memory_(grad)
    return self


# ---- pickling -------------------------------------------------------------------------------------------------
def _rebuild(host: np.ndarray, dtype, device: str, requires_grad: bool, param: bool, state: dict | None = None,
             cls: type | None = None):
    from .ops.creation import tensor  # creation imports this package's tensor module: a cycle at import time
    try:
        t = tensor(host, dtype=dtype, device=device)
    except (RuntimeError, ValueError):
        if device == "cpu":
            raise
        warnings.warn(f"a tensor pickled on device {device!r} is loaded on cpu: {device!r} is not available in "
                      f"this process", UserWarning, stacklevel=2)
        t = tensor(host, dtype=dtype)
    t = _finish(t, requires_grad, param)
    if cls is not None:  # a Tensor subclass comes back as one (PyTorch's _rebuild_from_type_v2: as_subclass)
        t = t.as_subclass(cls)
    if state:
        t.__dict__.update(state)
    return t


def _finish(t: Tensor, requires_grad: bool, param: bool) -> Tensor:
    if param:
        from .nn.parameter import Parameter
        return Parameter(t, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _is_parameter(t: Tensor) -> bool:
    """Whether ``t`` pickles as a Parameter: as PyTorch's Parameter.__reduce_ex__, a subclass of Parameter comes
    back as a Parameter (and a tensor flagged ``_is_param`` as one too)."""
    from .nn.parameter import Parameter
    return isinstance(t, Parameter)


def _by_value(t: Tensor):
    state = _user_state(t)  # (the attributes a program set on the tensor travel too, as PyTorch's state)
    param = _is_parameter(t)
    cls = type(t)
    args = (t._host(), t.dtype, str(t.device), t.requires_grad, param, state or None)
    return _rebuild, args if param or cls is Tensor else args + (cls,)


def _reduce_ex(self: Tensor, proto):
    """``pickle``: by value, on the tensor's device (the graph is not pickled: a result comes back as a leaf)."""
    return _by_value(self)


def _rebuild_shared(dupfd, size: int, offset: int, shape: tuple, strides: tuple, np_dtype, dtype,
                    requires_grad: bool, param: bool):
    fd = dupfd.detach()
    st = os.fstat(fd)
    m = _by_inode.get((st.st_dev, st.st_ino))
    if m is not None and len(m) >= size:  # this process maps that memory already: one mapping, one descriptor
        os.close(fd)
    else:
        m = _map_fd(fd, size)
    a = np.ndarray(shape, np_dtype, buffer=m, offset=offset, strides=strides)
    table = get_table(_Device("cpu"))
    return _finish(_make(table.from_numpy(a), dtype, table), requires_grad, param)


def _reduce_ipc(self: Tensor):
    """multiprocessing's pickler (Queue, Pipe, Pool, spawn arguments): a shared cpu tensor travels as its file
    descriptor, every other tensor by value."""
    if self.requires_grad and not self.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does "
                           "not support crossing process boundaries.  If you just want to transfer the data, call "
                           "detach() on the tensor before serializing (e.g., putting it on the queue).")
    a = self._data
    m = _shared_map(a) if self._be.type == "cpu" and isinstance(a, np.ndarray) else None
    if m is None:
        return _by_value(self)
    offset = a.__array_interface__["data"][0] - m.addr
    return _rebuild_shared, (_reduction.DupFd(m.fd), len(m), offset, a.shape, a.strides, a.dtype, self.dtype,
                             self.requires_grad, _is_parameter(self))


def _install() -> None:
    T: Any = Tensor  # installs methods (their typed face: coretorch/_tensor_api.pyi)
    T.__reduce_ex__ = _reduce_ex
    T.share_memory_ = share_memory_
    T.is_shared = is_shared
    from .nn.parameter import Parameter
    # multiprocessing's pickler looks reducers up by exact type, as PyTorch registers each tensor class
    for cls in (Tensor, Parameter):
        _reduction.ForkingPickler.register(cls, _reduce_ipc)


_install()
