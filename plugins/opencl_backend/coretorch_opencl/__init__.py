"""coretorch-opencl: the OpenCL backend for device 'opencl' (pyopencl; PoCL gives a CPU device anywhere)."""
from __future__ import annotations

import coretorch  # (first: coretorch loads this plugin through its entry point; see docs/plugins.md)
from .backend import OpenCLBackend
from .device import STATS

__all__ = ["OpenCLBackend", "STATS", "synchronize"]


def synchronize(index: int | None = None) -> None:
    """Wait for the 'opencl' device's queued kernels (every device in use when ``index`` is None) and raise a
    failed device-side check, e.g. nll_loss's out-of-range target, now rather than at the next host read (the
    role of torch.cuda.synchronize)."""
    be = coretorch.plugins.get_backend("opencl")
    if be is not None:
        be.synchronize(index)  # type: ignore[attr-defined]  # an optional Backend method, which this one has
