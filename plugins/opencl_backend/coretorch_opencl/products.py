"""OpenCL kernels of the products (einsum, tensordot, ...) primitives (see coretorch.plugins.KERNELS), and nn.Linear's
fused forward and backward (``linear``: the bias added in the matmul kernel's stores, one launch instead of two)."""
from __future__ import annotations

from . import matmul as _mm


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    return {"linear": lambda x, w, b: _mm.linear(k, x, w, b),
            "linear_backward": lambda g, x, w, nx, nw, nb: _mm.linear_backward(k, g, x, w, nx, nw, nb)}
