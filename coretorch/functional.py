"""``torch.functional``: PyTorch's module of the tensor functions written in Python (``einsum``, ``norm``, ``split``,
``unique``, ...), which scripts import as a namespace (``import torch.functional as F``).  Each name is the
``coretorch`` function itself, read from the package when first asked for (no second copy, no import cycle)."""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "lu", "norm", "meshgrid", "split", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]

# PyTorch's names that coretorch does not have: the short-time Fourier transforms need complex tensors, the
# randomized low-rank decompositions are not written
_MISSING = {"stft": "complex tensors", "istft": "complex tensors", "pca_lowrank": "a randomized low-rank SVD",
            "svd_lowrank": "a randomized low-rank SVD", "align_tensors": "named tensors"}


def __getattr__(name: str) -> Any:
    if name in __all__ or name == "Tensor":
        return getattr(sys.modules[__name__.rpartition(".")[0]], name)
    if name in _MISSING:
        raise AttributeError(f"coretorch.functional.{name} is not supported (it needs {_MISSING[name]})")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(__all__)
