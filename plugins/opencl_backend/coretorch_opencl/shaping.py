"""OpenCL kernels of the triangular, joining and scatter/index ops primitives (see coretorch._backend.PRIMITIVES)."""
from __future__ import annotations


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    return {}
