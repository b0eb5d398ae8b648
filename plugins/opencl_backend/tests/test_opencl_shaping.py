"""The opencl 'index_reduce_' kernel (scatter_reduce prod/amax/amin) on each of its paths: the compare-and-swap
loop for 4- and 8-byte dtypes, the one-work-item loop for the others (float16, 1- and 2-byte integers, bool), with
many repeats per target (contention) and NaN; and the 'as_strided' view primitive."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _ref(a, idx, src, op):
    out = a.copy()
    {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[op].at(out, idx, src)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin"])
def test_index_reduce_paths(dtype, op):
    rng = np.random.default_rng(0)
    n, m = 7, 3000  # many sources per target: the atomic loop retries under contention
    if dtype == "bool":
        a, src = rng.random(n) < 0.5, rng.random(m) < 0.9
    elif dtype.startswith(("int", "uint")):
        lo = 0 if dtype == "uint8" else -3
        a = rng.integers(lo, 4, n).astype(dtype)
        src = (rng.integers(1, 2, m) if op == "prod" else rng.integers(lo, 100 if op != "sum" else 3, m)).astype(dtype)
        if op == "prod":
            src[:5] = 2 if dtype != "int8" else -1  # a few factors that are not 1
    else:
        a = rng.uniform(-2, 2, n).astype(dtype)
        src = (rng.choice([1.0, -1.0, 1.001], m) if op == "prod" else rng.uniform(-9, 9, m) if op != "sum"
               else rng.uniform(-0.01, 0.01, m)).astype(dtype)
    idx = rng.integers(0, n, m)
    want = _ref(a, idx, src, op)
    dt = getattr(coretorch, dtype) if dtype != "bool" else coretorch.bool
    x = coretorch.tensor(a, dtype=dt, device="opencl")
    i, s = coretorch.tensor(idx, device="opencl"), coretorch.tensor(src, dtype=dt, device="opencl")
    # the kernel itself (scatter_reduce of float16 sums and products accumulates in float32, as PyTorch's CPU)
    table = x._be
    out = table.contiguous(x._data)
    table.index_reduce_(out, (i._data,), s._data, op)
    got = table.to_numpy(out)
    if dtype.startswith("float"):
        tol = 1e-3 if dtype == "float16" else 1e-5
        np.testing.assert_allclose(got, want, rtol=2 * tol, atol=tol)
        if dtype == "float16" and op in ("sum", "prod"):
            wide = _ref(a.astype(np.float32), idx, src.astype(np.float32), op).astype(np.float16)
            np.testing.assert_array_equal(x.scatter_reduce(0, i, s, op).cpu().numpy(), wide)
    else:
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(x.scatter_reduce(0, i, s, op).cpu().numpy(), want)


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_index_reduce_propagates_nan(op):
    x = coretorch.tensor([0.0, 1.0, 2.0], device="opencl")
    src = coretorch.tensor([float("nan"), 5.0, -5.0, 3.0], device="opencl")
    got = x.scatter_reduce(0, coretorch.tensor([0, 0, 1, 2], device="opencl"), src, op).cpu().numpy()
    assert np.isnan(got[0]) and not np.isnan(got[1:]).any()


def test_as_strided_is_a_launch_free_view():
    from coretorch_opencl import STATS
    x = coretorch.arange(12.0, device="opencl")
    before = STATS["launches"]
    v = x.as_strided((3, 3), (4, 1), 1)
    d = x.reshape(3, 4).diagonal(1)
    u = x.unfold(0, 4, 4)
    assert STATS["launches"] == before  # views: no kernel ran
    np.testing.assert_array_equal(v.cpu().numpy(), np.lib.stride_tricks.as_strided(
        np.arange(12.0)[1:], (3, 3), (32, 8)))
    assert d.tolist() == [1.0, 6.0, 11.0] and u.tolist()[2] == [8.0, 9.0, 10.0, 11.0]
