"""Review 14c of coretorch.compile: nn features inside a compiled training step or a compiled module (custom
autograd Functions, embeddings with max_norm, parametrizations, RNNs, norms, hooks, gradient penalties, clipping,
distributions; every installed device).  Each test runs the same calls eagerly and compiled and compares the
results: bitwise on cpu, within float32 rounding where a device's fused kernels differ in evaluation order."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


def _close(device, a, b, what=""):
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if device == "cpu":
        assert np.array_equal(a, b), f"{what}: eager {a}\ncompiled {b}"
    else:
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=what)


def _train(device, make_model, change, calls, compile_module=True, data=None):
    """Eager and compiled runs of a training loop (a compiled module, or a compiled step): the losses and the final
    parameters and buffers of each run."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = make_model().to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        fwd = torch.compile(m) if compiled and compile_module else m

        def step(x):
            opt.zero_grad()
            loss = fwd(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = torch.compile(step) if compiled and not compile_module else step
        ctx: dict = {}
        losses = []
        for i in range(calls):
            change(m, ctx, i)
            torch.manual_seed(100 + i)
            x = data(i) if data is not None else torch.randn(5, 4).to(device)
            losses.append(f(x).detach())
        runs.append((losses, [t.detach() for t in list(m.parameters()) + list(m.buffers())]))
    return runs


def _assert_runs(device, runs):
    (le, se), (lc, sc) = runs
    for i, (a, b) in enumerate(zip(le, lc)):
        _close(device, a, b, f"loss of call {i}")
    for i, (a, b) in enumerate(zip(se, sc)):
        _close(device, a, b, f"state tensor {i}")


@pytest.mark.parametrize("kind", ["forward", "forward_pre", "full_backward"])
@pytest.mark.parametrize("compile_module", [True, False], ids=["module", "step"])
def test_a_global_module_hook_registered_and_removed_after_the_capture(device, kind, compile_module):
    """``nn.modules.module.register_module_forward_hook`` (& co.) after the capture of a compiled Sequential: the
    hook runs for every submodule's call, which ran inside the capture; the compiled module's guard ignored the
    global hooks (only its wrapper's own call was thought to run them), so its replay left the hook out (and kept
    replaying it after its removal)."""
    mm = nn.modules.module

    def hook(mod, a, b=None):
        if not isinstance(mod, nn.Linear):
            return None
        if kind == "forward":
            return b * 1.5
        if kind == "forward_pre":
            return (a[0] * 2,)
        return (a[0] * 0.5,) if a[0] is not None else None
    register = {"forward": mm.register_module_forward_hook, "forward_pre": mm.register_module_forward_pre_hook,
                "full_backward": mm.register_module_full_backward_hook}[kind]

    def change(m, ctx, i):
        if i == 3:
            ctx["h"] = register(hook)
        if i == 6:
            ctx["h"].remove()
    try:
        runs = _train(device, lambda: nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)), change, 9,
                      compile_module)
    finally:
        for d in (mm._global_forward_hooks, mm._global_forward_pre_hooks, mm._global_backward_hooks):
            d.clear()
    _assert_runs(device, runs)

