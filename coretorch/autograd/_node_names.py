"""Renaming a result's node to PyTorch's grad_fn name (``print(y.grad_fn)``) without another node.

coretorch builds some ops from others (``matmul`` of a 1-D operand ends with a squeeze, ``linalg.vector_norm`` with
a square root), so the result's node is the last op's.  ``named_node`` gives that node a same-layout subclass named
as PyTorch names the op's node: the backward is unchanged (double backward still works).

A node named as one of PyTorch's ops whose backward op is differentiable with respect to the op's input
(``LINKED``: the pooling and reflection/replication padding ops, ``nll_loss``) also gets ``_zero.links_inputs``'s
backward: under create_graph its gradients are recorded against the node's inputs too (a zero derivative), as
PyTorch's ``AvgPool2DBackwardBackward0`` records them.
"""
from __future__ import annotations

_CLASSES: dict = {}

LINKED = frozenset(
    ["AvgPool2DBackward0", "AvgPool3DBackward0", "AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool3DBackward0",
     "NllLossBackward0", "NllLoss2DBackward0"]
    + [f"{k}Pad{n}DBackward0" for k in ("Reflection", "Replication") for n in (1, 2, 3)])


def named_node(t, name: str, link: bool = False):
    """Give ``t.grad_fn`` (when there is one) the class name ``name``; returns ``t``.  With ``link`` (or a name in
    ``LINKED``) its gradients also depend on its inputs under create_graph (a node that does keeps doing so)."""
    fn = t.grad_fn
    if fn is None:
        return t
    link = link or name in LINKED
    if fn.__class__.__name__ != name or (link and not getattr(fn.__class__, "_links_inputs", False)):
        key = (fn.__class__, name, link)
        cls = _CLASSES.get(key)
        if cls is None:
            base = fn.__class__
            link = link or getattr(base, "_links_inputs", False)
            base = getattr(base, "_renamed_from", base)  # rename the original class, not a renamed subclass
            ns: dict = {"__slots__": (), "_renamed_from": base}
            if link:
                from ._zero import linked_backward  # (the tensor module imports this one)
                ns.update(backward=linked_backward(base.backward), _links_inputs=True)
            cls = _CLASSES[key] = type(name, (base,), ns)
        fn.__class__ = cls
    return t
