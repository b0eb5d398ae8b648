"""Batch objects of the user's own classes as argument records (see argtree.record): a collate function's fresh
``Batch(x, y)`` with a ``to(device)`` method, a ``__len__`` or a property, passed to a compiled step each call.

Such an object was keyed by identity, so every call captured again until the recompile limit, then ran eagerly.  It
is opened as a dict of its attributes (as a dataclass of fields only is) when nothing but those attributes can give
the step other values:

* the class and every base but ``object`` are the user's (not coretorch's, the standard library's or an installed
  package's: their methods may read state of their own);
* the classes define only functions (methods, static and class methods, properties) and the usual dunders; no other
  class attribute (``Batch.scale = 2.0`` read through ``self``), no ``__getattr__``/``__getattribute__``/
  ``__setattr__``;
* the functions read no global but modules, classes and functions (and those functions, three levels down, the
  same), no number of a user module or class (``cfg.SCALE``), and hold no closure but the ``__class__`` cell of
  ``super()``;
* the object's attributes are tensors, Python scalars, strings, None, or lists, tuples and dicts of them (an object
  held inside, a config, could be read by a method through an attribute the guards do not fingerprint).

Anything else stays an argument object keyed by identity, as before.  The class decision is made once per class;
the attributes are looked at per call (a few entries).
"""
from __future__ import annotations

import sys
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Any

from ..tensor import Tensor
from .frames import _internal
from .dunders import code_names, global_loads
from .held import _user_class
from .hostrng import _LIBS

# the dunders a class body, a dataclass or typing leave in a class's namespace
_NAMESPACE = frozenset(("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__",
                        "__dataclass_fields__", "__dataclass_params__", "__match_args__", "__firstlineno__",
                        "__static_attributes__", "__orig_bases__", "__parameters__", "__annotate__",
                        "__annotate_func__", "__annotations_cache__"))
_REFUSED = frozenset(("__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__get__", "__set__",
                      "__slots__"))
_SCALARS = (bool, int, float, str, type(None))
_DEPTH = 3


def user_record_class(c: type) -> bool:
    """Whether instances of ``c`` may be opened as records (the class part of the rules above)."""
    mro = [k for k in c.__mro__ if k is not object]
    if not mro or not all(_user_class(k) for k in mro):
        return False
    fields = set(getattr(c, "__dataclass_fields__", ()))
    for k in mro:
        for name, v in vars(k).items():
            if name in _NAMESPACE or name == "__hash__" and v is None:
                continue
            if name in _REFUSED:
                return False
            fns = _functions_of(v)
            if fns is None:
                if name in fields:  # a dataclass field's default (the instance's own attribute shadows it)
                    continue
                return False
            if not all(_reads_only_code(f, _DEPTH, set()) for f in fns):
                return False
    return True


def plain_entries(d: dict) -> bool:
    """Whether an object's attributes are tensors, Python scalars, strings, None, or lists, tuples and dicts of them
    (the instance part of the rules above)."""
    return all(_plain(v, 2) for v in d.values())


def _plain(v: Any, depth: int) -> bool:
    c = v.__class__
    if c in _SCALARS or isinstance(v, Tensor):
        return True
    if depth and c in (list, tuple):
        return all(_plain(e, depth - 1) for e in v)
    if depth and c is dict:
        return all(_plain(e, depth - 1) for e in v.values())
    return False


def _functions_of(v: Any) -> list | None:
    """The Python functions a class attribute runs (a method, a static or class method, a property's accessors),
    or None for any other attribute."""
    if isinstance(v, FunctionType):
        return [v]
    if isinstance(v, (staticmethod, classmethod)):
        f = v.__func__
        return [f] if isinstance(f, FunctionType) else None
    if isinstance(v, property):
        fs = [f for f in (v.fget, v.fset, v.fdel) if f is not None]
        return fs if all(isinstance(f, FunctionType) for f in fs) else None
    return None


def _library(o: Any) -> bool:
    """A module or class of Python, coretorch or an installed package (its attributes are not the user's state)."""
    m = o if isinstance(o, ModuleType) else sys.modules.get(getattr(o, "__module__", "") or "")
    f = getattr(m, "__file__", None)
    if f is None:
        return m is not None and m.__name__ in sys.builtin_module_names
    return isinstance(f, str) and (_internal(f) or f.startswith(_LIBS))


def _reads_only_code(f: FunctionType, depth: int, seen: set) -> bool:
    """Whether ``f`` reads no global but modules, classes and functions (these read the same way, ``depth`` levels
    down), no number of a user module or class, and closes over nothing but classes (``super()``'s cell).  ``seen``:
    the functions already being checked (a method making its own class's instances reaches itself)."""
    if f in seen:
        return True
    seen.add(f)
    for cell in f.__closure__ or ():
        try:
            if not isinstance(cell.cell_contents, type):
                return False
        except ValueError:  # an empty cell
            return False
    names = code_names(f.__code__, set())  # (attribute names too: what it may read of a module or class)
    g = f.__globals__
    for n in global_loads(f.__code__):  # (a global named as an attribute it reads, ``y`` and ``self.y``, is not read)
        if n not in g:
            continue  # a builtin
        v = g[n]
        if isinstance(v, FunctionType):
            if depth == 0 or not _reads_only_code(v, depth - 1, seen):
                return False
        elif isinstance(v, (ModuleType, type)):
            if not _library(v) and not _attributes_only_code(v, names, depth, seen):
                return False  # (cfg.SCALE of a user module, Cfg.K of a user class)
        elif not isinstance(v, BuiltinFunctionType):
            return False
    return True


def _attributes_only_code(v: Any, names: set, depth: int, seen: set) -> bool:
    """Whether the attributes of a user module or class that the code may read (``names``) are modules, classes and
    functions reading only code themselves."""
    d = vars(v)
    for a in names:
        if a not in d:
            continue
        w = d[a]
        fns = _functions_of(w)
        if fns is not None:
            if depth == 0 or not all(_reads_only_code(f, depth - 1, seen) for f in fns):
                return False
        elif not isinstance(w, (BuiltinFunctionType, ModuleType, type)):
            return False
    return True
