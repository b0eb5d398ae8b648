"""The containers torch.func walks (PyTorch's pytrees, the cases its transforms meet): tuples, named tuples, lists and
dicts, nested; anything else is a leaf."""
from __future__ import annotations

from typing import Any, Callable


def flatten(obj: Any) -> tuple[list, Any]:
    """``(leaves, spec)``: the leaves in order, and what :func:`unflatten` rebuilds the structure from."""
    leaves: list = []
    return leaves, _flat(obj, leaves)


def _flat(obj: Any, leaves: list) -> Any:
    if isinstance(obj, tuple):
        return ("tuple", type(obj), [_flat(o, leaves) for o in obj])
    if isinstance(obj, list):
        return ("list", list, [_flat(o, leaves) for o in obj])
    if isinstance(obj, dict):
        return ("dict", type(obj), list(obj), [_flat(v, leaves) for v in obj.values()])
    leaves.append(obj)
    return None


def unflatten(leaves: list, spec: Any) -> Any:
    """The structure ``spec`` describes, its leaves taken from ``leaves`` in order."""
    it = iter(leaves)
    return _unflat(spec, it)


def _unflat(spec: Any, it: Any) -> Any:
    if spec is None:
        return next(it)
    kind = spec[0]
    if kind == "tuple":
        items = [_unflat(s, it) for s in spec[2]]
        return spec[1](*items) if hasattr(spec[1], "_fields") else spec[1](items)
    if kind == "list":
        return [_unflat(s, it) for s in spec[2]]
    d = spec[1]() if spec[1] is not dict else {}
    for k, s in zip(spec[2], spec[3]):
        d[k] = _unflat(s, it)
    return d


def tree_map(fn: Callable, obj: Any) -> Any:
    leaves, spec = flatten(obj)
    return unflatten([fn(x) for x in leaves], spec)


def num_leaves(spec: Any) -> int:
    if spec is None:
        return 1
    return sum(num_leaves(s) for s in (spec[3] if spec[0] == "dict" else spec[2]))


def spec_str(spec: Any) -> str:
    """PyTorch's TreeSpec text, close enough to tell two structures apart in a message."""
    if spec is None:
        return "*"
    if spec[0] == "dict":
        return f"TreeSpec(dict, {spec[2]}, [{', '.join(spec_str(s) for s in spec[3])}])"
    return f"TreeSpec({spec[0]}, None, [{', '.join(spec_str(s) for s in spec[2])}])"
