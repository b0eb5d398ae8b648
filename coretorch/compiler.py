"""torch.compiler: the switches around torch.compile (capture and replay: :mod:`coretorch._compile`)."""
from __future__ import annotations

from . import _compile
from ._compile.capture import state as _capture_state

__all__ = ["disable", "is_compiling", "is_dynamo_compiling", "reset", "allow_in_graph", "assume_constant_result",
           "explain"]


def disable(fn=None, recursive: bool = True, *, reason=None):
    """``@torch.compiler.disable``: nothing is compiled, so the function is returned as it is."""
    if fn is None:
        return lambda f: f
    return fn


def is_compiling() -> bool:
    """True while coretorch.compile records a capture run."""
    return _capture_state["recorder"] is not None


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
