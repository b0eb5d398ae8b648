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


def named_node(t, name: str, link: bool = False, saves: tuple = ()):
    """Give ``t.grad_fn`` (when there is one) the class name ``name``; returns ``t``.  With ``link`` (or a name in
    ``LINKED``) its gradients also depend on its inputs under create_graph (a node that does keeps doing so).
    ``saves``: the tensors PyTorch's fused op saves for its backward (``mse_loss``'s input and target) where the
    composite's own nodes saved others (``input - target``): the node's backward first checks their versions, so that
    an in-place change of one after the forward raises PyTorch's "modified by an inplace operation" error instead of
    a gradient from the values before the change."""
    fn = t.grad_fn
    if fn is None:
        return t
    link = link or name in LINKED
    guard = bool(saves)
    if fn.__class__.__name__ != name or (link and not getattr(fn.__class__, "_links_inputs", False)) \
            or (guard and not getattr(fn.__class__, "_guarded", False)):
        key = (fn.__class__, name, link, guard)
        cls = _CLASSES.get(key)
        if cls is None:
            base = fn.__class__
            link = link or getattr(base, "_links_inputs", False)
            guard = guard or getattr(base, "_guarded", False)
            base = getattr(base, "_renamed_from", base)  # rename the original class, not a renamed subclass
            ns: dict = {"__slots__": (), "_renamed_from": base}
            backward = base.backward
            if link:
                from ._zero import linked_backward  # (the tensor module imports this one)
                backward = linked_backward(backward)
                ns.update(backward=backward, _links_inputs=True)
            if guard:
                ns.update(backward=_guarded_backward(backward), _guarded=True)
            cls = _CLASSES[key] = type(name, (base,), ns)
        fn.__class__ = cls
    if guard:
        kept = tuple([s for s in saves if s is not None])
        versions = tuple([s._vc[0] for s in kept])
        old = fn.__dict__.get("_guard")  # (a node guarded twice, a checkpointed loss: both checks)
        fn._guard = (old[0] + kept, old[1] + versions) if old else (kept, versions)
    return t


def saves_also(t, *inputs, output: bool = False):
    """``t``'s node (renamed to nothing else) also version-checks ``inputs`` and (``output``) ``t`` itself at its
    backward, as PyTorch's node that saved them (see ``named_node``'s ``saves``); returns ``t``.  The output is kept
    as a detached alias (its data and version counter, not its graph: no reference cycle through the node), named as
    the node's output in the error."""
    fn = t.grad_fn
    if fn is None:
        return t
    saves = inputs
    if output:
        alias = t.detach()
        saves = inputs + (alias,)
        outs = fn.__dict__.get("_saved_outs") or {}
        fn._saved_outs = {**outs, id(alias): t._out_nr}  # (the error names the node itself, as for a saved result)
    return named_node(t, fn.__class__.__name__, saves=saves)


def _guarded_backward(backward):
    """``backward`` after the version check of the tensors ``named_node`` recorded in ``_guard``."""
    def guarded(self, *gs):
        from .graph import _version_error
        kept, versions = self.__dict__.get("_guard", ((), ()))
        for s, v in zip(kept, versions):
            if s._vc[0] != v:
                raise _version_error(s, self, v)
        return backward(self, *gs)
    return guarded
