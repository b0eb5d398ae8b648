"""The container structure of a call's arguments (lists, tuples and dicts: a batch dict, ``f((x, y))``; dataclass
instances and namespaces whose class holds only their fields, and objects of user classes whose methods read only
their attributes (userrecords.py), opened as dicts of their attributes: a collate function's ``Batch(x=..., y=...)``),
for the guards.

A replay reads the tensors and numbers inside argument containers as its inputs (``guards.leaves`` flattens them),
so a fresh container of the same shape each call (a data loader's ``{"x": ..., "y": ...}`` batch) needs no capture
of its own: it is keyed by its structure (each container's type, a list's or tuple's length, a dict's keys in their
order; :func:`shape`) and by its entries (``modstate.key`` of the leaves), and not by its identity.  The objects inside
that are neither tensors nor numbers (a module, a config object) are roots as they would be as arguments
(:func:`opened`).  A container the capture cannot treat as a fresh input keeps its identity in the key: a list the
function only appends to (a counter: see ``guards.appended``), and any argument container the capture's result
returns itself (``Recorder.arg_identity``: the replay would return the capture's container).
"""
from __future__ import annotations

import dataclasses
from collections import Counter, OrderedDict, defaultdict
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..nn.parameter import Parameter
from ..tensor import Tensor
from .keyvalues import _Ident, _sc
from .userrecords import plain_entries, user_record_class

_CONTAINERS = (list, tuple, dict)
_PLAIN = frozenset((Tensor, Parameter, bool, int, float, str, type(None)))


_RECORDS: dict[type, bool | int] = {}  # class -> whether its instances are records (see record): once per class
_RECORD_DUNDERS = frozenset(("__getattr__", "__getattribute__"))


def record(o: Any) -> bool:
    """A dataclass instance or a ``SimpleNamespace`` whose class (and its bases) defines nothing but its fields and
    dunders other than ``__getattr__``/``__getattribute__`` (no method, property or class attribute a step could
    read besides its entries), or an instance of a user class whose methods read nothing but its attributes, which
    hold only tensors, numbers and strings (userrecords.py): opened as a dict of its attributes, in their order."""
    c = o.__class__
    r = _RECORDS.get(c)
    if r is None:
        if len(_RECORDS) > 1024:
            _RECORDS.clear()
        r = _RECORDS[c] = _pure_record(c) or (_USER if user_record_class(c) else False)
    if not r:
        return False
    d = getattr(o, "__dict__", None)
    return type(d) is dict and (r is True or plain_entries(d))


_USER = 2  # (_RECORDS: a user class, its instances records where their attributes are plain_entries)


def _pure_record(c: type) -> bool:
    if c is SimpleNamespace:
        return True
    if not dataclasses.is_dataclass(c):
        return False
    fields = set(getattr(c, "__dataclass_fields__", ()))
    return not any(n in _RECORD_DUNDERS or not (n[:2] == "__" == n[-2:]) and n not in fields
                   for k in c.__mro__ if k is not object for n in vars(k))


def any_container(args: tuple, kwargs: dict) -> bool:
    """Whether any argument is a list, tuple, dict or record."""
    return any(isinstance(a, _CONTAINERS) or record(a) for a in args) or \
        any(isinstance(v, _CONTAINERS) or record(v) for v in kwargs.values())


def opened(args: tuple, kwargs: dict, keep: frozenset) -> tuple[tuple, tuple]:
    """(the arguments with their containers replaced by what they hold, the containers' structure); the containers
    whose ids are in ``keep`` stay as they are."""
    objs: list = []
    shape: list = []

    def walk(o: Any) -> None:
        if isinstance(o, _CONTAINERS) and id(o) not in keep and (o.__class__ in _CONTAINERS or _openable(o)):
            if isinstance(o, dict):
                shape.append((o.__class__, tuple([k if k.__class__ is str else _dict_key(k) for k in o])))
                for v in o.values():
                    walk(v)
            else:
                shape.append((o.__class__, len(o)))
                for v in o:
                    walk(v)
        elif id(o) not in keep and record(o):
            d = o.__dict__
            shape.append((o.__class__, tuple(d)))
            for v in d.values():
                walk(v)
        else:
            objs.append(o)
    for a in args:
        walk(a)
    for v in kwargs.values():
        walk(v)
    return tuple(objs), tuple(shape)


# a container's methods that decide what the step reads from it: a subclass defining any of them (a dict whose
# ``__getitem__`` scales by an attribute, a ``__missing__`` returning one) reads more than its entries
_PROTOCOL = frozenset(("__getitem__", "__missing__", "__iter__", "__len__", "__contains__", "get", "keys", "values",
                       "items", "__getattr__", "__getattribute__", "__reversed__", "pop", "setdefault"))
_BASES = frozenset((object, list, tuple, dict, OrderedDict, defaultdict, Counter))
_OPENABLE: dict = {}  # container subclass -> whether it defines none of _PROTOCOL


def _openable(o: Any) -> bool:
    """Whether an argument container of a subclass (an OrderedDict, a namedtuple) is opened as a plain one: its
    class reads entries as the builtin does and the object holds no attributes of its own (else it stays a root, by
    identity: its attributes and methods may give the step other values than its entries)."""
    c = o.__class__
    r = _OPENABLE.get(c)
    if r is None:
        if len(_OPENABLE) > 1024:
            _OPENABLE.clear()
        r = _OPENABLE[c] = not any(n in vars(k) for k in c.__mro__ if k not in _BASES and  # (torch.Size: its
                                   not k.__module__.startswith("coretorch.") for n in _PROTOCOL)  # entries)
    return r and not getattr(o, "__dict__", None)


def _dict_key(k: Any) -> Any:
    """A dict key that is no string in the structure: with its class (``{1: x}`` and ``{True: x}``, ``{0.0: x}`` and
    ``{-0.0: x}`` are equal dicts, and a step that reads its keys sees them differ), a number's sign of zero, a
    tuple's items the same way, a tensor by identity (``==`` compares its values) and any other key by its own
    equality (a fresh ``("layer", 0)`` each call is the same key)."""
    c = k.__class__
    if c is str:
        return k
    if c is tuple:
        return (tuple, tuple([_dict_key(v) for v in k]))
    if isinstance(k, (int, float, complex)):
        return (c, _sc(k))
    return _Ident(k) if isinstance(k, Tensor) else (c, k)


def shape(args: tuple, kwargs: dict) -> tuple:
    """The argument containers' structure alone (see :func:`opened`)."""
    return opened(args, kwargs, frozenset())[1] if any_container(args, kwargs) else ()


def _entries(o: Any) -> Any:
    """What an argument container holds: a dict's values, a list's or tuple's items, a record's attributes."""
    return o.values() if isinstance(o, dict) else o if isinstance(o, _CONTAINERS) else vars(o).values()


def container_ids(args: tuple, kwargs: dict) -> frozenset:
    """The ids of the argument containers, nested ones too."""
    out: set = set()

    def walk(o: Any) -> None:
        if isinstance(o, _CONTAINERS) or record(o):
            out.add(id(o))
            for v in _entries(o):
                walk(v)
    for a in (*args, *kwargs.values()):
        walk(a)
    return frozenset(out)


def snapshot(args: tuple, kwargs: dict) -> list:
    """The argument containers' entries by identity (a dict's keys and values, a list's items, a record's
    attributes), nested ones too: a forward that assigns one (``batch["pred"] = out``, ``hidden.append(h)``) changes
    it, which a module capture's replay would not repeat."""
    out: list = []

    def walk(o: Any) -> None:
        if isinstance(o, _CONTAINERS) or record(o):
            d = o if isinstance(o, dict) else None if isinstance(o, _CONTAINERS) else vars(o)
            vals = list(_entries(o))
            out.append((id(o), tuple(d) if d is not None else len(vals), tuple([id(v) for v in vals])))
            for v in vals:
                walk(v)
    for a in (*args, *kwargs.values()):
        walk(a)
    return out


def held(args: tuple, kwargs: dict) -> list:
    """The argument objects whose state a key of leaves by identity misses (for a module capture, whose key has no
    roots): container subclasses (their own attributes, a ``__getitem__`` reading one) and the other objects that are
    neither tensors nor Python scalars (a config object's attributes, a set's entries), nested ones too."""
    out: list = []

    def walk(o: Any) -> None:
        c = o.__class__
        if c in _PLAIN:
            return
        if isinstance(o, _CONTAINERS) or record(o):  # (a record is opened: its entries are leaves)
            if c not in _CONTAINERS and isinstance(o, _CONTAINERS):
                out.append(o)
            for v in _entries(o):
                walk(v)
        elif not isinstance(o, (Tensor, np.ndarray)):  # (an array's values: in the leaves' key already)
            out.append(o)
    for a in args:
        walk(a)
    for v in kwargs.values():
        walk(v)
    return out
