"""Undoing a replay's random draws: a checked host read that differs after the step only drew random numbers (a
Gamma/Beta/Dirichlet draw's rejection rounds, ``bool(todo.any())`` after each round of ``randn``/``rand``; a check
after a dropout) can still fall back to eager, as a check before any write does, once the generators it drew from are
set back to their states at the replay's start.  Writes of anything else (an array the call did not make, an
optimizer step) still make such a failed check raise (see ``Recorder._host_read``).

Threads: such a replay holds the generators' lock (``coretorch._rnglock``) from its first line to its last check
that may set them back (and on any exception), so no other thread draws in between: set back, their draws were
lost and their numbers handed to this call's eager run again."""
from __future__ import annotations

from typing import Any

from .._rnglock import LOCK as _LOCK

# kernels that advance or set a generator and write no array the call did not make (rng_fill_: its output, checked)
_DRAWS = frozenset({"rng_fill_", "rng_randint", "rng_poisson", "rng_multinomial", "rng_randperm", "rng_seed",
                    "rng_set_state"})
SAVE_LINE = "rngs = RNGSAVE({})"
_BACK = "RNGBACK(rngs)"
_END = "RNGEND(rngs)"


def note(rec: Any, name: str, kernel: Any, args: tuple) -> bool:
    """Whether the launch ``name`` of ``kernel`` can be undone by setting its generator back (then noted on
    ``rec.drawn``: (table, generator state) pairs); False: it writes state a replay cannot take back."""
    if name not in _DRAWS or not args:
        return False
    if name == "rng_fill_" and (len(args) < 2 or not _made_here(rec, args[1])):
        return False  # (``w.normal_()`` of a parameter: a write into persistent memory)
    table = next((t for t, n, k in rec._saved if k is kernel and n == name), None)
    names = getattr(table, "names", ())
    if "rng_get_state" not in names or "rng_set_state" not in names:
        return False
    if not any(g is args[0] for _, g in rec.drawn):
        rec.drawn.append((table, args[0]))
    return True


def _made_here(rec: Any, arr: Any) -> bool:
    """Whether ``arr`` is an array a recorded launch of this call made (not a persistent tensor's, nor a view of
    one's memory)."""
    if id(arr) not in rec.var or id(arr) in rec.owner:
        return False
    from .owners import _memory_of
    mem = _memory_of(arr)
    if mem is None:
        return True
    for p in rec.paths:
        t = p.get()
        d = getattr(t, "_data", None)
        if d is not None and (d is mem or _memory_of(d) is mem):
            return False
    return True


def abort(rec: Any) -> str:
    """What a failed checked read raises at this point of the recording: ``MISMATCH(False)`` before any write (the
    call runs eagerly), the generators set back first where only random draws came before, ``MISMATCH(True)``
    after a write (the compile error)."""
    if rec.mutated or rec.segments or rec.no_undo:
        return "MISMATCH(True)"
    if not rec.drawn:
        return "MISMATCH(False)"
    if not rec.undo_saved:  # the states are read at the replay's start (of every generator drawn in the step)
        rec.checks.insert(0, SAVE_LINE.format(rec.const(rec.drawn)))
        rec.undo_saved = True
    return _BACK


class _Saved(list):
    """The states read at the replay's start, ``held``: whether this replay still holds the generators' lock."""

    __slots__ = ("held",)
    held: bool


def save(pairs: list) -> list:
    """(The replay's first line) take the generators' lock, then the states of the generators ``pairs`` names."""
    _LOCK.acquire()
    saved = _Saved()
    saved.held = True
    try:
        saved.extend((t, g, t.rng_get_state(g)) for t, g in pairs)
    except BaseException:
        end(saved)
        raise
    return saved


def back(saved: list) -> Exception:
    """Set the generators back to ``saved`` and return the Mismatch that runs the call eagerly."""
    from .replay import Mismatch  # (replay imports this module)
    try:
        for t, g, s in saved:
            t.rng_set_state(g, s)
    finally:
        end(saved)
    return Mismatch(False)


def end(saved: Any) -> None:
    """(After the replay's last check that may set the generators back, and on leaving it) the lock let go."""
    if getattr(saved, "held", False):
        saved.held = False
        _LOCK.release()


def window(lines: list[str]) -> list[str]:
    """A replay function's ``lines`` holding the generators' lock from its ``RNGSAVE`` line to its last check that
    may set them back (released there, and by a ``finally`` around the rest on any exit)."""
    start = next((i for i, ln in enumerate(lines) if ln.startswith("rngs = RNGSAVE(")), None)
    if start is None:
        return lines
    body = list(lines[start + 1:])
    last = max((i for i, ln in enumerate(body) if ln.rstrip().endswith(_BACK)), default=None)
    if last is not None:
        ln = body[last]
        body.insert(last + 1, ln[:len(ln) - len(ln.lstrip())] + _END)
    return [*lines[:start + 1], "try:", *[f"    {ln}" for ln in body], "finally:", f"    {_END}"]
