"""F.gelu (the erf form) in float32 on every device at the points users check by hand: GELU'(+-0) = 0.5 and
GELU(x) = x / 2 for tiny x exactly (as PyTorch's), huge finite inputs (relu(x); gradient 1 or 0), +-inf, and the
far negative side, with and without a graph."""
from __future__ import annotations

import numpy as np

import coretorch as torch
import coretorch.nn.functional as F


def test_gelu_float32_exact_points_and_huge_inputs(device):
    xs = np.array([0.0, -0.0, 1e-30, -1e-30, 1e10, -1e10, 3e38, -3e38, -13.5, 13.5, np.inf, -np.inf], np.float32)
    x = torch.tensor(xs, device=device, requires_grad=True)
    y = F.gelu(x)
    y.backward(torch.ones_like(x))
    got, grad = y.detach().cpu().numpy(), x.grad.cpu().numpy()
    np.testing.assert_array_equal(got, F.gelu(x.detach()).cpu().numpy())     # the same with and without a graph
    np.testing.assert_array_equal(got[:4], xs[:4] * np.float32(0.5))
    np.testing.assert_array_equal(got[4:8], [1e10, 0.0, np.float32(3e38), 0.0])
    assert abs(got[8]) < 1e-37 and got[9] == np.float32(13.5)
    assert got[10] == np.inf and np.isnan(got[11])                            # -inf * Phi(-inf) = -inf * 0
    np.testing.assert_array_equal(grad[:2], [0.5, 0.5])
    np.testing.assert_allclose(grad[2:10], [0.5, 0.5, 1, 0, 1, 0, 0, 1], atol=1e-7)
