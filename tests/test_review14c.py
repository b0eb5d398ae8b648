"""Review 14c of coretorch.compile: nn features inside a compiled training step or a compiled module (custom
autograd Functions, embeddings with max_norm, parametrizations, RNNs, norms, hooks, gradient penalties, clipping,
distributions; every installed device).  Each test runs the same calls eagerly and compiled and compares the
results: bitwise on cpu, within float32 rounding where a device's fused kernels differ in evaluation order."""
from __future__ import annotations

import types

import pytest

import coretorch as torch
import coretorch.nn as nn

from _compile_helpers import close as _close



def _step(m, opt, compiled: bool, compile_module: bool):
    """The training step of ``m`` (loss: the mean square of its output), eager, as a compiled step, or with the
    module compiled."""
    fwd = torch.compile(m) if compiled and compile_module else m

    def step(x):
        opt.zero_grad()
        loss = fwd(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return torch.compile(step) if compiled and not compile_module else step

def _train(device, make_model, change, calls, compile_module=True, data=None):
    """Eager and compiled runs of a training loop (a compiled module, or a compiled step): the losses and the final
    parameters and buffers of each run."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = make_model().to(device)
        f = _step(m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), compiled, compile_module)
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


class _Phased(nn.Module):
    """Assigns a Python number attribute in its forward that comes back to an earlier value."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.phase = 0

    def forward(self, x):
        y = self.lin(x) * (1.0 if self.phase == 0 else -2.0)
        self.phase = 1 - self.phase
        return y


class _Stateful(nn.Module):
    """Truncated BPTT: the GRU's last hidden state kept (detached) on the module for the next call."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 3, batch_first=True)
        self.h = None

    def forward(self, x):
        out, h = self.rnn(x, self.h)
        self.h = h.detach()
        return out


@pytest.mark.parametrize("model", ["phase", "gru_state"])
@pytest.mark.parametrize("compile_module", [True, False], ids=["module", "step"])
def test_a_module_attribute_the_forward_assigns(device, model, compile_module):
    """``self.phase = 1 - self.phase`` or ``self.h = h.detach()`` in a forward: the guard key holds the attribute
    (by value, or by identity), so each call captured again, until the key came round to an earlier capture's (the
    old phase back; a hidden state tensor at a recycled ``id``): that replay did not repeat the assignment, so the
    attribute stayed and every later call replayed that one capture (a phase stuck, a hidden state frozen)."""
    make = _Phased if model == "phase" else _Stateful

    def change(m, ctx, i):
        if model == "gru_state" and i in (4, 7):  # the same id as the capture's tensor, as a recycled id() gives
            ctx.setdefault("first", m.h)
            m.h = ctx["first"]
    data = (lambda i: torch.ones(3, 4).to(device)) if model == "phase" else None
    if model == "gru_state":
        def data(i):
            torch.manual_seed(i)
            return torch.randn(2, 5, 4).to(device)
    runs = _train(device, make, change, 10, compile_module, data)
    _assert_runs(device, runs)


_PHASE_G = 0


@pytest.mark.parametrize("where", ["global", "nonlocal", "object", "dict"])
def test_state_of_the_step_it_assigns_itself(device, where):
    """A step that flips a global, a closure variable, an object's attribute or a dict entry it reads (``phase =
    1 - phase``): each call's key differs until it comes round to an earlier capture's, whose replay did not repeat
    the assignment, so the phase stuck and every later call replayed that capture."""
    global _PHASE_G
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Linear(4, 2).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        _PHASE_G = 0
        ph = 0
        obj = types.SimpleNamespace(ph=0)
        d = {"ph": 0}

        def step(x):
            global _PHASE_G
            nonlocal ph
            if where == "global":
                s = 1.0 if _PHASE_G == 0 else -2.0
                _PHASE_G = 1 - _PHASE_G
            elif where == "nonlocal":
                s = 1.0 if ph == 0 else -2.0
                ph = 1 - ph
            elif where == "object":
                s = 1.0 if obj.ph == 0 else -2.0
                obj.ph = 1 - obj.ph
            else:
                s = 1.0 if d["ph"] == 0 else -2.0
                d["ph"] = 1 - d["ph"]
            opt.zero_grad()
            loss = (m(x) * s).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        f = torch.compile(step) if compiled else step
        out.append(([f(torch.ones(3, 4).to(device)).detach() for _ in range(8)], [p.detach() for p in m.parameters()]))
    for i, (a, b) in enumerate(zip(out[0][0], out[1][0])):
        _close(device, a, b, f"loss of call {i}")
    for a, b in zip(out[0][1], out[1][1]):
        _close(device, a, b, "parameter")


@pytest.mark.parametrize("hook", ["forward_acts", "pre_counter", "backward_grads"])
@pytest.mark.parametrize("compile_module", [True, False], ids=["module", "step"])
def test_module_hooks_that_write_python_state(device, hook, compile_module):
    """Hooks that keep what they see (``acts[name] = out.detach()``, ``grads[name] = grad_output[0]``, a call
    counter): a replay does not run them, so after it the dict held the capture's tensors and the counter stood
    still; a compiled module's capture also ran a full backward hook with its placeholder (zero) output gradients."""
    out = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)).to(device)
        seen: dict = {"calls": 0}
        if hook == "forward_acts":
            m[0].register_forward_hook(lambda mod, a, o: seen.__setitem__("t", o.detach()))
        elif hook == "backward_grads":
            m[2].register_full_backward_hook(lambda mod, gi, go: seen.__setitem__("t", go[0].detach()))
        else:
            def count(mod, a):
                seen["calls"] += 1
            m[1].register_forward_pre_hook(count)
        f = _step(m, torch.optim.SGD(m.parameters(), lr=0.1), compiled, compile_module)
        res = []
        for i in range(8):
            torch.manual_seed(i)
            f(torch.randn(3, 4).to(device))
            res.append((seen["calls"], seen.get("t")))
        out.append(res)
    for i, ((ce, te), (cc, tc)) in enumerate(zip(*out)):
        assert ce == cc, f"call {i}: eager counted {ce}, compiled {cc}"
        if te is not None:
            _close(device, te, tc, f"hook's tensor after call {i}")
