"""Review 17a of coretorch.compile: threads, grad modes, re-entrancy and context managers around compiled code.
Compiled functions and modules called from several threads (shared or per-thread models, captures racing replays,
``compiler.reset()`` from another thread), grad-mode and RNG contexts around and inside compiled calls, compiled
callables calling each other or used as hooks.  Each test runs the same calls eagerly and compiled and compares what
the caller sees: bitwise on cpu, within float32 rounding where a device's fused kernels differ in evaluation order."""
from __future__ import annotations

import threading

import coretorch as torch
import coretorch.nn as nn

from _compile_helpers import close as _close, rand as _rand


def test_a_reset_from_another_thread_during_a_capture(device):
    """``torch.compiler.reset()`` called by another thread while a compiled step captures: eager runs the step and
    returns its result.  Compiled before the fix: the reset set the function's global names to None under the running
    capture, whose check of what the call wrote raised ``AssertionError`` after the step had run (its state updated,
    no result); a call racing the reset into ``_lookup`` raised it before running."""
    torch.manual_seed(0)
    m = nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    inside, resumed = threading.Event(), threading.Event()

    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        if not resumed.is_set():  # (the capture call only: wait while the other thread resets)
            inside.set()
            resumed.wait(10)
        return loss.detach()

    ref = [p.detach().clone() for p in m.parameters()]
    got: list = []

    def run():
        try:
            got.append(f(_rand(device, 5, 4)))
        except Exception as e:  # (reported by the main thread)
            got.append(e)
    f = torch.compile(step)
    t = threading.Thread(target=run)
    t.start()
    assert inside.wait(10)
    torch.compiler.reset()
    resumed.set()
    t.join(10)
    assert not isinstance(got[0], Exception), repr(got[0])
    # eagerly, on a copy of the starting state
    torch.manual_seed(0)
    m2 = nn.Linear(4, 3).to(device)
    for p, q in zip(m2.parameters(), ref):
        _close(device, p, q, "the same start")
    opt2 = torch.optim.SGD(m2.parameters(), lr=0.1)
    opt2.zero_grad()
    loss = m2(_rand(device, 5, 4)).pow(2).mean()
    loss.backward()
    opt2.step()
    _close(device, loss, got[0], "loss")
    for p, q in zip(m.parameters(), m2.parameters()):
        _close(device, q, p, "parameter")
    for i in range(1, 4):  # later calls capture and replay as eager steps
        opt2.zero_grad()
        x = _rand(device, 5, 4, seed=i)
        loss = m2(x).pow(2).mean()
        loss.backward()
        opt2.step()
        _close(device, loss, f(x), f"loss {i}")
    for p, q in zip(m.parameters(), m2.parameters()):
        _close(device, q, p, "parameter")
