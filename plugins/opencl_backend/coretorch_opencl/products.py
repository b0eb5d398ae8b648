"""OpenCL kernels of the products (einsum, tensordot, ...) primitives (see coretorch.plugins.KERNELS)."""
from __future__ import annotations


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    return {}
