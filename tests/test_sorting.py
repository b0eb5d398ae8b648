"""Sorting and selection beyond the OpCase table: NaN placement, large rows with ties (the cpu's packed and argsort
paths), views, out=, grad_fn names, where the gradient of a tied selection goes, and the statistics ops' options."""
from __future__ import annotations

import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices

DEVICES = available_devices()
NAN = float("nan")


def _np(t):
    return t.detach().cpu().numpy()


def _stable_argsort(a, axis=-1, desc=False):
    k = np.where(np.isnan(a), np.inf, a.astype(np.float64)) + np.isnan(a)
    k = np.moveaxis(k, axis, -1)
    if desc:
        i = (k.shape[-1] - 1) - np.argsort(k[..., ::-1], -1, kind="stable")[..., ::-1]
    else:
        i = np.argsort(k, -1, kind="stable")
    return np.moveaxis(i, -1, axis)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_sorts_last_ascending_first_descending(device):
    x = torch.tensor([[2.0, NAN, -1.0, NAN, 0.5], [NAN, NAN, NAN, 1.0, 1.0]], device=device)
    v, i = torch.sort(x, stable=True)
    np.testing.assert_array_equal(_np(i), [[2, 4, 0, 1, 3], [3, 4, 0, 1, 2]])
    assert np.isnan(_np(v)[0, 3:]).all() and _np(v)[0, 0] == -1
    v, i = x.sort(descending=True, stable=True)
    np.testing.assert_array_equal(_np(i), [[1, 3, 0, 4, 2], [0, 1, 2, 3, 4]])
    v, i = torch.topk(x, 2)
    assert np.isnan(_np(v)).all() and set(_np(i)[0]) == {1, 3}
    v, i = torch.topk(x, 2, largest=False)
    np.testing.assert_array_equal(_np(v)[0], [-1.0, 0.5])


@pytest.mark.parametrize("device", DEVICES)
def test_median_propagates_nan_nanmedian_ignores_it(device):
    x = torch.tensor([[1.0, NAN, 3.0, 2.0], [4.0, 1.0, 2.0, 3.0], [NAN, NAN, NAN, NAN]], device=device)
    assert math.isnan(torch.median(x).item()) and torch.nanmedian(x).item() == 2.0
    v, i = torch.median(x, 1)
    assert math.isnan(_np(v)[0]) and _np(v)[1] == 2.0 and math.isnan(_np(v)[2])
    assert math.isnan(_np(x)[0, _np(i)[0]])  # the index of a NaN
    v, i = torch.nanmedian(x, 1)
    np.testing.assert_array_equal(_np(v)[:2], [2.0, 2.0])  # lower median of the valid ones
    assert math.isnan(_np(v)[2])
    np.testing.assert_array_equal(_np(x)[[0, 1], _np(i)[:2]], [2.0, 2.0])
    q = torch.quantile(x, 0.5, dim=1)
    assert math.isnan(_np(q)[0]) and _np(q)[1] == 2.5
    np.testing.assert_allclose(_np(torch.nanquantile(x, 0.5, dim=1))[:2], [2.0, 2.5])
    assert math.isnan(torch.median(torch.tensor([], device=device)).item())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16"])
def test_large_rows_with_ties_sort_stably(device, dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-5, 5, (3, 40_000)).astype(dtype)
    x = torch.tensor(a, device=device)
    for desc in (False, True):
        v, i = torch.sort(x, 1, desc, stable=True)
        want = _stable_argsort(a, 1, desc)
        np.testing.assert_array_equal(_np(i), want)
        np.testing.assert_array_equal(_np(v), np.take_along_axis(a, want, 1))
    k = torch.kthvalue(x, 20_001, 1)
    np.testing.assert_array_equal(_np(k.values), np.sort(a, 1)[:, 20_000])
    np.testing.assert_array_equal(a[np.arange(3), _np(k.indices)], _np(k.values))
    t = torch.topk(x, 7, 1)
    np.testing.assert_array_equal(_np(t.values), -np.sort(-a, 1)[:, :7])
    np.testing.assert_array_equal(np.take_along_axis(a, _np(t.indices), 1), _np(t.values))


@pytest.mark.parametrize("device", DEVICES)
def test_views_and_negative_dims(device):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    x = torch.tensor(a, device=device).permute(2, 0, 1)  # (6, 4, 5), not contiguous
    an = np.transpose(a, (2, 0, 1))
    for d in (0, 1, -1):
        v, i = torch.sort(x, d)
        np.testing.assert_array_equal(_np(v), np.sort(an, d))
        np.testing.assert_array_equal(_np(i), np.argsort(an, d, kind="stable"))
        np.testing.assert_array_equal(_np(torch.cummax(x, d).values), np.maximum.accumulate(an, d))
        np.testing.assert_allclose(_np(torch.logcumsumexp(x, d)), np.logaddexp.accumulate(an, d), rtol=1e-5)
    np.testing.assert_array_equal(_np(torch.topk(x[::2], 2, dim=-2).values), -np.sort(-an[::2], -2)[:, :2])


@pytest.mark.parametrize("device", DEVICES)
def test_out_arguments(device):
    x = torch.tensor([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]], device=device)
    v, i = torch.empty(0, device=device), torch.empty(0, dtype=torch.int64, device=device)
    r = torch.sort(x, 1, out=(v, i))
    assert r.values is v and r.indices is i
    np.testing.assert_array_equal(_np(v), [[1, 2, 3], [-1, 0, 5]])
    v2, i2 = torch.empty(2, 2, device=device), torch.empty(2, 2, dtype=torch.int64, device=device)
    torch.topk(x, 2, out=(v2, i2))
    np.testing.assert_array_equal(_np(v2), [[3, 2], [5, 0]])
    cv, ci = torch.empty(2, 3, device=device), torch.empty(2, 3, dtype=torch.int64, device=device)
    torch.cummax(x, 1, out=(cv, ci))
    np.testing.assert_array_equal(_np(ci), [[0, 0, 0], [0, 0, 2]])
    m = torch.empty(2, 3, device=device)
    assert torch.msort(x, out=m) is m and _np(m)[0, 0] == 0.0
    s = torch.empty(2, dtype=torch.int64, device=device)
    torch.searchsorted(torch.tensor([1.0, 2.0, 3.0], device=device), torch.tensor([2.5, 0.0], device=device), out=s)
    np.testing.assert_array_equal(_np(s), [2, 0])
    nan_at = torch.searchsorted(torch.tensor([1.0, 2.0, 3.0], device=device), torch.tensor([NAN, 2.0], device=device))
    np.testing.assert_array_equal(_np(nan_at), [3, 1])  # a NaN value goes past every boundary
    with pytest.raises(RuntimeError, match="dtype"):
        torch.sort(x, out=(torch.empty(0, device=device), torch.empty(0, device=device)))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.msort(x.clone().requires_grad_(), out=m)


@pytest.mark.parametrize("device", DEVICES)
def test_grad_fn_names_and_where_tied_gradients_go(device):
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 5.0]], dtype=torch.float64, device=device,
                     requires_grad=True)
    names = {
        "SortBackward0": torch.sort(x).values, "TopkBackward0": torch.topk(x, 2).values,
        "KthvalueBackward0": torch.kthvalue(x, 2).values, "MedianBackward0": torch.median(x),
        "MedianBackward1": torch.median(x, 1).values, "NanmedianBackward0": torch.nanmedian(x),
        "NanmedianBackward1": torch.nanmedian(x, 0).values, "ModeBackward0": torch.mode(x).values,
        "CummaxBackward0": torch.cummax(x, 1).values, "CumminBackward0": torch.cummin(x, 1).values,
        "LogcumsumexpBackward0": torch.logcumsumexp(x, 1),
    }
    for name, out in names.items():
        assert type(out.grad_fn).__name__ == name
    # a selection's gradient goes to the one selected element, even among equal ones
    for fn in (lambda t: torch.median(t, 1), lambda t: torch.mode(t, 1), lambda t: torch.kthvalue(t, 2, 1)):
        v, i = fn(x)
        (g,) = torch.autograd.grad(v.sum(), x)
        want = np.zeros((2, 4))
        want[[0, 1], _np(i)] = 1
        np.testing.assert_array_equal(_np(g), want)
    # cummax's running max comes from the last of equal elements (PyTorch): the gradient goes there
    v, i = torch.cummax(x, 1)
    np.testing.assert_array_equal(_np(i), [[0, 1, 2, 2], [0, 1, 2, 3]])
    (g,) = torch.autograd.grad(v.sum(), x)
    np.testing.assert_array_equal(_np(g), [[1, 1, 2, 0], [1, 1, 1, 1]])


@pytest.mark.parametrize("device", DEVICES)
def test_logcumsumexp_does_not_overflow(device):
    x = torch.tensor([[-1000.0, 0.0, 1000.0, 1000.0], [5.0, -math.inf, 5.0, -math.inf]], dtype=torch.float64,
                     device=device)
    want = [[-1000.0, 0.0, 1000.0, 1000.0 + math.log(2)], [5.0, 5.0, 5.0 + math.log(2), 5.0 + math.log(2)]]
    np.testing.assert_allclose(_np(torch.logcumsumexp(x, 1)), want, rtol=1e-14)
    y = torch.full((1, 3), -math.inf, device=device)
    assert (_np(torch.logcumsumexp(y, 1)) == -math.inf).all()
    z = torch.tensor([[700.0, 710.0, -5.0]], dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(torch.logcumsumexp(z, 1).sum(), z)
    assert np.isfinite(_np(g)).all()
    assert torch.autograd.gradcheck(lambda t: torch.logcumsumexp(t, 0), (z.detach().reshape(3).requires_grad_(),))


@pytest.mark.parametrize("device", DEVICES)
def test_return_types(device):
    x = torch.tensor([[2.0, 1.0], [0.0, 3.0]], device=device)
    r = torch.sort(x)
    assert r._fields == ("values", "indices") and "return_types.sort(" in repr(r)
    assert type(torch.topk(x, 1)).__name__ == "topk" and type(torch.cummin(x, 0)).__name__ == "cummin"
    mm = torch.aminmax(x)
    assert mm._fields == ("min", "max") and mm.min.item() == 0.0 and mm.max.item() == 3.0
    mk = torch.aminmax(x, dim=1, keepdim=True)
    assert tuple(mk.min.shape) == (2, 1)
    vals, idx = torch.sort(x)  # unpacks as a tuple
    assert vals.shape == idx.shape


@pytest.mark.parametrize("device", DEVICES)
def test_unique_options(device):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 6, (5, 7)).astype(np.float32)
    x = torch.tensor(a, device=device)
    u, inv, cnt = torch.unique(x, sorted=False, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(_np(u)[_np(inv)], a)  # the inverse rebuilds the input
    assert _np(cnt).sum() == a.size
    rows = torch.tensor([[1, 2], [1, 2], [0, 9], [1, 2]], device=device)
    u, inv = torch.unique_consecutive(rows, return_inverse=True, dim=0)
    np.testing.assert_array_equal(_np(u), [[1, 2], [0, 9], [1, 2]])
    np.testing.assert_array_equal(_np(inv), [0, 0, 1, 2])


@pytest.mark.parametrize("device", DEVICES)
def test_argument_errors(device):
    x = torch.tensor([1.0, 2.0, 3.0], device=device)
    with pytest.raises(RuntimeError, match="side"):
        torch.searchsorted(x, x, right=True, side="left")
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([1, -1], device=device))
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x, 5, 2, 1)
    with pytest.raises(RuntimeError, match="interpolation"):
        torch.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="range"):
        torch.topk(x, 4)
    with pytest.raises(TypeError):
        torch.sort([1, 2])
    with pytest.raises(TypeError, match="'k' must be int"):
        torch.topk(x, 1.5)
    assert torch.topk(x, np.int64(2)).values.shape == (2,) and torch.kthvalue(x, torch.tensor(3)).values.item() == 3


@pytest.mark.parametrize("device", DEVICES)
def test_statistics_options(device):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 5))
    x = torch.tensor(a, device=device)
    gx, gy = torch.gradient(x, spacing=[2.0, 0.5])
    want = np.gradient(a, 2.0, 0.5)
    np.testing.assert_allclose(_np(gx), want[0])
    np.testing.assert_allclose(_np(gy), want[1])
    np.testing.assert_allclose(_np(torch.quantile(x, 0.25, dim=0, keepdim=True)),
                               np.quantile(a, 0.25, 0, keepdims=True))
    h = torch.histc(torch.tensor([1.0, 1.0, 1.0], device=device), bins=4)  # min == max: the range widens by 1
    np.testing.assert_array_equal(_np(h), np.histogram([1.0, 1.0, 1.0], 4, (0.0, 2.0))[0])
    np.testing.assert_array_equal(_np(torch.histc(torch.tensor([0.0, 1.0, 5.0, -3.0], device=device), 2, 0, 1)),
                                  [1, 1])  # outside [min, max] ignored; max in the last bin
    w = torch.tensor([0.5, 1.5, 2.0], dtype=torch.float32, device=device)
    b = torch.bincount(torch.tensor([0, 2, 2], device=device), w)
    assert b.dtype is torch.float32 and _np(b).tolist() == [0.5, 0.0, 3.5]
    assert torch.bincount(torch.tensor([1], device=device), torch.tensor([1], device=device)).dtype is torch.float64
    assert torch.count_nonzero(torch.tensor([[0, 1], [2, 3]], device=device)).item() == 3
    assert torch.diff(x, n=0) is x or np.array_equal(_np(torch.diff(x, n=0)), a)


@pytest.mark.parametrize("device", DEVICES)
def test_topk_of_a_long_row_counts_nan_as_largest(device):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 5000)).astype(np.float32)
    a[0, [10, 999, 4000]] = np.nan
    x = torch.tensor(a, device=device)
    v, i = torch.topk(x, 5)
    assert np.isnan(_np(v)[0, :3]).all() and set(_np(i)[0, :3]) == {10, 999, 4000}
    np.testing.assert_array_equal(_np(v)[0, 3:], -np.sort(-a[0][~np.isnan(a[0])])[:2])
    np.testing.assert_array_equal(_np(v)[1], -np.sort(-a[1])[:5])
    v, i = torch.topk(x, 4, largest=False, sorted=False)
    np.testing.assert_array_equal(np.sort(_np(v), 1), np.sort(a, 1)[:, :4])
    np.testing.assert_array_equal(np.take_along_axis(a, _np(i), 1), _np(v))


def test_return_types_module():
    import coretorch.return_types as rt
    x = torch.tensor([[2.0, 1.0], [0.0, 3.0]])
    assert isinstance(torch.sort(x), rt.sort) and isinstance(torch.max(x, 1), rt.max)
    assert isinstance(torch.aminmax(x), rt.aminmax) and isinstance(torch.cummin(x, 0), rt.cummin)


@pytest.mark.parametrize("device", DEVICES)
def test_sort_pipeline_example(device):
    root = pathlib.Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, str(root / "examples" / "sort_pipeline.py"), "--device", device,
                        "--events", "5000"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("pipeline ok")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_signed_zeros_are_ties(device, dtype):
    a = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -1.0], dtype=dtype)
    v, i = torch.sort(torch.tensor(a, device=device), stable=True)
    np.testing.assert_array_equal(_np(i), [5, 0, 1, 3, 4, 2])
    np.testing.assert_array_equal(np.signbit(_np(v)), np.signbit(a[[5, 0, 1, 3, 4, 2]]))
    v, i = torch.sort(torch.tensor(a, device=device), descending=True, stable=True)
    np.testing.assert_array_equal(_np(i), [2, 0, 1, 3, 4, 5])


def test_unique_values_require_grad_but_have_no_derivative():
    x = torch.tensor([1.0, 2.0, 1.0], requires_grad=True)
    u = torch.unique(x)
    assert u.requires_grad and type(u.grad_fn).__name__ == "Unique2Backward0"  # (PyTorch's node name)
    with pytest.raises(NotImplementedError, match="derivative for '_unique2' is not implemented"):
        u.sum().backward()
    assert not torch.histc(x, 3).requires_grad and not torch.unique(x.detach()).requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_int64_beyond_int32_range_sorts(device):
    rng = np.random.default_rng(8)
    a = rng.integers(-2 ** 40, 2 ** 40, (2, 3000))
    a[:, ::3] = a[:, :1]  # ties
    for desc in (False, True):
        v, i = torch.sort(torch.tensor(a, device=device), 1, desc, stable=True)
        want = _stable_argsort(a, 1, desc)
        np.testing.assert_array_equal(_np(i), want)
        np.testing.assert_array_equal(_np(v), np.take_along_axis(a, want, 1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_many_rows(device, right):
    rng = np.random.default_rng(9)
    s = np.sort(rng.integers(0, 10, (40, 3, 12)), -1).astype(np.float32)
    v = rng.integers(-1, 11, (40, 3, 5)).astype(np.float32)
    v[0, 0, 0] = np.nan
    got = torch.searchsorted(torch.tensor(s, device=device), torch.tensor(v, device=device), right=right)
    side = "right" if right else "left"
    want = np.stack([np.searchsorted(s[r], v[r], side) for r in np.ndindex(40, 3)]).reshape(40, 3, 5)
    np.testing.assert_array_equal(_np(got), want)
