"""``memory_format=``: the channels-last layouts (``torch.channels_last``: NCHW sizes over NHWC memory;
``channels_last_3d``: NCDHW over NDHWC) that ``contiguous``, ``clone``, ``to``, ``empty`` and the ``*_like``
constructors make when asked, and ``is_contiguous(memory_format=)``'s test of them (PyTorch's rules); and
``preserve_format`` (the default of ``clone``, the ``*_like`` constructors, copies between devices): a dense
input's strides, any other input's stride order (c10's infer_dense_strides), row-major for a row-major input."""
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


def canonical_strides(shape: tuple, r: int) -> tuple:
    """c10's get_channels_last_strides_2d/3d: the strides of a fresh channels-last tensor of ``shape`` (rank
    ``r``), size-1 dims included."""
    strides = [0] * r
    step = 1
    for d in _ORDER[r]:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def strides_like_channels_last(shape: tuple, strides: tuple) -> bool:
    """Whether a 4-D or 5-D tensor's strides suggest a channels-last layout (c10's is_channels_last_strides_2d/3d,
    suggest_memory_format's test): its dims' strides grow in the channels-last order; ambiguous layouts (a
    zero-stride C, an N111 tensor) are row-major."""
    o = _ORDER.get(len(shape))
    if o is None or strides[1] == 0:
        return False
    lo = 0
    for d in o:
        if shape[d] == 0 or strides[d] < lo or (d == 0 and lo == strides[1]):
            return False
        lo = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return True


def relaid(table: Any, data: Any, r: int) -> Any:
    """A fresh backend array holding ``data``'s values in the channels-last layout of rank ``r``."""
    return table.permute(table.contiguous(table.permute(data, _PERM[r])), _INV[r])


def fresh(t: Any, fmt: Any, like: Any = None) -> Any:
    """The new tensor ``t`` (a constructor's result, no graph yet) laid out as ``fmt`` asks: a channels-last array,
    or for ``preserve_format`` (None too) the layout of ``like`` (the ``*_like`` constructors' input); ``t`` itself
    where that is row-major."""
    if fmt is None or fmt is _preserve():
        if like is None or like._be is not t._be:
            return t
        data = preserved(t._be, t._data, like._data)
        if data is t._data:
            return t
    else:
        r = check(fmt, t.ndim)
        if not r:
            return t
        data = relaid(t._be, t._data, r)
    from ..tensor import _make
    out = _make(data, t.dtype, t._be)
    return out.requires_grad_() if t.requires_grad else out


def _preserve() -> Any:
    from .. import _compat
    return _compat.preserve_format


def order(shape: tuple, strides: tuple) -> list | None:
    """The dims from the slowest to the fastest in memory by ``strides`` (c10's infer_dense_strides: the smaller
    stride is the faster dim, equal strides the smaller size; zero strides decide nothing), None when row-major."""
    return iter_order(shape, (strides,))


def iter_order(shape: tuple, stride_lists: Any) -> list | None:
    """:func:`order` by several operands' strides, as PyTorch's TensorIterator orders a result's dims
    (reorder_dimensions): for each pair of dims the first operand whose strides there are both nonzero decides (the
    smaller stride is the faster dim; equal strides: the smaller size, else the next operand decides); None when
    that order is the row-major one."""
    nd = len(shape)
    perm = list(range(nd - 1, -1, -1))  # fastest first, as TensorIterator's perm_

    def swap(d0, d1):
        for st in stride_lists:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0
    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out = perm[::-1]
    return None if out == list(range(nd)) else out


def preserved(table: Any, data: Any, like: Any = None) -> Any:
    """A fresh array of ``data``'s values (``like``: of ``like``'s layout instead, for a constructor's fresh
    ``data``) in PyTorch's preserve_format layout: a dense input's strides, any other in its stride order; row-major
    for a row-major input (one check)."""
    src = data if like is None else like
    if table.is_contiguous(src) or len(src.shape) < 2:
        return table.contiguous(data) if like is None else data
    o = order(tuple(src.shape), tuple(table.strides(src)))
    if o is None:
        return table.contiguous(data) if like is None else data
    return table.permute(table.contiguous(table.permute(data, o)), inverse(o))


def inverse(perm: list) -> list:
    """The permutation undoing ``perm``."""
    inv = [0] * len(perm)
    for i, d in enumerate(perm):
        inv[d] = i
    return inv
