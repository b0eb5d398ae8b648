"""The code a module's forward may run on the plain objects its modules hold: a loss object's ``__call__``
(``self.crit = Loss(eps)``) and the methods of user-class objects kept as attributes, in a list or dict attribute,
or as an attribute of one of those (a metrics tracker's ``self.tracker.update(y)``, a config's helper).  The guards
read the attribute names and globals of that code (see ``modstate._class_globals``), so a forward that changes such an
object's state (``self.vals.append(v)``, ``self.count += 1`` in ``update``) is seen as a write (a graph break: a
replay would not repeat it), and one whose result depends on that state captures again when it changes."""
from __future__ import annotations

import sys
from types import FunctionType
from typing import Any, Callable

from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..tensor import Tensor

_SMALL = 16  # the entries of a list, tuple or dict attribute looked into


def methods(modules: list, user_class: Callable[[type], bool], called: set) -> list:
    """The functions of the held objects whose code the modules' code may call (``user_class``: whether a class is
    the user's, see guards._user_class; ``called``: the attribute names the modules' methods read): a callable
    object's ``__call__``, and every method and property getter of a user class one of whose methods is named there
    (``self.tracker.update(y)``; an object the training loop updates but the forward never calls stays unread)."""
    out: list = []
    done: set = set()
    for m in modules:
        for v in list(vars(m).values()):
            for o in _objects(v):
                c = o.__class__
                if c in done or not user_class(c) or _stdlib(c):
                    continue
                done.add(c)
                fns = {n: f.fget if isinstance(f, property) else getattr(f, "__func__", f)
                       for k in reversed(c.__mro__[:-1]) for n, f in vars(k).items()}
                fns = {n: f for n, f in fns.items() if isinstance(f, FunctionType)}
                if "__call__" in fns or not called.isdisjoint(n for n in fns if not n.startswith("__")):
                    out += fns.values()
    return out


def _objects(v: Any, depth: int = 2) -> list:
    """``v`` if it is a plain object of some class, and the plain objects it holds (attributes, list, tuple and dict
    entries), ``depth`` levels down."""
    if isinstance(v, (Module, Tensor, Optimizer, type, FunctionType)) or v is None or \
            v.__class__ in (int, float, bool, str, bytes, complex):
        return []
    if isinstance(v, (list, tuple, dict)):
        vals = list(v.values() if isinstance(v, dict) else v)[:_SMALL]
        return [o for x in vals for o in _objects(x, depth - 1)] if depth else []
    try:
        d = getattr(v, "__dict__", None)
    except Exception:  # noqa: BLE001 - a user class's __getattr__ (a slotted attribute dict raising KeyError)
        return []
    if type(d) is not dict:
        return []
    inner = [o for x in list(d.values())[:_SMALL] for o in _objects(x, depth - 1)] if depth > 1 else []
    return [v, *inner]


def _stdlib(c: type) -> bool:
    """A class of the standard library (a ``logging.Logger``, a ``random.Random``): its state is not the forward's."""
    return c.__module__.partition(".")[0] in sys.stdlib_module_names


def module_containers(m: Module) -> list:
    """The plain lists, tuples and dicts among ``m``'s attributes that hold modules (``self.layers = [nn.Linear(...),
    ...]``: not registered, so not among ``m.modules()``, yet eager runs them): the guards take those modules too
    (their training flags, parameters and buffers) and the containers' entries (one replaced: state looked up again)."""
    return [v for v in vars(m).values() if v.__class__ in (list, tuple, dict) and v and
            any(isinstance(x, Module) for x in entries(v))]


def entries(c: Any) -> list:
    return list(c.values()) if isinstance(c, dict) else list(c)
