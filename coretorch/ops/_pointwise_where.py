"""where and clamp (clip, clamp_min, clamp_max) with their backward nodes; ``ops.pointwise`` re-exports every
name."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _creation
from ._util import align_devices, broadcast_shape, edge, sum_to

if TYPE_CHECKING:
    from .pointwise import _cast_grads, _mixed, ge, gt, le, logical_and, logical_or, lt, maximum, minimum
# built on the binary ops: bound by ops.pointwise (bind_late), which imports this module (their backward formulas
# call where, so no module-level import of it: no import circle); plain globals, as fast as an import
_LATE = ("_cast_grads", "_mixed", "ge", "gt", "le", "logical_and", "logical_or", "lt", "maximum", "minimum")
_bool = _dt.bool_
_U8_WARNED: list = []


class WhereBackward0(Node):
    """The condition is saved as PyTorch saves it: one changed in place before the backward raises (the gradient
    went by the changed condition)."""
    __slots__ = ("sx", "sy", "need", "dts")

    def backward(self, g):
        (c,) = self.saved()
        nx, ny = self.need
        gx = sum_to(where(c, g, 0.0), self.sx) if nx else None
        gy = sum_to(where(c, 0.0, g), self.sy) if ny else None
        return (gx, gy) if self.dts is None else _cast_grads((gx, gy), self.dts)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` is True, else ``other``: ``out_i = input_i if condition_i else other_i``.

    The three broadcast; the result dtype is the promotion of ``input`` and ``other`` (tensors or numbers).
    With only ``condition``, returns ``nonzero(condition, as_tuple=True)``.

    Args:
        condition (Tensor): a bool tensor.
        input (Tensor or Number): values where True.
        other (Tensor or Number): values where False.
    """
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is _dt.uint8:  # (PyTorch: deprecated, warned once, read as bool)
        if not _U8_WARNED:
            _U8_WARNED.append(True)
            warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed "
                          "in a future version of PyTorch. Use a boolean condition instead.", UserWarning, stacklevel=2)
        condition = condition.to(_bool)
    if condition.dtype is not _bool:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype}")
    table = condition._be
    xt, yt = isinstance(input, Tensor), isinstance(other, Tensor)
    ref = input if xt else other if yt else condition
    if xt and input._be is not table:
        condition, input = align_devices("where", condition, input)
        table = condition._be
    if yt and other._be is not table:
        condition, other = align_devices("where", condition, other)
        table = condition._be
        if xt and input._be is not table:  # a 0-d CPU condition and input beside a device other: both follow it
            condition, input = align_devices("where", condition, input)
    if xt and yt:
        dt = _dt.result_type((input, other), _dt.default)
    elif xt or yt:
        dt = _dt.result_type((ref, other if xt else input), _dt.default)
    else:
        dt = _dt.result_type((input, other), _dt.default)
    # Python scalars go to the kernel as scalars (no broadcast buffer), converted to the result's kind; an
    # integer result checks the value as fill_ does (PyTorch: where(c, int8_tensor, 200) raises)
    conv = (_float if dt.itemsize > 2 else _float32) if dt.is_floating_point else bool if dt is _bool else \
        (lambda v: _dt.fit_scalar(int(v), dt)) if xt or yt else int
    xs = input._data.shape if xt else ()
    ys = other._data.shape if yt else ()
    shape = broadcast_shape(broadcast_shape(condition._data.shape, xs, "where"), ys, "where")
    xc = (input._data if input.dtype is dt else table.cast(input._data, dt.np)) if xt else conv(input)
    yc = (other._data if other.dtype is dt else table.cast(other._data, dt.np)) if yt else conv(other)
    cd = condition._data
    if cd.shape != shape:
        cd = table.expand(cd, shape)
    if xt and xs != shape:
        xc = table.expand(xc, shape)
    if yt and ys != shape:
        yc = table.expand(yc, shape)
    out = table.where(cd, xc, yc)
    if not xt and not yt:  # two Python scalars: the kernel picks its own (64-bit) type
        out = table.cast(out, dt.np)
    xg, yg = xt and input._rg, yt and other._rg
    if _gs.enabled and (xg or yg):
        node = WhereBackward0()
        node.save(condition)
        node.need = (xg, yg)
        node.dts = _mixed(dt, input, other)
        node.sx, node.sy = xs, ys
        node.next_functions = (edge(input) if xt else (None, 0), edge(other) if yt else (None, 0))
        return _make(out, dt, table, node)
    return _make(out, dt, table)


class ClampBackward1(Node):
    __slots__ = ("lo", "hi")

    def backward(self, g):
        (x,) = self.saved()
        m = None
        if self.lo is not None:
            m = ge(x, self.lo)
        if self.hi is not None:
            m2 = le(x, self.hi)
            m = m2 if m is None else logical_and(m, m2)
        return (where(m, g, 0.0),)


_NUMPY = (np.generic, np.ndarray)


def clamp(input, min=None, max=None):
    """Clamp every element into ``[min, max]``: ``min(max(input, min), max)``.

    Args:
        input (Tensor): the input tensor.
        min (Number or Tensor, optional): the lower bound.
        max (Number or Tensor, optional): the upper bound (wins when ``min > max``).

    The gradient is 1 where the element lies inside the bounds, 0 where it was clamped.
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, _NUMPY) or isinstance(max, _NUMPY):  # (their own kind would promote in numpy's clip)
        # a numpy number as PyTorch's parser takes it (int32 tensor, min=np.float64(2.5): float32), an array as a
        # tensor bound (PyTorch refuses arrays: its TypeError)
        min, max = (_creation.as_tensor(v, device=input.device) if isinstance(v, np.ndarray) else
                    _dt.py_scalar(v) for v in (min, max))
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(input, min, max)
    table = input._be
    dt = input.dtype
    x = input._data
    if not dt.is_floating_point:
        # PyTorch's result_type(input, min, max): a float bound gives the default float dtype, an int bound
        # promotes bool to int64; an int bound is converted to the integer type as fill_ converts it (an
        # out-of-range bound raises, a negative one wraps for uint8)
        rdt = _dt.result_type((input,) + tuple(v for v in (min, max) if v is not None), _dt.default)
        if rdt is not dt:
            dt = rdt
            x = table.cast(x, dt.np)
        if dt is _bool:  # PyTorch has no bool clamp kernel (a bool bound keeps the bool dtype)
            kind = "clamp" if min is not None and max is not None else "clamp_min" if min is not None else "clamp_max"
            raise NotImplementedError(f"\"{kind}_scalar_cpu\" not implemented for 'Bool'")
        if not dt.is_floating_point:
            min = None if min is None else _dt.fit_scalar(min if dt is _bool else int(min), dt)
            max = None if max is None else _dt.fit_scalar(max if dt is _bool else int(max), dt)
    elif dt is not _dt.float64:  # a bound out of the float dtype's range raises, as PyTorch (inf and NaN pass)
        min = None if min is None else _dt.fit_scalar(min, dt)
        max = None if max is None else _dt.fit_scalar(max, dt)
    out = table.clamp(x, min, max)
    if input._rg and _gs.enabled:
        node = ClampBackward1() if min is not None and max is not None else \
            ClampMinBackward0() if min is not None else ClampMaxBackward0()
        node.lo, node.hi = min, max
        node.save(input)
        node.next_functions = (edge(input),)
        return _make(out, dt, table, node)
    return _make(out, dt, table)


class ClampBackward0(Node):
    """clamp with tensor bounds, as PyTorch: the input gets the gradient where lo <= x <= hi, a bound where
    it is the result (lo where x < lo < hi, hi where x > hi or hi < lo); no splitting at the bounds."""
    __slots__ = ("lo", "hi", "need", "shapes", "dts")

    def backward(self, g):
        x, lo_t, hi_t = self.saved()
        lo = lo_t if lo_t is not None else self.lo
        hi = hi_t if hi_t is not None else self.hi
        nx, nlo, nhi = self.need
        sx, slo, shi = self.shapes
        gx = glo = ghi = None
        if nx:
            m = ge(x, lo) if lo is not None else None
            if hi is not None:
                m = le(x, hi) if m is None else logical_and(m, le(x, hi))
            gx = sum_to(where(m, g, 0.0), sx)
        if nlo:
            m = lt(x, lo) if hi is None else logical_and(lt(x, lo), lt(lo, hi))
            glo = sum_to(where(m, g, 0.0), slo)
        if nhi:
            m = gt(x, hi) if lo is None else logical_or(gt(x, hi), lt(hi, lo))
            ghi = sum_to(where(m, g, 0.0), shi)
        gs = (gx, glo, ghi) if self.dts is None else _cast_grads((gx, glo, ghi), self.dts)
        return tuple(r for r, t in zip(gs, (x, lo_t, hi_t)) if t is not None)


def _clamp_tensor(input, min, max):
    prev = _gs.enabled
    _gs.enabled = False
    try:
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
    finally:
        _gs.enabled = prev
    ts = [t if isinstance(t, Tensor) else None for t in (input, min, max)]
    if not (_gs.enabled and any(t is not None and t._rg for t in ts)):
        return out
    node = ClampBackward0()
    node.lo = None if isinstance(min, Tensor) else min
    node.hi = None if isinstance(max, Tensor) else max
    node.need = tuple(t is not None and t._rg for t in ts)
    node.shapes = tuple(None if t is None else t._data.shape for t in ts)
    node.dts = _mixed(out.dtype, *ts)
    node.save(*ts)
    node.next_functions = tuple(edge(t) for t in ts if t is not None)
    return _make(out._data, out.dtype, out._be, node)


clip = clamp


def clamp_min(input, min):
    """Clamp every element to at least ``min`` (``clamp(input, min=min)``)."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """Clamp every element to at most ``max`` (``clamp(input, max=max)``)."""
    return clamp(input, max=max)


ClampMinBackward0: type = type("ClampMinBackward0", (ClampBackward1,), {"__slots__": ()})
ClampMaxBackward0: type = type("ClampMaxBackward0", (ClampBackward1,), {"__slots__": ()})


def _float32(v) -> float:
    """A scalar beside a half/bfloat16 result: a Python float through float32, as c10 converts a double to half."""
    v = _float(v)
    if v.__class__ is not float:  # (a compiled step's float argument: as it is)
        return v
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def _float(v):
    """A Python float operand as is (a compiled step's float argument stays an input of the replay), any other
    number (an int, a numpy scalar, whose own type would promote in the kernel) made a float."""
    return v if isinstance(v, float) and not isinstance(v, np.generic) else float(v)
