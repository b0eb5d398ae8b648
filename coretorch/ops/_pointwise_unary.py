"""Elementwise unary ops (neg, exp, log, sin, relu, floor, ...) and their backward nodes; ``ops.pointwise``
re-exports every name (it is the public module, and its binary ops' backward formulas call these)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import dtypes as _dt
from ..amp.autocast_mode import fp32_unary as _ac_unary, state as _ac
from ..autograd._zero import keep_graph as _keep_graph
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._pointwise_where import where
from ._util import edge
from . import creation as _creation

if TYPE_CHECKING:
    from .pointwise import add, div, mul, ne, pow
# the binary ops: bound by ops.pointwise (bind_late), which imports this module (their backward formulas call the
# ops here, so no module-level import of it: no import circle); plain globals, as fast as an import
_LATE = ("add", "div", "mul", "ne", "pow")
_PW = "coretorch.ops.pointwise"  # the public module of every name here
_bool = _dt.bool_


class _UnaryNode(Node):
    __slots__ = ("out",)


# ``grad_fn._saved_self`` / ``grad_fn._saved_result``: the tensor the node saved (version-checked; after the
# backward freed it, PyTorch's "Trying to backward through the graph a second time" error)
_SAVED = property(lambda node: node.saved()[0])


def _make_unary(name: str, backward, float_only: bool, save: str | None, nodiff: bool = False,
                out_bool: bool = False, node_name: str | None = None) -> Callable[..., Tensor]:
    """``node_name``: the backward node's class name where PyTorch's is not ``<Name>Backward0``."""
    node_cls = None
    if backward is not None:
        attrs = {"__slots__": (), "backward": backward, "__module__": _PW}
        if save is not None:  # PyTorch's name of the saved tensor on the node: its input (self) or its result
            attrs["_saved_self" if save == "x" else "_saved_result"] = _SAVED
        node_cls = type(node_name or f"{name[0].upper()}{name[1:]}Backward0", (_UnaryNode,), attrs)

    def fn(input) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        if _ac.on:  # autocast: exp, log, ... are on the float32 list of GPU-like devices (one check when off)
            input = _ac_unary(name, input)
        table = input._be
        dt = input.dtype
        x = input._data
        if dt is _bool and bool_error is not None:
            raise bool_error[0](bool_error[1])
        if float_only and not dt.is_floating_point:
            dt = _dt.default
            x = table.cast(x, dt.np)
        out = getattr(table, name)(x)
        if out_bool:
            return _make(out, _bool, table)
        if node_cls is not None and input._rg and _gs.enabled:
            node = node_cls()
            node.next_functions = (edge(input),)
            r = _make(out, dt, table, node)
            if save == "x":
                node.save(input)
            elif save == "out":
                node.save(r)
            return r
        return _make(out, dt, table)
    bool_error = _UNARY_BOOL_ERRORS.get(name)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__module__ = _PW  # public at coretorch.ops.pointwise (ops._export flattens each module's own functions)
    return fn


# PyTorch's errors for a bool input to these unary ops (the others take bool: exp(bool) is float, ...)
_UNARY_BOOL_ERRORS = {
    "neg": (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                          "invert a mask, use the `~` or `logical_not()` operator instead."),
    "relu": (RuntimeError, "Boolean inputs not supported for relu"),
    "abs": (NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"),
    **{n: (NotImplementedError, f"\"{n}_vml_cpu\" not implemented for 'Bool'")
       for n in ("floor", "ceil", "round", "trunc")},
}


def _x(node):
    return node.saved()[0]


# ops that backward lambdas call before their definition below (declared for type checkers)
neg: Callable[..., Tensor]
cos: Callable[..., Tensor]

neg = _make_unary("neg", lambda n, g: (neg(g),), False, None)
exp = _make_unary("exp", lambda n, g: (mul(g, _x(n)),), True, "out")
log = _make_unary("log", lambda n, g: (div(g, _x(n)),), True, "x")
sqrt = _make_unary("sqrt", lambda n, g: (div(g, mul(_x(n), 2)),), True, "out")
rsqrt = _make_unary("rsqrt", lambda n, g: (mul(g, mul(pow(_x(n), 3), -0.5)),), True, "out")
abs = _make_unary("abs", lambda n, g: (mul(g, sign(_x(n))),), False, "x")
_sign = _make_unary("sign", lambda n, g: _zero_grad(n, g), False, None)


def sign(input):
    """The sign of each element: -1, 0 or 1 (bool inputs are returned as is)."""
    if isinstance(input, Tensor) and input.dtype is _bool:  # sign(bool) is the input (numpy has no bool sign)
        return _make(input._be.cast(input._data, np.bool_), _bool, input._be)
    return _sign(input)


sin = _make_unary("sin", lambda n, g: (mul(g, cos(_x(n))),), True, "x")
cos = _make_unary("cos", lambda n, g: (neg(mul(g, sin(_x(n)))),), True, "x")
tanh = _make_unary("tanh", lambda n, g: (mul(g, _rsub1(mul(_x(n), _x(n)))),), True, "out")
sigmoid = _make_unary("sigmoid", lambda n, g: (mul(g, mul(_x(n), _rsub1(_x(n)))),), True, "out")
def _relu_bw(n, g):
    out = _x(n)
    if not _gs.enabled and g.dtype is out.dtype:  # plain backward: two kernels, no op layer
        table = g._be
        return (_make(table.where(table.ne(out._data, 0), g._data, 0.0), g.dtype, table),)
    # relu's output is 0, positive or NaN: `out != 0` is PyTorch's `not (out <= 0)`, so a NaN passes the gradient;
    # recorded also against the output (a zero derivative: PyTorch's ThresholdBackwardBackward0, so a second gradient
    # with respect to the input is zeros, not "not used in the graph")
    return (_keep_graph(where(ne(out, 0), g, 0.0), (out,), "ThresholdBackwardBackward0") if _gs.enabled
            else where(ne(out, 0), g, 0.0),)


relu = _make_unary("relu", _relu_bw, False, "out")
reciprocal = _make_unary("reciprocal", lambda n, g: (neg(mul(g, mul(_x(n), _x(n)))),), True, "out")
expm1 = _make_unary("expm1", lambda n, g: (mul(g, add(_x(n), 1)),), True, "out")
log1p = _make_unary("log1p", lambda n, g: (div(g, add(_x(n), 1)),), True, "x")
def _zero_grad(n, g):
    """Piecewise-constant functions: zeros (PyTorch's zeros_like(grad): a NaN or inf gradient gives 0, not NaN)."""
    return (_creation.zeros_like(g),)



floor = _make_unary("floor", _zero_grad, False, None)
ceil = _make_unary("ceil", _zero_grad, False, None)
trunc = _make_unary("trunc", _zero_grad, False, None)
_round = _make_unary("round", _zero_grad, False, None)
logical_not = _make_unary("logical_not", None, False, None, out_bool=True)
isnan = _make_unary("isnan", None, False, None, out_bool=True)
_bitwise_not = _make_unary("bitwise_not", None, False, None)
negative = neg
fix = trunc


def _rsub1(t):
    return add(neg(t), 1)


def round(input, *, decimals: int = 0):
    """Round to the nearest integer (half to even); with ``decimals``, to that many decimal places."""
    if decimals == 0:
        return _round(input)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:  # (it rounded a float copy)
        raise NotImplementedError(f"\"round_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    s = 10.0 ** decimals
    return div(_round(mul(input, s)), s)


def bitwise_not(input):
    """The bitwise NOT of an integer or bool tensor (logical NOT for bool).

    Args:
        input (Tensor): an integer or bool tensor.
    """
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    return logical_not(input) if input.dtype is _bool else _bitwise_not(input)


def square(input):
    """Each element squared (``input * input``); integers stay integers, bool becomes int64."""
    if isinstance(input, Tensor) and input.dtype is _bool:  # PyTorch: square(bool) is pow(bool, 2): int64
        input = input.to(_dt.int64)
    return mul(input, input)
