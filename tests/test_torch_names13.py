"""torch-level function forms of Tensor methods scripts call on ``torch``: ``absolute adjoint nonzero_static`` and the
in-place ``arcsin_ arcsinh_ addmv_ as_strided_ resize_as_`` (each the method's result; in-place ones return their
input, as PyTorch's)."""
from __future__ import annotations

import numpy as np

import coretorch as torch


def test_function_forms(device):
    x = torch.tensor([-0.5, 0.25, 0.0], device=device)
    assert np.array_equal(torch.absolute(x).cpu().numpy(), np.abs(x.cpu().numpy()))
    m = torch.arange(6.0, device=device).reshape(2, 3)
    assert torch.adjoint(m).shape == (3, 2) and np.array_equal(torch.adjoint(m).cpu().numpy(), m.cpu().numpy().T)
    assert torch.nonzero_static(x, size=3).cpu().tolist() == [[0], [1], [-1]]
    for name, ref in [("arcsin_", np.arcsin), ("arcsinh_", np.arcsinh)]:
        y = x.clone()
        assert getattr(torch, name)(y) is y
        np.testing.assert_allclose(y.cpu().numpy(), ref(x.cpu().numpy()), rtol=1e-6)
    v = torch.ones(3, device=device)
    out = torch.zeros(2, device=device)
    assert torch.addmv_(out, m, v, beta=0.5, alpha=2.0) is out
    assert out.cpu().tolist() == [6.0, 24.0]
    z = torch.zeros(4, device=device)
    assert torch.resize_as_(z, m) is z and z.shape == (2, 3)
    w = torch.arange(6.0, device=device)
    assert torch.as_strided_(w, (2, 2), (1, 2)) is w and w.cpu().tolist() == [[0.0, 2.0], [1.0, 3.0]]
