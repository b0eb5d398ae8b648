"""``torch.distributed.algorithms``: the generic join context manager for uneven inputs."""
from __future__ import annotations

from .join import Join, JoinHook, Joinable

__all__ = ["Join", "JoinHook", "Joinable"]
