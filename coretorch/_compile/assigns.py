"""Python state a captured call assigns on objects whose attributes no guard keys: the optimizers (``opt.last =
loss.detach()``), their param groups (``group["last"] = h``), tensors (``w.last = h``, ``x.seen = True``) and the
function itself (``step.last = h``), and what the tensors' gradient hooks reach
(``w.register_hook(lambda g: store.update(g=g))``).  A replay does not repeat Python assignments, so the caller
would read the capture's object where eager gives this call's: such a call is a graph break (it runs eagerly, as
its guard set's later calls).  Checked at the capture only: a replay pays nothing.

Python numbers are left out (a counter such as ``opt.calls += 1`` in a user optimizer's ``step()`` is a documented
side effect run at the capture only; an ``lr`` a scheduler sets, and the numbers of an optimizer's own ``step()``,
are inputs of the replay), except the function's and the optimizers' attributes the step's own code reads
(``step.k += 1`` then ``if step.k % 3 == 0: opt.step()``: every replay took the capture's branch).  Left out too:
the attributes the core sets itself (those of tensors and optimizers starting with ``_``), tuples of a param group
(``betas``, which a scheduler replaces), and what an optimizer's ``step()`` writes in its ``state``.
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import guards as _guards

_NUMBERS = (bool, int, float, complex, str, type(None), tuple)


def _fingerprint(d: dict, public: bool, read: tuple = ()) -> tuple:
    return tuple([(k, (v if k in read else None) if isinstance(v, _NUMBERS) else id(v)) for k, v in d.items()
                  if not (public and isinstance(k, str) and k.startswith("_"))])


def snapshot(fn: Any, lv: list, params: list, plain: list, opts: list) -> tuple:
    """The fingerprint of what :func:`check` compares, taken before the call (``read``: the attribute names the
    step's code reads, whose Python numbers on the function and the optimizers count: ``step.k += 1`` then
    ``if step.k % 3 == 0: opt.step()`` took the capture's branch at every replay)."""
    f = getattr(fn, "__func__", fn)
    read = _guards.attribute_names(fn)
    tensors = [t for t in (*params, *plain, *lv) if isinstance(t, Tensor) and hasattr(t, "__dict__")]
    hooks = [_guards.root_key(_guards.roots(h, (), {}), _guards.attribute_names(h)) for h in _hook_fns(tensors)]
    return (tuple(hooks), _fingerprint(getattr(f, "__dict__", None) or {}, False, read),
            tuple([_fingerprint(t.__dict__, True) for t in tensors]),
            tuple([_fingerprint(o.__dict__, True, read) for o in opts]),
            tuple([_fingerprint(g, False) for o in opts for g in o.param_groups]))


def check(rec: Any, before: tuple, fn: Any, lv: list, params: list, plain: list, opts: list,
          where: str | None = None) -> None:
    """A graph break where the call assigned one of them (see the module docstring; ``where``: the break's place)."""
    if snapshot(fn, lv, params, plain, opts) != before:
        rec.graph_break("the call assigns an attribute of an optimizer, a tensor or the function, an entry of a "
                        "param group, or state a gradient hook reaches, which a replay would not repeat", where)


def _hook_fns(tensors: list) -> list:
    """The gradient hooks of ``tensors`` (``w.register_hook``, ``register_post_accumulate_grad_hook``): a replay's
    backward does not call them, so what their functions reach (``store["g"] = g``, ``norms.append(...)``) is
    compared as a module hook's (see modstate.module_numbers)."""
    fns: list = []
    for t in tensors:
        d = t.__dict__
        a = d.get("_accum")
        if a is not None and a._hooked:
            for h in (*(a._tensor_hooks or {}).values(), a._pre_hooks or {}, a._hooks or {}):
                fns.extend(h.values())
        fns.extend((d.get("_post_accumulate_grad_hooks") or {}).values())
    return fns
