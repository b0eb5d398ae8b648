"""A compiled step's optimizer update must not be skipped when a kernel that declines operands it does not take
(``fused_sgd_``, ``fused_adam_``, ``adam_step_``: "False, nothing written") declines them at a replay: a parameter
whose data became non-contiguous after the capture (``p.data = ...``) made the opencl replay skip its SGD update
silently.  Now the replay checks the kernel's answer and runs the step eagerly (recorded again) where it declines."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

OPTS = {"sgd-momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
        "adam-foreach-false": (torch.optim.Adam, dict(lr=0.01, foreach=False)),
        "adamw": (torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1))}


def _train(device, compiled: bool, opt_name: str):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).to(device)
    cls, kw = OPTS[opt_name]
    opt = cls(model.parameters(), **kw)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    fn = torch.compile(step) if compiled else step
    g = np.random.default_rng(0)
    data = [(torch.tensor(g.standard_normal((6, 12)).astype(np.float32), device=device),
             torch.tensor(g.integers(0, 3, 6), device=device)) for _ in range(2)]
    losses = [float(fn(*data[i % 2])) for i in range(6)]
    w = model[0].weight
    w.data = w.detach().t().contiguous().t()   # the same values, column-major: another layout than at capture
    losses += [float(fn(*data[i % 2])) for i in range(6)]
    return losses, [p.detach().cpu().numpy() for p in model.parameters()]


@pytest.mark.parametrize("opt_name", list(OPTS))
def test_a_parameter_of_another_layout_is_still_updated(device, opt_name):
    l_eager, p_eager = _train(device, False, opt_name)
    l_comp, p_comp = _train(device, True, opt_name)
    assert l_comp == l_eager
    for a, b in zip(p_comp, p_eager):
        assert np.array_equal(a, b)
