"""Review 18d: eager parity with PyTorch 2.13, side by side, in the ops compiled programs use most (indexing,
reductions, shape ops, creation and random ops): a compiled replay copies eager's results, so an eager divergence
is one everywhere.  Each test states what PyTorch gives (a documented fact or numpy's value) and what coretorch gave
before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


def test_advanced_index_results_of_a_row_major_tensor_are_row_major(device):
    """PyTorch lays an advanced-indexing result out as its TensorIterator orders the operands: a row-major source
    indexed by row-major index tensors gives a row-major result, so ``x[:, idx].view(-1)`` works.  The cpu backend
    kept numpy's fancy-indexing layout (the index dims outermost in memory): ``x[:, idx]`` of a (3, 4, 5) tensor had
    strides (5, 15, 1) and ``.view(-1)`` raised "view size is not compatible"."""
    a = np.arange(60.0).reshape(3, 4, 5)
    x = torch.tensor(a, device=device)
    i, m = [0, 2], [True, False, True, True]
    cases = [((slice(None), i), (slice(None), np.array(i))),
             ((slice(None), slice(None), i), (slice(None), slice(None), np.array(i))),
             ((None, Ellipsis, i), (None, Ellipsis, np.array(i))),
             ((1, slice(None), i), None),  # (numpy would take the int for an index array too)
             ((slice(None), m, [1, 0, 4]), (slice(None), np.array(m), np.array([1, 0, 4]))),
             ((slice(0, 2), i, slice(1, 4)), (slice(0, 2), np.array(i), slice(1, 4))),
             ((slice(None), [[1], [0]], i), (slice(None), np.array([[1], [0]]), np.array(i)))]
    for key, nkey in cases:
        tkey = tuple(torch.tensor(k, device=device) if isinstance(k, list) else k for k in key)
        r = x[tkey]
        assert r.is_contiguous(), key
        want = a[1][:, i] if key[0] == 1 else a[nkey]
        np.testing.assert_array_equal(_np(r.view(-1)), want.reshape(-1))


def test_advanced_index_result_of_a_transposed_tensor_keeps_its_order(device):
    """A non-row-major source gives its stride order to the result's slice dims (PyTorch: ``y[:, idx]`` of
    ``y = x.permute(2, 1, 0)``, x (5, 4, 3), has strides (1, 3, 6)); the opencl backend made every result row-major,
    the cpu backend numpy's (1, 15, 3)."""
    a = np.arange(60.0).reshape(5, 4, 3)
    y = torch.tensor(a, device=device).permute(2, 1, 0)
    idx = torch.tensor([0, 2], device=device)
    r = y[:, idx]
    assert r.stride() == (1, 3, 6)
    np.testing.assert_array_equal(_np(r), a.transpose(2, 1, 0)[:, [0, 2]])
    assert y[idx].stride() == (20, 1, 4)
