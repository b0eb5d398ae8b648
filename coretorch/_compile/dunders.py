"""The attributes a class's own protocol methods read (``__getitem__``, ``__call__``, ``__len__``, ...), for the
guards: ``d["a"]`` on an object whose ``__getitem__`` returns ``self.t * self.scale`` reads ``scale`` where the
step's code names no attribute (a replay reused the capture's ``scale``)."""
from __future__ import annotations

from types import CodeType, FunctionType
from typing import Any

_PROTOCOL = ("__getitem__", "__missing__", "__call__", "__len__", "__iter__", "__next__", "__contains__", "__bool__",
             "__float__", "__int__", "__index__", "__getattr__", "get", "keys", "values", "items")
_READS: dict = {}  # class -> frozenset of names


# names through which code reads an attribute named by a string (``getattr(s, "last_epoch")``, ``vars(cfg)["k"]``)
_BY_STRING = frozenset(("getattr", "vars", "__dict__", "attrgetter", "__getattribute__"))


def code_names(code: CodeType, out: set) -> set:
    """The names ``code`` and its nested code objects (comprehensions, lambdas) look up (also the guards'), with
    the identifier strings among their constants where they read attributes by name (``getattr``, ``vars``,
    ``__dict__``): a replay reused the capture's value of ``getattr(sched, "last_epoch")``."""
    strings: set = set()
    _names(code, out, strings)
    if strings and not _BY_STRING.isdisjoint(out):
        out.update(strings)
    return out


def _names(code: CodeType, out: set, strings: set) -> None:
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, CodeType):
            _names(c, out, strings)
        elif c.__class__ is str and c.isidentifier():
            strings.add(c)


def reads(cls: type) -> frozenset:
    """The names the Python-defined protocol methods of ``cls`` (and its bases) load (attributes and globals: the
    guards look up those the object holds)."""
    r = _READS.get(cls)
    if r is None:
        if len(_READS) > 1024:
            _READS.clear()
        out: set = set()
        for k in cls.__mro__:
            for n in _PROTOCOL:
                f: Any = vars(k).get(n)
                if isinstance(f, FunctionType) and not f.__module__.startswith("coretorch."):
                    code_names(f.__code__, out)
        r = _READS[cls] = frozenset(out)
    return r
