"""``torch.functional``: PyTorch's module of the tensor functions written in Python (``einsum``, ``norm``, ``split``,
``unique``, ...), which scripts import as a namespace (``import torch.functional as F``).  Each name is the
``coretorch`` function itself (imported by the package after it bound them: no second copy, no cycle)."""
from __future__ import annotations

from typing import Any

from . import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, broadcast_tensors,  # noqa: F401
               cartesian_prod, cdist, chain_matmul, einsum, lu, meshgrid, norm, split, tensordot, unique,
               unique_consecutive, unravel_index)
from .tensor import Tensor  # noqa: F401

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "lu", "norm", "meshgrid", "split", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]

# PyTorch's names that coretorch does not have: the short-time Fourier transforms need complex tensors, the
# randomized low-rank decompositions are not written
_MISSING = {"stft": "complex tensors", "istft": "complex tensors", "pca_lowrank": "a randomized low-rank SVD",
            "svd_lowrank": "a randomized low-rank SVD", "align_tensors": "named tensors"}


def __getattr__(name: str) -> Any:
    if name in _MISSING:
        raise AttributeError(f"coretorch.functional.{name} is not supported (it needs {_MISSING[name]})")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(__all__)
