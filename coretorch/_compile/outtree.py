"""The structure of a compiled module's result (:mod:`.module`): a tensor, or tensors and Nones nested in plain
tuples, lists, dicts (OrderedDict too) and named tuples (an LSTM language model's ``output, (h, c)``, nanoGPT's
``logits, None`` without targets, a dict of heads), flattened into the replay's outputs at capture and rebuilt
around the replay's tensors at each call."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..tensor import Tensor

TENSOR = 0  # a leaf of the structure: the next output tensor
FLAT = 1  # a plain tuple of tensors (the common case: rebuilt as tuple(outputs))
NONE = 2  # a None of the structure (a branch on an argument being None: the guards key the arguments)


def flatten(result: Any) -> tuple[list | None, Any]:
    """(the result's tensors in order, its structure: TENSOR for a tensor itself, FLAT for a plain tuple of tensors,
    else a nested spec); (None, None) when it holds anything else (a number, a distribution object)."""
    if isinstance(result, Tensor):
        return [result], TENSOR
    flat: list = []
    spec = _spec(result, flat)
    if spec is None:
        return None, None
    if type(result) is tuple and len(flat) == len(result) and all(s == TENSOR for s in spec[2]):
        return flat, FLAT
    return flat, spec


def _spec(o: Any, flat: list) -> Any:
    if isinstance(o, Tensor):
        flat.append(o)
        return TENSOR
    if o is None:
        return NONE
    t = type(o)
    if t is tuple or t is list or (isinstance(o, tuple) and hasattr(t, "_fields")):
        subs = [_spec(v, flat) for v in o]
        return None if None in subs else (t, None, subs)
    if t is dict or t is OrderedDict:
        subs = [_spec(v, flat) for v in o.values()]
        return None if None in subs else (t, tuple(o), subs)
    return None


def rebuild(spec: Any, outs: list) -> Any:
    """The result of the structure ``spec`` around the tensors ``outs``."""
    if spec == TENSOR:
        return outs[0]
    if spec == FLAT:
        return tuple(outs)
    return _build(spec, iter(outs))


def _build(spec: Any, it: Any) -> Any:
    if spec == TENSOR:
        return next(it)
    if spec == NONE:
        return None
    t, keys, subs = spec
    vals = [_build(s, it) for s in subs]
    if keys is not None:
        return t(zip(keys, vals))
    return vals if t is list else tuple(vals) if t is tuple else t(*vals)
