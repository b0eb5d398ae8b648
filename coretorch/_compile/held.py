"""The modules, optimizers and tensors a step reaches through the helpers it holds: the closure cells and default
arguments of the user functions among its roots (``lambda x: step(x)``, ``step`` a local function over ``model``
and ``opt``), the bound arguments of partials, the objects of bound methods, and the attributes of plain objects (a
trainer holding ``self.model`` and ``self.opt``, in the closure, a global or passed as an argument), two levels
down.  They are roots too (see ``guards.roots``): found by the guards' state (their parameters' ``.grad`` written
back by the replay as a closure model's are), and keyed by identity (``trainer.model = other`` captures again)."""
from __future__ import annotations

import sys
from functools import partial
from types import FunctionType, MethodType, ModuleType
from typing import Any

from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from .frames import _internal
from .dunders import code_names
from .hostrng import _LIBS, _function_parts

_SMALL = 16  # the entries of lists, tuples and dicts looked into (larger ones: data, not helpers)


_KIND: dict[type, int] = {}  # class -> what its instances hold (see _kind): decided once per class
_NONE, _FUNCTION, _PARTIAL, _METHOD, _SEQUENCE, _DICT, _PLAIN, _STATE = range(8)


def _kind(c: type) -> int:
    k = _KIND.get(c)
    if k is None:
        if len(_KIND) > 1024:
            _KIND.clear()
        k = _KIND[c] = _STATE if issubclass(c, (Module, Optimizer, Tensor)) else _FUNCTION if c is FunctionType \
            else _PARTIAL if issubclass(c, partial) else _METHOD if c is MethodType else \
            _SEQUENCE if c in (list, tuple) else _DICT if c is dict else _PLAIN if _user_class(c) else _NONE
    return k


def _user_class(c: type) -> bool:
    """A class of the user's code whose instances have attributes: not coretorch's, the standard library's or an
    installed package's (a ``threading.Event``'s methods set its flag, a logger's its handlers), not a module, an
    optimizer, a tensor or a class."""
    if issubclass(c, (type, ModuleType, Module, Optimizer, Tensor)) or "__dict__" not in dir(c):
        return False
    f = getattr(sys.modules.get(c.__module__), "__file__", None)
    if f is None:  # (a notebook's or an interactive session's __main__: the user's)
        return c.__module__ == "__main__"
    return isinstance(f, str) and not _internal(f) and not f.startswith(_LIBS)


def _plain(o: Any) -> bool:
    """An instance of a class of the user's with attributes (see _user_class)."""
    return _kind(o.__class__) == _PLAIN


def _inside(o: Any, k: int) -> Any:
    """What ``o`` (of kind ``k``) holds that a call of it can reach."""
    if k == _FUNCTION:
        if _internal(o.__code__.co_filename):
            return ()
        return tuple(_function_parts(o))  # (its closure cells' contents and its defaults)
    if k == _PARTIAL:
        return (o.func, *o.args, *o.keywords.values())
    if k == _METHOD:
        return (o.__func__, o.__self__)
    if k == _SEQUENCE:
        return o if len(o) <= _SMALL else ()
    if k == _DICT:
        return tuple(o.values()) if len(o) <= _SMALL else ()
    d = getattr(o, "__dict__", None)
    return tuple(d.values()) if isinstance(d, dict) else ()


def held(objs: list) -> list:
    """The modules, optimizers and tensors inside the helpers and plain objects among ``objs`` (see the module
    docstring; those among ``objs`` too, where one holds another: the guards' state counts each once), and the
    lists, dicts and plain objects a helper function or partial holds (``loss = lambda a: a * w[0]`` over a list
    ``w``, ``partial(f, cfg=d)``): roots too, whose entries the guards key (a replay reused ``w[0]``)."""
    todo: list = []
    kinds = _KIND
    for o in objs:
        k = kinds.get(o.__class__, -1)
        if k < 0:
            k = _kind(o.__class__)
        if k and k != _STATE:
            todo.extend([(v, 1, k) for v in _inside(o, k)])
    out: list = []
    for v, depth, parent in todo:  # (grows as it goes: two levels down)
        k = kinds.get(v.__class__, -1)
        if k < 0:
            k = _kind(v.__class__)
        if k == _STATE:
            out.append(v)
        elif k:
            if parent in _HELPERS and k in _HELD:
                out.append(v)
            if depth:
                todo.extend([(w, 0, k) for w in _inside(v, k)])
    return out


_HELPERS = frozenset((_FUNCTION, _PARTIAL))  # what holds settings the guards key (held's containers)
_HELD = frozenset((_SEQUENCE, _DICT, _PLAIN))


def methods_named(objs: Any, names: Any) -> list:
    """The methods among ``names`` (the names a step's code reads) of the classes of the plain objects among
    ``objs`` (``t.step(x)`` with ``t`` a trainer in the closure, a global or an argument): the attributes their code
    reads (``self.cfg.scale``) are the step's too (see ``guards.attribute_names``: a replay reused the number)."""
    out = []
    for o in objs:
        if _plain(o) and not callable(o):
            for n in names:
                m = getattr(type(o), n, None)
                if isinstance(m, FunctionType) and not _internal(m.__code__.co_filename):
                    out.append(m)
    return out


def method_names(objs: list, names: Any, attribute_names: Any) -> set:
    """``names`` (the names a step's code reads) with those read by the methods among them of the plain objects among
    ``objs`` (its arguments and roots) and, two levels down, of the plain objects their attributes hold
    (``self.helper.run(x)`` reading ``self.scale``): the attributes the guards fingerprint (a replay reused the
    number).  ``attribute_names``: guards.attribute_names."""
    names = set(names)
    seen: list = []
    level = [o for o in objs if _plain(o) and not callable(o)]
    for _ in range(3):
        seen += level
        for _ in range(3):  # (a method calling another method of its object)
            new = {n for m in methods_named(seen, names) for n in attribute_names(m)} - names
            if not new:
                break
            names |= new
        level = [v for o in level for v in vars(o).values() if _plain(v) and not callable(v)]
        if not level:
            break
    return names


def helpers(f: Any, names: set) -> list:
    """What a function can call: its globals among ``names`` (the names its code loads), then its closure cells."""
    g = f.__globals__
    out = [g[n] for n in names if n in g]
    for cell in f.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    return out


def helper_cells(f: Any, names: frozenset, out: set, depth: int, seen: set) -> None:
    """The ids of the closure cells' contents named in ``names`` of the user helper functions ``f`` calls (by a
    global name or from its closure), ``depth`` levels down (as guards.append_names found them)."""
    code = f.__code__
    if id(code) in seen:
        return
    seen.add(id(code))
    for v in helpers(f, code_names(code, set())):
        if isinstance(v, FunctionType) and not _internal(v.__code__.co_filename):
            for n, cell in zip(v.__code__.co_freevars, v.__closure__ or ()):
                if n in names:
                    try:
                        out.add(id(cell.cell_contents))
                    except ValueError:
                        pass
            if depth > 1:
                helper_cells(v, names, out, depth - 1, seen)
