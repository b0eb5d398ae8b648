"""Arguments that are containers of tensors: a data loader's ``[x, y]`` batch, a ``{"input": x, "label": y}`` dict,
a ``(x, y)`` tuple.  Their tensors are arguments as any other (:func:`.guards.leaves` flattens them: keyed by shape,
dtype, device...), so the container is keyed by its structure (types, lengths, dict keys), not by its identity: a
fresh list each call (``for batch in loader: step(batch)``) captured again at every call up to the recompile limit,
then ran eagerly, and the roots' state kept up to 65 batches alive.  A container holding anything else (a module, an
optimizer, an array, an empty list the step fills) stays a root, keyed as before.

A step that changes such a container (``batch.append(h)``, ``batch[0] = x2``) is a graph break (see
:mod:`.assigns`), and so is one whose result holds it (eager returns the caller's object).
"""
from __future__ import annotations

from typing import Any

_MAX = 64  # entries in all: a larger container stays a root


def is_batch(o: Any, leaf: tuple) -> bool:
    """Whether ``o`` is a list, tuple or dict (nested ones included) of ``leaf`` values (tensors, Python numbers,
    strings, None), a tensor among them (``leaf[0]``)."""
    if not isinstance(o, (list, tuple, dict)):
        return False
    todo, seen, tensors = [o], 0, 0
    while todo:
        c = todo.pop()
        for v in (c.values() if isinstance(c, dict) else c):
            seen += 1
            if seen > _MAX:
                return False
            if isinstance(v, (list, tuple, dict)):
                todo.append(v)
            elif isinstance(v, leaf[0]):
                tensors += 1
            elif not isinstance(v, leaf):
                return False
    return tensors > 0


def key(args: tuple, kwargs: dict) -> tuple:
    """The structure of the arguments of a call (``()`` where none is a container)."""
    if not kwargs:
        for a in args:
            if isinstance(a, (list, tuple, dict)):
                break
        else:
            return ()
    return structure(args), structure(kwargs)


def structure(o: Any) -> Any:
    """The types, lengths and dict keys of an argument container (None for a leaf; a large one: its length)."""
    if isinstance(o, (list, tuple, dict)) and len(o) > _MAX:
        return (type(o), len(o))
    if isinstance(o, (list, tuple)):
        return (type(o), tuple([structure(v) for v in o]))
    if isinstance(o, dict):
        return (type(o), tuple([(k, structure(o[k])) for k in sorted(o, key=repr)]))
    return None


def identities(o: Any) -> Any:
    """What a call that changed the container changes: the identity of each entry, nested ones included."""
    if isinstance(o, (list, tuple)):
        return (id(o), tuple([identities(v) for v in o]))
    if isinstance(o, dict):
        return (id(o), tuple([(k, identities(v)) for k, v in o.items()]))
    return id(o)
