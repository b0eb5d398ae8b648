"""Planned temporaries: the arrays a replay only uses inside itself are written into a small set of buffers allocated
once per capture and reused across non-overlapping lifetimes (device-neutral pass, in the spirit of CUDA graphs'
memory plan).

Runs over a :class:`~.capture.Recorder`'s lines after the capture and after :mod:`.fusion`, before the replay
function is generated.  A device whose kernel table has the optional ``compile_out`` hook (the cpu backend's:
numpy's ``out=``; the opencl backend's: kernels writing into a given buffer) is asked, for each recorded launch
whose result is one fresh array, for an *out variant* ``fn(out, *args, **kwargs) -> out`` that writes exactly the
kernel's result into a given array.  A result is a *planned temporary* when it also:

* is read only by later recorded launches of the same replay function (never by a write-back of persistent state,
  the result, a module capture's outputs or the arrays saved for its backward, a checked host read, a kernel whose
  result is an opaque object that may keep a reference, another replay function);
* shares its memory with no other recorded array (no view of it, no alias of it, not a view itself) and is bound to
  one variable only (a kernel returning its argument makes a second name for the same array).

Its lifetime runs from its launch to its last read; temporaries of one key (shape, dtype, strides, device table)
share a buffer when their lifetimes do not overlap (a launch never writes into a buffer one of its operands is
in).  The buffers come from ``compile_out.empty_like(array)`` at planning; a replay takes the set from its
:class:`Pool` and gives it back at the end, so a re-entrant or concurrent replay gets its own set (allocated then)
and a replay allocates nothing for planned temporaries.  A device without the hook is left alone.

The hook's contract (documented in ``coretorch/_backend.py``): ``compile_out(name, args, kwargs, result) ->
callable | None`` (None where the device declines: the out variant must give the kernel's bits), and
``compile_out.empty_like(x)``: a new array of ``x``'s shape, dtype and strides.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from .. import _backend
from . import layouts as _layouts
from .capture import Recorder
from .owners import _memory_of
from .fusion import _Value

_VAR = re.compile(r"\ba\d+\b")
_LAUNCH = re.compile(r"^(a\d+) = (c\d+)\((.*)\)$", re.S)


class Pool:
    """The planned buffers of one replay function: one set made at planning, another only for a replay that runs
    while the set is taken (a re-entrant call, another thread)."""

    __slots__ = ("_free", "_first", "_make", "sizes")

    def __init__(self, makers: list[Callable], templates: list[Any]):
        self._make = makers
        first = [m(t) for m, t in zip(makers, templates)]
        self._first = first
        self._free = [first]
        self.sizes = [int(getattr(b, "nbytes", 0)) for b in first]

    def take(self) -> list:
        try:
            return self._free.pop()
        except IndexError:  # the set is in use: another set (rare; kept afterwards)
            return [m(b) for m, b in zip(self._make, self._first)]

    def give(self, bufs: list) -> None:
        self._free.append(bufs)

    def __len__(self) -> int:
        return len(self._first)

    def __repr__(self) -> str:
        return f"Pool({len(self._first)} buffers, {sum(self.sizes)} bytes)"


class Plan:
    """What :func:`plan` did: ``pool`` (None when nothing was planned), ``temporaries`` (how many results write into
    a buffer), ``names`` (the buffer variables, ``p0, p1, ...``)."""

    __slots__ = ("pool", "temporaries", "names")

    def __init__(self, pool: Pool | None, temporaries: int):
        self.pool, self.temporaries = pool, temporaries
        self.names = [f"p{i}" for i in range(len(pool))] if pool is not None else []

    def wrap(self, rec: Recorder, body: list[str], ret: str) -> list[str]:
        """``body`` (the replay function's lines, then ``ret``) taking the buffers first and giving them back at the
        end (an exception included)."""
        if self.pool is None:
            return [*body, ret]
        c = rec.const(self.pool)
        return [f"_P = {c}.take()", f"{', '.join(self.names)}, = _P", "try:", *[f"    {ln}" for ln in body],
                f"    {ret}", "finally:", f"    {c}.give(_P)"]


NONE = Plan(None, 0)


def _hook(table: Any):
    return getattr(table, "compile_out", None) if "compile_out" in getattr(table, "names", ()) else None


def _mem(a: Any) -> Any:
    return _memory_of(a.array if isinstance(a, _Value) else a)


def _opaque(out: Any, types: tuple) -> bool:
    """A launch result that is neither None nor (nested tuples of) arrays and numbers: it may hold its operands."""
    if out is None or isinstance(out, (*types, bool, int, float)):
        return False
    if isinstance(out, (tuple, list)):
        return any(_opaque(o, types) for o in out)
    return True


def plan(rec: Recorder, lo: int = 0, hi: int | None = None, keep: set | None = None) -> Plan:
    """Plan the temporaries of ``rec.lines[lo:hi]`` (one replay function) and rewrite their launches into out
    variants writing into pool buffers (in place); ``keep``: variables that leave the function (its result)."""
    lines, info = rec.lines, getattr(rec, "info", None)
    if not info:
        return NONE
    hi = len(lines) if hi is None else hi
    tables = {id(t): t for t in _backend._tables.values()}.values()
    hooks = {id(t): h for t in tables if (h := _hook(t)) is not None}
    if not hooks:
        return NONE
    owner = {id(getattr(t, n)): t for t in tables if id(t) in hooks for n in t.names}
    keep = keep or set()
    types = (*rec._array_types, _Value)
    defs: dict[str, int] = {}
    last: dict[str, int] = {}
    bad: set[str] = set(keep)
    mems: dict[int, list[str]] = {}
    for i, line in enumerate(lines):
        if not line:
            continue
        found = _VAR.findall(line)
        m = _LAUNCH.match(line) if i in info else None
        target = m.group(1) if m is not None else None
        if target is not None:
            if target in defs:  # bound twice: not one array's variable
                bad.add(target)
            defs.setdefault(target, i)
            found = found[1:]
        # a read outside this function, by a line that is no launch (a write-back, a host check, a load) or by a
        # launch whose result may keep a reference: the array escapes
        escapes = not (lo <= i < hi) or i not in info or _opaque(info[i][4], types)
        for v in found:
            last[v] = i
            if escapes:
                bad.add(v)
    for v in set(defs) | set(last):
        arr = rec.keep[int(v[1:])]
        mem = _mem(arr)
        if mem is not None:
            mems.setdefault(id(mem), []).append(v)
    cands = []
    for v, i in defs.items():
        if v in bad or not (lo <= i < hi):
            continue
        name, kernel, args, kwargs, out = info[i]
        table = owner.get(id(kernel))
        if table is None or not isinstance(out, rec._array_types) or rec.var.get(id(out)) != v \
                or not getattr(out, "size", 0):
            continue
        mem = _mem(out)
        if mem is None or len(mems.get(id(mem), ())) != 1:
            continue
        fn = hooks[id(table)](name, args, kwargs, out)
        if fn is None:
            continue
        key = (id(table), tuple(out.shape), str(out.dtype), tuple(getattr(out, "strides", ())))
        cands.append((i, last.get(v, i), v, key, fn, table, out))
    if not cands:
        return NONE
    # (numpy's results follow their operands' layouts, a planned buffer has the capture's: see layouts.py)
    _layouts.check(rec, [i for i, _, _, _, _, table, _ in cands if getattr(hooks[id(table)], "follows_operands", 0)])
    cands.sort()
    free: dict[tuple, list[tuple[int, int]]] = {}   # key -> (end of the current holder, buffer)
    makers: list[Callable] = []
    templates: list[Any] = []
    for i, end, v, key, fn, table, out in cands:
        slots = free.setdefault(key, [])
        b = next((k for k, (e, _) in enumerate(slots) if e < i), None)
        if b is None:
            buf = len(makers)
            makers.append(hooks[id(table)].empty_like)
            templates.append(out)
            slots.append((end, buf))
        else:
            buf = slots[b][1]
            slots[b] = (end, buf)
        m = _LAUNCH.match(lines[i])
        assert m is not None
        args_src = m.group(3)
        lines[i] = f"{v} = {rec.const(fn)}(p{buf}{', ' + args_src if args_src else ''})"
    return Plan(Pool(makers, templates), len(cands))


