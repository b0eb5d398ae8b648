"""The structure of a compiled module's result (:mod:`.module`): a tensor, or tensors and Nones nested in plain
tuples, lists, dicts (OrderedDict too), named tuples (an LSTM language model's ``output, (h, c)``, nanoGPT's
``logits, None`` without targets, a dict of heads) and objects that hold tensors in their attributes (a policy's
``Categorical(logits=...)``, a dataclass of heads: a copy of the capture's object with this call's tensors, as a
compiled function's result objects), flattened into the replay's outputs at capture and rebuilt around the replay's
tensors at each call."""
from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

from ..tensor import Tensor
from .results import _has_tensor, _holds_tensor

TENSOR = 0  # a leaf of the structure: the next output tensor
OBJECT = "object"  # (OBJECT, a copy of the capture's object, its attribute names, their specs)
DICT = "dict"  # (DICT, a copy of a dict subclass, its keys, their specs, its tensor attributes' names, their specs)
INPUT = "input"  # (INPUT, i): the argument tensor lv[i] itself
FLAT = 1  # a plain tuple of tensors (the common case: rebuilt as tuple(outputs))
NONE = 2  # a None of the structure (a branch on an argument being None: the guards key the arguments)


def flatten(result: Any, held: frozenset = frozenset(), inputs: dict | None = None) -> tuple[list | None, Any]:
    """(the result's tensors in order, its structure: TENSOR for a tensor itself, FLAT for a plain tuple of tensors,
    else a nested spec); (None, None) when it holds anything else (a number, an object of ``held``: the ids of
    objects that outlive the call, the arguments and the modules' attributes, which eager returns themselves).
    ``inputs``: id(an input tensor) -> its position among the arguments; such a tensor in the result is no output
    of the replay but the argument itself at each call, as eager's (``{"logits": y, "labels": labels}``)."""
    inputs = inputs or {}
    if isinstance(result, Tensor) and id(result) not in inputs:
        return [result], TENSOR
    flat: list = []
    spec = _spec(result, flat, held, inputs)
    if spec is None:
        return None, None
    if type(result) is tuple and len(flat) == len(result) and all(s == TENSOR for s in spec[2]):
        return flat, FLAT
    return flat, spec


def _spec(o: Any, flat: list, held: frozenset, inputs: dict) -> Any:
    if isinstance(o, Tensor):
        i = inputs.get(id(o))
        if i is not None:
            return (INPUT, i)
        flat.append(o)
        return TENSOR
    if o is None:
        return NONE
    t = type(o)
    if t is tuple or t is list or (isinstance(o, tuple) and hasattr(t, "_fields")):
        subs = [_spec(v, flat, held, inputs) for v in o]
        return None if None in subs else (t, None, subs)
    if t is dict or t is OrderedDict:
        subs = [_spec(v, flat, held, inputs) for v in o.values()]
        return None if None in subs else (t, tuple(o), subs)
    if isinstance(o, dict) and id(o) not in held:
        # a dict subclass, its items and the attributes holding tensors (transformers' ModelOutput: an OrderedDict
        # dataclass whose fields are both): a copy of the capture's with this call's items and attributes
        subs = [_spec(v, flat, held, inputs) for v in o.values()]
        names = [k for k, v in vars(o).items() if _has_tensor(v, 2)] if _holds_tensor(o) else []
        subs2 = [_spec(getattr(o, k), flat, held, inputs) for k in names]
        if None in subs or None in subs2:
            return None
        try:
            template = copy.copy(o)
        except Exception:  # noqa: BLE001 - any failure of a user class's copy protocol: not rebuilt
            return None
        return (DICT, template, tuple(o), subs, names, subs2)
    if _holds_tensor(o) and id(o) not in held:  # (its other attributes: the copy's, as a function's REOBJ)
        names = [k for k, v in vars(o).items() if _has_tensor(v, 2)]
        subs = [_spec(getattr(o, k), flat, held, inputs) for k in names]
        if None in subs:
            return None
        try:
            template = copy.copy(o)
        except Exception:  # noqa: BLE001 - any failure of a user class's copy protocol: not rebuilt
            return None
        return (OBJECT, template, names, subs)
    return None


def rebuild(spec: Any, outs: list, lv: list) -> Any:
    """The result of the structure ``spec`` around the tensors ``outs`` (and the argument tensors ``lv``)."""
    if spec == TENSOR:
        return outs[0]
    if spec == FLAT:
        return tuple(outs)
    return _build(spec, iter(outs), lv)


def _build(spec: Any, it: Any, lv: list) -> Any:
    if spec == TENSOR:
        return next(it)
    if spec == NONE:
        return None
    if spec[0] == INPUT:
        return lv[spec[1]]
    if spec[0] == OBJECT:
        out = copy.copy(spec[1])
        out.__dict__.update(zip(spec[2], [_build(s, it, lv) for s in spec[3]]))
        return out
    if spec[0] == DICT:
        out = copy.copy(spec[1])
        dict.clear(out)
        dict.update(out, zip(spec[2], [_build(s, it, lv) for s in spec[3]]))
        if spec[4]:
            out.__dict__.update(zip(spec[4], [_build(s, it, lv) for s in spec[5]]))
        return out
    t, keys, subs = spec
    vals = [_build(s, it, lv) for s in subs]
    if keys is not None:
        return t(zip(keys, vals))
    return vals if t is list else tuple(vals) if t is tuple else t(*vals)
