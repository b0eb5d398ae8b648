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
from .capture import _internal
from .hostrng import _LIBS

_SMALL = 16  # the entries of lists, tuples and dicts looked into (larger ones: data, not helpers)


def _plain(o: Any) -> bool:
    """An instance of a class of the user's with attributes (not a class, a Python module, a module, an optimizer, a
    tensor)."""
    if not isinstance(getattr(o, "__dict__", None), dict) or isinstance(o, (type, ModuleType, Module, Optimizer,
                                                                            Tensor, FunctionType)):
        return False
    f = getattr(sys.modules.get(type(o).__module__), "__file__", None)
    # (a class of the user's code: not coretorch's, the standard library's or an installed package's, a
    # ``threading.Event``'s methods set its flag, a logger's its handlers)
    return isinstance(f, str) and not _internal(f) and not f.startswith(_LIBS)


def _inside(o: Any) -> Any:
    """What ``o`` holds that a call of it can reach (empty for anything else)."""
    if isinstance(o, FunctionType):
        if _internal(o.__code__.co_filename):
            return ()
        cells = []
        for c in o.__closure__ or ():
            try:
                cells.append(c.cell_contents)
            except ValueError:  # an empty cell
                pass
        return (*cells, *(o.__defaults__ or ()), *(o.__kwdefaults__ or {}).values())
    if isinstance(o, partial):
        return (o.func, *o.args, *o.keywords.values())
    if isinstance(o, MethodType):
        return (o.__func__, o.__self__)
    if isinstance(o, (list, tuple)) and len(o) <= _SMALL:
        return o
    if isinstance(o, dict) and len(o) <= _SMALL:
        return tuple(o.values())
    if _plain(o):
        return tuple(vars(o).values())
    return ()


def held(objs: list) -> list:
    """The modules, optimizers and tensors inside the helpers and plain objects among ``objs`` (see the module
    docstring), not those among ``objs`` themselves."""
    out: list = []
    seen = {id(o) for o in objs}
    todo = [(v, 1) for o in objs for v in _inside(o)]
    while todo:
        v, depth = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, (Module, Optimizer, Tensor)):
            out.append(v)
        elif depth:
            todo.extend((w, depth - 1) for w in _inside(v))
    return out


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
