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
    src = scan._src(np.dtype(dt), 1, np.dtype(dt))
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


def test_a_copy_between_devices_keeps_the_layout():
    """``t.to("opencl")`` / ``t.cpu()`` of a transposed t keep its strides (PyTorch's copies preserve the layout:
    (1, 4) for a (3, 4).t()); coretorch's transfers arrived row-major (3, 1).  A sliced one arrives dense in its
    stride order; values, gradients unchanged."""
    for src, dst in (("cpu", "opencl"), ("opencl", "cpu")):
        t = torch.arange(12.0, device=src).reshape(3, 4).t()
        for y, want in ((t.to(dst), (1, 4)), (t.to(dst, torch.float64), (1, 4)), (t[::2].to(dst), (1, 2)),
                        ((t + 1).to(dst), (1, 4))):
            assert y.stride() == want and y.device.type == dst
        assert t.to(dst).tolist() == t.tolist() and t[::2].to(dst).tolist() == t[::2].tolist()
        w = t.clone().requires_grad_()
        (w.to(dst) * 2).sum().backward()
        assert w.grad.tolist() == [[2.0] * 3] * 4
