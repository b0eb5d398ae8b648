"""Review 22e (compile): compiled modules (``torch.compile(model)`` / ``model.compile()``) in real use, compared with
the eager module call by call: the wrapper's API, inference loops, training with the eager optimizer."""
import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


def _compiled(m, form):
    if form == "wrap":
        return torch.compile(m)
    m.compile()
    return m


@pytest.mark.parametrize("form", ["wrap", "in_place"])
@pytest.mark.parametrize("hook", ["full_backward", "full_backward_pre", "tensor_in_forward", "node_in_forward"])
def test_a_gradient_hook_inside_a_compiled_module_runs_once_per_backward(device, form, hook):
    """A hook in the compiled module's autograd graph that logs what it sees (a submodule's full backward hook or
    backward pre-hook, ``h.register_hook`` on an intermediate from a forward hook, a ``grad_fn`` hook): eager calls
    it once per backward with that call's gradients.  Compiled before the fix: the capture recorded the module's
    backward with placeholder (zero) output gradients, which called the hook too, so each capture call logged an
    extra ``0.0`` before the real entry (and the log changing made every call capture again, up to the recompile
    limit); a replay would never call it.  Now such a region runs eagerly (a graph break)."""
    logs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)).to(device)
        log: list = []
        if hook == "full_backward":
            m[2].register_full_backward_hook(lambda mod, gi, go: log.append(float(go[0].abs().sum())))
        elif hook == "full_backward_pre":
            m[2].register_full_backward_pre_hook(lambda mod, go: log.append(float(go[0].abs().sum())))
        elif hook == "tensor_in_forward":
            m[0].register_forward_hook(
                lambda mod, i, o: [o.register_hook(lambda g: log.append(float(g.abs().sum())))] and None)
        else:
            m[0].register_forward_hook(lambda mod, i, o: [o.grad_fn.register_hook(
                lambda gi, go: log.append(float(go[0].abs().sum())))] and None)
        f = _compiled(m, form) if compiled else m
        for i in range(4):
            torch.manual_seed(10 + i)
            f(torch.randn(3, 4, device=device)).pow(2).sum().backward()
        logs.append(log)
    assert len(logs[0]) == len(logs[1]) == 4, logs
    np.testing.assert_allclose(logs[1], logs[0], rtol=1e-6)


def test_a_counting_gradient_hook_registered_in_forward(device):
    """``h.register_hook(count)`` inside ``forward`` (a counter of backward passes): eager counts one per backward;
    compiled before the fix, the capture's backward recording counted one more."""
    counts = []
    for compiled in (False, True):
        n = [0]

        def count(g):
            n[0] += 1

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(4, 6), nn.Linear(6, 2)

            def forward(self, x):
                h = torch.relu(self.a(x))
                h.register_hook(count)
                return self.b(h)
        torch.manual_seed(0)
        m = Net().to(device)
        f = torch.compile(m) if compiled else m
        for _ in range(3):
            f(torch.randn(3, 4, device=device)).sum().backward()
        counts.append(n[0])
    assert counts == [3, 3]
