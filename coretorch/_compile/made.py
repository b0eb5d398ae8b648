"""Whether a step (``optimizer.step()``, ``scheduler.step()``) can be a segment of a replay: the replay calls it on
the object the capture saw, so an optimizer or scheduler made during the call (``opt = Adam(...)`` inside the
step; a scheduler's first step in its ``__init__``) would be the capture's at every replay, with its state: a
graph break (before, a replay stepped the capture's optimizer, or raised once it was freed)."""
from __future__ import annotations

from typing import Any

from ..optim import optimizer as _optim
from ..tensor import Tensor


def now() -> int:
    """A creation serial: objects made from now on have a larger serial (``optim.optimizer.born``)."""
    return next(_optim.serial)


def why_not(method: Any, args: tuple, kwargs: dict, born: int | None) -> str:
    """Why ``method(*args, **kwargs)`` cannot be a segment (empty: it can); ``born``: :func:`now` at the call's
    start."""
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
    if born is not None and made > born:
        return (f"the call steps a {type(owner).__name__} it made (a replay would step the capture's): make it "
                "outside the compiled function")
    return ""
