"""Review 20h (eager): reductions and scans (dims, keepdim, dtype=, out=, empty inputs, NaN, 0-d inputs and their
gradients), on every installed device.  Each test states what PyTorch 2.13 does (documented facts or numpy values)
and what coretorch did before the fix."""
from __future__ import annotations

import pytest

import coretorch as torch


@pytest.mark.parametrize("dim", [1, -2, (1,), (0, 0), (0, -1)])
@pytest.mark.parametrize("fn", [torch.linalg.vector_norm, torch.linalg.norm])
def test_vector_norm_of_a_0d_tensor_checks_its_dims(device, fn, dim):
    """A 0-d tensor has the dims 0 and -1 only, each once: PyTorch's ``linalg.vector_norm(x0d, 2, 1)`` raises
    IndexError (out of range) and ``dim=(0, 0)`` or ``(0, -1)`` RuntimeError (a dim repeated), as ``sum`` does.
    coretorch dropped any ``dim`` of a 0-d input and returned ``|x|``."""
    x = torch.tensor(2.0, device=device)
    err = IndexError if dim in (1, -2, (1,)) else RuntimeError
    with pytest.raises(err):
        fn(x, 2, dim)
    with pytest.raises(err):
        torch.sum(x, dim)
    assert fn(x, 2, 0).item() == fn(x, 2, (-1,)).item() == 2.0
