"""The attributes a class's own protocol methods read (``__getitem__``, ``__call__``, ``__len__``, ...), for the
guards: ``d["a"]`` on an object whose ``__getitem__`` returns ``self.t * self.scale`` reads ``scale`` where the
step's code names no attribute (a replay reused the capture's ``scale``)."""
from __future__ import annotations

import dis
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


_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME", "DELETE_NAME"))
_DYNAMIC = frozenset(("globals", "eval", "exec", "vars"))  # code that may name any global through a string
_GLOBAL_LOADS: dict = {}  # code object -> frozenset of names


def global_loads(code: CodeType) -> frozenset:
    """The names ``code`` and its nested code objects use as globals (``LOAD_GLOBAL`` ...), not as attributes: a
    forward reading ``self.out`` does not read a notebook's global ``out = model(x)``, whose new tensor each call
    captured again.  Code calling ``globals``, ``eval``, ``exec`` or ``vars`` may name any: all its names and
    identifier strings."""
    r = _GLOBAL_LOADS.get(code)
    if r is None:
        if len(_GLOBAL_LOADS) > 4096:
            _GLOBAL_LOADS.clear()
        out: set = set()
        _loads(code, out)
        if not _DYNAMIC.isdisjoint(out):
            strings: set = set()
            _names(code, out, strings)
            out |= strings
        r = _GLOBAL_LOADS[code] = frozenset(out)
    return r


def _loads(code: CodeType, out: set) -> None:
    out.update(i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS)
    for c in code.co_consts:
        if isinstance(c, CodeType):
            _loads(c, out)


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
