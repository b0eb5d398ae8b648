"""C code reading a float argument's number behind the Sym's back during a whole step's Sym capture (dynfloat.py).

A :class:`~.symbolic.Sym` is a ``float``: C functions read its number without calling any of its methods
(``math.log(t)``, ``math.isfinite(t)``, ``struct.pack("d", t)``, ``float.is_integer(t)``). The two captures'
comparison sees such a number only where it reaches a kernel as a constant; where the step discretises it
(``if math.log(t) > 0:``, ``min(1.0, math.sqrt(t))``) both captures may take the same path by chance and a replay
at another value would take it too. So while the Sym capture runs, a profile hook watches the C calls made from the
user's frames: a function of :data:`RAW_MODULES`, a method of ``float`` (bound to a Sym or not) called from a frame
holding a Sym (a local, an entry of a local tuple, list or dict, an attribute of a local object, two levels down:
a helper's ``math.log(cfg.t)``) refuses the Sym capture (``rec.sym_escape``), and the
function stays specialised. ``math`` and ``cmath`` functions called through their module are checked by their
arguments instead (``1 / math.sqrt(head_dim)`` beside a temperature argument keeps the Sym capture; see
:func:`_patch_math`). (``"%f" % t`` formats without any call the hook sees: a documented limit.)"""
from __future__ import annotations

import cmath
import contextlib
import math
import os
import sys
from threading import get_ident
from types import BuiltinFunctionType, FrameType, FunctionType
from typing import Any, Iterator

from .symbolic import Sym

# (builtins such as min, max, sorted, sum, divmod, hash, format and round go through the Sym's own methods)
RAW_MODULES = frozenset({"math", "cmath", "struct", "_struct", "array", "_decimal", "_statistics"})
_PATCHED = (math, cmath)  # modules whose functions a Sym capture calls through a check of their arguments
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_DEPTH = 2  # how far into the frame's locals a Sym is looked for (an object's attributes, their entries)
_BUDGET = 512  # objects looked at per C call, at most


def _holds_sym(frame: FrameType) -> bool:
    """Whether a Sym is reachable from the frame's locals: one itself, or an entry of a tuple, list or dict, or an
    attribute of an object (a helper's ``math.log(cfg.t)`` of ``cfg = SimpleNamespace(t=t)``), two levels down."""
    todo = [(v, 0) for v in frame.f_locals.values()]
    seen: set = set()
    budget = _BUDGET
    while todo and budget:
        v, d = todo.pop()
        budget -= 1
        if isinstance(v, Sym):
            return True
        if d >= _DEPTH or id(v) in seen or isinstance(v, (str, bytes, int, float, type, FunctionType)):
            continue
        seen.add(id(v))
        if type(v) in (tuple, list):
            todo.extend((o, d + 1) for o in v[:16])
        elif type(v) is dict:
            todo.extend((o, d + 1) for o in list(v.values())[:64])
        else:
            attrs = getattr(v, "__dict__", None)
            if type(attrs) is dict:
                todo.extend((o, d + 1) for o in list(attrs.values())[:64])
    return False


def _raw(fn: Any) -> bool:
    """Whether the C callable ``fn`` may read a float's number without asking it."""
    if isinstance(getattr(fn, "__self__", None), Sym) or getattr(fn, "__objclass__", None) is float:
        return True
    return getattr(fn, "__module__", None) in RAW_MODULES


@contextlib.contextmanager
def watching(rec: Any) -> Iterator[None]:
    """Watch the C calls of the user's frames while the Sym capture of ``rec`` runs (see the module docstring)."""
    if sys.getprofile() is not None:  # (a profiler of the user's: the hook would replace it)
        rec.sym_escape("a profiler is active, so C reads of the number could not be watched")
        yield
        return

    patched = _patch_math(rec)

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and not rec.escape and not frame.f_code.co_filename.startswith(_PKG) and _raw(arg) \
                and _holds_sym(frame):
            rec.sym_escape(f"C function {getattr(arg, '__qualname__', arg)!s} read the number in "
                           f"{frame.f_code.co_filename}:{frame.f_lineno}")

    sys.setprofile(hook)
    try:
        yield
    finally:
        sys.setprofile(None)
        for mod, name, orig in patched:
            setattr(mod, name, orig)


def _patch_math(rec: Any) -> list:
    """``math.sqrt`` and the other functions of :data:`_PATCHED` called through their module while the Sym capture
    runs: a call refuses it only where an argument is one of its Syms (``math.sqrt(t)``), not for any call from a
    frame holding one (``1 / math.sqrt(head_dim)`` beside a temperature argument: the hook, which cannot see a C
    call's arguments, then sees the call from this module's frame and skips it). A function bound before the capture
    (``from math import sqrt``) is still watched by the hook. The patches: (module, name, original)."""
    me, out = get_ident(), []
    for mod in _PATCHED:
        for name, orig in list(vars(mod).items()):
            if isinstance(orig, BuiltinFunctionType):
                out.append((mod, name, orig))
                setattr(mod, name, _checked(rec, me, f"{mod.__name__}.{name}", orig))
    return out


def _checked(rec: Any, me: int, what: str, orig: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        if get_ident() == me and not rec.escape and any(_ours(x, rec.sym_token) for x in (*args, *kwargs.values())):
            rec.sym_escape(f"{what} read the number")
        return orig(*args, **kwargs)
    call.__name__ = call.__qualname__ = getattr(orig, "__name__", what)
    call.__doc__ = orig.__doc__
    return call


def _ours(x: Any, token: int) -> bool:
    """Whether ``x`` is a Sym of the capture (``token``: its Recorder's sym_token; an optimizer step's recording
    inside it has its own), or a tuple or list holding one (``math.fsum([t, 1.0])``, ``math.dist(p, q)``)."""
    if isinstance(x, Sym):
        return x.owner == token
    return type(x) in (tuple, list) and any(isinstance(o, Sym) and o.owner == token for o in x[:64])
