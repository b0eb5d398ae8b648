"""numpy kernels of the linear-algebra decompositions primitives (see coretorch._backend.PRIMITIVES)."""
from __future__ import annotations

KERNELS: dict = {}  # primitive name -> kernel on numpy arrays
