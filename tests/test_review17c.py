"""Review 17c: realistic programs on opencl compiled vs eager, every optimizer and LR scheduler inside a compiled
whole step (options, param groups, ``add_param_group`` after the capture, ``load_state_dict`` between steps, frozen
parameters), gradient accumulation, gradient clipping, ``swa_utils`` and ``nn.utils.parametrizations`` in compiled
steps."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
from coretorch.nn import functional as F


def _close(a, b, device) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if device == "cpu":
        assert np.array_equal(a, b), np.abs(a.astype(np.float64) - b).max()
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _adagrad_with_a_group_added(device, compiled):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).to(device)
    opt = torch.optim.Adagrad([dict(params=m[0].parameters(), initial_accumulator_value=0.5)], lr=0.1,
                              initial_accumulator_value=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    x, y = torch.randn(6, 8, 4, device=device), torch.randint(0, 3, (6, 8), device=device)
    sum0 = opt.state[m[0].weight]["sum"].cpu().numpy().copy()
    losses = []
    for i in range(6):
        if i == 3:
            opt.add_param_group(dict(params=m[2].parameters(), initial_accumulator_value=0.7))
        losses.append(f(x[i], y[i]).item())
    return losses, sum0, [p.detach().cpu().numpy() for p in m.parameters()], opt.state[m[2].weight]["step"].item()


def test_adagrad_add_param_group_after_the_capture(device):
    """``Adagrad.add_param_group`` after three (compiled) steps, then more steps: PyTorch creates the new
    parameters' state at their first step (``sum`` filled with the constructor's ``initial_accumulator_value``, not a
    group's own, also for the first group).  Before: eager and compiled steps raised ``KeyError: 'step'`` (the state
    was created in ``__init__`` only), and the first group's ``sum`` started at its own 0.5."""
    eager = _adagrad_with_a_group_added(device, False)
    comp = _adagrad_with_a_group_added(device, True)
    assert np.all(eager[1] == np.float32(0.1))
    assert eager[3] == comp[3] == 3.0
    _close(eager[0], comp[0], device)
    for a, b in zip(eager[2], comp[2]):
        _close(a, b, device)
