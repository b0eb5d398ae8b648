"""A copy of an array to another device inside a captured call (``x.to("opencl")`` of a batch the data loader made
on the cpu, ``loss.cpu()`` of a result): the core reads the whole array on the host and uploads it, which a capture
could only take as a graph break (a whole-array host read) or, for one element, as a checked read that a new batch
fails.  Here the read and the upload become one replayed call of the same functions, so a replay copies this call's
values (``transfer(run, arr)``: ``run(arr)`` is the copy, as eager makes it).
"""
from __future__ import annotations

from threading import get_ident
from typing import Any, Callable

from .capture import state


def transfer(run: Callable[[Any], Any], arr: Any) -> Any:
    """``run(arr)``, recorded as one call where a capture is recording this thread (outside an optimizer's own step,
    whose recording takes no host data)."""
    rec = state["recorder"]
    if rec is None or not rec.active or rec.symbolic or rec.breaks or get_ident() != rec.thread:
        return run(arr)
    v = rec.read(arr)
    if rec.breaks:  # (a view made on the host)
        return run(arr)
    rec.active = False
    try:
        out = run(arr)
    finally:
        rec.active = True
    rec.lines.append(f"{rec.new_var(out)} = {rec.const(run)}({v})")
    return out
