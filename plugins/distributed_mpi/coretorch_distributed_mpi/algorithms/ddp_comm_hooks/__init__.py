"""``torch.distributed.algorithms.ddp_comm_hooks``: communication hooks for ``DistributedDataParallel``."""
from __future__ import annotations

from . import default_hooks

__all__ = ["default_hooks"]
