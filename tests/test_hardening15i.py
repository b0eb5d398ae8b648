"""Issue 15 leftovers: ``out=`` views of the wrong shape resized in their storage (PyTorch's resize_), reductions
into an ``out`` overlapping their input, ``out=`` on hstack/vstack/dstack/column_stack, ``narrow_copy`` and
``renorm``.  Expectations are numpy / hand-derived values, checked against PyTorch 2.13 by hand."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.autograd import gradcheck, gradgradcheck

_RESIZED = "An output with one or more elements was resized"


def arr(t):
    return t.detach().cpu().numpy()


# ---- out= a view (or a non-contiguous tensor) of the wrong shape: restrided in its storage, the base sees it ----
@pytest.mark.parametrize("op", ["add", "matmul", "sum", "mean", "cat"])
def test_out_view_of_wrong_shape_is_resized_in_its_storage(device, op):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = torch.tensor(a, device=device)
    run, want = {"add": (lambda o: torch.add(x, 1, out=o), a + 1),
                 "matmul": (lambda o: torch.matmul(x, x.t(), out=o), a @ a.T),
                 "sum": (lambda o: torch.sum(x, 1, out=o), a.sum(1)),
                 "mean": (lambda o: torch.mean(x, 1, keepdim=True, out=o), a.mean(1, keepdims=True)),
                 "cat": (lambda o: torch.cat([x, x], 1, out=o), np.concatenate([a, a], 1))}[op]
    base = torch.zeros(4, 4, device=device)
    o = base[1]  # a view of 4 elements in a storage of 16
    with pytest.warns(UserWarning, match=_RESIZED):
        r = run(o)
    assert r is o and tuple(o.shape) == want.shape and o.is_contiguous()
    np.testing.assert_allclose(arr(o), want, rtol=1e-6)
    flat = np.zeros(16, np.float32)
    flat[4:4 + want.size] = want.reshape(-1)  # written from the view's first element on, C-contiguous
    np.testing.assert_allclose(arr(base).reshape(-1), flat, rtol=1e-6)


def test_out_transposed_view_is_restrided(device):
    base = torch.zeros(3, 4, device=device)
    o = base.t()
    with pytest.warns(UserWarning, match=_RESIZED):
        torch.add(torch.ones(2, 2, device=device), 1, out=o)
    assert tuple(o.shape) == (2, 2) and o.stride() == (2, 1)
    np.testing.assert_array_equal(arr(base).reshape(-1), [2.0] * 4 + [0.0] * 8)


def test_out_empty_view_takes_no_warning(device, recwarn):
    o = torch.zeros(0, device=device)[:]
    r = torch.cat([torch.ones(2, device=device), torch.ones(1, device=device)], out=o)
    assert r is o and arr(o).tolist() == [1.0, 1.0, 1.0]
    assert not [w for w in recwarn if _RESIZED in str(w.message)]


def test_out_view_too_small_storage_takes_a_fresh_buffer(device):
    base = torch.zeros(4, device=device)
    o = base[2:]
    with pytest.warns(UserWarning, match=_RESIZED):
        torch.add(torch.ones(5, device=device), 1, out=o)
    assert arr(o).tolist() == [2.0] * 5


# ---- reductions into an out overlapping the input: allowed (PyTorch's reduction kernels skip the check) ----
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "std", "logsumexp", "max", "cumsum"])
def test_reduction_into_overlapping_out_is_allowed(device, op):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    o = x[:, 1]
    fn = {"sum": lambda: torch.sum(x, 1, out=o), "mean": lambda: torch.mean(x, 1, out=o),
          "amax": lambda: torch.amax(x, 1, out=o), "std": lambda: torch.std(x, 1, out=o),
          "logsumexp": lambda: torch.logsumexp(x, 1, out=o),
          "max": lambda: torch.max(x, 1, out=(o, torch.zeros(2, dtype=torch.long, device=device)))[0],
          "cumsum": lambda: torch.cumsum(x[:, 0], 0, out=o)}[op]
    assert fn() is o and tuple(o.shape) == (2,)  # (values: traversal-dependent, as PyTorch's)


# ---- hstack / vstack / dstack / column_stack with out= ----
@pytest.mark.parametrize("op", ["hstack", "vstack", "dstack", "column_stack"])
def test_stack_family_out(device, op):
    a, b = np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)
    want = getattr(np, op)([a, b])
    o = torch.zeros(want.shape, dtype=torch.float64, device=device)  # castable dtype: written, cast
    r = getattr(torch, op)([torch.tensor(a, device=device), torch.tensor(b, device=device)], out=o)
    assert r is o and o.dtype is torch.float64
    np.testing.assert_array_equal(arr(o), want)
    o1 = torch.zeros(1, device=device)
    with pytest.warns(UserWarning, match=_RESIZED):
        getattr(torch, op)([torch.tensor(a, device=device), torch.tensor(b, device=device)], out=o1)
    np.testing.assert_array_equal(arr(o1), want)


def test_vstack_out_overlapping_an_input_raises(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        torch.vstack([x[0], x[1]], out=x)


# ---- narrow_copy ----
def test_narrow_copy(device):
    a = np.arange(12.0).reshape(3, 4)
    x = torch.tensor(a, device=device, requires_grad=True)
    r = torch.narrow_copy(x, -1, -3, 2)
    np.testing.assert_array_equal(arr(r), a[:, 1:3])
    assert type(r.grad_fn).__name__ == "NarrowCopyBackward0"
    m = x.detach().narrow_copy(0, 1, 2)
    m.fill_(0)  # a copy, not a view
    np.testing.assert_array_equal(arr(x), a)
    assert gradcheck(lambda t: torch.narrow_copy(t, 1, 1, 2), (x,))
    o = torch.empty(0, dtype=torch.float64, device=device)
    assert torch.narrow_copy(x.detach(), 0, 0, 1, out=o) is o and arr(o).tolist() == [a[0].tolist()]
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        torch.narrow_copy(x, 1, 2, 3)
    with pytest.raises(RuntimeError, match="0-dim"):
        torch.narrow_copy(torch.tensor(1.0, device=device), 0, 0, 1)
    with pytest.raises(RuntimeError):  # out's dtype must match exactly
        torch.narrow_copy(x.detach(), 0, 0, 1, out=torch.empty(0, device=device))


# ---- renorm ----
def _renorm_np(a, p, dim, maxnorm):
    moved = np.moveaxis(a, dim, 0)
    norms = (np.abs(moved.reshape(moved.shape[0], -1)) ** p).sum(1) ** (1.0 / p)
    f = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return np.moveaxis(moved * f.reshape((-1,) + (1,) * (a.ndim - 1)), 0, dim)


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 3.0), (1, -1, 3.0), (3, 1, 20.0), (float("inf"), 1, 3.0)])
def test_renorm_forward(device, p, dim, maxnorm):
    a = np.arange(24.0).reshape(2, 3, 4) - 5
    x = torch.tensor(a, device=device)
    want = _renorm_np(a, p, dim, maxnorm) if p != float("inf") else None
    if want is None:
        m = np.abs(np.moveaxis(a, dim, 0)).reshape(3, -1).max(1)
        f = np.where(m > maxnorm, maxnorm / (m + 1e-7), 1.0)
        want = a * f.reshape(1, 3, 1)
    np.testing.assert_allclose(arr(torch.renorm(x, p, dim, maxnorm)), want, rtol=1e-6)
    np.testing.assert_allclose(arr(x.renorm(p, dim, maxnorm)), want, rtol=1e-6)
    y = x.clone()
    assert y.renorm_(p, dim, maxnorm) is y
    np.testing.assert_allclose(arr(y), want, rtol=1e-6)


def test_renorm_autograd_out_and_errors(device):
    a = np.arange(6.0).reshape(2, 3) - 1.5
    x = torch.tensor(a, device=device, requires_grad=True)
    r = torch.renorm(x, 2, 0, 1.0)
    assert type(r.grad_fn).__name__ == "RenormBackward0"
    assert gradcheck(lambda t: torch.renorm(t, 2, 0, 1.0), (x,))
    assert gradcheck(lambda t: torch.renorm(t, 3, 1, 1.5), (x,))
    assert gradgradcheck(lambda t: torch.renorm(t, 2, 1, 1.0), (x,))
    y = x.detach().clone().requires_grad_()
    z = y * 1
    z.renorm_(2, 0, 1.0)  # in place, recorded
    z.sum().backward()
    x2 = x.detach().clone().requires_grad_()
    torch.renorm(x2, 2, 0, 1.0).sum().backward()
    np.testing.assert_allclose(arr(y.grad), arr(x2.grad), rtol=1e-12)
    h = torch.tensor(a, dtype=torch.float16, device=device)
    assert torch.renorm(h, 2, 0, 1.0).dtype is torch.float16
    o = torch.empty(0, dtype=torch.float64, device=device)
    assert torch.renorm(x.detach(), 2, 0, 1.0, out=o) is o
    np.testing.assert_allclose(arr(o), _renorm_np(a, 2, 0, 1.0), rtol=1e-12)
    assert tuple(torch.renorm(torch.zeros(0, 3, device=device), 2, 0, 1.0).shape) == (0, 3)
    with pytest.raises(RuntimeError, match="dtype"):
        torch.renorm(x.detach(), 2, 0, 1.0, out=torch.empty(0, device=device))
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        torch.renorm(x, 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="maxnorm to be >= 0"):
        torch.renorm(x, 2, 0, -1.0)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.renorm(torch.ones(3, device=device), 2, 0, 1.0)
    with pytest.raises(IndexError):
        torch.renorm(x, 2, 2, 1.0)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.renorm(torch.ones(2, 2, dtype=torch.long, device=device), 2, 0, 1.0)


@pytest.mark.parametrize("op", ["cat", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"])
def test_cat_family_out_of_lower_category_is_a_type_error(device, op):
    a = torch.ones(2, device=device)
    with pytest.raises(TypeError, match="torch.cat\\(\\): input types can't be cast to the desired output type Long"):
        getattr(torch, op)([a, a], out=torch.zeros(0, dtype=torch.long, device=device))
