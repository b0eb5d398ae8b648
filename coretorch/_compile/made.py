"""Whether a step (``optimizer.step()``, ``scheduler.step()``) can be a segment of a replay: the replay calls it on
the object the capture saw, so an optimizer or scheduler made during the call (``opt = Adam(...)`` inside the
step; a scheduler's first step in its ``__init__``) would be the capture's at every replay, with its state: a
graph break (before, a replay stepped the capture's optimizer, or raised once it was freed).  So is a number of a
param group set by the call's own Python code, outside the segments (the replay runs the segments only)."""
from __future__ import annotations

from typing import Any

from ..optim import optimizer as _optim
from ..tensor import Tensor


def now() -> int:
    """A creation serial: objects made from now on have a larger serial (``optim.optimizer.born``)."""
    return next(_optim.serial)


def _call(ref: Any) -> Any:
    return ref()


def _snap(opts: list) -> tuple:
    """The numbers of the param groups of ``opts``, and their state's structure (which parameters have state, its
    entries by identity)."""
    from .guards import group_numbers  # (at call time: guards imports capture, which imports this module)
    return (group_numbers(opts),
            tuple([(id(p), id(d), tuple([(k, id(v)) for k, v in d.items()]) if isinstance(d, dict) else None)
                   for o in opts for p, d in list(o.state.items())]))


def watch(rec: Any) -> None:
    """At the call's start: :func:`_snap` of every live optimizer (one the step reaches through a wrapper object
    too: NoamOpt's ``self.optimizer``; see :func:`changed_outside`)."""
    # (keyrefs: one atomic copy, where another thread may make an optimizer meanwhile; one whose __init__ has not
    # set its groups and state yet is left out)
    opts = [o for o in map(_call, _optim.born.keyrefs()) if isinstance(o, _optim.Optimizer) and
            isinstance(o.__dict__.get("param_groups"), list) and isinstance(o.__dict__.get("state"), dict)]
    rec.watch = (opts, _snap(opts)) if opts else None


def rewatch(rec: Any) -> None:
    """After a segment (a scheduler's step sets ``lr``, an optimizer's its state: the replay calls them again)."""
    if rec.watch is not None:
        rec.watch = (rec.watch[0], _snap(rec.watch[0]))


def changed_outside(rec: Any) -> str:
    """Why the call is a graph break: its Python code (no segment: a warmup object of the user's, NoamOpt's
    ``p["lr"] = rate``, ``opt.state.clear()``) set a number of a param group or changed the optimizer state, which a
    replay would not do again (empty: it did not)."""
    w = rec.watch
    if w is None:
        return ""
    now = _snap(w[0])
    if now[0] != w[1][0]:
        return ("the call sets a param group's number (lr, momentum...) outside an LR scheduler's step(), which a "
                "replay would not repeat: use an LR scheduler (LambdaLR), or set it outside the compiled function")
    if now[1] != w[1][1]:
        return ("the call changes an optimizer's state outside its step() (``opt.state.clear()``, an entry replaced), "
                "which a replay would not repeat: do it outside the compiled function")
    return ""


def why_not(rec: Any, method: Any, args: tuple, kwargs: dict) -> str:
    """Why ``method(*args, **kwargs)`` cannot be a segment of ``rec``'s replay (empty: it can)."""
    name = getattr(method, "__qualname__", "a step")
    if any(callable(a) or isinstance(a, Tensor) for a in (*args, *kwargs.values())):
        return f"{name}() takes a tensor or a closure"
    owner = getattr(method, "__self__", None)
    if owner is None:  # an optimizer's replay (see .optim)
        ref = getattr(method, "_opt", None)
        owner = ref() if ref is not None else None
    try:
        made = _optim.born.get(owner, -1) if owner is not None else -1
    except TypeError:  # (an unhashable user subclass)
        made = -1
    if rec.born is not None and made > rec.born:
        return (f"the call steps a {type(owner).__name__} it made (a replay would step the capture's): make it "
                "outside the compiled function")
    return changed_outside(rec)
