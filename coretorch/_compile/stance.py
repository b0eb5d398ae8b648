"""``torch.compiler.set_stance``: what compiled callables do when called (a function, a ``with`` block or a
decorator; process-wide, as PyTorch's).

* ``"default"``: capture and replay (``force_backend``: new captures use that backend, see :mod:`.backends`);
* ``"force_eager"``: every compiled callable runs its original code;
* ``"eager_on_recompile"``: a call a capture already serves replays; any call that would capture runs eagerly;
* ``"fail_on_recompile"``: a call that would capture raises ``RuntimeError`` instead;
* ``"eager_then_compile"``, ``"aot_eager_then_compile"``: a compiled callable's first call that would capture runs
  eagerly, later ones capture (PyTorch infers dynamic sizes from the first two calls; coretorch's captures are
  specialised to their shapes either way, and eager is what its aot_eager computes).

``skip_guard_eval_unsafe=True`` is accepted and changes nothing: coretorch keeps checking every guard (the flag
allows skipping them, which could only make results wrong).
"""
from __future__ import annotations

import functools
from threading import get_ident
from typing import Any, Callable

from .backends import _check_backend
from .capture import state as _capture_state
from .config import config
from .exc import RecompileError

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
           "aot_eager_then_compile")


class CompilerStance:
    """The stance in force: its name, ``skip_guard_eval_unsafe`` and ``force_backend``."""

    __slots__ = ("stance", "skip_guard_eval_unsafe", "backend")

    def __init__(self, stance: str = "default", skip_guard_eval_unsafe: bool = False, backend: Any = None):
        self.stance, self.skip_guard_eval_unsafe, self.backend = stance, skip_guard_eval_unsafe, backend

    def __repr__(self) -> str:
        return (f"CompilerStance(stance={self.stance!r}, skip_guard_eval_unsafe={self.skip_guard_eval_unsafe}, "
                f"backend={self.backend!r})")


DEFAULT = CompilerStance()
current = [DEFAULT]  # (a list: read as current[0] by every compiled call)


def _install(st: CompilerStance) -> CompilerStance:
    rec = _capture_state["recorder"]
    if rec is not None and rec.thread == get_ident():  # (this thread's capture: another thread may set it meanwhile)
        raise RuntimeError("attempted to set_stance in a torch.compile region")
    prior = current[0]
    current[0] = st
    return prior


class set_stance:
    """``torch.compiler.set_stance(stance="default", *, skip_guard_eval_unsafe=False, force_backend=None)``: set as
    a function, for a ``with`` block, or for a decorated function's calls (stances: see the module docstring).
    An unknown stance raises ``RuntimeError`` here (PyTorch raises at the next compiled call)."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend: Any = None) -> None:
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        if stance not in STANCES:
            raise RuntimeError(f"invalid torch.compile stance {stance!r}: one of {', '.join(STANCES)}")
        if force_backend is not None:
            _check_backend(force_backend)
        self.stance = CompilerStance(stance, skip_guard_eval_unsafe, force_backend)
        self.prev = _install(self.stance)

    def __enter__(self) -> None:
        _install(self.stance)

    def __exit__(self, *exc: Any) -> None:
        _install(self.prev)

    def __call__(self, fn: Callable) -> Callable:
        _install(self.prev)  # as a decorator: in force for the function's calls only
        st = self.stance

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prior = _install(st)
            try:
                return fn(*args, **kwargs)
            finally:
                _install(prior)
        return wrapper


def _where(fn: Any) -> str:
    """PyTorch's naming of a compiled frame: file, function name and line (a callable without code: its name)."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None and callable(getattr(type(fn), "forward", None)):  # a module: its forward
        code = getattr(type(fn).forward, "__code__", None)
    if code is None:
        return f"function name: '{getattr(fn, '__qualname__', type(fn).__name__)}'"
    return f"filename: '{code.co_filename}', function name: '{code.co_name}', line number: {code.co_firstlineno}"


def on_capture(fn: Any, captured: int, delayed: list) -> bool:
    """Whether a call of the compiled ``fn`` (``captured`` captures so far) that needs a capture may make one now
    (False: it runs eagerly); raises under ``fail_on_recompile`` and ``config.error_on_recompile``.  ``delayed``:
    the callable's one-element flag of whether it already ran its eager first call under an ``*_then_compile``
    stance."""
    st = current[0].stance  # (never "force_eager": the compiled callable ran its own code before its lookup)
    if captured and config.error_on_recompile:
        raise RecompileError(f"Recompiling function ({_where(fn)}): torch._dynamo.config.error_on_recompile is set")
    if st == "default":
        return True
    if st == "fail_on_recompile":
        raise RuntimeError(f"Detected recompile when torch.compile stance is 'fail_on_recompile'. {_where(fn)} "
                           f"({captured} capture{'s' if captured != 1 else ''} so far)")
    if st == "eager_on_recompile":
        return False
    if not delayed[0]:  # eager_then_compile, aot_eager_then_compile: the first such call runs eagerly
        delayed[0] = True
        return False
    return True


def choice(fused: bool, host_fusion: bool | None) -> tuple[bool, bool | None]:
    """A new capture's (fused, host_fusion): its compile call's, or ``force_backend``'s where one is in force."""
    forced = current[0].backend
    if forced is None:
        return fused, host_fusion
    return (True, host_fusion) if _check_backend(forced) else (False, False)
