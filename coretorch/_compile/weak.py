"""Weak references for the guards' caches keyed by ``id``: an entry checks that its object is still the one it saw
(an ``id`` is reused once the object is freed) without keeping it alive (a cache holding the object, or its
``__dict__``, kept a trainer's model and optimizer alive after the caller dropped them)."""
from __future__ import annotations

import weakref
from typing import Any, Callable


def _gone() -> None:
    return None


def ref(o: Any) -> Callable[[], Any]:
    """A weak reference to ``o``; for an object that takes none, one that is always dead (its entry never matches:
    looked up again at each call)."""
    try:
        return weakref.ref(o)
    except TypeError:
        return _gone
