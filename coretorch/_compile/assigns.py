"""Python state a captured call assigns on objects whose attributes no guard keys: the optimizers (``opt.last =
loss.detach()``), their param groups (``group["last"] = h``), tensors (``w.last = h``, ``x.seen = True``) and the
function itself (``step.last = h``).  A replay does not repeat Python assignments, so the caller would read the
capture's object where eager gives this call's: such a call is a graph break (it runs eagerly, as its guard set's
later calls).  Checked at the capture only: a replay pays nothing.

Python numbers are left out (a counter such as ``step.calls += 1`` is a documented side effect run at the capture
only; an ``lr`` a scheduler sets, and the numbers of an optimizer's own ``step()``, are inputs of the replay), and
so are the attributes the core sets itself (those of tensors and optimizers starting with ``_``), tuples of a param
group (``betas``, which a scheduler replaces), and what an optimizer's ``step()`` writes in its ``state``.
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor

_NUMBERS = (bool, int, float, complex, str, type(None), tuple)


def _fingerprint(d: dict, public: bool) -> tuple:
    return tuple([(k, None if isinstance(v, _NUMBERS) else id(v)) for k, v in d.items()
                  if not (public and isinstance(k, str) and k.startswith("_"))])


def snapshot(fn: Any, lv: list, params: list, plain: list, opts: list) -> tuple:
    """The fingerprint of what :func:`changed` compares, taken before the call."""
    f = getattr(fn, "__func__", fn)
    tensors = [t for t in (*params, *plain, *lv) if isinstance(t, Tensor)]
    return (_fingerprint(getattr(f, "__dict__", None) or {}, False),
            tuple([_fingerprint(t.__dict__, True) for t in tensors if hasattr(t, "__dict__")]),
            tuple([_fingerprint(o.__dict__, True) for o in opts]),
            tuple([_fingerprint(g, False) for o in opts for g in o.param_groups]))


def check(rec: Any, before: tuple, fn: Any, lv: list, params: list, plain: list, opts: list) -> None:
    """A graph break where the call assigned one of them (see the module docstring)."""
    if snapshot(fn, lv, params, plain, opts) != before:
        rec.graph_break("the call assigns an attribute of an optimizer, a tensor or the function, or an entry of a "
                        "param group, which a replay would not repeat")
