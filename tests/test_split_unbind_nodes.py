"""split/chunk (one piece included) and unbind give PyTorch's nodes (SplitBackward0, SplitWithSizesBackward0,
UnbindBackward0): one node for all pieces, their gradients joined by one cat/stack, zeros for unused pieces."""
from __future__ import annotations

import numpy as np

import coretorch as torch
from coretorch.autograd import gradcheck


def _names(pieces):
    return [type(p.grad_fn).__name__ for p in pieces]


def test_node_names(device):
    x = torch.ones(3, 2, device=device, requires_grad=True) * 1
    assert _names(x.split(4)) == ["SplitBackward0"]
    assert _names(x.split([3])) == ["SplitWithSizesBackward0"]
    assert _names(x.chunk(1)) == ["SplitBackward0"]
    assert _names(x.unbind(0)) == ["UnbindBackward0"] * 3
    with torch.no_grad():
        assert _names(x.unbind(1)) == ["NoneType"] * 2


def test_unbind_gradients(device):
    x = torch.randn(3, 4, dtype=torch.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: torch.stack([p * (i + 1) for i, p in enumerate(t.unbind(1))], 0), (x,))
    assert gradcheck(lambda t: t.unbind(0)[1] * 2, (x,))
    assert gradcheck(lambda t: t.split(5)[0].exp(), (x,))
    x = torch.ones(3, 4, device=device, requires_grad=True)
    a, b, _ = (x * 1).unbind(0)
    (a * 3 + b).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[3] * 4, [1] * 4, [0] * 4])
