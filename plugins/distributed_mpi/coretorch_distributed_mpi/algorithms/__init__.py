"""``torch.distributed.algorithms``: the generic join context manager for uneven inputs and
DDP's communication hooks (``ddp_comm_hooks``)."""
from __future__ import annotations

from . import ddp_comm_hooks
from .join import Join, JoinHook, Joinable

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks"]
