"""PyTorch's argument checks of index_copy_, in its order and with its error types (IndexError for the
index's rank and count, RuntimeError for dtypes and slice shapes)."""
from __future__ import annotations

from .. import dtypes as _dt
from ..tensor import Tensor
from ._indexing_dim import _same_device


def check_index_copy(input: Tensor, d: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's index_copy_ checks, in its order and with its error types."""
    n = index.numel()
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    if source.ndim == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {n})")
    if source.ndim != input.ndim and source.ndim != 0 and input.ndim != 0:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.ndim}), destination dimensionality ({input.ndim})")
    if index.dtype is not _dt.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {index.dtype}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{input.dtype._tname[:-6]} and (source) {source.dtype._tname[:-6]}")
    _same_device("index_copy", input, index, source)
    xs = [s for k, s in enumerate(input.shape) if k != d]
    ss = [s for k, s in enumerate(source.shape) if k != d]
    if xs != ss:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                           f"slice shape: {' '.join(map(str, xs))} at dimension {d} and source slice shape: "
                           f"{' '.join(map(str, ss))} at dimension 0.")
    if source.ndim and n != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                         f"({source.shape[d]})")
