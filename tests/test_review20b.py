"""Review 20b: eager linear algebra (``torch.linalg`` and the torch-level aliases, the BLAS-style fused products)
and sorting/searching/histograms against PyTorch 2.13, on every installed device.  Each test states what PyTorch
gives (numpy/scipy/math values or documented facts) and what coretorch gave before the fix."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histc_of_data_with_nan_or_inf_raises(device, dtype):
    """PyTorch's histc reads the data's range (min == max == 0, its default) to the host and raises "torch.histc:
    range of [nan, nan] is not finite" for data holding a NaN or an inf (and for an infinite or NaN ``min``/
    ``max``); data with NaN inside a given finite range is counted without it.  Before: the range stayed on the
    device, so data with a NaN gave an all-zero histogram silently, ``[0, -inf]`` raised scatter_add's "index
    -9223372036854775808 is out of bounds" and ``max=inf`` put everything in the first bin."""
    nan, inf = math.nan, math.inf
    for data, kw in [([0.0, nan, 1.0], {}), ([nan, nan], {}), ([0.0, -inf], {}), ([0.0, inf, 2.0], {}),
                     ([0.0, 1.0], dict(min=0, max=inf)), ([0.0, 1.0], dict(min=nan, max=1))]:
        with pytest.raises(RuntimeError, match="is not finite"):
            torch.histc(torch.tensor(data, dtype=dtype, device=device), bins=2, **kw)
    x = torch.tensor([0.0, nan, 1.0, inf, 0.2], dtype=dtype, device=device)
    np.testing.assert_array_equal(_np(torch.histc(x, bins=2, min=0, max=1)), [2.0, 1.0])
    np.testing.assert_array_equal(_np(torch.histc(torch.tensor([1.0, 2.0, 2.0, 4.0], dtype=dtype, device=device),
                                                  bins=3)), [1.0, 2.0, 1.0])


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3)])
def test_matrix_norm_of_an_empty_matrix_is_zero_for_the_maximum_orders(device, shape):
    """PyTorch: the 1-, inf- and 2-norms of an empty matrix are 0 (the maximum of non-negative sums or singular
    values over nothing, taken as an inf vector norm), like its 'fro' and 'nuc' norms; only the minimum orders
    (-1, -inf, -2) over an empty dimension raise IndexError.  Before: ord 1, inf and 2 raised "amax(): Expected
    reduction dim ... to have non-zero size" for every empty matrix shape."""
    x = torch.zeros(shape, device=device)
    for o in ("fro", "nuc", 1, 2, math.inf):
        r = torch.linalg.matrix_norm(x, ord=o)
        assert r.shape == shape[:-2] and not _np(r).any(), o
    with pytest.raises(IndexError):
        torch.linalg.matrix_norm(torch.zeros(3, 0, device=device), ord=-1)
    assert torch.linalg.norm(torch.zeros(0, 3, device=device), ord=2).item() == 0.0


def test_cond_of_empty_matrices_is_zero(device):
    """PyTorch's linalg.cond returns 0 for empty matrices (numpy defines none), of the batch's shape; a numeric
    order checks the size before the shape (a 0 x 3 matrix gives 0), 'fro'/'nuc' check squareness first.  Before:
    p=None/2/-2 raised IndexError ("index 0 is out of bounds"), 1/-1/inf/-inf raised amax's IndexError."""
    for p in (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"):
        for shape in [(0, 0), (2, 0, 0)]:
            r = torch.linalg.cond(torch.zeros(shape, dtype=torch.float64, device=device), p=p)
            assert r.shape == shape[:-2] and r.dtype == torch.float64 and not _np(r).any(), p
    assert torch.linalg.cond(torch.zeros(0, 3, device=device), p=1).shape == ()
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=fro\): A must be batches of square matrices"):
        torch.linalg.cond(torch.zeros(0, 3, device=device), p="fro")
    a = torch.tensor([[2.0, 1.0], [0.0, 0.5]], dtype=torch.float64, device=device)
    assert torch.linalg.cond(a, p=1).item() == pytest.approx(np.linalg.cond(_np(a), 1))
