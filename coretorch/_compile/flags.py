"""The ``training`` flags a captured call sets (``model.train()`` at the top of a training step, ``model.eval()`` in
an evaluation function compiled beside it): the replay sets them as the capture's call left them, instead of a
graph break.  The flags at the call's start are guards (see modstate.key), and the recorded kernels (dropout, batch
norm's batch statistics) follow from them and the step's code, so the flags at its end are the capture's too.
Other module attributes a call assigns stay graph breaks (modstate.check_module_writes)."""
from __future__ import annotations

from typing import Any, Callable


def before(modules: list) -> list:
    """The modules' own flags at the call's start (None for a module without one: a compiled module's wrapper,
    whose ``training`` is its wrapped module's)."""
    return [m.__dict__.get("training") for m in modules]


def replayed(rec: Any, modules: list, flags: list, check: Callable[[], None]) -> None:
    """``check()`` (modstate.check_module_writes) with the flags the call changed put back as they were, and the
    replay's lines that set them as the call left them (after the recorded kernels, before the write-backs)."""
    changed = [(m.__dict__, f, m.__dict__["training"]) for m, f in zip(modules, flags)
               if f is not None and m.__dict__.get("training", f) is not f and type(m.__dict__["training"]) is bool]
    for d, f, _ in changed:
        d["training"] = f
    try:
        check()
    finally:
        for d, _, now in changed:
            d["training"] = now
    for d, _, now in changed:
        rec.lines.append(f"{rec.const(d)}['training'] = {now!r}")
