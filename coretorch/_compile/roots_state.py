"""What a capture notes about the objects a call reaches (its roots, see ``guards.roots``) before running it, and
compares after: which objects outlive the call (a result among them is returned itself), the iterators among them
and where they stand (advancing one is a graph break), the live LR schedulers' counts (one stepped through a method
bound before the capture is a graph break), and the gradients of tensors the capture found only by their arrays."""
from __future__ import annotations

import gc
import operator
from types import FrameType
from typing import Any

from ..optim._lr_base import live as _lr_live
from ..tensor import Tensor


def persistent_of(objs: list) -> set[int]:
    """The ids of the roots of a call (see guards.roots), the entries of their containers and the attributes of
    objects among them: a result object among them is returned itself (it outlives the call), not rebuilt."""
    out: set[int] = set()
    for o in objs:
        out.add(id(o))
        vals = o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else \
            vars(o).values() if isinstance(getattr(o, "__dict__", None), dict) and not isinstance(o, type) else ()
        out.update(map(id, vals))
    return out


def iterators_of(objs: list) -> dict[int, Any]:
    """id -> iterator for the iterators among ``objs`` (the roots of a step), the entries of their containers, the
    attributes of plain objects among them and the objects of bound ``__next__`` methods among them
    (``nb = it.__next__``): advancing one inside the step is a graph break (``next()``: at once; ``it.__next__()``, a
    ``for`` loop over it: :func:`iter_position` compared after the capture's call)."""
    out: dict[int, Any] = {}
    for o in objs:
        vals = o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else \
            vars(o).values() if hasattr(o, "__dict__") and not isinstance(o, type) and \
            not callable(o) and not isinstance(o, Tensor) else ()
        for v in (o, *vals):
            if _attr(v, "__name__") == "__next__":
                v = _attr(v, "__self__")
            if hasattr(type(v), "__next__"):
                out[id(v)] = v
    return out


def _attr(v: Any, name: str) -> Any:
    """``getattr(v, name, None)`` of any object: a dict subclass's ``__getattr__ = dict.__getitem__`` (an AttrDict
    config) raises KeyError for a name it lacks, which failed the capture where eager never asks."""
    try:
        return getattr(v, name, None)
    except Exception:
        return None


def _by_id(x: Any) -> Any:
    """Python numbers and strings by value, tuples entry by entry, anything else by identity (no ``==`` of tensors)."""
    if x is None or x.__class__ in (int, float, bool, str, bytes):
        return x
    if x.__class__ is tuple:
        return tuple(map(_by_id, x))
    return id(x)


def iter_position(it: Any) -> Any:
    """Where an iterator stands, as far as Python shows it: a generator's frame (its instruction and locals), a Python
    class's attributes, a built-in iterator's ``__reduce__`` (a list iterator's index, an enumerate's count)."""
    frame = getattr(it, "gi_frame", it)
    if frame is not it:
        return None if frame is None else (frame.f_lasti, _by_id(tuple(frame.f_locals.values())))
    d = getattr(it, "__dict__", None)
    if isinstance(d, dict):
        return _by_id(tuple(d.items()))
    try:
        return _by_id(it.__reduce__())
    except Exception:  # noqa: BLE001 - an iterator that cannot say: its length hint
        return operator.length_hint(it, -1)


def scheduler_counts() -> dict[int, tuple]:
    """id -> (last_epoch, _step_count) of every live LR scheduler (see :meth:`Recorder._scheduler_step`)."""
    return {id(s): (getattr(s, "last_epoch", None), getattr(s, "_step_count", None)) for s in list(_lr_live)}


def check_late_grads(rec: Any, ts: list, read: dict) -> None:
    """A graph break where a tensor among ``ts``, those the roots did not show (found by their arrays: a parameter of
    a model held deeper than the roots look), has a ``.grad`` the step made or changed (its array made by a recorded
    kernel, or among those the step read: accumulated in place).  A replay loads such a tensor's array but writes
    back the state of the tracked tensors only: it left ``.grad`` as the capture's, and the optimizer stepped with that
    stale gradient at every call.  Also where one is such a tensor's ``.grad`` (a gradient norm of a model held deeper
    than the roots look): a replay read the capture's gradient tensor."""
    for t in ts:
        g = t._grad
        if g is not None and (id(g._data) in rec.var or id(g._data) in read):
            rec.graph_break(f"the step changes the .grad of a {tuple(t.shape)} tensor it reaches other than through "
                            "its arguments, closure, globals and their modules and optimizers (a model held by a "
                            "helper function's closure or by an object's attribute), which a replay would not write")
            return
    if not ts:
        return
    ids = {id(t) for t in ts}
    for r in gc.get_referrers(*ts):  # (their holders, found at once: the tensor, or its __dict__ where not inlined)
        g = (r.__dict__ if isinstance(r, Tensor) else r if r.__class__ is dict else {}).get("_grad")
        if g is not None and id(g) in ids:
            rec.graph_break(f"the step reads the .grad of a {tuple(g.shape)} tensor it reaches other than through its "
                            "arguments, closure, globals and their modules and optimizers, which a replay would read "
                            "from the capture's gradient")
            return


def check_orphans(rec: Any, pending: dict, owners: dict, states: dict, result: Any) -> None:
    """A graph break where an array the step read without a known source (``pending``: id -> (line, array, variable))
    that no tensor owns after the call, or the tensor that owns one (``owners``, not an optimizer's state among
    ``states``), is held by nothing but the recording and the call's result: its tensor existed before the call and
    left what held it, taken out of a container the guards do not fingerprint (``x = batches.get()`` of a
    ``queue.Queue``), so eager reads another tensor at the next call where a replay read the capture's as a
    constant.  (Arrays core code keeps, a cached mask, are held by their cache; the parameters of a model held deeper
    than the roots look, by their module.)"""
    orphans = [a for k, (_, a, _) in pending.items() if k not in owners and k not in states]
    late = [t for k, t in owners.items() if k not in states]
    todo = (*orphans, *late)
    if not todo:
        return
    inner = {id(todo), id(orphans), id(late), id(owners), id(rec.keep), id(rec.pending), id(rec.consts),
             *map(id, rec.pending), *map(id, pending.values()), *_containers(result)}
    for _, _, args, kwargs, _ in rec.info.values():  # (a launch's operands, nested lists of them)
        inner.update((id(args), id(kwargs), *[id(x) for x in (*args, *kwargs.values()) if isinstance(x, list)]))
    held = _held_elsewhere(todo, inner)
    for a in todo:
        if id(a) not in held:
            rec.graph_break(f"the step read a {tuple(getattr(a, 'shape', ()))} tensor that existed before the call "
                            "and that nothing holds after it but the result (taken out of a container: "
                            "`queue.get()`), which a replay would read as the capture's constant")
            return


def _held_elsewhere(objs: tuple, inner: set) -> set:
    """The ids of those of ``objs`` something refers to besides ``inner`` (the recording's, the result's containers)
    and frames (one walk of the heap for them all)."""
    ids = {id(o) for o in objs}
    held: set = set()
    for r in gc.get_referrers(*objs):
        if id(r) not in inner and not isinstance(r, FrameType):
            held.update(i for i in map(id, gc.get_referents(r)) if i in ids)
    return held


def _containers(obj: Any, depth: int = 3) -> list:
    """The ids of the tuples, lists and dicts of a call's result (those holding a tensor it returns)."""
    if not depth or not isinstance(obj, (tuple, list, dict)):
        return []
    vals = obj.values() if isinstance(obj, dict) else obj
    return [id(obj), *[i for v in vals for i in _containers(v, depth - 1)]]
