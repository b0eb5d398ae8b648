"""numpy kernels of the linear-algebra decompositions primitives (see coretorch._backend.PRIMITIVES): numpy.linalg,
batched, shared with the opencl backend's host fallbacks (coretorch.ops._linalg_host)."""
from __future__ import annotations

from coretorch.ops._linalg_host import KERNELS as _HOST

KERNELS: dict = dict(_HOST)  # primitive name -> kernel on numpy arrays
