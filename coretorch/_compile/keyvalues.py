"""How one value enters a guard key: an object by identity (held), a number by value (-0.0 apart from 0.0), a numpy
array by its values or a digest of them, a set's entries, a bytearray's bytes, the parameters' gradient hooks, the
attributes a user set on a tensor (see :mod:`.guards`)."""
from __future__ import annotations

from array import array
import contextvars
import ctypes
from functools import partial
import hashlib
import math
import numbers
from types import FunctionType
from typing import Any, Callable

import numpy as np

_SCALAR_SET = frozenset((bool, int, float, str, type(None)))


class _Ident:
    """An argument object in a guard key by identity, held (a key of its ``id`` alone matched a new object made at a
    freed one's address: ``f(x, torch.Generator().manual_seed(i))`` replayed with the capture's generator)."""

    __slots__ = ("o",)

    def __init__(self, o: Any):
        self.o = o

    def __eq__(self, other: Any) -> bool:
        return other.__class__ is _Ident and other.o is self.o

    def __hash__(self) -> int:
        return id(self.o)


_NEG0, _NAN, _NEG_NAN = ("-0.0",), ("nan",), ("-nan",)


def _sc(v: Any) -> Any:
    """A number in a key, -0.0 apart from 0.0 (equal, but ``1 / s`` and a product's sign differ), a NaN as one key
    (``float("nan")`` made at each call equals no other: every call captured again, up to the recompile limit)."""
    try:
        if v != v:
            return _NAN if math.copysign(1.0, v) > 0 else _NEG_NAN
        return _NEG0 if v == 0 and math.copysign(1.0, v) < 0 else v
    except TypeError:
        return v


def _value(v: Any) -> Any:
    """A Python number, string or None by its class and value (2, 2.0 and True are equal, but a tensor op promotes
    each differently), anything else by identity."""
    return (v.__class__, v if v.__class__ is not float or v and v == v else _sc(v)) if v.__class__ in _SCALAR_SET \
        else id(v)


# class -> whether :func:`ident` keys its instances by value (True: immutable values, numpy scalars, Fraction,
# Decimal, complex, range, slice, frozenset; "fn": functions and partials, by the numbers they hold; "tuple":
# tuples, by their entries; "cv": a ContextVar, by the value the calling context holds): by id alone,
# a new one made where a freed one was (``G = np.float64(i)``, ``act = partial(mul, k)`` at each call) matched,
# and the replay reused the freed one's numbers; False for any other class (by id)
BY_VALUE: dict[type, Any] = {}
_VALUE_TYPES = (np.generic, numbers.Number, range, slice, frozenset)
_UNSET = object()  # (a ContextVar without a value in this context, nor a default)


def ident(o: Any) -> Any:
    """An object among the roots that is no Python scalar: by identity (``id``), or by class and value where
    :data:`BY_VALUE` says so (callers test ``BY_VALUE.get(o.__class__) is False`` first: one lookup per object)."""
    c = o.__class__
    r = BY_VALUE.get(c)
    if r is None:
        if len(BY_VALUE) > 1024:
            BY_VALUE.clear()
        r = BY_VALUE[c] = "fn" if issubclass(c, (FunctionType, partial)) else "tuple" if issubclass(c, tuple) else \
            "cv" if c is contextvars.ContextVar else _shared_kind(c) or issubclass(c, _VALUE_TYPES)
    if not r:
        return id(o)
    if r == "shared":  # (see _shared_kind: its current value, read as another thread or process left it)
        return (id(o), _shared_value(o))
    if r == "cv":  # (the value the calling thread's context holds, as a threading.local's attributes: by id, a
        # ``scale.get()`` the step read was a constant of the replay, whatever another thread or task had set)
        v = o.get(_UNSET)
        return (id(o), v if v is _UNSET else _value(v) if v.__class__ in _SCALAR_SET else ident(v))
    if r == "tuple":  # (its entries, one level: a global tuple of numbers rebuilt at each call; a long one by a
        # digest of them: by id, a new one made where a freed one was replayed the freed one's numbers)
        return (c, tuple(map(_value, o))) if len(o) <= 64 else (c, long_key(o))
    if r == "fn":
        return _fn_key(o, 2)
    if c is range or c is slice:
        return (c, _value(o.start), _value(o.stop), _value(o.step))
    if isinstance(o, frozenset):
        return (c, tuple(map(_value, o)))
    try:
        return (c, (k := _sc(o)), hash(k))
    except TypeError:
        return id(o)


def _shared_kind(c: type) -> str | None:
    """"shared" for the holders of a value other threads or processes set, read through C code no capture sees: a
    ctypes value or array, a ``multiprocessing.Value`` / ``Array`` (a counter a DataLoader worker reads and the
    trainer sets).  By identity, a replay reused the value the capture read (PyTorch's dynamo runs those reads
    eagerly).  (A ``threading.Event`` is left by identity: a step that sets one itself, a hand-off to another
    thread, would change its own key.)"""
    if issubclass(c, (ctypes._SimpleCData, ctypes.Array, ctypes.Structure)):
        return "shared"
    if c.__module__ == "multiprocessing.sharedctypes" and c.__name__.startswith("Synchronized"):
        return "shared"
    return None


def _shared_value(o: Any) -> Any:
    """The current value of a :func:`_shared_kind` holder: its ctypes object's bytes."""
    obj = o.get_obj() if hasattr(o, "get_obj") else o  # (a Synchronized wrapper: the ctypes object it guards)
    try:
        return bytes(memoryview(obj).cast("B"))
    except (TypeError, ValueError):  # (a ctypes object without a buffer: by identity)
        return id(obj)


def _fn_key(f: Any, depth: int) -> Any:
    """A function or partial among the roots: its identity with the numbers its closure cells and defaults, or a
    partial's arguments, hold (``act = lambda t: t * k`` rebuilt at each call with another ``k``)."""
    if isinstance(f, partial):
        return (id(f), tuple(map(_value, f.args)), tuple([(k, _value(v)) for k, v in f.keywords.items()]),
                _fn_key(f.func, depth - 1) if depth and isinstance(f.func, (FunctionType, partial)) else id(f.func))
    dflt, kd = f.__defaults__, f.__kwdefaults__
    # (keyword-only defaults, a dict: ``helper.__kwdefaults__["k"] = 3.0`` replayed the old k)
    kdk = tuple([(k, _value(v)) for k, v in kd.items()]) if kd else ()
    if f.__closure__ is None and dflt is None:
        return (id(f), kdk) if kdk else id(f)  # (its code's behaviour: the globals it reads are roots of their own)
    cells = []
    for c in f.__closure__ or ():
        try:
            cells.append(_value(c.cell_contents))
        except ValueError:  # an empty cell
            cells.append(None)
    if dflt is None:
        return (id(f), tuple(cells), (), kdk)
    d = _DEFAULTS.get(id(dflt))  # (a defaults tuple is immutable: its key, kept with it, holds while it is the one)
    if d is None or d[0] is not dflt:
        if len(_DEFAULTS) > 1024:
            _DEFAULTS.clear()
        d = _DEFAULTS[id(dflt)] = (dflt, tuple(map(_value, dflt)))
    return (id(f), tuple(cells), d[1], kdk)


_DEFAULTS: dict[int, tuple] = {}  # id of a function's __defaults__ -> (that tuple, its entries' _value)


_NDARRAY_MAX = 1 << 20  # bytes of a numpy array keyed by its values (larger: an argument by a digest, a root by id)


def _ndarray_key(a: np.ndarray) -> tuple:
    """A numpy array's shape, dtype and values: the step reads them on the host (``torch.tensor(a)``,
    ``torch.from_numpy(a)``, numpy arithmetic), where no recorded kernel sees them, and a replay reused the
    values of the capture (an array mutated in place, or a new array at a reused address)."""
    return (a.shape, a.dtype.str, a.tobytes())


def _ndarray_digest(a: np.ndarray) -> tuple:
    """A large array argument's shape, dtype and a digest of its values: as :func:`_ndarray_key` without keeping a
    copy of the values in the cache's keys (a batch passed as a numpy array: pass a tensor to replay it)."""
    return (a.shape, a.dtype.str, hashlib.blake2b(np.ascontiguousarray(a).data, digest_size=16).digest())


def mutable_key(o: Any) -> Any:
    """A set's entries (in its iteration order: a loop over it sums in that order) or a bytearray's bytes, held by
    the step's roots: changed in place between calls, a replay reused what the capture read (``len(s)``, ``b[0]``)."""
    if isinstance(o, (bytearray, array, memoryview)):  # (an array.array or memoryview: its bytes, and its format)
        try:
            b = o if isinstance(o, bytearray) else o.tobytes()
        except ValueError:  # (a released memoryview: nothing to read, by identity)
            return id(o)
        fmt = getattr(o, "typecode", None) or getattr(o, "format", None)
        return fmt, (bytes(b) if len(b) <= _NDARRAY_MAX else hashlib.blake2b(b, digest_size=16).digest())
    return long_key(o) if len(o) > 1024 else tuple(map(_value, tuple(o)))  # (a snapshot: see guards.contents)


LONG_MAX = 4096  # entries of a long container digested by long_key (larger ones: by their number alone)


def long_key(vals: Any) -> tuple:
    """The entries of a container too long to key one by one (guards.contents, past its limits): their number and a
    digest of their classes and hashes, so numbers and strings by value, tensors and other objects by identity
    (their ``__hash__``).  By length alone, a class-weight list of 1000 numbers changed in place (``cw[3] = 5.0``)
    or a tensor replaced in a bank of 300 (``bank[5] = t``) replayed the capture's value or tensor.  Blind spots: a
    float turned into the equal number of another sign (0.0 into -0.0, the same hash), and a container of more than
    :data:`LONG_MAX` entries, keyed by its length alone."""
    t = tuple(vals)
    if len(t) > LONG_MAX:  # (data, not settings: by its length, ~70 us per 1000 entries of a digest saved)
        return (len(t),)
    types = tuple(map(type, t))
    if not any(map(_valued, set(types))):  # (no value among them, a bank of tensors: their ids, without their
        return len(t), hash(types), hash(tuple(map(id, t)))  # Python-level __hash__; the list holds them)
    try:
        h = hash(t)
    except Exception:  # an unhashable entry (a nested list or dict, a __hash__ that raises): by identity
        h = hash(tuple([_hash_or_id(v) for v in t]))
    return len(t), hash(types), h


def _valued(c: type) -> bool:
    """Whether instances of ``c`` in a long container are keyed by value (numbers, strings, bytes, tuples)."""
    return c in _SCALAR_SET or issubclass(c, (numbers.Number, np.generic, str, bytes, tuple, frozenset))


def _hash_or_id(v: Any) -> int:
    try:
        return hash(v)
    except Exception:
        return id(v)


def hooks_key(hooks: Any, of: Callable[[Any], Any]) -> tuple:
    """The hooks of a dict (handle id -> hook) or list by ``of`` (see guards._callable_key: the numbers a hook reads,
    ``g * SCALE``, ``if STOP: raise``, were baked into the replay or skipped)."""
    if not hooks:
        return ()
    if isinstance(hooks, dict):
        return tuple([(k, of(f)) for k, f in hooks.items()])
    return tuple([of(f) for f in hooks])


def param_hooks(params: list, of: Callable[[Any], Any] = id) -> tuple:
    """The gradient hooks on the parameters (``p.register_hook``, ``register_post_accumulate_grad_hook``): a
    replay's backward ran the ones present at the capture only, with the numbers they read then."""
    out = []
    for i, p in enumerate(params):
        d = p.__dict__
        a = d.get("_accum")
        post = d.get("_post_accumulate_grad_hooks")
        if (a is not None and a._hooked) or post:
            th = a._tensor_hooks if a is not None else None
            out.append((i, tuple((k, hooks_key(v, of)) for k, v in th.items()) if th else (),
                        hooks_key(a._pre_hooks, of) if a is not None else (),
                        hooks_key(a._hooks, of) if a is not None else (), hooks_key(post, of)))
    return tuple(out)


# what coretorch keeps in a tensor's ``__dict__`` (the fast case; any other name with a leading "_" is internal too)
_TENSOR_OWN = frozenset(("_grad", "_base", "_vbase", "_out_nr", "_accum", "_retains", "_gfb", "_det", "_hooks",
                         "_pinned", "_coo", "_post_accumulate_grad_hooks", "_retains_grad", "_is_buffer"))


def user_attrs(t: Any) -> Any:
    """The attributes a user set on a tensor (``x.scale = 2.0``, ``w.lr_mult``, ``x.mask = m``, a flag a step raises
    on): numbers, strings and None by value, anything else by identity; None where there are none.  A step reading
    one (``x * x.scale``, ``if x.bad: raise``) baked the capture's into the replay."""
    d = t.__dict__
    if d.keys() <= _TENSOR_OWN:
        return None
    return tuple([(k, (v if v or v.__class__ is not float else _sc(v)) if v.__class__ in _SCALAR_SET else _Ident(v))
                  for k, v in d.items() if k[0] != "_"]) or None
