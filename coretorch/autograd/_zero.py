"""Graph nodes for results that do not depend on some of their inputs, recorded as PyTorch records them.

PyTorch keeps such ops in the graph: ``x.zero_()``, ``x.fill_(3)``, ``div(x, y, rounding_mode='floor')``,
``addmm(x, a, b, beta=0)``, ``x.copy_(constant)`` give a result that requires grad whose backward sends zeros to
the inputs it ignores (``ZeroBackward0``, ``FillBackward2``, ``DivBackward2``, ...).  ``floor_divide`` is recorded too,
but its backward raises "derivative for aten::floor_divide is not implemented" (its grad_fn is ``NotImplemented``).
"""
from __future__ import annotations

from ..tensor import Tensor, _edge, _make, _zeros_on
from .grad_mode import state as _gs
from .graph import Node


class _ZeroGradNode(Node):
    """Zeros for the ignored inputs (``metas``: (shape, dtype, table) or None for an input that needs no gradient);
    with ``live`` the last edge is the value's own graph, which receives the incoming gradient unchanged."""
    __slots__ = ("metas", "live")

    def backward(self, g):
        out = [None if m is None else _zeros_on(*m) for m in self.metas]
        if self.live:
            out.append(g)
        return tuple(out)


class _NotImplementedNode(Node):
    __slots__ = ("op",)

    def backward(self, g):
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")


_CLASSES: dict = {}


def _named(base, name: str):
    cls = _CLASSES.get((base, name))
    if cls is None:
        cls = _CLASSES[(base, name)] = type(name, (base,), {"__slots__": ()})
    return cls


def _differentiable(r: Tensor) -> bool:
    return r.dtype.is_floating_point or r.dtype.is_complex


def keep_graph(r: Tensor, ignored, name: str, always: bool = False) -> Tensor:
    """``r`` recorded by a node named ``name`` that also reaches the ``ignored`` inputs (a zero gradient for each
    that requires grad); ``r``'s own graph, if any, is kept behind it.  ``r`` itself when no ignored input requires
    grad, unless ``always`` (then a requires-grad ``r`` gets the node too: a fresh result, never ``r``'s identity)."""
    if not _gs.enabled or not _differentiable(r):
        return r
    need = [isinstance(t, Tensor) and t._rg for t in ignored]
    if not any(need) and not (always and r._rg):
        return r
    node = _named(_ZeroGradNode, name)()
    node.metas = [(t._data.shape, t.dtype, t._be) if n else None for t, n in zip(ignored, need)]
    edges = [_edge(t) if n else (None, 0) for t, n in zip(ignored, need)]
    node.live = r._rg
    if r._rg:
        edges.append(_edge(r))
    node.next_functions = tuple(edges)
    return _make(r._data, r.dtype, r._be, node)


def not_implemented_graph(r: Tensor, inputs, op: str) -> Tensor:
    """``r`` recorded (requires_grad) when an input requires grad, by a node whose backward raises PyTorch's
    "derivative for aten::<op> is not implemented" (what PyTorch does for floor_divide)."""
    if not _gs.enabled or not _differentiable(r):
        return r
    need = [isinstance(t, Tensor) and t._rg for t in inputs]
    if not any(need):
        return r
    node = _named(_NotImplementedNode, "NotImplemented")()
    node.op = op
    node.next_functions = tuple(_edge(t) if n else (None, 0) for t, n in zip(inputs, need))
    return _make(r._data, r.dtype, r._be, node)
