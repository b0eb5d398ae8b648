"""numpy kernels of the elementwise math and special functions primitives (see coretorch._backend.PRIMITIVES)."""
from __future__ import annotations

KERNELS: dict = {}  # primitive name -> kernel on numpy arrays
