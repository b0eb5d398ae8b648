"""Gradient hooks around a module capture (:mod:`.module`), which records the forward's backward once with
placeholder output gradients and replays it without Python: a hook inside that region (a submodule's backward hook,
``h.register_hook``/``retain_grad`` on an intermediate, a node hook) would run at the recording with the
placeholders and never at a replay, and a hook the forward registers on an input or a parameter would be registered
at the capture only.  Eager runs each at every backward: both are graph breaks."""
from __future__ import annotations

from ..autograd.engine import _grad_edge
from ..autograd.graph import AccumulateGrad
from ..tensor import Tensor


def in_region(outs: list, lv: list, targets: list) -> bool:
    """Whether a node of the outputs' graph between them and the targets (the region the capture records the
    backward of) holds a hook.  (The targets' own nodes never run while recording: their hooks run at the user's
    backward, see module._record_backward.)"""
    stop = {id(_grad_edge(lv[t] if isinstance(t, int) else t)[0]) for t in targets}
    seen: set = set()
    stack = [o.grad_fn for o in outs]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen or id(n) in stop or isinstance(n, AccumulateGrad):
            continue
        seen.add(id(n))
        if n._hooked and (n._pre_hooks or n._hooks or any((n._tensor_hooks or {}).values())):
            return True
        stack += [m for m, _ in n.next_functions]
    return False


def counts(lv: list, params: list) -> list:
    """How many hooks the nodes of the input tensors and the parameters hold (their grad_fn, or their gradient
    accumulator once made), and their post-accumulate hooks: compared before and after the forward (an input the
    forward sets ``requires_grad_()`` on keeps its count: the replay does that)."""
    out = []
    for t in (*lv, *params):
        if isinstance(t, Tensor):
            n = t.grad_fn if t.grad_fn is not None else t._accum
            post = t.__dict__.get("_post_accumulate_grad_hooks")
            out.append((0 if n is None or not n._hooked else  # (a leaf's accumulator is made at its first use)
                        (len(n._pre_hooks or ()), len(n._hooks or ()),
                         tuple(len(h) for h in (n._tensor_hooks or {}).values())), len(post or ())))
    return out
