"""``coretorch.nn.parallel``: ``DistributedDataParallel`` comes from the distributed plugin (see
``coretorch.distributed``); without one, using it raises an error that says what to install."""
from __future__ import annotations

from .data_parallel import DataParallel, data_parallel

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]


def _set(cls) -> None:
    if cls is None:
        globals().pop("DistributedDataParallel", None)
    else:
        globals()["DistributedDataParallel"] = cls


def __getattr__(name: str):
    if name == "DistributedDataParallel":
        from ... import distributed
        raise distributed.DistributedUnavailableError(
            "coretorch.nn.parallel.DistributedDataParallel is not available: no distributed plugin is loaded; "
            f"{distributed.INSTALL_HINT}")
    raise AttributeError(f"module 'coretorch.nn.parallel' has no attribute '{name}'")
