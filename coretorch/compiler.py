"""torch.compiler: the switches around torch.compile (capture and replay: :mod:`coretorch._compile`)."""
from __future__ import annotations

import functools

from . import _compile
from .nn.modules.module import Module as _Module
from ._compile.backends import get_default_backend, list_backends, set_default_backend
from ._compile.capture import varying_read as _break  # (this thread's capture breaks)
from ._compile.stance import set_stance

__all__ = ["disable", "is_compiling", "is_dynamo_compiling", "reset", "allow_in_graph", "assume_constant_result",
           "explain", "set_stance", "list_backends", "get_default_backend", "set_default_backend",
           "cudagraph_mark_step_begin", "is_exporting"]


def disable(fn=None, recursive: bool = True, *, reason=None):
    """``@torch.compiler.disable``: ``fn`` runs as Python at every call, also inside a compiled function.  A call of
    it during a capture is a graph break (so its Python side effects, a log line or a counter, happen at every call
    of the compiled function, as PyTorch's); outside a capture it is a plain call.  A compiled function given is
    replaced by its own code; a module is wrapped as PyTorch's (an ``OptimizedModule`` whose calls run the module
    with its hooks, a graph break inside a capture)."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if isinstance(fn, _Module):  # (as PyTorch's: an OptimizedModule whose calls of the module are disabled)
        om = _compile.OptimizedModule(fn)
        om.__dict__["_capture"] = disable(fn.__call__, recursive, reason=reason or type(fn).__name__)
        return om
    inner = getattr(fn, "_orig_fn", fn)  # (a compiled function: its code)
    why = f"a call of {getattr(inner, '__qualname__', repr(inner))}, under torch.compiler.disable" + \
        (f" ({reason})" if reason else "")

    @functools.wraps(inner)
    def disabled(*args, **kwargs):
        _break(why)
        return inner(*args, **kwargs)
    disabled._torchdynamo_disable = True  # type: ignore[attr-defined]
    return disabled


def graph_break(msg: str = "") -> None:
    """``torch._dynamo.graph_break(msg="")``: the call of the compiled function that reaches it runs eagerly
    (coretorch cannot split a capture in two: the rest of the call is eager too); ``msg`` names the break in the
    graph-break logs and ``explain``."""
    _break(f"torch._dynamo.graph_break({msg!r})" if msg else "torch._dynamo.graph_break()")


def is_compiling() -> bool:
    """True while coretorch.compile records a capture run in this thread."""
    return _compile.is_compiling()


is_dynamo_compiling = is_compiling


def reset() -> None:
    """Forget every capture of every compiled function (the next calls capture again)."""
    _compile.reset()


def explain(fn, *args, **kwargs):
    """What breaks the graph of ``fn(*args)`` and where (op and user source line); ``explain(fn)(*args)`` too."""
    return _compile.explain(fn, *args, **kwargs)


def allow_in_graph(fn):
    """Mark ``fn`` as safe to record inside a compiled graph: returns ``fn`` unchanged (coretorch's
    capture records kernel launches, so any Python function already runs inside it).

    Args:
        fn: the function.

    Returns:
        ``fn``.
    """
    return fn


def assume_constant_result(fn):
    """Mark ``fn`` as returning a constant during compilation: returns ``fn`` unchanged (its
    result is guarded as any other host value).

    Args:
        fn: the function.

    Returns:
        ``fn``.
    """
    return fn


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a training or inference step (PyTorch's CUDA-graph trees may then overwrite the previous
    step's outputs).  Nothing to do here: a coretorch replay never writes into tensors it returned before."""


def is_exporting() -> bool:
    """False: coretorch has no ``torch.export``."""
    return False
