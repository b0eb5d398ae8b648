"""Session 18's own fixes around coretorch.compile (the reviews' are in test_review18a.py ... ): Module.compile
called again."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


class _Breaks(nn.Module):
    """A forward with a graph break (``.item()`` steering Python): fine compiled, Unsupported under fullgraph."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        y = self.lin(x)
        return y * 2 if y.sum().item() > -1e9 else y


def test_module_compile_again_takes_the_new_options(device):
    """PyTorch's ``Module.compile(**kw)`` makes a new compiled call each time, so ``fullgraph=True`` given the second
    time holds (the graph break raises), and ``compile(disable=True)`` calls the module as it was.  coretorch kept
    the first call's capture: the second call's options were ignored, and ``disable=True`` changed nothing."""
    m = _Breaks().to(device)
    x = torch.randn(4, 3).to(device)
    want = m(x).detach().cpu().numpy()
    m.compile()
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    m.compile(fullgraph=True)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        m(x)
    m.compile(disable=True)
    assert "forward" not in m.__dict__
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    m.compile()
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)


def test_module_compile_again_keeps_an_instance_forward(device):
    """An instance ``forward`` (Accelerate's patch) that ``Module.compile`` wrapped stays what a later
    ``compile(...)``, or ``compile(disable=True)``, calls."""
    m = nn.Linear(3, 2).to(device)
    calls = []
    plain = m.forward

    def patched(x):
        calls.append(1)
        return plain(x) + 1
    m.forward = patched
    x = torch.randn(4, 3).to(device)
    want = patched(x).detach().cpu().numpy()
    m.compile()
    m.compile(fullgraph=True)
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    m.compile(disable=True)
    assert m.__dict__["forward"] is patched
    n = len(calls)
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    assert len(calls) == n + 1
