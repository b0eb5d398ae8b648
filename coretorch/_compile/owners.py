"""What the recorder asks of arrays and tensors it loads: the object owning an array's memory (two arrays on one
buffer), and the key a replay checks first of a tensor (or optimizer state tensor) whose array it loads unguarded."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor


def _tensor_key(t: Tensor) -> tuple:
    """What a replay checks first of a tensor whose array it loads without a guard (see ``_resolve_pending``)."""
    d = t._data
    return (d.shape, d.dtype, id(t._be))


def _state_key(opt: Any, p: Any, k: str) -> Any:
    """:func:`_tensor_key` of ``opt.state[p][k]`` (None where it is missing or no tensor): what a replay checks
    first of an optimizer state tensor the step's code reads."""
    d = opt.state.get(p)
    t = d.get(k) if isinstance(d, dict) else None
    return _tensor_key(t) if isinstance(t, Tensor) else None


def _memory_of(a: Any) -> Any:
    """The object owning ``a``'s memory (numpy's ``base`` chain, pyopencl's ``base_data``), or None."""
    base = getattr(a, "base_data", None)
    if base is not None:
        return base
    if isinstance(a, np.ndarray):  # (through the object of a view made from an ``__array_interface__``: as_strided)
        while isinstance(b := a.base if isinstance(a.base, np.ndarray) else getattr(a.base, "base", None), np.ndarray):
            a = b
        return a
    return None
