"""torch.compiler: the switches around torch.compile (which runs eagerly in coretorch for now)."""
from __future__ import annotations

__all__ = ["disable", "is_compiling", "is_dynamo_compiling", "reset", "allow_in_graph", "assume_constant_result"]


def disable(fn=None, recursive: bool = True, *, reason=None):
    """``@torch.compiler.disable``: nothing is compiled, so the function is returned as it is."""
    if fn is None:
        return lambda f: f
    return fn


def is_compiling() -> bool:
    return False


is_dynamo_compiling = is_compiling


def reset() -> None:
    pass


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn
