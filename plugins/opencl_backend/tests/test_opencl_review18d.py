"""Review 18d (opencl only): eager parity with PyTorch 2.13 of the opencl kernels in the ops compiled programs use
most.  Each test states what PyTorch gives and what the opencl backend gave before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("chunked", [False, True])
def test_float32_cumsum_accumulates_in_double(monkeypatch, chunked):
    """PyTorch's CPU cumsum/cumprod accumulate float32 in double (acc_type): the last of 2 * 10^6 running sums of
    values near 1000 is within float32 rounding of the exact sum.  The opencl scan added in float32: 1.6% off on
    the row loop (every add past 2 * 10^9 rounds to 256)."""
    from coretorch_opencl import scan
    try:
        torch.zeros(1, dtype=torch.float64, device="opencl")
    except (RuntimeError, TypeError):
        pytest.skip("no float64 on this device")
    monkeypatch.setattr(scan, "chunks", lambda dev, rows, length, dt: 16 if chunked else 1)
    a = (np.random.default_rng(0).random(2_000_003) + 1000).astype(np.float32)
    got = torch.tensor(a, device="opencl").cumsum(0).cpu().numpy()
    want = np.cumsum(a.astype(np.float64))
    np.testing.assert_allclose(got[-1], want[-1], rtol=2e-7)
    np.testing.assert_allclose(got[::1000], want[::1000].astype(np.float32), rtol=2e-7)
    p = torch.tensor(np.full(1000, 1.001, np.float32), device="opencl").cumprod(0).cpu().numpy()
    np.testing.assert_allclose(p, np.cumprod(np.full(1000, np.float32(1.001), np.float64)), rtol=2e-7)
