"""The reference order of PyTorch's stable sort, shared by the sorting tests (tests/test_speed13_kernels.py,
tests/test_sort_radix.py)."""
from __future__ import annotations

import numpy as np


def ref_sort_indices(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """PyTorch's stable sort order: NaN the largest value, -0.0 equal to 0.0, ties in input order."""
    m = np.moveaxis(a, axis, -1)
    out = np.empty(m.shape, np.int64)
    for r in np.ndindex(m.shape[:-1]):
        row = m[r].astype(np.float64)
        nan = np.isnan(row)
        val = np.where(nan, 0.0, row)
        pos = np.arange(row.size)
        out[r] = np.lexsort((pos, -val, ~nan)) if descending else np.lexsort((pos, val, nan))
    return np.moveaxis(out, -1, axis)
