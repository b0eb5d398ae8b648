"""The container structure of a call's arguments (lists, tuples and dicts: a batch dict, ``f((x, y))``), for the
guards.

A replay reads the tensors and numbers inside argument containers as its inputs (``guards.leaves`` flattens them),
so a fresh container of the same shape each call (a data loader's ``{"x": ..., "y": ...}`` batch) needs no capture
of its own: it is keyed by its structure (each container's type, a list's or tuple's length, a dict's keys in their
order; :func:`shape`) and by its entries (``guards.key`` of the leaves), and not by its identity.  The objects inside
that are neither tensors nor numbers (a module, a config object) are roots as they would be as arguments
(:func:`opened`).  A container the capture cannot treat as a fresh input keeps its identity in the key: a list the
function only appends to (a counter: see ``guards.appended``), and any argument container the capture's result
returns itself (``Recorder.arg_identity``: the replay would return the capture's container).
"""
from __future__ import annotations

from typing import Any

_CONTAINERS = (list, tuple, dict)


def any_container(args: tuple, kwargs: dict) -> bool:
    """Whether any argument is a list, tuple or dict."""
    return any(isinstance(a, _CONTAINERS) for a in args) or any(isinstance(v, _CONTAINERS) for v in kwargs.values())


def opened(args: tuple, kwargs: dict, keep: frozenset) -> tuple[tuple, tuple]:
    """(the arguments with their containers replaced by what they hold, the containers' structure); the containers
    whose ids are in ``keep`` stay as they are."""
    objs: list = []
    shape: list = []

    def walk(o: Any) -> None:
        if isinstance(o, _CONTAINERS) and id(o) not in keep:
            if isinstance(o, dict):
                shape.append((o.__class__, tuple(o)))
                for v in o.values():
                    walk(v)
            else:
                shape.append((o.__class__, len(o)))
                for v in o:
                    walk(v)
        else:
            objs.append(o)
    for a in args:
        walk(a)
    for v in kwargs.values():
        walk(v)
    return tuple(objs), tuple(shape)


def shape(args: tuple, kwargs: dict) -> tuple:
    """The argument containers' structure alone (see :func:`opened`)."""
    return opened(args, kwargs, frozenset())[1] if any_container(args, kwargs) else ()


def container_ids(args: tuple, kwargs: dict) -> frozenset:
    """The ids of the argument containers, nested ones too."""
    out: set = set()

    def walk(o: Any) -> None:
        if isinstance(o, _CONTAINERS):
            out.add(id(o))
            for v in (o.values() if isinstance(o, dict) else o):
                walk(v)
    for a in (*args, *kwargs.values()):
        walk(a)
    return frozenset(out)
