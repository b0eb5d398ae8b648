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
