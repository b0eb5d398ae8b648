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


def _link(r: Tensor, metas: list, edges: list, name: str) -> Tensor:
    node = _named(_ZeroGradNode, name)()
    node.metas = list(metas)
    node.live = r._rg
    node.next_functions = tuple(edges + [_edge(r)] if r._rg else edges)
    return _make(r._data, r.dtype, r._be, node)


def link_inputs(node: Node, grads):
    """``node``'s gradients (its backward's result: a tensor or a tuple), in a create_graph backward each recorded
    also against every input of ``node`` it sent a gradient to, with a zero derivative, by a node named as PyTorch's
    ``<Op>BackwardBackward0``: PyTorch's max_pool2d_with_indices_backward, avg_pool2d_backward, nll_loss_backward,
    reflection_pad1d_backward, ... take the forward's input, so a gradient through them requires grad and a second
    gradient reaches the input (zeros: a parameter before a pooling gets a zero ``.grad``, not None).  Unchanged in a
    plain backward."""
    if not _gs.enabled:
        return grads
    single = isinstance(grads, Tensor)
    gs = (grads,) if single else tuple(grads)
    linked = [(e, g) for e, g in zip(node.next_functions, gs)
              if e[0] is not None and isinstance(g, Tensor) and _differentiable(g)]
    if not linked:
        return grads
    metas = [(g._data.shape, g.dtype, g._be) for _, g in linked]
    edges = [e for e, _ in linked]
    name = type(node).__name__[:-1] + "Backward0"
    out = tuple(_link(g, metas, edges, name) if isinstance(g, Tensor) and _differentiable(g) else g for g in gs)
    return out[0] if single else out


def linked_backward(backward):
    """``backward`` whose gradients ``link_inputs`` records against the node's inputs under create_graph."""
    def linked(self, *gs):
        return link_inputs(self, backward(self, *gs))
    return linked


def links_inputs(cls):
    """Class decorator: ``cls``'s gradients depend on its inputs under create_graph (see ``link_inputs``)."""
    cls.backward = linked_backward(cls.backward)
    cls._links_inputs = True
    return cls


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


class _NotImplementedInplaceNode(_NotImplementedNode):
    __slots__ = ()

    def backward(self, g):
        raise RuntimeError(f"derivative for {self.op} is not implemented")  # (PyTorch's words for set_: no aten::)


def not_implemented_inplace(x: Tensor, edges, op: str) -> None:
    """``x`` was changed in place by ``op`` (set_), which has no derivative: where x or an input required grad (their
    ``edges``, None for one that did not), x's grad_fn becomes PyTorch's ``NotImplemented`` node, whose backward
    raises "derivative for set_ is not implemented" (x's old node would silently send the gradient of the memory x
    no longer shows to its old graph)."""
    if not _gs.enabled or not _differentiable(x) or not any(e is not None for e in edges):
        return
    node = _named(_NotImplementedInplaceNode, "NotImplemented")()
    node.op = op
    node.next_functions = tuple((None, 0) if e is None else e for e in edges)
    x.grad_fn, x._out_nr, x._rg = node, 0, True
