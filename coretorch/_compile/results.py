"""The result of a captured call as the replay rebuilds it: which tensors it returns (arguments and persistent state
itself, views with their bases and version counters, new leaves with their ``.grad``), and the containers and objects
holding them, of eager's kinds (see the README's "Results").  :class:`ResultEncoding` is the part of
:class:`~.capture.Recorder` that writes the result's source; the functions below are what that source calls."""
from __future__ import annotations

import copy
import dataclasses
import functools
import re
import types
from typing import Any

import numpy as np

from ..autograd.graph import _FREED, ACCUMULATE_LOCK, Node
from ..nn.modules.module import Module
from ..optim import optimizer as _optim
from ..tensor import Tensor, _make
from . import tailreads as _tail, versions as _versions
from .symbolic import Sym


class ResultEncoding:
    """The Recorder's methods that encode a call's result (its ``var``, ``paths``, ``persistent``, ``const`` and
    ``graph_break`` are the Recorder's)."""

    var: dict
    paths: list
    persistent: set
    arg_containers: frozenset  # ids of the argument containers (see argtree.py)
    arg_identity: bool  # set where the result returns one of them itself
    sym_token: int  # its Syms' owner (symbolic.ours)

    def const(self, obj: Any) -> str:
        raise NotImplementedError

    def graph_break(self, why: str) -> None:
        raise NotImplementedError

    def _held(self, obj: Tensor, args: list) -> str | None:
        """The source of a tensor the replay already holds: an argument or persistent state (eager returns it)."""
        for i, a in enumerate(args):
            if a is obj:
                return f"A[{i}]"
        for p in self.paths:
            if p.get() is obj:
                return p.expr
        return None

    def _made(self, obj: Tensor, args: list, made: dict) -> list | None:
        """The ``made`` entry of a tensor over a recorded array (None: an array made outside the recorded kernels).
        A view (``x[1:]``, ``y.t()``, ``x.detach()``) gets its base, and shares its version counter where eager's
        does: an in-place change of the base after the view was saved for a backward raises, as eager's."""
        m = made.get(id(obj))
        if m is not None:
            return m
        v = self.var.get(id(obj._data))
        if v is None:
            return None
        make = plain = f"MAKE({v}, {self.const(obj.dtype)}, {self.const(obj._be)}{_versions.made(obj)})"
        b, bm = obj._vbase, None
        if b is not None:
            base = self._held(b, args)
            if base is None:  # (the base of a view argument: ``x[1:]`` of an ``x`` that is a view of a root)
                base = next((f"ROOT(A[{i}])" for i, a in enumerate(args)
                             if isinstance(a, Tensor) and a._vbase is b and not a._det), None)
            if base is None and b._det:  # (``x.detach()[1:]``: a view of an argument detached in the call)
                base = next((f"A[{i}].detach()" if b._vc is a._vc else f"A[{i}].data" for i, a in enumerate(args)
                             if isinstance(a, Tensor) and a._data is b._data), None)
            if base is None:
                bm = self._made(b, args, made)
                if bm is not None:
                    bm[1] += 1
                    base = f"\0{bm[2]}\0"
            if base is not None:
                make = f"VIEW({v}, {self.const(obj.dtype)}, {self.const(obj._be)}, {base}, {obj._vc is b._vc}, " \
                    f"{obj._det}, {0 if obj._vc is b._vc else obj._vc[0]})"
        if obj._rg and obj.grad_fn is None:  # a new leaf that requires grad (torch.zeros_like(x).requires_grad_())
            make, plain = f"{make}.requires_grad_()", f"{plain}.requires_grad_()"
            g = obj._grad
            if g is not None:  # and its .grad, from a backward in the call
                gsrc = self._held(g, args)
                if gsrc is None:
                    gm = self._made(g, args, made) if type(g) is Tensor else None
                    if gm is None:
                        return None
                    gm[1] += 1
                    gsrc = f"\0{gm[2]}\0"
                make, plain = f"GRAD({make}, {gsrc})", f"GRAD({plain}, {gsrc})"
        # (a temporary base only this view uses is left out: nothing else the caller holds shares its counter)
        m = made[id(obj)] = [make, 0, len(made), plain, bm]
        return m

    def _encode_result(self, obj: Any, args: list, made: dict) -> str:
        """The result's source; ``made``: id -> [source, uses, index, source without the base, the base's entry]
        of the tensors it makes, each written
        ``NUL index NUL`` (no repr holds a NUL) and resolved by :func:`_tensors_made`."""
        if type(obj) is Sym and obj.owner != self.sym_token:  # (another capture's, in the user's state: a number)
            obj = float.__float__(obj)
        if type(obj) is _tail.Placeholder or type(obj) is Sym:  # a read at the return, a float argument's number
            return obj.name
        if isinstance(obj, Tensor):
            held = self._held(obj, args)
            if held is not None:
                return held
            if obj.grad_fn is not None and not _graph_consumed(obj.grad_fn):
                self.graph_break("the result's autograd graph is still needed (a replay returns tensors without one): "
                                 "call backward inside the compiled step, or compile the module")
                return "None"
            if type(obj) is not Tensor:
                self.graph_break(f"the result holds a new {type(obj).__name__} (a replay makes plain tensors)")
                return "None"
            m = self._made(obj, args, made)
            if m is None:
                self.graph_break("the result holds an array made outside the recorded kernels")
                return "None"
            if obj.grad_fn is not None and not m[0].startswith("CONSUMED("):
                # eager's result keeps its (consumed) graph: requires_grad, a grad_fn of its name, a second
                # backward raising; a plain tensor would also key the next call's requires_grad guard otherwise
                node = self.const(consumed_node_type(type(obj.grad_fn).__name__))
                m[0], m[3] = f"CONSUMED({m[0]}, {node})", f"CONSUMED({m[3]}, {node})"
            m[1] += 1
            return f"\0{m[2]}\0"
        if isinstance(obj, list) and id(obj) in self.persistent:  # a list that outlives the call: itself
            self.arg_identity |= id(obj) in self.arg_containers
            return self.const(obj)
        if isinstance(obj, (tuple, list)):
            inner = ", ".join(self._encode_result(o, args, made) for o in obj)
            tup = f"({inner},)" if inner else "()"  # (an empty one: ``x.sum().shape``, ``()``)
            if isinstance(obj, tuple) and type(obj) is not tuple:  # a named tuple, or another subclass (torch.Size)
                named = hasattr(type(obj), "_fields")
                return f"{self.const(type(obj))}({inner})" if named else f"{self.const(type(obj))}({tup})"
            return tup if isinstance(obj, tuple) else f"[{inner}]"
        if obj is None or type(obj) in (bool, int, str):
            return repr(obj)
        for i, a in enumerate(args):  # an argument object returned (a config, a list of tensors): eager's own
            if a is obj:
                return f"A[{i}]"
        if id(obj) in self.persistent:  # an object that outlives the call (a module's state dict): itself
            self.arg_identity |= id(obj) in self.arg_containers
            return self.const(obj)
        if isinstance(obj, dict):
            inner = ", ".join(f"{self.const(k)}: {self._encode_result(v, args, made)}" for k, v in obj.items())
            # a subclass (OrderedDict) keeps its type (it was rebuilt as a plain dict), and its attributes that hold
            # tensors get this call's too (transformers' ModelOutput: an OrderedDict dataclass, its fields both)
            if type(obj) is dict:
                return "{" + inner + "}"
            attrs = ", ".join(f"{k!r}: {self._encode_result(v, args, made)}" for k, v in vars(obj).items()
                              if _has_tensor(v, 2)) if _holds_tensor(obj) else ""
            return f"REDICT({self._template(obj)}, {{{inner}}}{', {' + attrs + '}' if attrs else ''})"
        # (the templates are copies: the caller may change the capture call's own result)
        if isinstance(obj, (set, np.ndarray, bytearray)):  # mutable: a new one each call, as eager's
            return f"CP({self.const(obj.copy())})"
        if _holds_tensor(obj) or _record(obj):  # (a new namespace or dataclass of numbers: a new one each call too)
            # an output object made by the call (a dataclass, a SimpleNamespace): the replay returned the capture's
            # object, with the capture's tensors; now a copy of it with this call's values
            inner = ", ".join(f"{k!r}: {self._encode_result(v, args, made)}" for k, v in vars(obj).items())
            return f"REOBJ({self._template(obj)}, {{{inner}}})"
        if _lazy(obj):
            self.graph_break("the result is a generator, an iterator or a closure the call made (a replay would return "
                             "the capture's: used up, or over the capture's values)")
            return "None"
        return self.const(obj)

    def _template(self, obj: Any) -> str:
        """A copy of a result object the replay rebuilds from (one that cannot be copied: a graph break)."""
        try:
            return self.const(copy.copy(obj))
        except Exception:  # noqa: BLE001 - any failure of a user class's copy protocol
            self.graph_break(f"the result holds a {type(obj).__name__} that cannot be copied")
            return "None"


def _record(obj: Any) -> bool:
    """A namespace or dataclass instance with a ``__dict__`` (one the call made: the caller may change it)."""
    return (type(obj) is types.SimpleNamespace or dataclasses.is_dataclass(obj) and not isinstance(obj, type)) and \
        type(getattr(obj, "__dict__", None)) is dict


def _lazy(obj: Any) -> bool:
    """A generator, a coroutine or an iterator (``map``, ``iter(list)``: eager returns a fresh one each call; the
    function's body may not even have run), or a function whose closure the call filled, a bound method or a
    partial (over the call's tensors)."""
    if isinstance(obj, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)) or \
            hasattr(type(obj), "__next__"):
        return True
    return isinstance(obj, types.FunctionType) and bool(obj.__closure__) or \
        isinstance(obj, (types.MethodType, functools.partial))  # ((x * 2).add, partial(f, x * 2))


def _holds_tensor(obj: Any, depth: int = 3) -> bool:
    """Whether a result object with attributes (not a module, an optimizer, a function or a class) holds a tensor
    (in an attribute, a list, tuple or dict of them, or such an object, ``depth`` levels down)."""
    d = getattr(obj, "__dict__", None)
    if type(d) is not dict or isinstance(obj, (type, types.ModuleType, types.FunctionType, Module, _optim.Optimizer)):
        return False
    return depth > 0 and any(_has_tensor(v, depth - 1) for v in d.values())


def _has_tensor(v: Any, depth: int) -> bool:
    if isinstance(v, Tensor):
        return True
    if isinstance(v, (list, tuple, dict)):
        return depth > 0 and any(_has_tensor(x, depth - 1) for x in (v.values() if isinstance(v, dict) else v))
    return _holds_tensor(v, depth)


def _rebuilt_dict(template: dict, items: dict, attrs: dict | None = None) -> dict:
    """A dict subclass of the result (see Recorder._encode_result): a copy of the capture's, with this call's items
    (and attributes)."""
    out = copy.copy(template)
    dict.clear(out)
    dict.update(out, items)
    if attrs:
        out.__dict__.update(attrs)
    return out


def _rebuilt_object(template: Any, attrs: dict) -> Any:
    """An object of the result (see Recorder._encode_result): a copy of the capture's, with this call's values."""
    out = copy.copy(template)
    out.__dict__.update(attrs)
    return out


class ConsumedNode(Node):
    """The ``grad_fn`` of a replay's result whose graph the call's backward consumed (a training step's ``loss``):
    eager returns the loss with its graph, freed, so the replay's keeps ``requires_grad``, ``is_leaf`` False and the
    node's name, and a backward through it raises eager's "backward through the graph a second time" error."""

    _saved = _FREED

    def backward(self, *grads: Any) -> Any:
        return self.saved()  # (raises: the saved tensors are freed)


_CONSUMED_TYPES: dict = {}


def consumed_node_type(name: str) -> type:
    """A :class:`ConsumedNode` class named as the captured result's node (``MseLossBackward0``), made once per name."""
    cls = _CONSUMED_TYPES.get(name)
    if cls is None:
        cls = _CONSUMED_TYPES[name] = type(name, (ConsumedNode,), {"__module__": __name__})
    return cls


def graph_consumed(fn: Any) -> bool:
    """:func:`_graph_consumed` at a replay's check: a replay's stand-in at once, eager's graph walked."""
    return isinstance(fn, ConsumedNode) or _graph_consumed(fn)


def with_consumed_graph(t: Tensor, node_type: type) -> Tensor:
    """A replay's returned tensor whose captured graph was consumed by the call's backward (see ConsumedNode)."""
    t._rg = True
    t._gf = node_type()
    return t


def _with_grad(t: Tensor, grad: Tensor) -> Tensor:
    """A replay's returned leaf with its ``.grad`` (see Recorder._made)."""
    t._grad = grad
    return t


def _new_grad(owner: Tensor, grad: Tensor) -> Tensor:
    """A replay's first gradient of ``owner`` (its guards saw ``.grad`` None): stored, or, where another thread's
    backward stored one since, added into that one in place, as eager's AccumulateGrad does holding the same lock
    (stored over it, that thread's gradient was lost); returns the gradient now held."""
    with ACCUMULATE_LOCK:
        old = owner._grad
        if old is None:
            owner._grad = grad
            return grad
        be = old._be
        if be.has("iadd") and old.dtype is grad.dtype and old._data.shape == grad._data.shape:
            be.iadd(old._data, grad._data)
        else:
            be.assign_(old._data, be.add(old._data, grad._data))
        old._vc[0] += 1
        return old


def _root(t: Tensor) -> Tensor:
    """The tensor a view of ``t`` gets as its base (its root, as shape._wrap_view: at a replay, the argument may be
    no view, then it is the root itself)."""
    return t._vbase if t._vbase is not None and not t._det else t


def _view(data: Any, dtype: Any, table: Any, base: Tensor, shared: bool, det: bool, version: int = 0) -> Tensor:
    """A replay's returned view of ``base`` (see Recorder._made); ``det``: ``x.detach()``, no view for autograd;
    ``version``: the count of a counter of its own (``shared`` False), as the call left it."""
    t = _make(data, dtype, table, base=base, version=base._vc if shared else [version])
    if det:
        t._det = True
    return t


def _tensors_made(src: str, made: list) -> str:
    """The result's source with the tensors it makes (see Recorder._encode_result): one used once is made in place;
    one used twice (``(y, y)``; a returned view's base) is made once, first, and named: eager returns one tensor, so
    an in-place change through one is seen through the other (each place used to make a tensor of its own)."""
    for m in made:
        if m[4] is not None and m[4][1] == 1:
            m[0] = m[3]
    for m in made:
        if m[4] is not None and m[4][1] == 1:
            m[4][1] = 0

    def expand(text: str) -> str:
        return re.sub("\0(\\d+)\0", lambda m: f"r{m.group(1)}" if made[int(m.group(1))][1] > 1
                      else expand(made[int(m.group(1))][0]), text)
    named = [f"(r{k} := {expand(m[0])})" for k, m in enumerate(made) if m[1] > 1]
    return f"({', '.join(named)}, {expand(src)})[-1]" if named else expand(src)


def _graph_consumed(fn: Any, limit: int = 100000) -> bool:
    """Whether a backward already ran through the graph of ``fn`` (some node's saved tensors are freed): then a
    replay returning the result without a graph is what the caller can still use."""
    seen: set = set()
    todo = [fn]
    while todo and len(seen) < limit:
        n = todo.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if getattr(n, "_saved", ()) is _FREED:
            return True
        todo.extend(f for f, _ in getattr(n, "next_functions", ()) or ())
    return False
