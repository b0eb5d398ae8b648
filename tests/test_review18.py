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


def test_index_fill_counts_negative_indices_from_the_end(device):
    """PyTorch's ``index_fill_`` takes indices in [-size, size) (``torch.zeros(3).index_fill_(0, tensor([-1]), 5)``
    fills the last element; -4 raises IndexError), unlike index_copy/index_select.  coretorch raised IndexError for
    every negative index.  The value's gradient reads the filled positions with the indices counted from the end
    (PyTorch 2.13 raises an IndexError in that backward: here it is computed)."""
    x = torch.zeros(3, 4, device=device)
    x.index_fill_(1, torch.tensor([-1, 0], device=device), 5.0)
    want = np.zeros((3, 4), np.float32)
    want[:, [3, 0]] = 5.0
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    assert torch.tensor(1.0, device=device).index_fill_(0, torch.tensor([-1], device=device), 5.0).item() == 5.0
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        torch.zeros(3, device=device).index_fill_(0, torch.tensor([-4], device=device), 1.0).cpu()  # (opencl: at
        # the next host read, as CUDA's device-side asserts)
    with pytest.raises(IndexError, match="index -1 is out of bounds"):   # index_copy stays non-negative, as PyTorch
        torch.zeros(3, device=device).index_copy_(0, torch.tensor([-1], device=device),
                                                  torch.ones(1, device=device)).cpu()
    idx = torch.tensor([-1, 1, -3], device=device)
    a = torch.randn(2, 3, dtype=torch.float64, device=device, requires_grad=True)
    v = torch.tensor(0.7, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, v: a.index_fill(1, idx, v) * torch.arange(
        6.0, dtype=torch.float64, device=device).view(2, 3), (a, v))
