"""OpenCL kernels of the bfloat16 and dtype casts primitives (see coretorch.plugins.KERNELS)."""
from __future__ import annotations


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    return {}
