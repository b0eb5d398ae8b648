"""Review 23g: the opencl backend against the cpu backend, op by op, at the edges (dtypes, 0-d/empty/odd sizes,
non-contiguous operands, views, out=, reductions, scans, sorting, indexing, matmul, integer corner cases).  Each test
runs the op on both devices and asserts the same values, dtypes and shapes (float within rounding), or the same
error type; where PyTorch 2.13's value is the spec it is written down and said so."""
from __future__ import annotations

import types

import numpy as np
import pytest

import coretorch
from coretorch_opencl import device as cl_device

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _both(fn, *args):
    """``fn`` on the cpu operands and on their opencl copies: (cpu result, opencl result moved to the cpu)."""
    a = fn(*args)
    b = fn(*[x.to("opencl") if isinstance(x, coretorch.Tensor) else x for x in args])
    return a, (b.cpu() if isinstance(b, coretorch.Tensor) else b)


def _same(a, b, exact=True):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), (a.dtype, b.dtype, a.shape, b.shape)
    x, y = a.double().numpy() if a.dtype == coretorch.bfloat16 else a.numpy(), \
        b.double().numpy() if b.dtype == coretorch.bfloat16 else b.numpy()
    if exact:
        np.testing.assert_array_equal(x, y)
    else:
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def _cldev(pref: int, version: str):
    return types.SimpleNamespace(preferred_vector_width_float=pref, version=version)


def test_vector_width_is_capped_where_pocl_compiles_for_a_cpu_without_avx512():
    """PoCL 3.0 (LLVM 14) on a Zen 4/5 host reported a preferred float width of 16 (from the host's AVX-512
    features) while compiling for ``znver3`` (AVX2). Before: the 16-wide "_v" kernels were built anyway: a float32
    ``sqrt`` aborted the whole process in LLVM ("Cannot select fsqrt"), ``neg``/``add`` raised INVALID_KERNEL_NAME.
    The width is now capped at 8 unless the target CPU has AVX-512; other devices keep their preferred width."""
    znver3 = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3"
    assert cl_device.usable_vector_width(_cldev(16, znver3)) == 8
    assert cl_device.usable_vector_width(_cldev(8, znver3)) == 8
    for cpu in ("skylake-avx512", "icelake-server", "znver4", "sapphirerapids"):
        v = f"OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-{cpu}"
        assert cl_device.usable_vector_width(_cldev(16, v)) == 16
    assert cl_device.usable_vector_width(_cldev(16, "OpenCL 3.0 CUDA")) == 16   # not PoCL: as reported
    dev = _BE.device(0)
    assert dev.vector_width_float == cl_device.usable_vector_width(dev.cldev)


def test_float32_vector_kernels_run_and_match_cpu():
    """The contiguous float32 vector kernels (neg, sqrt, rsqrt, relu, add/sub/mul/div, their scalar forms, fill,
    casts) on sizes around the vector width. Before (on the Zen host above): the process aborted in sqrt."""
    for n in (1, 3, 8, 17, 257, 4099):
        x = coretorch.arange(n, dtype=coretorch.float32) / 7 + 0.5
        for fn in (coretorch.neg, coretorch.sqrt, coretorch.rsqrt, coretorch.relu, lambda t: t + t, lambda t: t * 2.5,
                   lambda t: t / 3, lambda t: t - 1, lambda t: t.to(coretorch.float32), lambda t: t.clone().fill_(2)):
            _same(*_both(fn, x), exact=True)
