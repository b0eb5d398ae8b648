"""fmod: the C-style remainder (the sign of the dividend), with PyTorch's gradients (FmodBackward0/1)."""
from __future__ import annotations

import builtins

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import edge, sum_to
from .pointwise import _bool, _cast_grads, _mixed, abs, div, lt, mul, neg, remainder, sub, where


class FmodBackward0(Node):
    """fmod(Tensor, Number): the gradient passes unchanged (a step-free function of the dividend)."""
    __slots__ = ()

    def backward(self, g):
        return (g,)


class FmodBackward1(Node):
    """fmod(Tensor, Tensor): self gets the gradient, other ``-grad * trunc(self / other)`` (derivatives.yaml)."""
    __slots__ = ("need", "sa", "sb", "dts")

    def backward(self, g):
        na, nb = self.need
        ga = sum_to(g, self.sa) if na else None
        gb = None
        if nb:
            a, b = self.saved()
            gb = sum_to(mul(neg(g), div(a, b, rounding_mode="trunc")), self.sb)
        return _cast_grads((ga, gb), self.dts) if self.dts is not None else (ga, gb)


def _fmod(input, other):
    dt = _dt.result_type((input, other), _dt.default)
    if dt is not _bool:  # in the result dtype first: abs(int8 -128) wraps, and bool has no arithmetic
        input = input.to(dt) if isinstance(input, Tensor) and input.dtype is not dt else input
        other = other.to(dt) if isinstance(other, Tensor) and other.dtype is not dt else other
    if dt.is_floating_point:
        # |a| mod |b| is exact (a - trunc(a / b) * b is not: 1e10 fmod 3 would be 0), and right for an infinite b
        r = remainder(abs(input) if isinstance(input, Tensor) else builtins.abs(input),
                      abs(other) if isinstance(other, Tensor) else builtins.abs(other))
        return where(lt(input, 0), neg(r), r) if isinstance(input, Tensor) else \
            (neg(r) if input < 0 else r)
    return sub(input, mul(div(input, other, rounding_mode="trunc"), other))


def fmod(input, other):
    """C-style remainder: the result has the sign of the dividend; d/dinput is 1 everywhere (also at 0, where the
    composite's |input| would give 0), as PyTorch's."""
    ta, tb = isinstance(input, Tensor), isinstance(other, Tensor)
    na, nb = ta and input._rg, tb and other._rg
    if not (_gs.enabled and (na or nb)) or not ta:
        return _fmod(input, other)
    with no_grad():
        r = _fmod(input, other)
    if not tb:
        node = FmodBackward0()
        node.next_functions = (edge(input),)
        return _make(r._data, r.dtype, r._be, node)
    node = FmodBackward1()
    node.need = (na, nb)
    node.sa, node.sb = input._data.shape, other._data.shape
    node.dts = _mixed(r.dtype, input, other)
    if nb:
        node.save(input, other)
    node.next_functions = (edge(input), edge(other))
    return _make(r._data, r.dtype, r._be, node)
