"""Helpers the coretorch.compile fusion tests share."""
from __future__ import annotations

import coretorch as torch


def fusing(dev: str) -> bool:
    """Whether the device's kernel table fuses elementwise chains (the ``compile_fused`` hook)."""
    return "compile_fused" in torch._backend.get_table(torch.device(dev)).names


def twice(fn, *args):
    """Eager result, and the compiled function after its capture and one replay (its second result)."""
    eager = fn(*args)
    c = torch.compile(fn)
    c(*args)
    out = c(*args)
    assert c.replays == 1
    return eager, out, c
