"""Gathers of whole contiguous rows (an embedding lookup, ``w[idx]``, ``index_select`` on dim 0) take a row kernel
(one work-item per row) instead of the generic per-element gather: the same values for every dtype, index dtype,
negative and repeated indices, index arrays of any rank, a table at an offset into its buffer; other layouts keep
the generic kernel; an index out of range still raises."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _t(a):
    return torch.tensor(a, device="opencl")


@pytest.mark.parametrize("dt", [np.float32, np.int64, np.bool_, np.float16])
def test_row_gathers_match_numpy(dt):
    r = np.random.default_rng(0)
    table = (r.standard_normal((9, 6)) * 4).astype(dt)
    idx = r.integers(-9, 9, (4, 5))
    w = _t(table)
    for got, want in [(w[_t(idx)], table[idx]), (w[_t(idx[0]).int()], table[idx[0]]),
                      (w.index_select(0, _t(np.abs(idx[1]) % 9)), table[np.abs(idx[1]) % 9]),
                      (w[_t(idx.T)], table[idx.T]),                      # a transposed index: the generic kernel
                      (w[:, 2:5][_t(idx)], table[:, 2:5][idx]),          # rows not contiguous: the generic kernel
                      (w[3:][_t(np.abs(idx) % 6)], table[3:][np.abs(idx) % 6])]:   # the table at an offset
        assert np.array_equal(got.cpu().numpy(), want)
    if dt == np.float32:
        assert np.array_equal(F.embedding(_t(np.abs(idx) % 9), w).cpu().numpy(), table[np.abs(idx) % 9])


def test_row_gather_out_of_range_raises():
    w = _t(np.ones((4, 3), np.float32))
    with pytest.raises(IndexError):
        w[_t(np.array([1, 4]))].cpu()
    torch.accelerator.synchronize("opencl")
