"""torch.accelerator: PyTorch's device-generic API (2.6+), answered for coretorch's plugin devices.

Design: the accelerator is the device type of an installed, available backend other than ``cpu`` — the
``opencl`` backend when it is installed and finds an OpenCL device (a GPU, or PoCL's CPU device), else the first
other plugin device type in name order.  With none available, ``is_available()`` is False,
``current_accelerator(check_available=True)`` is None and the calls that need a device raise PyTorch's "Cannot
access accelerator device when none is available.", as PyTorch on a CPU-only machine.  ``device('opencl')`` (no
index) always means ``opencl:0``; the index set with ``set_device_index`` is what ``current_device_index``
reports; it is per thread, as PyTorch's current device (a CUDA host thread's own): a new thread starts at 0.
"""
from __future__ import annotations

import threading

from ._backend import backends as _backends
from .device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "current_device_idx", "set_device_idx", "synchronize", "device_index", "empty_cache"]



class _Current(threading.local):
    index = 0  # (every thread's start, as PyTorch's: a thread's set_device_index leaves the others' index alone)


_current = _Current()
_NONE = "Cannot access accelerator device when none is available."  # PyTorch's error without an accelerator


def _require():
    b = _backend()
    if b is None:
        raise RuntimeError(_NONE)
    return b


def _backend():
    """(type, backend) of the accelerator, or None."""
    found = _backends()
    for name in ["opencl"] + sorted(n for n in found if n not in ("cpu", "opencl")):
        be = found.get(name)
        if be is None:
            continue
        try:
            if be.is_available() and be.device_count() > 0:
                return name, be
        except Exception:  # a backend that cannot answer is not an accelerator
            continue
    return None


def is_available() -> bool:
    """True when an accelerator device type (opencl) is installed and has a device."""
    return _backend() is not None


def current_accelerator(check_available: bool = False) -> _device | None:
    """``device('opencl')`` when the opencl backend is installed (and, with ``check_available``, has a device)."""
    found = _backends()
    names = ["opencl"] + sorted(n for n in found if n not in ("cpu", "opencl"))
    if check_available:
        b = _backend()
        return None if b is None else _device(b[0])
    for name in names:
        if name in found:
            return _device(name)
    return None


def device_count() -> int:
    """The number of devices of the current accelerator (0 without one).

    Returns:
        int: the count.
    """
    b = _backend()
    return 0 if b is None else b[1].device_count()


def current_device_index() -> int:
    """The index set by ``set_device_index`` (0 by default).  Without an accelerator this raises, as PyTorch."""
    _require()
    return _current.index


def set_device_index(device) -> None:
    """Record the current accelerator index (a device of the accelerator's type, or an int)."""
    idx = device.index if isinstance(device, _device) else int(device)
    n = _require()[1].device_count()
    if idx is None or idx == -1:
        return
    if not 0 <= idx < n:
        raise RuntimeError(f"invalid device index {idx}: the accelerator has {n} device(s)")
    _current.index = idx


current_device_idx = current_device_index  # the names of PyTorch 2.6
set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Wait for the accelerator's queued work (without an accelerator this raises, as PyTorch)."""
    b = _require()
    sync = getattr(b[1], "synchronize", None)
    if sync is not None:
        if isinstance(device, str):  # "opencl" / "opencl:1", as PyTorch takes them ("opencl" was no index at all)
            device = _device(device)
        if isinstance(device, _device) and device.type != b[0]:  # PyTorch's check (a cpu device is no accelerator)
            raise ValueError(f"{device.type} doesn't match the current accelerator {b[0]}.")
        idx = device.index if isinstance(device, _device) else device
        if idx is not None and idx != -1 and not 0 <= idx < b[1].device_count():
            raise RuntimeError(f"invalid device index {idx}: the accelerator has {b[1].device_count()} device(s)")
        sync(idx)


def empty_cache() -> None:
    """Release cached device memory: the opencl backend keeps no cache, so there is nothing to release (without an
    accelerator this raises, as PyTorch)."""
    _require()


class device_index:
    """``with torch.accelerator.device_index(i):`` sets the current index for the block."""

    def __init__(self, device) -> None:
        self.idx = device

    def __enter__(self):
        self.prev = _current.index
        if self.idx is not None:
            set_device_index(self.idx)

    def __exit__(self, *exc):
        _current.index = self.prev
        return False
