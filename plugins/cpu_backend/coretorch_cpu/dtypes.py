"""numpy kernels of the bfloat16 and dtype casts primitives (see coretorch._backend.PRIMITIVES)."""
from __future__ import annotations

KERNELS: dict = {}  # primitive name -> kernel on numpy arrays
