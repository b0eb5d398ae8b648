"""Helpers the coretorch.compile tests share."""
from __future__ import annotations

import coretorch as torch
import coretorch.nn.functional as F


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


def ce_step(model, opt):
    """The plain training step the compile tests capture: zero_grad, cross-entropy of ``model(x)`` against ``y``,
    backward, ``opt.step()``; returns the loss."""
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step
