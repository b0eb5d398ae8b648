"""numpy kernels of the products (einsum, tensordot, ...) primitives (see coretorch.plugins.KERNELS)."""
from __future__ import annotations

KERNELS: dict = {}  # primitive name -> kernel on numpy arrays
