"""Review 17d on opencl: eager parity with PyTorch 2.13 (integer overflow in the reduction and scan kernels, the
layout of elementwise results): regressions found."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch

_BE = torch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


@pytest.mark.parametrize("dt", [np.int64, np.int32])
def test_integer_sum_prod_and_scan_kernels_add_unsigned(dt):
    """The sum/prod reduction and cumsum/cumprod scan kernels of int and long combined in signed C arithmetic,
    whose overflow is undefined (PoCL wrapped, another compiler may fold or trap); PyTorch wraps.  They now
    compute in the unsigned type (the elementwise add/mul's rule, codegen.wrapping)."""
    from coretorch_opencl import codegen as cg, scan
    from coretorch_opencl.reductions import ReductionKernels
    u = cg.utype(cg.ctype(dt))
    for op in ("sum", "prod"):
        src = ReductionKernels._reduce_src(None, "k", op, np.dtype(dt), np.dtype(dt), 1, 1)
        assert f"({u})acc" in src
    src = scan._src(np.dtype(dt), 1)
    assert src.count(f"({u})acc") == 6 and f"({u})b0" in src  # cumsum and cumprod: loop, rescan, prefix


@pytest.mark.parametrize("chunked", [False, True])
def test_int64_cumsum_wraps_on_both_scan_paths(monkeypatch, chunked):
    """cumsum of int64 values that overflow, on the row loop and the chunked scan (forced): PyTorch's wrapped
    values."""
    from coretorch_opencl import scan
    monkeypatch.setattr(scan, "chunks", lambda dev, rows, length, dt: 7 if chunked else 1)
    M = 2**63 - 1
    x = torch.full((700,), M, dtype=torch.int64, device="opencl")
    want = [((i + 1) * M + 2**63) % 2**64 - 2**63 for i in range(700)]
    assert x.cumsum(0).tolist() == want
    assert x.cumprod(0).tolist()[:3] == [M, 1, M]
