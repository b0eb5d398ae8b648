"""The Python numbers a step's code reads on the step function itself, on the optimizers and on the parameters
and tensors it reaches (``x * step.scale``, ``loss / opt.accum``, ``w * m.weight.gain``), keyed by value as those of
config objects are (guards.contents): a replay reused the capture's number after ``opt.accum = 8``.  An optimizer's
param groups and state are not keyed here (their numbers are inputs of the optimizer's replay, see :mod:`.optim`,
or keyed where the code reads them: guards.group_numbers, guards.state_numbers)."""
from __future__ import annotations

import weakref
from typing import Any

from .guards import _SCALAR_SET

_OWN = frozenset(("param_groups", "state"))
# id(an owner's __dict__) -> (a weak reference to the owner, the dict's length, names, the names it holds)
_SEL: dict[int, tuple] = {}


def _selected(o: Any, d: dict, names: tuple) -> tuple:
    e = _SEL.get(id(d))
    if e is None or e[0]() is not o or e[1] != len(d) or e[2] is not names:
        if len(_SEL) > 1024:
            _SEL.clear()
        sel = tuple([n for n in names if n in d and n not in _OWN])
        try:
            e = _SEL[id(d)] = (weakref.ref(o), len(d), names, sel)
        except TypeError:  # (an owner without weak references: selected again at each call)
            return sel
    return e[3]


def tensor_attributes(tensors: tuple, names: tuple) -> tuple:
    """``(tensor, name)`` of the attributes among ``names`` that the step's parameters and tensors hold (set by the
    user: the core's start with ``_``); found once per guard state, so a call pays only for those there are."""
    return tuple([(t, n) for t in tensors for n in (getattr(t, "__dict__", None) or ())
                  if n[:1] != "_" and n in names])


def key(fn: Any, opts: list, names: tuple, tensor_attrs: tuple = ()) -> tuple:
    """The values of the Python numbers (strings, None) among ``names`` that the function and ``opts`` hold, and of
    ``tensor_attrs`` (:func:`tensor_attributes`) (anything else there: None; one level: what such an attribute
    holds is not looked into)."""
    out: list = []
    for t, n in tensor_attrs:
        v = t.__dict__.get(n)
        out.append(v if v.__class__ in _SCALAR_SET else None)
    for o in (getattr(fn, "__func__", fn), *opts):
        d = getattr(o, "__dict__", None)
        if d:
            for n in _selected(o, d, names):
                v = d.get(n)  # (a dict's numbers: an optimizer's ``defaults``)
                out.append(v if v.__class__ in _SCALAR_SET else tuple([
                    x for x in v.items() if x[1].__class__ in _SCALAR_SET]) if v.__class__ is dict else None)
    return tuple(out)
