"""Helpers the coretorch.compile tests share."""
from __future__ import annotations

import functools

import numpy as np

import coretorch as torch
import coretorch.nn.functional as F
from coretorch._compile import config, hostfuse


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


def ce_step(model, opt, then=None):
    """The plain training step the compile tests capture: zero_grad, cross-entropy of ``model(x)`` against ``y``,
    backward, ``opt.step()`` (then ``then()``: a scheduler's step, an averaged model's update); returns the loss."""
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if then is not None:
            then()
        return loss
    return step


def rand(device, *shape, seed=0):
    """A seeded standard-normal tensor on ``device``."""
    torch.manual_seed(seed)
    return torch.randn(*shape).to(device)


def close(device, a, b, what=""):
    """Compiled ``b`` against eager ``a``: bitwise on cpu, within float32 rounding where a device's fused kernels
    differ in evaluation order."""
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert np.array_equal(a, b), f"{what}: eager {a}\ncompiled {b}"
    else:
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=what)


@functools.lru_cache(maxsize=None)
def host_providers() -> tuple:
    """The host-memory providers for cpu (asked once: the opencl plugin's makes its device and checks it)."""
    return tuple(hostfuse.providers("cpu"))


def fresh_host_fusion(monkeypatch):
    """(An autouse fixture of the host-fusion tests) no captures before or after; the providers take small arrays
    too (PoCL's threaded driver takes only large ones); host fusion off again after."""
    torch.compiler.reset()
    for p in host_providers():
        monkeypatch.setattr(p, "min_size", 0)
    yield
    torch.compiler.reset()
    config.host_fusion = False
