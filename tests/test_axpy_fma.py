"""``Tensor.add_(x, alpha=a)`` (SGD's update, the ``axpy_`` kernel) rounds once per element, as PyTorch's
vectorised ``fmadd``: checked against exact rational arithmetic, at sizes around the cpu backend's BLAS chunk,
for strided and overlapping operands, and through an optimizer step compiled and eager."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import coretorch as torch
from coretorch_cpu import blas1

# the cpu backend rounds once where this machine's BLAS kernel does (a CPU with FMA); else numpy's two roundings
_CPU_FUSED = blas1.fused()


def _fma_ref(y: np.ndarray, a: float, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """y + a * x rounded once (exact rationals, then the nearest float of y's dtype), at ``idx``."""
    dt = y.dtype.type
    af = Fraction(float(dt(a)))  # alpha is rounded to the tensor's dtype first (PyTorch's scalar_t alpha)
    return np.array([float(Fraction(float(y.flat[i])) + af * Fraction(float(x.flat[i]))) for i in idx], dt) \
        if y.dtype == np.float64 else \
        np.array([dt(float(Fraction(float(y.flat[i])) + af * Fraction(float(x.flat[i])))) for i in idx], dt)


def _expected(device: str, y: np.ndarray, a: float, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    if device == "cpu" and not _CPU_FUSED:
        return (y + x * y.dtype.type(a)).reshape(-1)[idx]
    return _fma_ref(y, a, x, idx)


def _sample(n: int, rng) -> np.ndarray:
    return np.unique(np.concatenate([np.arange(min(n, 40)), np.arange(max(n - 40, 0), n), rng.integers(0, n, 200)]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 120, 8192, 8192 * 2 + 5])
def test_add_alpha_rounds_once(device, dtype, n):
    rng = np.random.default_rng(n)
    y0 = rng.standard_normal(n).astype(dtype)
    x0 = rng.standard_normal(n).astype(dtype)
    a = -0.0123
    t = torch.tensor(y0, device=device)
    t.add_(torch.tensor(x0, device=device), alpha=a)
    got = t.cpu().numpy()
    idx = _sample(n, rng)
    ref = _fma_ref(y0, a, x0, idx)
    np.testing.assert_array_equal(got[idx], _expected(device, y0, a, x0, idx))
    two = (y0 + x0 * y0.dtype.type(a))[idx]  # the two-rounding result differs somewhere: the check has teeth
    assert n < 1000 or (two != ref).any()


def test_add_alpha_strided_and_overlapping():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((6, 40)).astype(np.float32)
    x0 = rng.standard_normal((40, 6)).astype(np.float32)
    t = torch.tensor(base)
    view = t[:, ::2]  # a strided y
    xs = torch.tensor(x0).t()[:, ::2]  # a strided x
    y0 = view.numpy().copy()
    view.add_(xs, alpha=0.37)
    idx = np.arange(y0.size)
    np.testing.assert_array_equal(view.numpy().reshape(-1), _expected("cpu", y0, 0.37, xs.numpy().copy(), idx))
    np.testing.assert_array_equal(t.numpy()[:, 1::2], base[:, 1::2])  # the other columns untouched
    u = torch.tensor(base[0].copy())
    u0 = u.numpy().copy()
    u.add_(u.view(40), alpha=-3.0)  # x is y through another view
    np.testing.assert_array_equal(u.numpy(), _expected("cpu", u0, -3.0, u0, np.arange(40)))


def test_sgd_step_compiled_equals_eager_and_rounds_once():
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((300, 64)).astype(np.float32)
    x = torch.tensor(rng.standard_normal((16, 64)).astype(np.float32))

    def run(compiled):
        w = torch.nn.Parameter(torch.tensor(w0))
        opt = torch.optim.SGD([w], lr=0.05)

        def step(x):
            opt.zero_grad()
            loss = (x @ w.t()).square().mean()
            loss.backward()
            opt.step()
            return loss
        f = torch.compile(step) if compiled else step
        for _ in range(3):
            f(x)
        g = w.grad.numpy().copy()
        return w.detach().numpy().copy(), g

    (we, _), (wc, gc) = run(False), run(True)
    np.testing.assert_array_equal(we, wc)
    # one more eager step from the compiled state is exactly w - lr * g rounded once
    idx = np.arange(0, w0.size, 97)
    ref = _expected("cpu", wc, -0.05, gc, idx)
    w = torch.nn.Parameter(torch.tensor(wc))
    w.grad = torch.tensor(gc)
    torch.optim.SGD([w], lr=0.05).step()
    np.testing.assert_array_equal(w.detach().numpy().reshape(-1)[idx], ref)
