"""The modules' user attributes' key (modstate._module_numbers), reused while every attribute is the same object as
at the last call (``is``, one pass in C): an entry whose key depends on that object alone (a Python number, string or
None by value, a tuple or any other object keyed by identity) keeps its key; the others (a list's, dict's or plain
object's contents, a function's closure numbers, a value-keyed object, a plain tensor's shape: see attrs.py) have
theirs computed again at every call.
The memo holds the objects, so no identity in the key is recycled while it is kept."""
from __future__ import annotations

from operator import is_
from types import FunctionType

from numpy import ndarray

from ..tensor import Tensor

from .keyvalues import _SCALAR_SET, BY_VALUE, _sc


def module_key(raw: list, memo: list) -> tuple:
    """The key of the attribute values ``raw``: each number, string or None by value, anything else by ``memo[1]``
    (modstate._object_key), and their classes; ``memo``: [the last call's (raw, key, entries computed again), that
    function, guards._opened, then :func:`globals_key`'s]."""
    m = memo[0]
    if m is not None and len(m[0]) == len(raw) and (all(map(is_, raw, m[0])) or m[3] and all(
            a is b or i in m[3] and a.__class__ is b.__class__ and _tensors(a)
            for i, a, b in zip(range(len(raw)), raw, m[0]))):
        # (the same objects, or other plain tensors where there were: a pre-hook's new ``module.weight`` each call)
        if not m[2]:
            return m[1]
        keys, of = list(m[1][0]), memo[1]
        for i in m[2]:
            keys[i] = of(raw[i])
        key = tuple(keys), m[1][1]
        if m[0] is not raw and m[3]:
            memo[0] = (raw, key, m[2], m[3])
        return key
    of, opened = memo[1], memo[2]
    key = tuple([(v if v.__class__ is not float or v and v == v else _sc(v)) if v.__class__ in _SCALAR_SET else
                 of(v) for v in raw]), tuple(map(type, raw))
    # (a plain tensor: its shape, dtype and device, read again; see attrs.py)
    memo[0] = (raw, key, tuple([i for i, v in enumerate(raw) if v.__class__ not in _SCALAR_SET and (
        opened(v) or v.__class__ is ndarray or _tensors(v) or (
            any(map(opened, v)) if isinstance(v, tuple) else  # (a tuple of lists)
            not isinstance(v, tuple) and BY_VALUE.get(v.__class__) is not False))]),
                frozenset([i for i, v in enumerate(raw) if _tensors(v)]))
    return key


def _tensors(v: object) -> bool:
    """A plain tensor, or a tuple of them (an LSTM's state): keyed by their shapes, read again at every call."""
    return v.__class__ is Tensor or v.__class__ is tuple and 0 < len(v) <= 8 and all(  # type: ignore[arg-type]
        x.__class__ is Tensor for x in v)  # type: ignore[attr-defined]


def globals_key(objs: list, memo: list) -> tuple:
    """``memo[3]`` (guards.root_key with the names) of the globals the modules' classes read, the last call's where
    they are the same objects, each keyed by its value or identity alone, or a function whose ``__defaults__`` is the
    same tuple and whose closure cells hold the same objects (a list, dict or plain object, an array: computed at
    every call)."""
    m = memo[4]
    if m is not None and len(m[0]) == len(objs) and all(map(is_, objs, m[0])):
        try:
            if all(map(is_, [f.__defaults__ for f in m[2]], m[3])) and all(map(is_, _cells(m[2]), m[4])):
                return m[1]
        except ValueError:  # (a cell emptied)
            pass
    key, opened, fns = memo[3](objs), memo[2], []
    for o in objs:
        c = o.__class__
        if c is FunctionType and not o.__kwdefaults__:  # (a keyword-only default's dict: changed in place)
            fns.append(o)
        elif c not in _SCALAR_SET and (opened(o) or c is ndarray or BY_VALUE.get(c) is not False):
            memo[4] = None
            return key
    try:
        memo[4] = (objs, key, fns, [f.__defaults__ for f in fns], _cells(fns))
    except ValueError:
        memo[4] = None
    return key


def _cells(fns: list) -> list:
    return [c.cell_contents for f in fns for c in f.__closure__ or ()]
