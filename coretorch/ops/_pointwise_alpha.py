"""add and sub with ``alpha``: PyTorch's checks of alpha, and a floating result rounded once per element (the
device's ``axpy_``, as PyTorch's fused multiply-add kernel); the plain ``+``/``-`` are ops.pointwise's binary ops."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..tensor import Tensor, _make
from ._util import broadcast_shape

if TYPE_CHECKING:
    from .pointwise import (_AddAlphaBackward, _SubAlphaBackward, _SUB_BOOL, _add, _is_bool, _operands, _record,
                            _sub, logical_and, logical_or, mul)
# bound by ops.pointwise (bind_late), which imports this module and re-exports add and sub
_LATE = ("_AddAlphaBackward", "_SubAlphaBackward", "_SUB_BOOL", "_add", "_is_bool", "_operands", "_record", "_sub",
         "logical_and", "logical_or", "mul")
_bool = _dt.bool_
_SCALARS = (int, float, bool)
builtins_abs = builtins.abs
_py = _dt.py_scalar  # (numpy numbers as PyTorch's parser takes them: alpha=np.float32(2) is a float alpha)


def _alpha_dtype(input, other, alpha):
    """The result dtype, after PyTorch's checks of ``alpha``: a float alpha needs a floating result, a bool alpha
    a bool one, and alpha must fit the result dtype (half: alpha=1e5 raises)."""
    dt = _dt.result_type((input, other), _dt.default)
    if isinstance(alpha, complex):  # (no complex dtypes here)
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
    if isinstance(alpha, bool) and dt is not _bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not dt.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if dt is not _bool:
        _dt.fit_scalar(alpha, dt)
    return dt


def _alpha(input, other, alpha, op, dt):
    """other * alpha in the result dtype ``dt`` (integer and bool results: exact, so scaling first is PyTorch's
    result too)."""
    if dt is _bool:  # bool arithmetic: other * alpha is `other and alpha`
        if op == "sub":
            return other
        return logical_and(other, bool(alpha)) if isinstance(other, Tensor) else bool(other) and bool(alpha)
    if not isinstance(other, Tensor):
        return other * alpha
    # promote first, then scale: int32 + int8 * 2 is computed in int32 (not wrapped in int8), f32 + u8 * -1 in f32
    return mul(other if other.dtype is dt else other.to(dt), alpha)


def _has_axpy(input, other) -> bool:
    """Whether the tensor operand's device has the one-rounding ``axpy_`` kernel (False for two numbers)."""
    t = input if isinstance(input, Tensor) else other
    return isinstance(t, Tensor) and t._be.has_axpy


_F32, _F64 = _dt.float32, _dt.float64


def _exact_product(c, alpha, dt) -> float | None:
    """``c * alpha`` (both rounded to ``dt``, as PyTorch's kernel takes them) where float32/float64 ``dt`` holds it
    exactly (then ``x + c * alpha`` rounds once as a fused multiply-add); else None."""
    if dt is _F32:
        p = float(np.float32(c)) * float(np.float32(alpha))  # exact in double (24-bit significands)
        return p if math.isfinite(p) and float(np.float32(p)) == p else None
    if dt is _F64:
        c, alpha = float(c), float(alpha)
        p = c * alpha
        # exact when a factor is a power of two (or zero) and the product neither overflows nor goes subnormal
        if math.isfinite(p) and (p == 0 and (c == 0 or alpha == 0) and math.isfinite(c) and math.isfinite(alpha)
                                 or builtins_abs(p) >= _TINY64 and (_pow2(c) or _pow2(alpha))):
            return p
    return None


_TINY64 = float(np.finfo(np.float64).tiny)


def _pow2(v: float) -> bool:
    return builtins_abs(math.frexp(v)[0]) == 0.5


def _fused_add(input, other, alpha, sign: int, op: str) -> Tensor:
    """``input + sign * alpha * other`` for a floating result, rounded once per element as PyTorch's kernel
    (``fmadd(other, alpha, input)``; float16/bfloat16: alpha rounded to the dtype, computed in float32): the
    result is a copy of ``input`` (promoted, broadcast) updated by the device's ``axpy_``, which rounds so; one
    AddBackward0/SubBackward0 node scales ``other``'s gradient by alpha, as PyTorch's."""
    a, b, xa, xb, dt, table = _operands(op, input, other)
    bt = isinstance(b, Tensor)
    # (a symbolic alpha of coretorch.compile goes to axpy_, which records it as a replay input)
    p = None if bt or alpha.__class__ not in _SCALARS else _exact_product(xb, alpha, dt)
    if p is not None:  # a number whose product with alpha the dtype holds: one add rounds once (no filled operand)
        out = table.add(xa, p if sign > 0 else -p)
        shape = out.shape
    else:
        if not bt:
            xb = table.full((), xb, dt.np)  # the number in the result dtype (half(1) + 2049. * 1: 2048, as PyTorch)
        shape = xa.shape if xa.shape == xb.shape else broadcast_shape(xa.shape, xb.shape, op)
        out = table.contiguous(xa if xa.shape == shape else table.expand(xa, shape))
        table.axpy_(out, alpha if sign > 0 else -alpha, xb if xb.shape == shape else table.expand(xb, shape))
    if _gs.enabled and (a._rg or (bt and b._rg)):
        node = _AddAlphaBackward() if sign > 0 else _SubAlphaBackward()
        node.need = (a._rg, bt and b._rg)
        node.scalar = None
        node.alpha = alpha
        return _record(node, out, dt, table, a, b, bt, a._data.shape, b._data.shape if bt else None, shape)
    return _make(out, dt, table)


def add(input, other, *, alpha=1):
    """Adds ``other``, scaled by ``alpha``, to ``input``: ``out = input + alpha * other``.

    The operands broadcast against each other and the result dtype follows type promotion (a Python
    number does not widen a tensor's dtype category: ``int_tensor + 2.5`` is float, ``float16 + 1`` stays float16).
    With ``alpha``, a floating result is rounded once per element (as PyTorch's fused multiply-add).

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the second operand.
        alpha (Number): the multiplier of ``other`` (default 1).
        out (Tensor, optional): the output tensor.

    Example:
        >>> a = torch.tensor([1.0, 2.0])
        >>> torch.add(a, torch.ones(2), alpha=10)
        tensor([11., 12.])
    """
    if alpha != 1 or type(alpha) is not int:
        input, other, alpha = _py(input), _py(other), _py(alpha)
        dt = _alpha_dtype(input, other, alpha)
        if dt.is_floating_point and _has_axpy(input, other):
            return _fused_add(input, other, alpha, 1, "add")
        other = _alpha(input, other, alpha, "add", dt)
        if isinstance(other, Tensor) and other.dtype is _bool and isinstance(input, Tensor) \
                and input.dtype is _bool:
            return logical_or(input, other)
    return _add(input, other)


def sub(input, other, *, alpha=1):
    """Subtracts ``other``, scaled by ``alpha``, from ``input``: ``out = input - alpha * other``.

    Broadcasting and type promotion as :func:`add` (with ``alpha``, rounded once as there); bool tensors cannot be
    subtracted.

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the second operand.
        alpha (Number): the multiplier of ``other`` (default 1).
        out (Tensor, optional): the output tensor.
    """
    if alpha != 1 or type(alpha) is not int:
        input, other, alpha = _py(input), _py(other), _py(alpha)
        if _is_bool(input) is not _is_bool(other):  # before alpha scales the bool away: PyTorch checks first
            raise RuntimeError(_SUB_BOOL)
        dt = _alpha_dtype(input, other, alpha)
        if dt.is_floating_point and _has_axpy(input, other):
            return _fused_add(input, other, alpha, -1, "sub")
        other = _alpha(input, other, alpha, "sub", dt)
    return _sub(input, other)


subtract = sub
