"""numpy kernels of the triangular, joining and scatter/index ops primitives (see coretorch._backend.PRIMITIVES)."""
from __future__ import annotations

KERNELS: dict = {}  # primitive name -> kernel on numpy arrays
