"""numpy kernels of the linear-algebra decompositions primitives (see coretorch.plugins.KERNELS): numpy.linalg,
batched, shared with the opencl backend's host fallbacks (coretorch.plugins.HOST_LINALG_KERNELS)."""
from __future__ import annotations

from coretorch.plugins import HOST_LINALG_KERNELS as _HOST

KERNELS: dict = dict(_HOST)  # primitive name -> kernel on numpy arrays
