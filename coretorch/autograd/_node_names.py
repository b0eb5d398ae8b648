"""Renaming a result's node to PyTorch's grad_fn name (``print(y.grad_fn)``) without another node.

coretorch builds some ops from others (``matmul`` of a 1-D operand ends with a squeeze, ``linalg.vector_norm`` with
a square root), so the result's node is the last op's.  ``named_node`` gives that node a same-layout subclass named
as PyTorch names the op's node: the backward is unchanged (double backward still works).
"""
from __future__ import annotations

_CLASSES: dict = {}


def named_node(t, name: str):
    """Give ``t.grad_fn`` (when there is one) the class name ``name``; returns ``t``."""
    fn = t.grad_fn
    if fn is not None and fn.__class__.__name__ != name:  # a fused op's own node has the name already
        key = (fn.__class__, name)
        cls = _CLASSES.get(key)
        if cls is None:
            base = fn.__class__
            base = getattr(base, "_renamed_from", base)  # rename the original class, not a renamed subclass
            cls = _CLASSES[key] = type(name, (base,), {"__slots__": (), "_renamed_from": base})
        fn.__class__ = cls
    return t
