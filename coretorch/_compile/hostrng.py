"""The random state a captured step reads on the host: draws of Python's ``random``, numpy's global generator and
coretorch's non-deterministic seeds (``torch.seed()``), and the clock (``time.perf_counter()``): a capture that
draws one is a graph break, a replay would repeat the number; and a generator's ``initial_seed()`` (a check of the
replay: the caller may reseed between calls).  The generators of their own a step reaches (``random.Random(0)``,
``np.random.default_rng()``) are compared around the capture's call (:func:`generators_of`)."""
from __future__ import annotations

import itertools
import os
import random
import site
import time
from functools import partial
from types import BuiltinMethodType, FunctionType, MethodType, ModuleType
from typing import Any

import numpy as np

from ..ops import random as _rops

_NOT_DRAWS = frozenset({"seed", "get_state", "set_state", "getstate", "setstate", "default_rng", "get_bit_generator",
                        "set_bit_generator"})
_DRAWS: list = []
_CLOCKS = ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
           "process_time_ns", "thread_time", "thread_time_ns")
# kernels that set a generator's seed (after one in the step, the step's own number is what initial_seed() reads)
RESEEDS = frozenset({"rng_seed", "rng_set_state", "manual_seed"})


def host_rng_state() -> tuple:
    """The states of Python's ``random`` and numpy's global generator, and how many seeds ``torch.seed()`` and
    ``Generator.seed()`` drew: a capture that changes them drew a host random number, also through a function bound
    before it (``from random import random``: no patch of the modules sees that call)."""
    st: Any = np.random.get_state(legacy=True)   # (name, keys, pos, has_gauss, cached_gaussian)
    return random.getstate(), (st[0], st[1].tobytes(), *st[2:]), _rops.seed_draws[0]


def draws() -> list:
    """``(module, name, function)`` of the module-level draws of Python's ``random`` and ``numpy.random`` (bound
    methods of their hidden global generators): a number drawn on the host inside a captured step is a constant of
    the replay, so a capture that draws one is a graph break (the calls run eagerly)."""
    if not _DRAWS:
        for mod in (random, np.random):
            for name in getattr(mod, "__all__", ()):
                f = getattr(mod, name, None)
                if name not in _NOT_DRAWS and callable(f) and not isinstance(f, type) and \
                        getattr(f, "__self__", None) is not None and not isinstance(f.__self__, type(mod)):
                    _DRAWS.append((mod, name, f))
        # the clock (``t0 = time.perf_counter()``, an elapsed time returned: a replay returned the capture's)
        _DRAWS.extend((time, n, getattr(time, n)) for n in _CLOCKS if hasattr(time, n))
    return _DRAWS


_LIBS = tuple({os.path.dirname(os.__file__), *site.getsitepackages(), site.getusersitepackages()})


def counts(what: str, filename: str) -> bool:
    """Whether a draw from outside coretorch is the step's (a graph break): any random draw; a clock read by the
    user's own code only (``logging``'s record time, a progress bar's rate: Python side effects of the capture)."""
    return not what.startswith("time.") or not filename.startswith(_LIBS)


def seed_read(rec: Any, kernel: Any, gen_state: Any, seed: int) -> int:
    """``Generator.initial_seed()`` in the step (the ``rng_initial_seed`` kernel's int, which the recording would
    drop: a replay returned the capture's seed after the caller reseeded).  Before any seed set in the step the
    replay checks it first (another seed: this call captures again); after one, at its place, as a checked read."""
    if any(i[0] in RESEEDS for i in rec.info.values()):
        return rec._host_read(kernel, gen_state, seed)
    rec.checks.append(f"if {rec.const(kernel)}({rec.encode(gen_state)}) != {seed!r}: raise MISMATCH(False, True)")
    return seed


_GENERATORS = (random.Random, np.random.Generator, np.random.RandomState)


def generators_of(objs: list, depth: int = 2) -> list:
    """The host random generators of their own among ``objs`` (a ``random.Random(seed)``, numpy's
    ``default_rng(seed)`` or ``RandomState``: no patch of the modules' draws sees their methods), and two levels down
    the entries of containers, the attributes of objects (a module's ``self.rng``, an augmentation object's
    ``aug.rng``), the closures, defaults and partial arguments of functions among them (a helper made by
    ``make_aug(seed)``) and the objects of bound methods (``draw = rng.random``): a draw from one in the step is a
    graph break, found by comparing their states around the capture's call (:func:`generator_states`); a replay
    took the capture's draw at every call."""
    out: dict[int, Any] = {}
    seen: set = set()
    todo = [(o, depth) for o in objs]
    while todo:
        o, left = todo.pop()
        if isinstance(o, (MethodType, BuiltinMethodType)):
            o = o.__self__
        if id(o) in seen or isinstance(o, (type, ModuleType, str, bytes, np.ndarray)):
            continue
        seen.add(id(o))
        if isinstance(o, _GENERATORS):
            if o is not random._inst and not isinstance(o, random.SystemRandom):  # (the global one: host_rng_state;
                # the system's entropy has no state to compare)
                out[id(o)] = o
            continue
        if left:
            d = getattr(o, "__dict__", None)
            vals = dict.values(o) if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else \
                _function_parts(o) if isinstance(o, (FunctionType, partial)) else \
                dict.values(d) if isinstance(d, dict) else ()
            todo.extend((v, left - 1) for v in itertools.islice(vals, 1024))  # (not a whole data set)
    return list(out.values())


def _function_parts(f: Any) -> list:
    """What a helper function holds besides its code: its closure, its defaults (a partial's arguments)."""
    if isinstance(f, partial):
        return [f.func, *f.args, *f.keywords.values()]
    cells = []
    for c in f.__closure__ or ():
        try:
            cells.append(c.cell_contents)
        except ValueError:  # an empty cell
            pass
    return [*cells, *(f.__defaults__ or ()), *(f.__kwdefaults__ or {}).values()]


def generator_states(gens: list) -> list:
    """The states of ``gens`` (see :func:`generators_of`)."""
    return [g.getstate() if isinstance(g, random.Random) else
            _frozen(g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state(legacy=False))
            for g in gens]


def _frozen(x: Any) -> Any:
    """A numpy generator's state (dicts of numbers and arrays) as a comparable value."""
    if isinstance(x, dict):
        return tuple((k, _frozen(v)) for k, v in x.items())
    return (x.dtype.str, x.tobytes()) if isinstance(x, np.ndarray) else x
