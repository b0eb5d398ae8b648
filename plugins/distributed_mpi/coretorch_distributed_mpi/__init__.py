"""coretorch-distributed-mpi: ``coretorch.distributed`` and ``DistributedDataParallel`` over MPI (mpi4py)."""
from __future__ import annotations

import coretorch  # noqa: F401  (first: coretorch loads this plugin through its entry point; see docs/plugins.md)
__version__ = "0.1.0"
