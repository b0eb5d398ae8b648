"""coretorch-opencl's sorting kernels: the merge sort's run and merge-path boundaries (forced small runs and chunks),
topk's candidate pass (forced small chunks, k beyond it), long rows, every dtype, and no host round trip."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch_opencl import STATS
from coretorch_opencl import sorting as S

_BE = coretorch._backend.backends().get("opencl")
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason="no OpenCL device")


def _t(a, **kw):
    return coretorch.tensor(a, device="opencl", **kw)


def _want(a, desc):
    """numpy's stable order with PyTorch's rules (NaN largest; descending keeps ties in input order)."""
    f = a.astype(np.float64)
    k = np.where(np.isnan(f), np.inf, f) + np.isnan(f)
    if desc:
        return (a.shape[-1] - 1) - np.argsort(k[..., ::-1], -1, kind="stable")[..., ::-1]
    return np.argsort(k, -1, kind="stable")


@pytest.mark.parametrize("run,chunk", [(16, 256), (64, 256), (1, 1), (2, 4), (4, 2), (8, 64)])
@pytest.mark.parametrize("dtype,packed", [("float32", True), ("float32", False), ("float16", True), ("int64", True),
                                          ("int8", True), ("int32", False), ("uint8", True), ("float64", True)])
def test_merge_sort_boundaries(monkeypatch, run, chunk, dtype, packed):
    """Both merge sorts: (key, index) packed in one ulong (dtypes <= 32 bits) and the generic key + index pairs."""
    monkeypatch.setattr(S, "RUN", run)
    monkeypatch.setattr(S, "RUN_PACKED", run)
    monkeypatch.setattr(S, "CHUNK", chunk)
    monkeypatch.setattr(S, "PACKED", packed)
    rng = np.random.default_rng(run * 7 + chunk)
    for L in (1, 2, 3, 5, 17, 64, 100, 1000):
        a = rng.integers(0 if dtype == "uint8" else -9, 9, (3, L)).astype(dtype)
        if a.dtype.kind == "f":
            a[0, ::5] = np.nan
            a[1, ::4] = -0.0  # equal to 0.0: a tie kept in input order
        for desc in (False, True):
            v, i = coretorch.sort(_t(a), 1, desc, stable=True)
            w = _want(a, desc)
            np.testing.assert_array_equal(i.cpu().numpy(), w, err_msg=f"L={L} desc={desc}")
            np.testing.assert_array_equal(v.cpu().numpy(), np.take_along_axis(a, w, 1))
            np.testing.assert_array_equal(np.signbit(v.cpu().numpy()), np.signbit(np.take_along_axis(a, w, 1)))


@pytest.mark.parametrize("topk_chunk", [1024, 3, 8])
def test_topk_candidates(monkeypatch, topk_chunk):
    monkeypatch.setattr(S, "TOPK_CHUNK", topk_chunk)
    rng = np.random.default_rng(topk_chunk)
    for L in (4, 9, 50, 333, 5000):
        a = rng.integers(0, 40, (4, L)).astype(np.float32)
        a[1, ::3] = np.nan
        for k in sorted({1, 2, min(L, 9), min(L, 32), min(L, 40)}):  # 40: beyond the candidate pass, a full sort
            for largest in (True, False):
                v, i = coretorch.topk(_t(a), k, 1, largest)
                vn = v.cpu().numpy()
                ka = np.where(np.isnan(a), np.inf, a)
                want = np.sort(-ka if largest else ka, 1)[:, :k]
                got = np.where(np.isnan(vn), np.inf, vn)
                np.testing.assert_array_equal(got, -want if largest else want, err_msg=f"L={L} k={k}")
                np.testing.assert_array_equal(np.take_along_axis(a, i.cpu().numpy(), 1), vn)


def test_long_row_and_columns():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(300_001).astype(np.float32)
    v, i = coretorch.sort(_t(a))
    np.testing.assert_array_equal(v.cpu().numpy(), np.sort(a))
    np.testing.assert_array_equal(a[i.cpu().numpy()], np.sort(a))
    t = coretorch.topk(_t(a), 5)
    np.testing.assert_array_equal(t.values.cpu().numpy(), np.sort(a)[::-1][:5])
    b = rng.standard_normal((2000, 3)).astype(np.float32)  # sorted along dim 0: strided rows made contiguous
    np.testing.assert_array_equal(coretorch.sort(_t(b), 0).values.cpu().numpy(), np.sort(b, 0))
    s = np.sort(rng.standard_normal(10_000)).astype(np.float32)
    q = rng.standard_normal((50, 40)).astype(np.float32)
    np.testing.assert_array_equal(coretorch.searchsorted(_t(s), _t(q)).cpu().numpy(), np.searchsorted(s, q))


def test_no_host_round_trip():
    rng = np.random.default_rng(1)
    x = _t(rng.standard_normal((6, 50)).astype(np.float32))
    s = coretorch.sort(x, 1).values
    before = STATS["to_host"]
    outs = [coretorch.sort(x, 0), coretorch.topk(x, 3), coretorch.kthvalue(x, 4), coretorch.median(x, 1),
            coretorch.median(x), coretorch.nanmedian(x, 0), coretorch.mode(x), coretorch.quantile(x, 0.3, 1),
            coretorch.cummax(x, 1), coretorch.cummin(x, 0), coretorch.logcumsumexp(x, 1),
            coretorch.searchsorted(s, x), coretorch.histc(x, 10, min=-3, max=3), coretorch.aminmax(x),
            coretorch.diff(x),
            coretorch.cov(x), coretorch.argsort(x)]
    assert STATS["to_host"] == before, "a sorting op read from the device"
    assert len(outs) == 17
    coretorch.histc(x, 10)  # the data's range is read (PyTorch's CPU and CUDA kernels read it: a NaN raises)
    assert STATS["to_host"] == before + 1
