"""``memory_format=``: the channels-last layouts (``torch.channels_last``: NCHW sizes over NHWC memory;
``channels_last_3d``: NCDHW over NDHWC) that ``contiguous``, ``clone``, ``to``, ``empty`` and the ``*_like``
constructors make when asked, and ``is_contiguous(memory_format=)``'s test of them (PyTorch's rules).  Only an
explicit channels-last request lays memory out so; ``preserve_format`` (the default) gives row-major results."""
from __future__ import annotations

from typing import Any

_PERM = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}
_INV = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}
_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}  # dims from the fastest in memory (c10's channels-last check)


def rank(fmt: Any) -> int:
    """The rank a channels-last ``fmt`` wants (4 or 5), or 0 for the row-major formats (None, preserve,
    contiguous); anything else raises PyTorch's TypeError."""
    if fmt is None:
        return 0
    from .. import _compat  # (on use: _compat imports the ops)
    if fmt is _compat.preserve_format or fmt is _compat.contiguous_format:
        return 0
    if fmt is _compat.channels_last:
        return 4
    if fmt is _compat.channels_last_3d:
        return 5
    raise TypeError(f"memory_format must be a torch.memory_format, not {type(fmt).__name__}")


def check(fmt: Any, ndim: int) -> int:
    """``rank(fmt)``, raising PyTorch's error where the tensor has another rank."""
    r = rank(fmt)
    if r and ndim != r:
        name = "channels_last" if r == 4 else "channels_last_3d"
        raise RuntimeError(f"required rank {r} tensor to use {name} format")
    return r


def is_channels_last(shape: tuple, strides: tuple, r: int) -> bool:
    """Whether ``strides`` are the channels-last strides of ``shape`` (size-1 dims take any stride), as c10's
    compute_channels_last_contiguous_2d/3d."""
    if len(shape) != r:
        return False
    expected = 1
    for d in _ORDER[r]:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def relaid(table: Any, data: Any, r: int) -> Any:
    """A fresh backend array holding ``data``'s values in the channels-last layout of rank ``r``."""
    return table.permute(table.contiguous(table.permute(data, _PERM[r])), _INV[r])


def fresh(t: Any, fmt: Any) -> Any:
    """The new tensor ``t`` (a constructor's result, no graph yet) laid out as ``fmt`` asks: ``t`` itself for the
    row-major formats, else a tensor of its values and requires_grad over a channels-last array."""
    r = check(fmt, t.ndim)
    if not r:
        return t
    from ..tensor import _make
    out = _make(relaid(t._be, t._data, r), t.dtype, t._be)
    return out.requires_grad_() if t.requires_grad else out
