"""Kernels another thread launches while a capture records (see ``Recorder.launch``): not the step's, unless the
step hands work to a thread (``pool.submit(lambda: x * 2).result()``, a ``Thread`` it starts and joins).  Their
results are noted; a step that then reads one, or whose persistent arrays another thread writes in place, is a
graph break: its replay would have read the capture's array as a constant (the first call's values at every call)
and left the persistent tensor as the capture found it.  An unrelated thread's kernels on its own arrays change
nothing (``test_another_threads_ops_during_a_capture_are_not_recorded``)."""
from __future__ import annotations

from typing import Any

_MAX = 4096  # results noted per capture; past it, any array the step reads without a known source breaks


def note(rec: Any, name: str, args: tuple, out: Any, mutating: frozenset) -> Any:
    """Another thread's launch of ``name`` during ``rec``'s capture; its result ``out``."""
    if name in mutating and not rec.breaks and any(id(a) in rec.owner or id(a) in rec.var for a in args):
        rec.breaks.append(f"another thread's kernel '{name}' wrote into an array of the step during its capture (work "
                          "handed to a thread), which a replay would not repeat")
    d = rec.__dict__.setdefault("foreign", {})
    if len(d) < _MAX:
        d[id(out)] = out  # (kept until the capture ends, so the id stays this array's)
    else:
        rec.foreign_lost = True
    return out


def check(rec: Any, arrays: dict) -> None:
    """A graph break where one of the arrays the step read without a known source (``arrays``: id -> (line, array,
    variable), see ``Recorder._resolve_pending``) is another thread's result."""
    d = rec.__dict__.get("foreign", {})
    hit = any(d.get(k) is v[1] for k, v in arrays.items())
    why = ("the step read a tensor another thread computed during its capture (work handed to a thread: "
           "`pool.submit(fn).result()`), which a replay would read as the capture's constant")
    if hit:
        rec.graph_break(why)
    elif arrays and rec.__dict__.get("foreign_lost"):
        # (maybe only a busy unrelated thread: no Unsupported under fullgraph=True, and tried again at a later
        # call, see replay.RETRIES)
        if not rec.breaks:
            rec.retry = 1
        rec.breaks.append(why)
