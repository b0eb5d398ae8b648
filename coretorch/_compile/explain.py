"""``coretorch.compiler.explain``: what breaks the graph of a function, and where."""
from __future__ import annotations

import re
import traceback
from types import MethodType
from typing import Callable

from ..nn.modules.module import Module
from . import guards
from .module import ModuleCapture
from .optimized import OptimizedModule


_AT = re.compile(r" \(at (.+?):(\d+) in ([^\s,()]+)")


class GraphCompileReason(str):
    """One break reason: the message itself (a ``str``, as coretorch's were) with the fields of PyTorch's
    ``GraphCompileReason``: ``reason`` (the message without its place), ``user_stack`` (a list holding the user
    frame's ``traceback.FrameSummary``) and ``graph_break`` (True).  Code written for PyTorch that reads
    ``r.reason`` or ``r.user_stack`` of ``explain(...).break_reasons`` raised AttributeError on a plain ``str``."""

    reason: str
    user_stack: list
    graph_break: bool

    def __new__(cls, msg: str) -> GraphCompileReason:
        self = super().__new__(cls, msg)
        m = _AT.search(msg)
        self.reason = msg[:m.start()] if m else msg
        self.user_stack = [traceback.FrameSummary(m[1], int(m[2]), m[3], lookup_line=False)] if m else []
        self.graph_break = True
        return self


class ExplainOutput:
    """What :func:`explain` found (PyTorch's ``ExplainOutput`` fields)."""

    def __init__(self, breaks: list, launches: int):
        self.break_reasons = [GraphCompileReason(b) for b in breaks]
        self.graph_break_count = len(breaks)
        self.graph_count = 1 + len(breaks) if breaks else 1
        self.op_count = launches

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines.extend(f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons))
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn: Callable, *args, **kwargs):
    """Capture ``fn(*args, **kwargs)`` once (it runs eagerly, with its side effects) and say what breaks the graph
    and where; ``explain(fn)(*args)`` works too (PyTorch's ``torch._dynamo.explain``).  A module (or a compiled one)
    is captured as ``compile(module)`` captures it, forward and backward: its outputs' autograd graph is no break."""
    if isinstance(fn, MethodType) and hasattr(fn.__func__, "_orig_fn"):
        # a method compiled in its class body, bound to its instance: its function bound so (the attribute lookup
        # below went through the bound method to the bare function, whose call then lacked ``self``)
        fn = MethodType(fn.__func__._orig_fn, fn.__self__)
    else:
        fn = getattr(fn, "_orig_fn", fn)  # a CompiledFunction: its function
    if isinstance(fn, OptimizedModule):
        fn = fn._orig_mod

    def run(*a, **kw) -> ExplainOutput:
        if isinstance(fn, (Module, ModuleCapture)):  # (a ModuleCapture: model.forward after model.compile())
            cap = ModuleCapture(fn, fn) if isinstance(fn, Module) else ModuleCapture(fn.module, fn.fn)
            _, entry = cap._capture(a, kw, guards.leaves(a, kw), cap._state(), False)
        else:
            # (at call time: the package's __init__, which defines CompiledFunction, imports this module) a capture
            # as compile's, keyed as its: a call that writes what its guards read breaks there, and so it does here
            from . import CompiledFunction
            entry = CompiledFunction(fn)._explained(a, kw)
        return ExplainOutput(entry.breaks, entry.launches)
    if not args and not kwargs:
        return run
    return run(*args, **kwargs)
