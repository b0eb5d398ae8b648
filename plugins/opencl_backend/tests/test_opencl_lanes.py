"""The float vector width the opencl backend's CPU kernels use (``Device.float_lanes``) is the one the device's
compiler really targets.  PoCL 6 reports a preferred width of 16 on a Zen 4 EPYC (it has AVX-512) but compiles for
``-target-cpu znver3`` (no AVX-512): 16-wide vectors there are split in two, the blocked matmul's AVX-512 tile
spills, and every 16-wide call of a vector builtin (exp, tanh) makes the build warn that the ABI changes, a
CompilerWarning shown to users (an error in these tests) at each first build.  Skipped only without an OpenCL
device."""
from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import coretorch
import coretorch.nn as nn
import coretorch.nn.functional as F

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _fresh_build_log(dev, src: str) -> str:
    """The build log of ``src`` built now, outside pyopencl's binary cache (a cached binary has no log)."""
    prog = cl.Program(dev.ctx, src).build(cache_dir=False)
    return prog.get_build_info(dev.cldev, cl.program_build_info.LOG) or ""


def test_float_lanes_builds_vector_builtins_without_abi_notes():
    """A kernel calling exp and tanh on vectors of ``float_lanes`` floats builds without clang's "changes the ABI"
    note, and the width is at most the device's preference (4 at least on a CPU, the kernels' floor)."""
    dev = _BE.device(0)
    lanes = dev.float_lanes
    assert lanes <= max(4, dev.cldev.preferred_vector_width_float)
    if not dev.is_cpu:
        return
    assert lanes in (4, 8, 16)
    src = (f"typedef float __attribute__((ext_vector_type({lanes}))) v_t;\n"
           f"__kernel void lanes_probe(__global float *x) {{ v_t a = vload{lanes}(0, x); "
           f"vstore{lanes}(exp(a) + tanh(a), 0, x); }}\n// {np.random.default_rng().integers(1 << 62)}\n")
    assert "changes the ABI" not in _fresh_build_log(dev, src)


def test_kernels_that_take_the_lanes_match_numpy():
    """The kernels sized by the lanes (GELU and its gradient, layer norm rows, an LSTM's gates, cross-entropy's
    exp, float32 products at the lanes' blocking, column sums) give numpy's results."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 64)).astype(np.float32)
    t = coretorch.tensor(x, device="opencl", requires_grad=True)
    y = F.gelu(t)
    y.sum().backward()
    from math import erf, sqrt
    ref = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / sqrt(2))))(x.astype(np.float64))
    np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
    ln = F.layer_norm(t, (64,))
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(ln.detach().cpu().numpy(), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    w = rng.standard_normal((64, 48)).astype(np.float32)
    np.testing.assert_allclose((t @ coretorch.tensor(w, device="opencl")).detach().cpu().numpy(), x @ w,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(t.sum(0).detach().cpu().numpy(), x.sum(0), rtol=1e-5, atol=1e-5)
    lstm = nn.LSTM(64, 16).to("opencl")
    out, _ = lstm(t.detach().reshape(37, 1, 64))
    assert out.shape == (37, 1, 16) and np.isfinite(out.detach().cpu().numpy()).all()
    logits = coretorch.tensor(x, device="opencl")
    tgt = coretorch.tensor(rng.integers(0, 64, 37), device="opencl")
    ls = x - x.max(-1, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(-1, keepdims=True))
    np.testing.assert_allclose(F.cross_entropy(logits, tgt).item(), -ls[np.arange(37), tgt.cpu().numpy()].mean(),
                               rtol=1e-5)
