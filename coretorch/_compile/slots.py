"""The attributes a user class declares in ``__slots__``: its instances have no ``__dict__``, and the guards key the
numbers on a slotted config object (``@dataclass(slots=True)``) as a plain object's (see guards.contents)."""
from __future__ import annotations

import sys

from .frames import _internal

_SLOTS: dict[type, tuple] = {}


def slot_names(c: type) -> tuple:
    """The attributes a user class (not coretorch's, not a builtin) declares in ``__slots__``, its bases' too; ()
    for other classes (a number changed on such an object replayed the capture's)."""
    r = _SLOTS.get(c)
    if r is None:
        if len(_SLOTS) > 1024:
            _SLOTS.clear()
        out: list = []
        f = getattr(sys.modules.get(c.__module__), "__file__", None)
        if isinstance(f, str) and not _internal(f):
            for k in c.__mro__:
                s = vars(k).get("__slots__", ())
                out += [s] if isinstance(s, str) else [n for n in s if n not in ("__dict__", "__weakref__")]
        r = _SLOTS[c] = tuple(out)
    return r
