"""``Tensor.__getitem__``: PyTorch counts the indices before it looks at their devices.

An index tensor on a device other than the indexed tensor's (and not the cpu) is refused with PyTorch's CUDA error,
but a key with more indices than the tensor has dims is PyTorch's IndexError first (``cpu_0d[device_index]``: "too
many indices"), whatever the devices.  The count is redone only on the error path (nothing on a successful read)."""
from __future__ import annotations

import warnings

from ..tensor import Tensor
from . import indexing as _ix

_DEVICE_MSG = "indices should be either on cpu or on the same device as the indexed tensor"
_COUNT_MSGS = ("too many indices", "invalid index of a 0-dim tensor")


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]`` (ops/indexing.py's getitem, inlined: a subscript list's warning points at the caller's frame)
    with PyTorch's order of its checks."""
    try:
        if x._be.host_memory:
            nkey, advanced = _ix.normalize_key(x, key)
            return _ix._index(x, nkey, advanced)
        with _ix.checks_guard(x._be):
            nkey, advanced = _ix.normalize_key(x, key)
            return _ix._index(x, nkey, advanced)
    except RuntimeError as e:
        if not str(e).startswith(_DEVICE_MSG):
            raise
        _count_first(x, key)
        raise


def _count_first(x: Tensor, key) -> None:
    """Raise PyTorch's IndexError if ``key`` holds more indices than ``x`` has dims (its foreign index tensors
    read on the cpu: an error path only)."""
    items = key if isinstance(key, tuple) else (key,)
    host = tuple(k.cpu() if isinstance(k, Tensor) and k._be is not x._be else k for k in items)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a subscript list's warning was given by the first attempt)
            _ix.normalize_key(x, host if isinstance(key, tuple) else host[0])
    except IndexError as ie:
        if str(ie).startswith(_COUNT_MSGS):
            raise IndexError(str(ie)) from None
    except Exception:  # noqa: BLE001  (any other problem: the device error stands, as PyTorch's CUDA order)
        pass
