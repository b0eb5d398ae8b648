"""Version counters at a replay's checked host reads: a replay bumps the counters of the persistent tensors it
modifies in place at its end and at its optimizer steps (see ``Recorder.write_back``).  An error raised at a read
in between (a device-side check the read reports, as eager's read reports it; the compile error of a check that
fails after a write) left them behind eager's, whose in-place ops bump them one by one.  So before each checked read
the replay bumps them by what the step's ops did so far.  :func:`made`: the counters of the tensors a replay makes
(a new ``.grad``, a result) as the call left them."""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor


def flush(rec: Any) -> None:
    """Lines bumping the version counters changed since the recorder's snapshot (each shared counter once), and the
    snapshot's versions moved on (``write_back`` bumps the rest).  Not before a read that nothing written precedes:
    a failed check there runs the call eagerly, which bumps them itself (``w.set_(w + 1)``, ``t_()``: a version
    bumped by no recorded write)."""
    if rec.symbolic or rec.breaks or not (rec.mutated or rec.segments):
        return
    done: set = set()
    for p in rec.paths:
        e = rec.snap.get(p.expr)
        t = p.get()
        if e is None or t is not e[0] or not isinstance(t, Tensor) or t._vc[0] == e[2]:
            continue
        if id(t._vc) not in done:
            done.add(id(t._vc))
            rec.lines.append(f"{p.expr}._vc[0] += {t._vc[0] - e[2]}")
        rec.snap[p.expr] = (e[0], e[1], t._vc[0], e[3], e[4])


def made(t: Tensor) -> str:
    """The version argument of a replay's ``MAKE`` for a tensor the call made: its counter as the call left it (a
    new ``.grad`` that ``clip_grad_norm_`` scaled in place, a returned ``out.add_(1)``: eager's counter is 1, a
    replay's fresh tensor had 0)."""
    return f", version=[{t._vc[0]}]" if t._vc[0] else ""
