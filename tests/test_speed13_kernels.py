"""The fast paths of issue 13's speed targets: sort as one packed 64-bit sort (values and indices, stable, NaN last,
-0.0 tied with 0.0) and float32 erf / erfc / GELU as numpy polynomial evaluations (accuracy in ulps against
scipy.special on dense grids with the tails, and the IEEE special values), on every device through the tensor API
and on the cpu kernels directly."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.testing import available_devices
from _sort_reference import ref_sort_indices
from coretorch.testing_ops.ulps import ulps32

DEVICES = available_devices()


def _np(t):
    return t.detach().cpu().float().numpy() if t.dtype is torch.bfloat16 else t.detach().cpu().numpy()


def _data(rng, shape, dtype: str) -> np.ndarray:
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        a = rng.integers(-6, 6, shape).astype(np.float64) / 4   # many ties
        a[rng.random(shape) < 0.08] = np.nan
        a[rng.random(shape) < 0.08] = -0.0
        a[rng.random(shape) < 0.04] = np.inf
        a[rng.random(shape) < 0.04] = -np.inf
        return a
    info = np.iinfo(dtype)
    a = rng.integers(max(info.min, -1000), min(int(info.max), 1000) + 1, shape)
    a.flat[:2] = [info.min, info.max]
    return a


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int16", "uint8", "int64", "float64"])
def test_sort_is_stable_with_nan_last_along_any_dim(dev, dtype):
    rng = np.random.default_rng(13)
    for shape, dim in [((300,), 0), ((6, 70), 1), ((70, 6), 0), ((3, 50, 4), 1), ((3, 4, 50), -1)]:
        a = _data(rng, shape, dtype)
        x = torch.tensor(a, dtype=getattr(torch, dtype), device=dev)
        a = _np(x)   # the values the tensor holds (bfloat16 / float16 rounded)
        for descending in (False, True):
            v, i = torch.sort(x, dim=dim, descending=descending, stable=True)
            want = ref_sort_indices(a, dim, descending)
            np.testing.assert_array_equal(_np(i), want, err_msg=f"{dtype} {shape} dim={dim} desc={descending}")
            np.testing.assert_array_equal(_np(v), np.take_along_axis(a, want, dim))
            assert v.dtype == x.dtype and i.dtype == torch.int64
            assert torch.equal(torch.argsort(x, dim=dim, descending=descending, stable=True), i)


@pytest.mark.parametrize("dev", DEVICES)
def test_sort_of_non_contiguous_views_and_signed_zeros(dev):
    rng = np.random.default_rng(1)
    a = _data(rng, (40, 30), "float32").astype(np.float32)
    x = torch.tensor(a, device=dev)
    for view, ref in ((x.t(), a.T), (x[::2, 1::3], a[::2, 1::3])):
        assert not view.is_contiguous()
        for dim in (0, 1, -1):
            v, i = torch.sort(view, dim=dim, stable=True)
            want = ref_sort_indices(ref, dim, False)
            np.testing.assert_array_equal(_np(i), want)
            got, exp = _np(v), np.take_along_axis(ref, want, dim)
            np.testing.assert_array_equal(got, exp)
            # -0.0 and 0.0 tie (input order) and each keeps its own sign
            assert (np.signbit(got) == np.signbit(exp))[~np.isnan(exp)].all()


@pytest.mark.parametrize("n", [1, 2, 5000])
def test_cpu_packed_sort_pieces_cover_rows_longer_and_shorter_than_a_piece(monkeypatch, n):
    """The passes before and after the packed sort run on pieces: rows split across pieces or several per piece."""
    from coretorch_cpu import sorting
    monkeypatch.setattr(sorting, "_CHUNK", 64)
    rng = np.random.default_rng(n)
    for dtype in (np.float32, np.int32, np.int8):
        a = _data(rng, (7, n), np.dtype(dtype).name).astype(dtype)
        for descending in (False, True):
            v, i = sorting.sort(a, 1, descending, True)
            want = ref_sort_indices(a, 1, descending)
            np.testing.assert_array_equal(i, want)
            np.testing.assert_array_equal(v, np.take_along_axis(a, want, 1))


def test_cpu_packed_sort_int32_keys_beyond_the_float64_range():
    """int32 values >= 0x7FE00000 would make a NaN/inf double: those rows are sorted as int64 words instead."""
    from coretorch_cpu import sorting
    a = np.array([2 ** 31 - 1, -2 ** 31, 0x7FE00000, 5, -3, 5, 0x7FE00000 - 1], np.int32)
    for descending in (False, True):
        v, i = sorting.sort(a, 0, descending, False)
        want = ref_sort_indices(a, 0, descending)
        np.testing.assert_array_equal(i, want)
        np.testing.assert_array_equal(v, a[want])


# ---- erf / erfc / GELU ----------------------------------------------------------------------------------------

def _grid() -> np.ndarray:
    """Every region of float32 erf: a dense linear grid to the tails, a geometric one down to subnormals."""
    x = np.concatenate([np.linspace(-11, 11, 800_001, dtype=np.float32),
                        np.geomspace(1e-40, 11, 100_001).astype(np.float32)])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("name, ref, max_ulp", [("erf", sp.erf, 8), ("erfc", sp.erfc, 9)])
def test_cpu_float32_erf_and_erfc_are_within_a_few_ulp(name, ref, max_ulp):
    from coretorch_cpu import erf32
    x = _grid()
    u = ulps32(getattr(erf32, name)(x), ref(x.astype(np.float64)))
    assert u.max() <= max_ulp, f"{name}: {u.max():.2f} ulp at x = {x[np.argmax(u)]!r}"
    assert (np.abs(erf32.erf(x)) <= 1).all()


def test_cpu_float32_gelu_accuracy():
    """GELU as relu(x) - |x| erfc(|x| / sqrt 2) / 2: no cancellation on the negative side; its one exp rounds
    -x^2 / 2 to float32, so the relative error grows as ~x^2 3e-8 in the far negative tail."""
    from coretorch_cpu import erf32
    x = _grid()
    x64 = x.astype(np.float64)
    ref = x64 * sp.ndtr(x64)
    got = erf32.gelu(x)
    u = ulps32(got, ref)
    assert u[x >= -2].max() <= 12
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
    live = np.abs(ref) > 1e-37  # below, float32 results are subnormal (absolute spacing 1.4e-45)
    assert rel[live & (x >= -6)].max() < 5e-6
    assert rel[live].max() < 2e-5


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_erf_erfc_gelu_special_values_and_accuracy_on_every_device(dev, dtype):
    inf, nan = float("inf"), float("nan")
    s = torch.tensor([inf, -inf, nan, 0.0, -0.0, 30.0, -30.0], dtype=getattr(torch, dtype), device=dev)
    np.testing.assert_array_equal(_np(torch.erf(s)), [1, -1, nan, 0, 0, 1, -1])
    assert np.signbit(_np(torch.erf(s))[4])
    np.testing.assert_array_equal(_np(torch.erfc(s)), [0, 2, nan, 1, 1, 0, 2])
    np.testing.assert_array_equal(_np(F.gelu(s))[[0, 2, 3, 5, 6]], [inf, nan, 0, 30, 0])
    assert np.isnan(_np(F.gelu(s))[1])   # -inf * Phi(-inf) = -inf * 0, as PyTorch
    x = torch.tensor(np.linspace(-9, 9, 20001), dtype=getattr(torch, dtype), device=dev)
    xv = _np(x).astype(np.float64)
    tol = {"float32": 2e-6, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    # GELU's absolute tolerance is PyTorch's own formula's, x (1 + erf(x / sqrt 2)) / 2, which loses the negative tail
    for got, want, atol in ((torch.erf(x), sp.erf(xv), 1e-9), (torch.erfc(x), sp.erfc(xv), 1e-30),
                            (F.gelu(x), xv * sp.ndtr(xv), 2e-7)):
        assert got.dtype == x.dtype
        np.testing.assert_allclose(_np(got), want, rtol=tol, atol=atol if dtype == "float32" else 1e-6)


@pytest.mark.parametrize("dev", DEVICES)
def test_erf_family_on_non_contiguous_and_empty_tensors(dev):
    a = np.random.default_rng(0).standard_normal((50, 40)).astype(np.float32) * 3
    x = torch.tensor(a, device=dev)
    for view, ref in ((x.t(), a.T), (x[::3, ::2], a[::3, ::2]), (x[:0], a[:0]), (x[0, 0], a[0, 0])):
        r64 = ref.astype(np.float64)
        np.testing.assert_allclose(_np(torch.erf(view)), sp.erf(r64), rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(_np(torch.erfc(view)), sp.erfc(r64), rtol=2e-6, atol=1e-30)
        np.testing.assert_allclose(_np(F.gelu(view)), r64 * sp.ndtr(r64), rtol=2e-6, atol=1e-7)
        assert torch.erf(view).shape == view.shape
