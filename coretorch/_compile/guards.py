"""Guards: what must be equal for a recorded step to replay (PyTorch's dynamo guards, kept small)."""
from __future__ import annotations

from array import array as _array
from collections import deque as _deque
from contextvars import ContextVar as _ContextVar
from queue import Queue as _Queue
import dis
import numbers as _numbers
from os import _Environ
from functools import partial as _partial
from operator import attrgetter
from types import FunctionType as _FunctionType, MethodType as _MethodType, ModuleType as _ModuleType
import sys
from typing import Any

import numpy as np

from ..device import device as _Device
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from ..nn.parameter import Parameter
from .frames import _internal
from . import dunders as _dunders, weak as _weakref
from .dunders import code_names as _code_names, global_loads as _global_loads
from .held import held as _held, helper_cells, helpers as _helpers, methods_named as _methods_named
from .slots import slot_names as _slot_names
from .strides import loose
from .argtree import record as _record
from .keyvalues import (_NDARRAY_MAX, _UNSET, BY_VALUE as _BY_VALUE, _Ident, _ndarray_digest, _ndarray_key, _sc, _value,
                        ident as _ident, long_key, mutable_key, user_attrs)

_SCALARS = (bool, int, float, str, type(None))
_NOT_ROOTS = (Tensor, *_SCALARS, np.generic, _numbers.Number, _Device, slice, range)  # (values: see _leaf_key)
_SCALAR_SET = frozenset(_SCALARS)
_CORE_TENSORS = frozenset((Tensor, Parameter))
_training = attrgetter("training")


def leaves(args: tuple, kwargs: dict, keep: frozenset = frozenset()) -> list:
    """The arguments flattened (lists, tuples and dicts opened, but those in ``keep``: ids of lists the function only
    appends to, see :func:`appended`): their tensors are the replay's inputs."""
    if not kwargs and not any(isinstance(a, (list, tuple, dict)) or _record(a) for a in args):
        return list(args)
    out: list = []

    def walk(o: Any) -> None:
        if id(o) in keep:
            out.append(o)
        elif isinstance(o, (list, tuple)):
            for x in o:
                walk(x)
        elif isinstance(o, dict):
            for k in sorted(o, key=repr):
                walk(o[k])
        elif _record(o):  # (a dataclass or namespace batch: argtree.record)
            for x in o.__dict__.values():
                walk(x)
        else:
            out.append(o)
    walk(args)
    walk(kwargs)
    return out


def _leaf_key(a: Any) -> Any:
    if isinstance(a, Tensor):
        d = a._data
        # (whether .grad is None: a backward in the step creates it or accumulates into it; a step reads or assigns
        # it, with or without requires_grad; whether it is a leaf: ``x.is_leaf``; ``x._base is None``: see _lookup)
        st = getattr(d, "strides", None)
        if st is not None and 1 in d.shape:  # (a size-1 dim's stride addresses nothing: strides.py)
            st = loose(d.shape, st)
        return (d.shape, st, a.dtype, id(a._be), a._grad is None, a._rg, type(a), a._gf is None,
                user_attrs(a))  # (x.scale = 2.0: see keyvalues.user_attrs)
    if isinstance(a, _SCALARS):
        return (type(a), a if a.__class__ is not float or a and a == a else _sc(a))
    if isinstance(a, np.ndarray):  # its values are read on the host (np.array copies, from_numpy's snapshot)
        return ("ndarray", id(a), _ndarray_key(a) if a.nbytes <= _NDARRAY_MAX else _ndarray_digest(a))
    if isinstance(a, (_FunctionType, _partial, _MethodType)) or callable(a) and _config_like_callable(a):
        # a function argument (f(x, act=lambda t: t * k), a partial, a bound method, a callable object): the numbers
        # it reads (its closure, defaults, globals, a partial's arguments, its object's attributes) were baked into
        # the replay, and a new one at a freed one's address had the old one's key
        return ("callable", _Ident(a), _callable_key(a))
    if (a.__class__ is slice or a.__class__ is range) and all(
            v.__class__ in _SCALAR_SET for v in (a.start, a.stop, a.step)):  # (x[s], s = slice(0, n) made each call)
        return (a.__class__, a.start, a.stop, a.step)
    if isinstance(a, (np.generic, _numbers.Number, _Device)):
        # a value (np.float32(0.7), np.int64 from an array, Fraction, torch.device): by its value, not its id (a
        # new one at a freed one's address replayed the old value)
        try:
            return (type(a), (k := _sc(a)), hash(k))
        except TypeError:
            pass
    return _Ident(a)


_CODE_GLOBALS: dict[int, tuple] = {}  # id(code) -> (code, the names it and its nested code read; None: coretorch's)


def _config_like_callable(a: Any) -> bool:
    """A callable object of a user class with attributes (not a module, an optimizer, a class or a tensor)."""
    return isinstance(getattr(a, "__dict__", None), dict) and not isinstance(a, (type, Tensor, Module, Optimizer))


def _callable_key(f: Any, depth: int = 2) -> Any:
    """What a function argument's behaviour depends on besides its code (see _leaf_key): Python numbers by value,
    anything else by identity."""
    if depth == 0:
        return id(f)
    if isinstance(f, _partial):
        return (tuple(map(_value, f.args)), tuple((k, _value(v)) for k, v in f.keywords.items()),
                _callable_key(f.func, depth - 1))
    out: list = []
    s = getattr(f, "__self__", None)
    if s is not None and _config_like_callable(s):  # a bound method of a user object: the object's attributes
        out.append(tuple((k, _value(v)) for k, v in vars(s).items()))
    f = getattr(f, "__func__", f)
    code = getattr(f, "__code__", None)
    if code is None:
        if _config_like_callable(f):  # a callable object: its attributes, and its class's __call__
            out.append(tuple((k, _value(v)) for k, v in vars(f).items()))
            out.append(_callable_key(getattr(type(f), "__call__", None), depth - 1))
        return tuple(out)
    entry = _CODE_GLOBALS.get(id(code))
    if entry is None or entry[0] is not code:
        if len(_CODE_GLOBALS) > 4096:
            _CODE_GLOBALS.clear()
        # (coretorch's own functions, F.relu: their identity says it)
        entry = _CODE_GLOBALS[id(code)] = (code, None if _internal(code.co_filename) else
                                           tuple(sorted(_code_names(code, set()))))
    names = entry[1]
    if names is None:
        return id(f)

    def value(v: Any) -> Any:  # (a dict, list or config object it reads: its entries too, as root_key's)
        return (v.__class__, v if v.__class__ is not float or v and v == v else _sc(v)) \
            if v.__class__ in _SCALAR_SET else _entry(v, names, 2)
    cells = []
    for c in f.__closure__ or ():
        try:
            cells.append(value(c.cell_contents))
        except ValueError:  # an empty cell
            cells.append(None)
    g = f.__globals__
    out.extend((id(code), tuple(cells), tuple(map(value, f.__defaults__ or ())),
                tuple((k, value(v)) for k, v in (f.__kwdefaults__ or {}).items()),
                tuple([value(g[n]) for n in names if n in g])))
    return tuple(out)


def _called(fn: Any) -> Any:
    """What a call of ``fn`` runs: a compiled callable object's bound ``__call__`` (its attributes are then read as
    a bound method's ``self``'s: ``torch.compile(loss_obj)``, ``loss_obj.eps = 0.1``), else ``fn``."""
    if isinstance(fn, (_FunctionType, _partial, _MethodType)) or not _callable_object(fn):
        return fn
    return fn.__call__


def roots(fn: Any, args: tuple, kwargs: dict, gnames: list | None = None) -> list:
    """Objects the function can reach: non-tensor arguments, a bound method's self (and its attributes), closure
    cells, the globals it names (``gnames``: :func:`global_names`, when already known)."""
    objs: list = [fn]
    fn = _called(fn)
    if kwargs:
        args = (*args, *kwargs.values())
    for a in args:
        if not isinstance(a, _NOT_ROOTS):
            objs.append(a)
            if isinstance(a, type) and _user_class(a):  # a user class passed (a compiled classmethod's ``cls``):
                # the Python numbers of its namespaces (``cls.K = 7.0``: a replay reused the number it baked in)
                objs.extend(v for c in a.__mro__[:-1] for v in vars(c).values() if v.__class__ in _SCALAR_SET)
    f = fn
    if isinstance(f, _partial):  # functools.partial(step, scale=2.0): its bound arguments, then the function's
        objs.extend((f.args, f.keywords))
        f = f.func
        objs.append(f)
    if hasattr(f, "__func__"):
        s = f.__self__
        objs.append(s)
        if hasattr(s, "__dict__") and not isinstance(s, Optimizer):  # (an optimizer's numbers: replay inputs)
            objs.extend(vars(s).values())
        f = f.__func__
    code = getattr(f, "__code__", None)
    if code is not None:
        if f.__defaults__:  # default arguments (``acc=[]`` the step appends to, ``f.__defaults__ = (5.0,)``)
            objs.extend(f.__defaults__)
        if f.__kwdefaults__:
            objs.extend(f.__kwdefaults__.values())
        for cell in f.__closure__ or ():
            try:
                objs.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        objs.extend(d[n] for d, n in (global_names(f) if gnames is None else gnames) if n in d)
    objs.extend(_held(objs[1:]))  # (the models and optimizers of helpers and plain objects: see held.py)
    subs = None
    for o in objs if not args else (*args, *objs):
        if isinstance(o, Tensor) and o.__class__ not in _CORE_TENSORS:  # a user Tensor subclass (an argument's,
            subs = (subs or set()) | {o.__class__}  # a closure's): what its methods (``__torch_function__``) read
    if subs:
        for c in sorted(subs, key=id):
            objs.extend(d[n] for d, n in _subclass_refs(c) if n in d)
    return objs


_CONTENTS_MAX = 256  # entries of a container or object fingerprinted by root_key (larger ones: keyvalues.long_key)
_NESTED_MAX = 16  # entries of a nested container fingerprinted (larger ones: keyvalues.long_key)
_ENTRY_ARRAY_MAX = 1 << 16  # bytes of a numpy array among a container's entries keyed by its values (larger: by id;
# a list of images held in the closure is data, copied at every call)
_OPEN: dict[type, bool] = {}  # class -> whether root_key fingerprints its instances' contents


_SUBCLASS_REFS: dict[type, tuple] = {}  # user Tensor subclass -> (namespace, name) its own methods read


def _subclass_refs(cls: type) -> tuple:
    """``(namespace, name)`` of the globals the methods of a user Tensor subclass read (``__torch_function__``
    runs at every op of the capture: a counter or a scale it reads changed the kernels' numbers, and a replay
    reused the capture's) and of its classes' own attributes (see :func:`global_names`)."""
    r = _SUBCLASS_REFS.get(cls)
    if r is None:
        refs: list = []
        seen: set = set()
        for c in cls.__mro__:
            if not _user_class(c):
                continue
            d = vars(c)
            refs.extend((d, n) for n in d if d[n].__class__ in _SCALAR_SET and not n.startswith("__"))
            for v in list(d.values()):
                f = getattr(v, "__func__", v)
                if isinstance(f, _FunctionType) and not _internal(f.__code__.co_filename):
                    refs.extend(global_names(f, seen=seen))
        r = _SUBCLASS_REFS[cls] = tuple(refs)
    return r


def _opened(o: Any) -> bool:
    """Whether :func:`contents` looks into ``o`` (decided once per class): dicts, lists and plain objects with
    attributes (:func:`_config_like`), not tuples (keyed by their entries, see keyvalues.ident), tensors, modules,
    optimizers, functions, classes or Python modules."""
    c = o.__class__
    r = _OPEN.get(c)
    if r is None:
        if len(_OPEN) > 1024:
            _OPEN.clear()
        r = _OPEN[c] = isinstance(o, (dict, list, _deque, set, bytearray, _array, memoryview)) or (
            _config_like(o) and not isinstance(o, (tuple, _ModuleType))) or (
            bool(_slot_names(c)) and not isinstance(o, (tuple, type, Tensor, Module, Optimizer)))
    return r


def _holds_opened(t: tuple) -> bool:
    """Whether a tuple (a named tuple too) holds a list, dict or plain object (``cfg = ([1.0], {"k": 2.0})``,
    ``Cfg(lrs=[...])``, ``(model_cfg, train_cfg)``): keyed by its entries' identities (keyvalues.ident), their
    contents changed in place replayed the old numbers; such a tuple's entries are fingerprinted as a list's."""
    return len(t) <= _NESTED_MAX and any(map(_opened, t))


def contents(o: Any, names: tuple = (), lens: dict | None = None, depth: int = 2) -> Any:
    """A fingerprint of a dict's or list's entries, or of the attributes of a plain object among ``names`` (those
    the function's code reads: a scheduler's or an event's own state is not the function's input): Python numbers,
    strings and None by value, anything else by identity, and dicts, lists and plain objects among them the same
    way ``depth`` levels down (``cfg["scale"] = 3.0``, ``state["w"] = new_tensor``, ``opts.scale = 3.0``,
    ``cfg["opt"]["lr"] = 0.1``: the replay baked the old number in, or loads the old tensor).  A list's entries up
    to the length it had when ``lens`` (id -> length) first saw it, and of those appended since only the ones that
    are no Python number: a counter the function appends numbers to (a Python side effect, run at the capture
    only) keeps its key, a tensor appended (``buf[-1]``) changes it.  Past ``_CONTENTS_MAX`` entries (``_NESTED_MAX``
    for a nested one), the length only."""
    scalars = _SCALAR_SET
    most = _CONTENTS_MAX if depth >= 2 else _NESTED_MAX
    if o.__class__ is _Environ:  # os.environ (os.getenv): the variables by value (a replay reused the value read)
        return tuple(vars(o)["_data"].items())
    if isinstance(o, (set, bytearray, _array, memoryview)):  # (an array.array or memoryview by its bytes)
        return mutable_key(o)
    if isinstance(o, (_deque, _Queue)):  # a window the loop or the step appends to (``maxlen``), a queue.Queue the
        # step takes a batch from: every entry, as a list read (``q.get()``: the call changed it, a graph break)
        return (getattr(o, "maxlen", None), contents(list(o.queue if isinstance(o, _Queue) else o), names, None, depth))
    if isinstance(o, (list, tuple)):  # (a tuple: see _holds_opened)
        n = len(o)
        tail: tuple = ()
        if lens is not None:
            n0 = lens.get(id(o))
            if n0 is None:
                if len(lens) > 1024:
                    lens.clear()
                n0 = lens[id(o)] = n
            if n > n0:  # appended since: the tensors and objects only (buf[-1]; a counter's numbers keep the key)
                tail = tuple([id(v) for v in o[n0:] if v.__class__ not in scalars])
                o = o[:n0]
                n = n0
        if n > most:  # (a long log the step appends to, after the lines above: its key holds as a short one's)
            return long_key(o) + tail
        own: Any = (tuple([(v if v.__class__ is not float or v and v == v else _sc(v)) if v.__class__ in scalars
                           else _entry(v, names, depth) for v in o]) + tail, tuple(map(type, o)))
    elif isinstance(o, dict):
        if len(o) > most:
            return long_key(o), long_key(o.values())
        items = list(o.items())  # (at once: another thread may add an entry while the loop below runs Python code)
        own = (tuple([(k, (v if v.__class__ is not float or v and v == v else _sc(v)) if v.__class__ in scalars
                      else _entry(v, names, depth)) for k, v in items]), tuple([type(v) for _, v in items]))
    else:
        own = None
    if o.__class__ is list or o.__class__ is dict or isinstance(o, tuple):  # (a named tuple too)
        return own
    d = getattr(o, "__dict__", None)  # (a plain object's attributes; a list or dict subclass's own ones too)
    at = id(d)
    if d is None and _slot_names(o.__class__):  # (a slotted object's: read at each call, its entry kept by its id)
        d, at = {n: getattr(o, n) for n in _slot_names(o.__class__) if hasattr(o, n)}, id(o)
    if not isinstance(d, dict) or not (names or _dunders.reads(o.__class__)):
        return own
    out = []
    cls = o.__class__
    e = _OBJ_NAMES.get(at)
    if e is None or e[0]() is not o or e[1] is not names or e[2] != len(d) or e[3] is not cls:
        if len(_OBJ_NAMES) > 1024:
            _OBJ_NAMES.clear()
        sel = [n for n in names if n in d or hasattr(cls, n)]
        sel += sorted(_dunders.reads(cls) & d.keys() - set(sel))  # (read by its __getitem__, __call__...)
        for g in [getattr(cls, n).fget for n in sel if n not in d and isinstance(getattr(cls, n), property)]:
            if getattr(g, "__code__", None) is not None and not _internal(g.__code__.co_filename):  # ``c.scale``
                sel += sorted(_code_names(g.__code__, set()) & d.keys() - set(sel))  # returning ``self._s``
        e = _OBJ_NAMES[at] = (_weakref.ref(o), names, len(d), cls, tuple(sel))
    for n in e[4]:
        v = d.get(n, d)
        if v is not d:
            out.append((n, (v.__class__, v if v.__class__ is not float or v and v == v else _sc(v))
                        if v.__class__ in scalars else _entry(v, names, depth)))
        else:  # a class attribute read through the object (``Cfg.K = 3.0``; a method: ``Trainer.loss = other``)
            v = getattr(cls, n, d)
            if v.__class__ in scalars:
                out.append((n, (v.__class__, _sc(v))))
            elif v.__class__ is _FunctionType or v.__class__ is _MethodType:  # (a classmethod: bound)
                out.append((n, id(getattr(v, "__func__", v))))
            elif v is not d and _opened(v) and not isinstance(v, type):  # (``O.scales[0] = 3.0``: its entries)
                out.append((n, _entry(v, names, depth)))
    return tuple(out) if own is None else (own, tuple(out))


# id(an object's __dict__) -> (a weak reference to the object, names, the dict's length, the class, those of names
# the object or its class has: contents looks up only those; every name the code reads costs ~0.1 us per call)
_OBJ_NAMES: dict[int, tuple] = {}


def _entry(v: Any, names: tuple, depth: int) -> Any:
    """An entry of :func:`contents` that is no Python number: its key (:func:`_ident`), and one level further."""
    if v.__class__ is _ContextVar:  # (its value in the calling context, keyed as the entry itself would be)
        return id(v), _entry(v.get(_UNSET), names, depth)
    if depth and (_opened(v) or isinstance(v, tuple) and _holds_opened(v)):
        return (id(v), contents(v, names, None, depth - 1))
    if v.__class__ is np.ndarray and v.nbytes <= _ENTRY_ARRAY_MAX:  # (read on the host: ``float(cfg["cw"][0])``)
        return id(v), _ndarray_key(v)
    return id(v) if _BY_VALUE.get(v.__class__) is False else _ident(v)


def root_key(objs: list, names: tuple = (), lens: dict | None = None, appends: frozenset = frozenset()) -> tuple:
    """What identifies the roots for the cache: Python numbers, strings, None by value (a global ``SCALE = 2.0``
    changed to 3.0 is another capture: a replay would reuse the number it baked in), anything else by identity, and
    the entries of dicts and lists among them and the attributes ``names`` of plain objects among them, one level
    deep (:func:`contents`: a closure's ``cfg = {"scale": 2.0}`` changed, a tensor in it replaced; ``lens``: the
    caller's memory of list lengths, for the lists among ``appends`` (ids, see :func:`appended`) only: any other
    list by its length and entries), and the values of numpy arrays among them up to ``_NDARRAY_MAX`` bytes."""
    out: list = []
    for o in objs:
        c = o.__class__
        if c is _ContextVar:  # (the value the calling thread's or task's context holds, keyed as a root of its own:
            out.append(id(o))  # a number by value, a dict by its entries; by identity, a replay reused the capture's)
            o = o.get(_UNSET)
            c = o.__class__
        if c in _SCALAR_SET:  # (the classes below: 2, 2.0 and True are equal keys but promote differently)
            out.append(o if c is not float or o and o == o else _sc(o))
        else:
            out.append(id(o) if _BY_VALUE.get(c) is False or c is _FunctionType and o.__closure__ is None and
                       o.__defaults__ is None and not o.__kwdefaults__ else _ident(o))  # (a plain function: its id)
            if _opened(o) or isinstance(o, tuple) and _holds_opened(o):
                out.append(contents(o, names, lens if id(o) in appends else None))
            elif c is np.ndarray and o.nbytes <= _NDARRAY_MAX:
                out.append(_ndarray_key(o))
    return tuple(out), tuple(map(type, objs))


def attribute_names(fn: Any, depth: int = 2, seen: set | None = None) -> tuple:
    """The attribute and global names the code of ``fn`` reads, with those of the plain Python functions it calls by
    a global name or holds in its closure, ``depth`` levels down (which attributes of a plain object root_key
    fingerprints)."""
    fn = _called(fn)
    f = fn.func if isinstance(fn, _partial) else fn
    f = getattr(f, "__func__", f)
    code = getattr(f, "__code__", None)
    if code is None:
        return ()
    seen = set() if seen is None else seen
    if id(code) in seen:
        return ()
    seen.add(id(code))
    names = _code_names(code, set())
    if "get_last_lr" in names:  # a scheduler's getter: what it returns is the attribute
        names.add("_last_lr")
    if depth:
        hs = _helpers(f, names)
        for v in (*hs, *_methods_named(hs, tuple(names))):  # (t.step(x): the attributes the trainer's step reads)
            if not isinstance(v, _FunctionType) and _config_like(v) and _callable_object(v):
                v = v.__class__.__call__  # a callable object: the attributes its __call__ reads
            if isinstance(v, _FunctionType) and not _internal(v.__code__.co_filename):
                names.update(attribute_names(v, depth - 1, seen))
    return tuple(sorted(names))


_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_NAME",
                    "LOAD_ATTR", "LOAD_METHOD"))


def _name_uses(code: Any, appends: set, reads: set) -> None:
    """The names ``code`` and its nested code objects load only to call ``.append`` on (``appends``) and those they
    load for anything else (``reads``: ``len(hist)``, ``hist[-1]``, ``for v in hist``, passing it on)."""
    ins = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "EXTENDED_ARG")]
    for i, x in enumerate(ins):
        if x.opname in _LOADS and isinstance(x.argval, str):
            nxt = ins[i + 1] if i + 1 < len(ins) else None
            if nxt is not None and nxt.opname in ("LOAD_METHOD", "LOAD_ATTR") and nxt.argval == "append":
                appends.add(x.argval)
            else:
                reads.add(x.argval)
        elif x.opname.startswith("LOAD_FAST_LOAD_FAST"):  # (3.13: two names at once)
            reads.update(a for a in (x.argval if isinstance(x.argval, tuple) else ()) if isinstance(a, str))
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _name_uses(c, appends, reads)


def append_names(fn: Any, depth: int = 2) -> frozenset:
    """The names the code of ``fn`` (and of the plain Python functions it calls by a global name or holds in its
    closure, ``depth`` levels down) uses only as ``name.append(...)``: a list held there is a counter or a log the
    function only appends to, whose numbers appended since :func:`contents` first saw it are no guard (a replay
    keeps running).  A list the code also reads (``if len(hist) % 4 == 0: opt.step()``, ``hist[-1]``) is keyed by
    its length and every entry: the replay would have baked the length of the capture in."""
    appends: set = set()
    reads: set = set()
    seen: set = set()

    def walk(f: Any, depth: int) -> None:
        f = f.func if isinstance(f, _partial) else f
        f = getattr(f, "__func__", f)
        code = getattr(f, "__code__", None)
        if code is None or id(code) in seen:
            return
        seen.add(id(code))
        _name_uses(code, appends, reads)
        if depth:
            for v in _helpers(f, _code_names(code, set())):
                if isinstance(v, _FunctionType) and not _internal(v.__code__.co_filename):
                    walk(v, depth - 1)
    walk(_called(fn), depth)
    return frozenset(appends - reads)


def appended(fn: Any, args: tuple, kwargs: dict, gnames: list, names: frozenset) -> frozenset:
    """The ids of the lists among the roots (see :func:`roots`) held by one of ``names`` (:func:`append_names`):
    an argument, a bound method's ``self`` attribute, a closure cell or a global of that name."""
    if not names:
        return frozenset()
    out: set = set()
    fn = _called(fn)
    f: Any = fn.func if isinstance(fn, _partial) else fn
    skip = len(fn.args) if isinstance(fn, _partial) else 0  # the parameters a partial binds come first
    if hasattr(f, "__func__"):
        out.update(id(v) for n, v in getattr(f.__self__, "__dict__", {}).items() if n in names)
        f, skip = f.__func__, skip + 1
    code = getattr(f, "__code__", None)
    if code is None:
        return frozenset()
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    out.update(id(a) for n, a in zip(params[skip:], args) if n in names)
    out.update(id(v) for n, v in kwargs.items() if n in names)
    for n, cell in zip(code.co_freevars, f.__closure__ or ()):
        if n in names:
            try:
                out.add(id(cell.cell_contents))
            except ValueError:
                pass
    out.update(id(d[n]) for d, n in gnames if n in names and n in d)
    helper_cells(f, names, out, 2, set())  # (a logger's ``buf`` in a helper's closure: a root, see held.py)
    return frozenset(out)


def group_numbers(opts: list) -> tuple:
    """The Python numbers (and tuples: ``betas``) of the optimizers' param groups, for a function whose code reads
    ``param_groups`` itself (``return loss, opt.param_groups[0]["lr"]``, a branch on the lr): the replay would
    reuse the captured number (the optimizer's own step reads them as inputs, see :mod:`.optim`)."""
    return tuple([tuple([(k, v.__class__, v) for k, v in g.items() if v.__class__ in _SCALAR_SET or
                         v.__class__ is tuple]) for o in opts for g in o.param_groups])


def state_numbers(opts: list) -> tuple:
    """The Python numbers (strings, None) in the optimizers' per-parameter state, for a function whose code reads
    ``state`` itself (``k = opt.state[w]["step"]`` of an optimizer that counts in a Python int, a number the step
    stores there): the replay would reuse the captured number.  The state's tensors are loaded at their place (see
    capture.Recorder._resolve_pending), but which parameters have state and its keys are keyed (``if opt.state``,
    ``"momentum_buffer" in opt.state[w]``: a capture made before the first step replayed its branch after it)."""
    scalars = _SCALAR_SET
    return tuple([(id(p), k, v.__class__, v if v.__class__ in scalars else None) for o in opts
                  for p, d in list(o.state.items())
                  for k, v in (d.items() if d and isinstance(d, dict) else ((None, None),))])


def _config_like(v: Any) -> bool:
    """A plain object with attributes (a config namespace or dataclass), not a class, function, tensor, module or
    optimizer (those are guarded otherwise)."""
    return hasattr(v, "__dict__") and not isinstance(v, (type, _FunctionType, Tensor, Module, Optimizer)) \
        and (not callable(v) or _callable_object(v))


def _callable_object(v: Any) -> bool:
    """An instance of a user class with ``__call__`` (a loss object with its ``eps``): config-like, its ``__call__``
    read for the attribute names (see attribute_names)."""
    c = v.__class__
    return isinstance(getattr(c, "__call__", None), _FunctionType) and _user_class(c) and not isinstance(v, type)


def _user_class(c: type) -> bool:
    """A class defined outside coretorch and its plugins (and not a builtin)."""
    f = getattr(sys.modules.get(c.__module__), "__file__", None)
    return isinstance(f, str) and not _internal(f)


def global_names(fn: Any, depth: int = 2, seen: set | None = None) -> list:
    """``(namespace dict, name)`` of every global the function reads: its module's globals, the Python-number
    attributes of modules it names (``cfg.scale``), and, ``depth`` levels down, those of the plain Python functions
    it calls by a global name (its helpers)."""
    fn = _called(fn)
    f = fn.func if isinstance(fn, _partial) else fn
    f = getattr(f, "__func__", f)
    code = getattr(f, "__code__", None)
    if code is None:
        return []
    seen = set() if seen is None else seen
    if id(code) in seen:
        return []
    seen.add(id(code))
    g = f.__globals__
    names = sorted(_code_names(code, set()))
    refs = [(g, n) for n in sorted(_global_loads(code)) if n in g]   # (the module's globals: not attribute names)
    helpers: list = []

    def class_refs(c: type, lvl: int) -> None:  # Cfg.K, MyFunction.apply: the class's attributes the code reads,
        d = vars(c)  # its methods, and a class it holds (``Cfg.Train.lr``, a nested namespace class)
        refs.extend((d, a) for a in names if a in d)
        helpers.extend(getattr(m, "__func__", m) for m in d.values())
        todo.extend((w, lvl - 1) for a in names if lvl and isinstance(w := d.get(a), type) and _user_class(w) and
                    all(w is not u for u, _ in todo))
    # (the modules and user classes named through a module, two levels: ``pkg.sub.VALUE``, ``utils.Cfg.K``,
    # ``torch.backends.cudnn.enabled``)
    todo = [(g[n], 2) for _, n in refs]
    for cell in f.__closure__ or ():  # helpers held by the closure
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        helpers.append(v)
        if isinstance(v, _ModuleType) or isinstance(v, type) and _user_class(v):  # a local class (``A.K`` of a
            todo.append((v, 2))  # class made in a function), a module imported in the function
    for v, lvl in todo:
        if isinstance(v, _ModuleType) or _config_like(v):  # cfg.scale: a module's or a plain object's attribute
            d = vars(v)
            for a in names:
                if a in d:
                    refs.append((d, a))
                    helpers.append(d[a])  # (utils.helper(x): a function of another module)
                    w = d[a]
                    if lvl and isinstance(v, _ModuleType) and (isinstance(w, _ModuleType) or isinstance(
                            w, type) and _user_class(w)) and all(w is not u for u, _ in todo):
                        todo.append((w, lvl - 1))
                elif not isinstance(v, _ModuleType) and getattr(type(v), a, refs).__class__ in _SCALAR_SET:
                    refs.append((vars(type(v)), a))  # a class attribute read through the object (Cfg.K)
        elif isinstance(v, type) and _user_class(v):
            class_refs(v, lvl)
        else:
            helpers.append(v)
    if depth:
        for v in helpers:
            v = v.func if isinstance(v, _partial) else v
            if isinstance(v, _FunctionType) and not _internal(v.__code__.co_filename):
                refs.extend(global_names(v, depth - 1, seen))
    return refs
