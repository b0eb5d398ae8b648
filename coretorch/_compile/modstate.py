"""The guards' keys of the modules, optimizers and tensors a step reaches (:func:`state_of`, :func:`key`): the
modules' flags and user attributes, parameters', buffers' and hooks' keys, the classes' globals their methods read,
and the check that a call wrote no module attribute the key holds.  Split from :mod:`.guards` (which keys the
function's own roots, containers and code): nothing there depends on this module."""
from __future__ import annotations

from types import FunctionType as _FunctionType
import sys
from typing import Any

import numpy as np

from ..nn.modules import _hooks as _mh
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from .frames import _internal
from .owners import _memory_of
from . import attrs as _attrs, heldmethods as _heldmethods, reuse as _reuse
from .guards import (_SCALAR_SET, _callable_key, _holds_opened, _leaf_key, _opened, _training, _user_class,
                     attribute_names, contents, global_names, root_key, roots)
from .keyvalues import (_NDARRAY_MAX, BY_VALUE as _BY_VALUE, _ndarray_key, hooks_key as _hooks_key, ident as _ident,
                        param_hooks as _param_hooks, user_attrs, _TENSOR_OWN)
from .modes import modes as _modes


def state_of(objs: list) -> tuple[list, list, list, list, list]:
    """(modules, params, buffers as (dict, name), other tensors, optimizers) reachable from ``objs`` (containers one
    level deep)."""
    modules: dict[int, Module] = {}
    opts: dict[int, Optimizer] = {}
    tensors: dict[int, Tensor] = {}

    held: list = []  # (modules in a plain list or dict attribute: see heldmethods.module_containers)

    def add(o: Any, depth: int) -> None:
        if isinstance(o, Module):
            for m in [m for m in o.modules() if modules.setdefault(id(m), m) is m and id(m) not in seen]:
                seen.add(id(m))
                held.extend(cs := _heldmethods.module_containers(m))
                for x in [x for c in cs for x in _heldmethods.entries(c)]:
                    add(x, 0)
        elif isinstance(o, Optimizer):
            opts.setdefault(id(o), o)
        elif isinstance(o, Tensor):
            tensors.setdefault(id(o), o)
        elif depth and isinstance(o, (list, tuple)):
            for x in o:
                add(x, depth - 1)
        elif depth and isinstance(o, dict):
            for x in list(o.values()):  # (a snapshot: another thread may add an entry meanwhile)
                add(x, depth - 1)
    seen: set = set()
    for o in objs:
        add(o, 1)
    params: dict[int, Tensor] = {}
    buffers: list = []
    for m in modules.values():
        for p in m._parameters.values():
            if p is not None:
                params.setdefault(id(p), p)
        for k in m._buffers:
            buffers.append((m._buffers, k))
    for o in opts.values():
        for g in o.param_groups:
            for p in g["params"]:
                params.setdefault(id(p), p)
    plain = [t for t in tensors.values() if id(t) not in params]
    found = _Modules(modules.values())
    found.held = held
    return found, list(params.values()), buffers, plain, list(opts.values())


def structure(modules: list, opts: list | tuple = ()) -> tuple:
    """The identity of every submodule and parameter of the modules found and of the optimizers' parameters, the
    buffers' names: one added, replaced or removed (``model.fc.bias = Parameter(...)``, ``group["params"][i] = p``,
    ``register_buffer``) changes it, and the state is looked up again (the replay would update the old tensors)."""
    return (tuple([id(c) for m in modules for c in m._modules.values()]),
            tuple([id(p) for m in modules for p in m._parameters.values()] + [b for m in modules for b in m._buffers]),
            tuple([id(p) for o in opts for g in o.param_groups for p in g["params"]]),
            tuple([id(x) for c in getattr(modules, "held", ()) for x in _heldmethods.entries(c)]))


def _aliases(lv: list) -> tuple:
    """Which tensor arguments share one array (the replay reads each argument's array through its first holder),
    which share memory and where in it, relative to the first (``x[1:]`` and ``x[:-1]`` against ``x[:3]`` and
    ``x[3:]``: eager's overlap checks, such as ``add_``'s partial-overlap error, ran at the capture only)."""
    arrs = [a._data for a in lv if isinstance(a, Tensor)]
    if len(arrs) < 2:
        return ()
    mems = [id(d if m is None else m) for d in arrs for m in (_memory_of(d),)]
    if len(set(mems)) == len(mems):
        return ()
    ids, offs = [id(d) for d in arrs], [a.storage_offset() for a in lv if isinstance(a, Tensor)]
    return tuple(ids.index(i) for i in ids), tuple((j, o - offs[j]) for o, j in zip(offs, map(mems.index, mems)))


class _Modules(list):  # state_of's modules, with what _module_numbers found (freed with it: no cache by id)
    __slots__ = ("numbers", "held")
    held: list  # (see state_of)


_BASE_ATTRS: set = set()  # the attributes every Module has (its parameter, buffer, module and hook dicts)


_GONE = object()  # a module attribute deleted since its names were read
_GONE_ID = id(_GONE)


def _module_numbers(modules: list) -> tuple:
    """The user attributes of every module: Python numbers by value (``Dropout.p``, ``LayerNorm.eps``, a user
    module's ``self.temperature``, ``training``), anything else by identity and, for containers and plain objects,
    with :func:`contents` (``self.mask = other_tensor``, ``self.scales[1] = 5.0``, ``self.act = F.gelu``), and how
    many attributes each has (``m.scale = 2.0`` over a class attribute): a change captures again (not the old one)."""
    e: Any = getattr(modules, "numbers", None)
    dicts = e[0] if e is not None else [m.__dict__ for m in modules]
    lens = tuple(map(len, dicts))
    raw = [d.get(k, _GONE) for d, k in e[2]] if e is not None and e[1] == lens else None
    if raw is None or _GONE_ID in map(id, raw):  # (the same count, a name gone: ``del m.a; m.b = 1.0``)
        if not _BASE_ATTRS:
            _BASE_ATTRS.update(k for k in Module().__dict__ if k != "training")
        pairs = [(d, k) for d in dicts for k in d if k not in _BASE_ATTRS]
        e = modules.numbers = (dicts, lens, pairs, *(g := _class_globals(modules)),  # type: ignore[attr-defined]
                               [None, lambda v: _object_key(v, g[1]), _opened, lambda o: root_key(o, g[1]), None])
        raw = [d.get(k) for d, k in e[2]]
    vals = _reuse.module_key(raw, e[5])  # (with their classes; the last call's kept)
    if e[3]:  # the globals the user module classes' methods read (a global SCALE or CFG["s"] in forward)
        return lens, vals, _reuse.globals_key([d.get(n) for d, n in e[3]], e[5])
    return lens, vals


def module_numbers(modules: list) -> tuple:
    """What :func:`key` holds of the modules' user attributes (see :func:`_module_numbers`), and the state their
    hooks' functions reach (:func:`_hook_state`), taken before a capture runs the function."""
    return _module_numbers(modules), _hook_state(modules)


_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _hook_state(modules: list) -> tuple:
    """:func:`root_key` of what each module hook (and global one) that is a Python function reaches: its closure
    and globals (``acts[name] = out.detach()``, ``calls[0] += 1`` in a forward hook)."""
    fns = [h for m in modules for n in _HOOK_DICTS for h in m.__dict__[n].values()]
    fns += [h for g in _GLOBAL_HOOKS for h in g.values()]
    return tuple([root_key(roots(f, (), {}), attribute_names(f)) for f in fns])


def check_module_writes(rec: Any, modules: list, before: tuple, where: str | None = None) -> None:
    """A graph break where the captured call assigned a module attribute (``self.h = h.detach()``, ``self.phase =
    1 - self.phase``, ``self.calls += 1``), a global its class reads, or state a hook of the modules reaches
    (``acts[name] = out.detach()``): a replay does not repeat Python assignments, so the hook's dict kept the
    capture's tensors, and where the key came round to an earlier capture's (the old value back, a recycled ``id``)
    the replay left the attribute as it was and every later call replayed that one capture (a GRU's hidden state
    frozen).  ``where``: the break's place (the call's function, as found when it returned)."""
    now = module_numbers(modules)
    if now != before and not _attrs.only_attributes(rec, modules, now, before):
        rec.graph_break("the call assigns a module attribute, a global its class reads, or state a module hook "
                        "reaches, which a replay would not repeat", where)


def _object_key(v: Any, names: tuple = ()) -> Any:
    """A module attribute that is no Python number: its key, a container's or plain object's and a function's reads
    (a tensor: see attrs.py)."""
    if _attrs.eligible(v) or _attrs.eligible_tuple(v):
        return _attrs.key(v)
    if v.__class__ is np.ndarray and v.nbytes <= _NDARRAY_MAX:  # (``self.cw``, read on the host: by its values)
        return id(v), _ndarray_key(v)
    if _opened(v) or isinstance(v, tuple) and _holds_opened(v):
        return id(v), contents(v, names)
    return id(v) if _BY_VALUE.get(v.__class__) is False or isinstance(v, tuple) else \
        (_ident(v), _callable_key(v)) if v.__class__ is _FunctionType else _ident(v)


def _class_globals(modules: list) -> tuple[list, tuple]:
    """``(namespace dict, name)`` of the globals the methods of the modules' own classes (not coretorch's) read,
    and the attribute names their code reads (see :func:`global_names`, :func:`attribute_names`)."""
    refs: list = []
    names: set = set()
    seen: set = set()
    done: set = set()
    for m in modules:
        for cls in type(m).__mro__:
            if cls in done or cls is object:
                continue
            done.add(cls)
            for v in list(vars(cls).values()):
                f = v.fget if isinstance(v, property) else getattr(v, "__func__", v)
                if isinstance(f, _FunctionType) and not _internal(f.__code__.co_filename):
                    refs.extend(global_names(f, seen=seen))
                    names.update(attribute_names(f))
    for f in _heldmethods.methods(modules, _user_class, names):  # what held objects run (heldmethods.py)
        refs.extend(global_names(f, seen=seen))
        names.update(attribute_names(f))
    own = [c for c in done if c is not object and c.__module__ and not _internal(
        getattr(sys.modules.get(c.__module__), "__file__", None) or "")]
    # (the user classes' methods, in each of them: ``Net.forward = patched`` after the capture, on the class or a
    # subclass, ran the old forward in the replay)
    fns = sorted({n for c in own for n, v in vars(c).items()
                  if isinstance(v, (_FunctionType, property, staticmethod, classmethod))})
    for cls in own:  # class attributes the methods read through self (``M.K = 3.0``)
        d = vars(cls)
        refs.extend((d, n) for n in sorted(names) if d.get(n, d).__class__ in _SCALAR_SET)
        refs.extend((d, n) for n in fns)
    uniq = list({(id(d), n): (d, n) for d, n in refs}.values())
    return uniq, tuple(sorted(names))


def _param_key(p: Any) -> tuple:
    # shape, dtype and device (module.double(), module.to("opencl"): eager raises on the mixed product, a replay must
    # not compute it), and requires_grad (a frozen parameter gets no gradient)
    d = p._data
    return (d.shape, d.dtype, id(p._be), p._rg, None if p.__dict__.keys() <= _TENSOR_OWN else user_attrs(p))


def _buffer_key(b: Any) -> Any:
    return None if b is None else _param_key(b)


_GLOBAL_HOOKS = (_mh._global_forward_pre_hooks, _mh._global_forward_hooks, _mh._global_backward_pre_hooks,
                 _mh._global_backward_hooks)


def _hooks(modules: list) -> tuple:
    """The module hooks in force (the modules' forward/backward hooks and the global ones): they ran at the capture
    only, so one registered or removed after it captures again (a replay ignored a new hook).  The global ones count
    for a compiled module too: its wrapper's own call runs them for the root, but its submodules' calls ran them
    inside the capture (``register_module_forward_hook`` after the capture of a compiled Sequential was ignored)."""
    out: list[tuple] = []
    for i, m in enumerate(modules):
        d = m.__dict__
        if d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_pre_hooks"] or d["_backward_hooks"]:
            out.append((i, *[_hooks_key(d[n], _callable_key) for n in _HOOK_DICTS]))  # (their numbers too)
    out += [(-1, _hooks_key(h, _callable_key)) for h in _GLOBAL_HOOKS if h]
    return tuple(out)


def key(lv: list, modules: list, params: list, buffers: list | tuple = (), plain: list | tuple = (),
        ids: bool = True) -> tuple:
    """The guard key of a call; ``buffers`` ((dict, name), read at the call: one reassigned) and ``plain`` (other
    tensors the roots hold): their shapes, dtypes and devices as the parameters' (``m.buf = m.buf.to("opencl")``,
    ``w.data = other``: the replay loads their arrays at the call; ``ids`` False: the caller keys structure())."""
    # each parameter's shape, dtype and requires_grad once: ``params`` (a step's, from state_of) holds every module
    # parameter and the optimizers' others; a compiled module passes none, its modules' parameters are keyed
    keyed = params or [p for m in modules for p in m._parameters.values() if p is not None]
    return (tuple([_leaf_key(a) for a in lv]), _aliases(lv), (_modes(), _attrs.cache_key()),
            tuple(map(_training, modules)),
            _hooks(modules),
            _module_numbers(modules),
            tuple([id(p) for m in modules for p in m._parameters.values()]) if ids else None,
            tuple([_param_key(p) for p in keyed]), tuple([p._grad is None for p in params]),
            _param_hooks([*params, *[a for a in (*plain, *lv) if isinstance(a, Tensor) and a._rg]], _callable_key),
            tuple([_buffer_key(d.get(k)) for d, k in buffers]),  # (hooks: the others' too, ``x.register_hook``)
            tuple([_param_key(t) for t in plain]), tuple([t._grad is None for t in plain]))
