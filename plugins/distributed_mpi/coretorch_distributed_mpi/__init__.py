"""coretorch-distributed-mpi: ``coretorch.distributed`` and ``DistributedDataParallel`` over MPI (mpi4py)."""
from __future__ import annotations

__version__ = "0.1.0"
