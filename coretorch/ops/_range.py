"""``torch.range``: PyTorch's deprecated inclusive range (its own module: the name shadows the builtin)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor
from .creation import _finish, _make, _table, _writes_out, range_args


@_writes_out
def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False, out=None,
           layout=None) -> Tensor:
    """Deprecated, as in PyTorch: the values ``start, start + step, ...`` up to and *including* ``end``
    (``floor((end - start) / step) + 1`` of them), in the default float dtype unless ``dtype`` is given.
    Use :func:`coretorch.arange`, which excludes ``end``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     torch.range(1, 4)
        tensor([1., 2., 3., 4.])
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    start, end, step = range_args("range", start, end, step)
    dt = dtype or _dt.default
    if dt is _dt.bool_:
        raise NotImplementedError("\"range_cpu\" not implemented for 'Bool'")
    n = int(math.floor((end - start) / step)) + 1
    a = np.arange(n, dtype=np.float64) * step + start  # (PyTorch's accumulate type on cpu: double)
    table = _table(device)
    return _finish(_make(table.from_numpy(np.ascontiguousarray(a.astype(dt.np))), dt, table), requires_grad)
