"""``torch._dynamo``: the compiler front end's names that scripts use, over coretorch's capture and replay
(:mod:`coretorch._compile`): ``config`` (the same object as ``coretorch._compile.config``; ``import
torch._dynamo.config`` works too), ``reset``, ``explain``, ``optimize``, ``disable``, ``set_stance``,
``list_backends``, ``mark_dynamic`` and its kin, ``exc`` with PyTorch's exception classes and ``eval_frame``
(``OptimizedModule``).

``mark_dynamic``, ``maybe_mark_dynamic``, ``mark_static`` and ``mark_static_address`` are accepted and record
nothing: a coretorch capture is specialised to its shapes, and a call with new sizes captures again (within
``recompile_limit``), which gives eager's results for every size.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

from .. import compiler as _compiler
from .._compile import compile as _compile_fn, config
from .._compile.backends import list_backends
from .._compile.stance import set_stance
from ..tensor import Tensor
from . import eval_frame, exc

sys.modules[__name__ + ".config"] = config  # type: ignore[assignment]  # (``import torch._dynamo.config``)

__all__ = ["config", "eval_frame", "exc", "reset", "explain", "optimize", "disable", "set_stance", "list_backends",
           "is_compiling", "allow_in_graph", "assume_constant_result", "mark_dynamic", "maybe_mark_dynamic",
           "mark_static", "mark_static_address", "graph_break"]

reset = _compiler.reset
explain = _compiler.explain
disable = _compiler.disable
graph_break = _compiler.graph_break
is_compiling = _compiler.is_compiling
allow_in_graph = _compiler.allow_in_graph
assume_constant_result = _compiler.assume_constant_result


def optimize(backend: Any = "inductor", *, nopython: bool = False, dynamic: Any = None, disable: bool = False,
             **kwargs: Any) -> Callable[[Any], Any]:
    """``torch._dynamo.optimize(backend)(fn)``, the older spelling of ``torch.compile(fn, backend=backend,
    fullgraph=nopython)``."""
    from .._compile.backends import resolve
    resolve(backend)

    def wrap(fn: Any) -> Any:
        return fn if disable else _compile_fn(fn, backend=backend, fullgraph=nopython, dynamic=dynamic)
    return wrap


def _check(t: Any, what: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"torch._dynamo.{what}: expected a Tensor, got {type(t).__name__}")


def mark_dynamic(t: Any, index: Any, *, hint_override: Any = None, min: Any = None, max: Any = None,
                 specialize_on: Any = None) -> None:
    """Accepted: coretorch captures again for new sizes (see the module docstring)."""
    _check(t, "mark_dynamic")


def maybe_mark_dynamic(t: Any, index: Any) -> None:
    """Accepted: coretorch captures again for new sizes (see the module docstring)."""
    _check(t, "maybe_mark_dynamic")


def mark_static(t: Any, index: Any = None) -> None:
    """Accepted: a capture is specialised to its sizes already (see the module docstring)."""


def mark_static_address(t: Any, guard: bool = False) -> None:
    """Accepted: a replay reads its arguments' memory where it is at each call."""
    _check(t, "mark_static_address")


from . import decorators  # noqa: E402  (its functions are the ones above)
