"""The Sym captures of a masked key, one for each way the branches on its float arguments go (dynfloat.py), shared by
compiled functions (``CompiledFunction``) and compiled modules (``ModuleCapture``): serving a call with the first
whose prologue checks pass, and keeping a new Sym capture where it records the program of a capture of other
values (``dynfloat.same_program``)."""
from __future__ import annotations

from typing import Any, Callable

from . import dynfloat as _dynfloat, logs as _logs
from .replay import Mismatch

_NO_WAY = object()  # serve(): no capture took this call's way


def serve(alts: list, run: Callable[[Any], Any]) -> Any:
    """``run(entry)`` of the first of ``alts`` whose branches on the float arguments go this call's way (a check of
    its prologue raises ``Mismatch(branch=True)`` before anything is written); :data:`_NO_WAY` where none does.
    Another mismatch propagates (the caller runs the call eagerly, or raises where state was written)."""
    for entry in alts:
        try:
            return run(entry)
        except Mismatch as e:
            if not e.branch:
                raise
    return _NO_WAY


def call(alts: list, run: Callable[[Any], Any], on_miss: Callable[[], Any], eager: Callable[[], Any],
         unsafe: Callable[[], Exception]) -> Any:
    """A call of a compiled function or module served by :func:`serve`; ``on_miss()`` where no capture took its way
    (a capture of that way, or the eager call past the limit), ``eager()`` where a replay found another mismatch
    before writing anything, ``unsafe()`` raised where it found one after."""
    try:
        out = serve(alts, run)
    except Mismatch as e:
        failed = e.unsafe
    else:
        return on_miss() if out is _NO_WAY else out
    # (out of the except block: the eager call's own exception is not chained to the Mismatch)
    if failed:
        raise unsafe()
    return eager()


def capture_way(fn: Any, cache: dict, alts: dict, k: Any, mk: Any, pos: tuple, live: Callable[[Any], bool],
                capture: Callable[[], Any]) -> tuple[Any, bool | None]:
    """``capture()`` (a Sym capture of this call into ``cache`` under ``k``; its result) and :func:`settle`'s verdict
    on it (False where nothing was captured: another thread capturing, a graph break); ``live(entry)``: whether an
    entry has a replay."""
    cands = [e for e in tuple(cache.values()) if e.mkey == mk and e.fp is not None and live(e)]
    result = capture()
    entry = cache.get(k)
    if entry is None or not live(entry):
        return result, False
    return result, settle(fn, cache, alts, k, mk, pos, cands, entry)


def settle(fn: Any, cache: dict, alts: dict, k: Any, mk: Any, pos: tuple, cands: list, entry: Any) -> bool | None:
    """After the Sym capture ``entry``, stored under ``k`` in ``cache``: None where its Syms escaped (the callable
    stays specialised to its floats), True where it matches one of ``cands`` (the live captures of other values
    under ``mk``, taken before it) and now serves any value taking its way (moved to ``alts[mk]``), False where it
    serves only its own values (compared with the next Sym capture of the key)."""
    if entry.escape:
        _logs.dynamic_refused(fn, entry.escape)
        return None
    if not any(_dynfloat.same_program(c.fp, entry.fp, pos) for c in cands):
        _logs.dynamic_refused(fn, "a number of the capture changed with a float argument outside the recorded "
                              "arithmetic, or a branch on one went another way than in the captures before: this "
                              "capture serves its own values")
        return False
    cache.pop(k, None)
    ways = alts.setdefault(mk, [])
    if not entry.branches:  # (it serves every value: the specialised captures it matched are not needed)
        for key in [key for key, e in tuple(cache.items()) if e.mkey == mk and e.fp is not None
                    and not any(e is a for a in ways)]:
            cache.pop(key, None)
    cache[(mk, len(ways))] = entry
    ways.append(entry)
    _logs.dynamic_floats(fn, pos)
    return True
