"""Review 21a (eager, second pass): indexing, scatter/gather, masked and in-place writes, on every backend and
dtype, compared side by side with PyTorch 2.13.  Each test states what PyTorch gives (a documented fact, numpy's
value or the derivative's definition) and what coretorch gave before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


def test_index_fill_value_gradient_counts_a_repeated_index_once(device):
    """index_fill writes its value once per filled position, however often the index names it (PyTorch's
    derivative sums the gradient over the unique indices; -1 and 4 are one column of 5): d out / d value is the
    number of filled positions.  coretorch summed the gradient once per index entry (12 for [4, 0, 4] on a 4x5
    input instead of 8) and gradcheck failed."""
    x = torch.randn(4, 5, dtype=torch.float64, device=device, requires_grad=True)
    v = torch.tensor(2.0, dtype=torch.float64, device=device, requires_grad=True)
    idx = torch.tensor([4, 0, 4, -1], device=device)
    y = x.index_fill(1, idx, v)
    (gv,) = torch.autograd.grad(y, v, torch.ones_like(y))
    assert gv.item() == 8.0
    assert torch.autograd.gradcheck(lambda a, b: a.index_fill(1, idx, b), (x, v))
    z = torch.randn((), dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: a.index_fill(0, torch.tensor([0, 0, -1], device=device), b), (z, v))
