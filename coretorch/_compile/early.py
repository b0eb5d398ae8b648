"""Early checks: a checked host read that the step makes after it has written state (an index's range after
``opt.zero_grad(set_to_none=False)`` or a BatchNorm's running statistics, a loss's target classes after an
optimizer step) raises the compile error when it fails at a replay: the writes cannot be undone.  Where the value it
checks depends only on arrays that nothing before it writes (the step's arguments, a parameter not updated yet), the
check and the launches it reads are moved to the start of the replay (before any write, as the recording's order
would have them had the step computed them first): a call whose values take another path then runs eagerly, and
raises what eager raises (``IndexError``) with the state eager leaves."""
from __future__ import annotations

import re
from typing import Any

from .. import _backend
from .capture import LOAD_LINE, MUTATING, Recorder
from .owners import _memory_of

_VAR = re.compile(r"\ba\d+\b")
# a checked read after a write (or after random draws only: see rngundo.py)
_CHECK = re.compile(r"^if (?:CHK|HAB)\(.*: raise (?:MISMATCH\(True\)|RNGBACK\(rngs\))$")
_CONST = re.compile(r"^(a\d+) = c\d+$")  # an array constant of the step (loaded as it is)
_TRANSFER = re.compile(r"^(a\d+) = c\d+\(a\d+\)$")  # a host copy of a value read (see Recorder.transfer)
# the kernels that write their first operand only (others, as adam_step_, write several of theirs)
_FIRST = frozenset({"assign_", "setitem_", "index_put_", "index_reduce_", "iadd", "isub", "imul", "idiv", "axpy_"})
# lines outside the recording's launches that write no array: loads, checks, write-backs of a tensor's state
# kernels that record a failed check on the device, reported by the next host read (opencl's, as CUDA's device-side
# asserts): a host read moved before one would no longer report it where eager's reports it (mid-step, before the
# writes after it), and one moved after it would report it earlier
_REPORTING = frozenset({"check_index", "check_values", "nll_loss"})
_LOADISH = re.compile(r"^(?:a\d+ = |if )")  # a load, a host read, a check
_QUIET = re.compile(r"^(?:a\d+ = |if |[\w\[\]'\". ]+"
                    r"(?:\._data = |\._rg = |\._vc\[0\] \+= | = None$| = MAKE\(| = NEWGRAD\(| = CONSUMED\(MAKE\())")


def _mem(rec: Recorder, v: str) -> int:
    arr = rec.keep[int(v[1:])]
    m = _memory_of(arr)
    return id(arr if m is None else m)


def _flat(obj: Any, types: tuple) -> list:
    if isinstance(obj, types):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [a for o in obj for a in _flat(o, types)]
    if isinstance(obj, dict):
        return [a for o in obj.values() for a in _flat(o, types)]
    return []


def _written(rec: Recorder, i: int) -> list:
    """The memory a writing launch (a MUTATING kernel) at line ``i`` writes."""
    name, _, args, kwargs, _ = rec.info[i]
    types = rec._array_types
    return [id(m if (m := _memory_of(a)) is not None else a)
            for a in _flat(args[:1] if name in _FIRST else (args, kwargs), types)]


def _chain(rec: Recorder, k: int, defs: dict, writes: list) -> tuple[set, list] | None:
    """The lines the check at ``k`` depends on and the load sources among them: launches, loads and constants, and
    the in-place writes into temporaries the chain made (``torch.diag(t)``: a ``full`` filled through a view); None
    where one is none of those."""
    lines, info = rec.lines, rec.info
    chain: set[int] = set()
    loads: list[str] = []
    todo, seen = _VAR.findall(lines[k]), set()
    if not todo:  # a host value read without an array (a generator's seed, set again by the step: see hostrng)
        return None
    while True:
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            d = defs.get(v)
            if d is None or not 0 <= d < k:
                return None
            if d in chain:
                continue
            ln = lines[d]
            if d in info:  # (a generator's state read, ``rng_get_state``: a draw before the check changes it)
                if info[d][0] in MUTATING or info[d][0].startswith("rng") or " = " not in ln:
                    return None
                todo.extend(_VAR.findall(ln.split(" = ", 1)[1]))
            elif (m := LOAD_LINE.match(ln)) is not None:
                loads.append(m.group(2)[:-6])  # (the tensor's expression, without ``._data``)
            elif _TRANSFER.match(ln):
                todo.extend(_VAR.findall(ln.split(" = ", 1)[1]))
            elif not _CONST.match(ln):
                return None
            chain.add(d)
        # the writes into the chain's own temporaries before the check: part of computing the value (not into a view
        # of what it loads: the replay's start must write nothing, so that a failed check can run the call eagerly)
        made = {_mem(rec, v) for d in chain if d in info for v in _VAR.findall(lines[d].split(" = ", 1)[0])} - \
            {_mem(rec, v) for d in chain if d not in info for v in _VAR.findall(lines[d].split(" = ", 1)[0])}
        more = [i for i, first, mems in writes if i < k and first and i not in chain and any(m in made for m in mems)]
        if not more:
            return chain, loads
        for i in more:
            chain.add(i)
            todo.extend(_VAR.findall(lines[i]))


def _untouched(rec: Recorder, k: int, chain: set, loads: list, persistent: set, scan: tuple) -> bool:
    """Whether no line before ``k`` outside ``chain`` writes an array of the chain, reads a temporary the chain
    writes, or rebinds a tensor it loads (``scan``: see :func:`_scan`)."""
    lines, info = rec.lines, rec.info
    writes, others, opaque = scan
    mems = {_mem(rec, v) for d in chain for v in _VAR.findall(lines[d].split(" = ", 1)[0])}
    if any(i < k and i not in chain and not mems.isdisjoint(w) for i, _, w in writes):
        return False
    if any(i < k and ln.startswith((f"{t} = ", f"{t}._data = ")) for i, ln in others for t in loads):
        return False
    temps = {m for d in chain if d in info and info[d][0] in MUTATING for m in _written(rec, d)}
    if temps and any(i not in chain and lines[i] and any(_mem(rec, v) in temps for v in _VAR.findall(lines[i]))
                     for i in range(k)):
        return False  # (a line that would see the chain's writes, moved before it)
    if opaque < k:  # an eager segment (an optimizer's step) writes what it holds: only arguments the state does not
        return all(t.startswith("A[") and "._grad" not in t for t in loads) and not (mems & persistent)
    return True


def _scan(rec: Recorder, hi: int) -> tuple:
    """Once per hoist: the writing launches (line, whether it writes its first operand only, the memory it writes),
    the lines outside the launches that are no load or check (line, text: write-backs, segments), the first line
    that may write anything (an eager segment; ``hi`` where none)."""
    lines, info = rec.lines, rec.info
    writes = [(i, info[i][0] in _FIRST, set(_written(rec, i))) for i in range(hi)
              if i in info and info[i][0] in MUTATING]
    others = [(i, lines[i]) for i in range(hi) if lines[i] and i not in info and not _LOADISH.match(lines[i])]
    opaque = next((i for i, ln in others if not _QUIET.match(ln)), hi)
    return writes, others, opaque


def _persistent(rec: Recorder) -> set:
    """The memory of the tensors the step reaches other than its arguments (what an eager segment may write)."""
    out = set()
    for p in rec.paths:
        if p.expr.startswith("A["):
            continue
        t = p.get()
        d = getattr(t, "_data", None)
        if d is not None:
            m = _memory_of(d)
            out.add(id(d if m is None else m))
    return out


def hoist(rec: Recorder, hi: int | None = None) -> int:
    """Move the checks of ``rec.lines[:hi]`` that fail only after a write, with the launches they read, to its
    start where nothing before them writes what they read (``rec.info`` follows the lines); returns how many lines
    it added before ``hi`` (a check after a launch recording a device-side check runs at the start and at its
    place)."""
    lines, info = rec.lines, rec.info
    hi = len(lines) if hi is None else hi
    checks = [k for k in range(hi) if lines[k].startswith("if ") and _CHECK.match(lines[k])]
    if not checks:
        return 0
    first = next((i for i in range(hi) if i in info and info[i][0] in _REPORTING), hi)
    defs: dict[str, int] = {}
    for i in range(hi):
        ln = lines[i]
        if ln and not ln.startswith("if ") and " = " in ln:
            for v in _VAR.findall(ln.split(" = ", 1)[0]):
                defs[v] = -1 if v in defs else i  # (bound twice: not one array's variable)
    moved: set[int] = set()
    copies: list[str] = []  # checks moved across a launch that records a device-side check: copied (see below)
    scan = _scan(rec, hi)
    persistent: set | None = None
    for k in checks:
        found = _chain(rec, k, defs, scan[0])
        if found is None:
            continue
        if persistent is None:
            persistent = _persistent(rec)
        if _untouched(rec, k, found[0], found[1], persistent, scan):
            early = lines[k][:lines[k].rindex("raise ")] + "raise MISMATCH(False)"
            if k < first:
                moved |= found[0] | {k}
                lines[k] = early
            elif not any(i in info and info[i][0] in _REPORTING for i in found[0]):
                # after a launch that records a device-side check: the check runs at the start too (a value that
                # differs runs the call eagerly, before anything is written) and stays at its place, whose host
                # read reports a failed device-side check where eager's read reports it
                moved |= found[0]
                copies.append(early)
    if not moved:
        return 0
    # a device-side check that failed before the call and is still pending would be reported by the moved reads,
    # before the step's writes (eager's first read in the step reports it after them): then the call runs eagerly
    # (among the checks a replay runs first: the lines keep their places, ``split`` of a module's forward too)
    rec.checks += [f"if {rec.const(t)}.check_pending(): raise MISMATCH(False)"
                   for t in _tables_of({id(v[1]) for v in info.values()})]
    order = sorted(moved) + [-1] * len(copies) + [i for i in range(len(lines)) if i not in moved]
    new = {old: i for i, old in enumerate(order) if old >= 0}
    at = len(moved)
    rec.lines[:] = [lines[i] for i in sorted(moved)] + copies + [lines[i] for i in order[at + len(copies):]]
    rec.info = {new[i]: v for i, v in info.items()}
    return len(copies)


def _tables_of(kernels: set) -> list:
    """The kernel tables with a ``check_pending`` query among those whose kernels are ``kernels`` (ids)."""
    out, seen = [], set()
    for t in _backend._tables.values():
        if id(t) not in seen and "check_pending" in getattr(t, "names", ()):
            seen.add(id(t))
            if any(id(getattr(t, n, None)) in kernels for n in t.names):
                out.append(t)
    return out
