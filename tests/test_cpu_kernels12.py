"""Faster cpu kernels for the compiled GPT step (issue 17): GELU's backward from the derivative its forward keeps,
layer norm's row operands and column sums in fewer passes.  Gradients against float64 closed forms at the hard
inputs on every device; the cpu kernels against the formulas they replace (the same bits where they say so)."""
from __future__ import annotations

import functools
import math
import weakref

import numpy as np
import pytest
import scipy.special as sp

import coretorch as torch
import coretorch.nn.functional as F
from coretorch_cpu import fused, pairwise, rows

_TAILS = [0.0, -0.0, 1e-30, -1e-30, 13.2, -13.2, 13.5, -13.5, 14.0, -14.0, 20.0, -20.0, 3e38, -3e38]


def _gelu_grad_ref(x):
    x = x.astype(np.float64)
    return sp.ndtr(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def test_gelu_backward_of_float32_at_the_tails(device):
    """Tails beyond |x| = 13.3 (where exp(x^2 / 2) overflows), zeros, tiny and huge values, in a multi-piece array;
    +-inf and nan give nan (inf * phi(inf), as PyTorch's formula)."""
    xa = np.concatenate([np.random.default_rng(3).normal(size=70_000) * 4, _TAILS]).astype(np.float32)
    ga = np.random.default_rng(4).normal(size=xa.shape).astype(np.float32)
    x = torch.tensor(xa, device=device, requires_grad=True)
    F.gelu(x).backward(torch.tensor(ga, device=device))
    got = x.grad.cpu().numpy()
    ref = ga * _gelu_grad_ref(xa)
    assert np.all(np.abs(got - ref) <= 2e-7 * np.abs(ga) + 2e-6 * np.abs(ref))
    xs = torch.tensor(np.array([np.inf, -np.inf, np.nan], np.float32), device=device, requires_grad=True)
    F.gelu(xs).backward(torch.ones(3, device=device))
    assert np.isnan(xs.grad.cpu().numpy()).all()


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 5), (2, 40_000)])
def test_cpu_gelu_backward_from_the_forward_and_from_any_phi(shape):
    """The kernel's own Phi array leads to the derivative kept by its forward; a Phi from elsewhere (a copy, e.g. a
    host-fused kernel's) takes the formula: both within the bounds of the float64 reference, absolute error at most
    2.7e-7 (2.75e-7 with the formula alone on the accuracy grid)."""
    rng = np.random.default_rng(5)
    x = (rng.normal(size=shape) * 5).astype(np.float32)
    g = rng.normal(size=shape).astype(np.float32)
    y, cdf = fused.gelu_cdf(x)
    assert y.shape == cdf.shape == shape and cdf.dtype == np.float32
    np.testing.assert_allclose(cdf, sp.ndtr(x.astype(np.float64)), atol=2.7e-7)   # the contract: Phi(x)
    own, other = fused.gelu_backward(g, x, cdf), fused.gelu_backward(g, x, np.array(cdf, copy=True))
    assert type(own) is np.ndarray and own.shape == other.shape == shape and own.dtype == np.float32
    ref = g * _gelu_grad_ref(x)
    for got in (own, other):
        assert np.all(np.abs(got - ref) <= 2.7e-7 * np.abs(g) + 1e-6 * np.abs(ref))
    assert fused._SLOPES.get(id(cdf)) is cdf.base               # the kept derivative is found...
    np.testing.assert_array_equal(own, g * cdf.base[1])          # ...and used
    kept = weakref.ref(cdf.base)
    del y, cdf
    assert kept() is None                                        # and goes with the Phi array


def test_cpu_gelu_derivative_accuracy_on_a_dense_grid():
    x = np.concatenate([np.linspace(-14.5, 14.5, 290_001, dtype=np.float32),
                        np.geomspace(1e-40, 14, 20_001).astype(np.float32)])
    x = np.concatenate([x, -x])
    g = np.ones_like(x)
    err = np.abs(fused.gelu_backward(g, x, fused.gelu_cdf(x)[1]) - _gelu_grad_ref(x))
    assert err.max() <= 2.7e-7
    assert err[np.abs(x) > 13].max() < 1.2e-38    # the tails take the formula where the exp overflows


def _ln_rows(x, k):
    return x.reshape(-1, int(np.prod(x.shape[x.ndim - k:])))


def _ln_plain(x, w, b, eps, k):
    """The layer norm kernel's arithmetic written with plain broadcasts (the bits the kernel must keep)."""
    x2 = _ln_rows(x, k)
    d = x2.shape[1]
    mean = np.add.reduce(x2, axis=1, keepdims=True) / d
    y = x2 - mean
    var = np.add.reduce(y * y, axis=1, keepdims=True) / d + eps
    rstd = 1 / np.sqrt(var)
    y = y * rstd
    if w is not None:
        y = y * w.reshape(-1)
    if b is not None:
        y = y + b.reshape(-1)
    return y.reshape(x.shape), mean, rstd


def _ln_back_plain(g, x, mean, rstd, w, k):
    x2, g2 = _ln_rows(x, k), _ln_rows(g, k)
    d = x2.shape[1]
    xhat = (x2 - mean.reshape(-1, 1)) * rstd.reshape(-1, 1)
    col = pairwise.lead_sum if x2.shape[1] > 1 and x2.shape[0] > pairwise.MIN_ROWS else \
        functools.partial(np.add.reduce, axis=0)  # (the sum kernel's)
    gw, gb = col(g2 * xhat), col(g2)
    gxh = g2 * w.reshape(-1) if w is not None else g2
    a = np.add.reduce(gxh, axis=1, keepdims=True) / d
    c = np.add.reduce(gxh * xhat, axis=1, keepdims=True) / d
    gx = (gxh - a - xhat * c) * rstd.reshape(-1, 1)
    return gx.reshape(x.shape), gw, gb


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["gpt", "rows_not_a_multiple", "strided", "two_dims", "one_row", "width_one"])
def test_cpu_layer_norm_keeps_its_bits(dtype, case):
    rng = np.random.default_rng(6)
    shape, k = {"gpt": ((16, 64, 128), 1), "rows_not_a_multiple": ((1000, 128), 1), "strided": ((70, 2, 96), 1),
                "two_dims": ((33, 8, 16), 2), "one_row": ((1, 300), 1), "width_one": ((50, 1), 1)}[case]
    x = (rng.normal(size=shape) * 3 + 1e3 * rng.normal(size=shape[:1] + (1,) * (len(shape) - 1))).astype(dtype)
    if case == "strided":
        x = x[:, 0]
    nshape = x.shape[x.ndim - k:]
    w, b = (rng.normal(size=nshape).astype(dtype) for _ in range(2))
    g = rng.normal(size=x.shape).astype(dtype)
    for ww, bb in ((w, b), (None, None)):
        y, mean, rstd = fused.layer_norm(x, ww, bb, 1e-5, k)
        ry, rm, rr = _ln_plain(x, ww, bb, 1e-5, k)
        np.testing.assert_array_equal(y, ry)
        np.testing.assert_array_equal(mean.reshape(-1), rm.reshape(-1))
        np.testing.assert_array_equal(rstd.reshape(-1), rr.reshape(-1))
        gx, gw, gb = fused.layer_norm_backward(g, x, mean, rstd, ww, k, True, ww is not None, ww is not None)
        rgx, rgw, rgb = _ln_back_plain(g, x, mean, rstd, ww, k)
        np.testing.assert_array_equal(gx, rgx)
        if ww is not None:
            np.testing.assert_array_equal(gw.reshape(-1), rgw)
            np.testing.assert_array_equal(gb.reshape(-1), rgb)


def test_layer_norm_at_hard_inputs(device):
    """Rows at an offset of 1e4, rows of equal values, mixed scales: against float64 within float32's reach (the
    offset and equal rows lose what the float32 mean loses: ~5e-4 of y, as the two-pass form always did)."""
    rng = np.random.default_rng(7)
    rows = [rng.normal(size=(40, 128)) + 1e4, np.repeat(rng.normal(size=(40, 1)) * 5, 128, 1),
            rng.normal(size=(40, 128)) * 10.0 ** rng.integers(-3, 4, (40, 1))]
    xa = np.concatenate(rows).astype(np.float32)
    wa, ba, ga = (rng.normal(size=s).astype(np.float32) for s in ((128,), (128,), xa.shape))
    x, w, b = (torch.tensor(a, device=device, requires_grad=True) for a in (xa, wa, ba))
    y = F.layer_norm(x, (128,), w, b)
    y.backward(torch.tensor(ga, device=device))
    x64, w64, g64 = xa.astype(np.float64), wa.astype(np.float64), ga.astype(np.float64)
    m = x64.mean(1, keepdims=True)
    r = 1 / np.sqrt(((x64 - m) ** 2).mean(1, keepdims=True) + 1e-5)
    xh = (x64 - m) * r
    gxh = g64 * w64
    gx = r * (gxh - gxh.mean(1, keepdims=True) - xh * (gxh * xh).mean(1, keepdims=True))
    yr, yg, gxg = xh * w64 + ba, y.detach().cpu().numpy(), x.grad.cpu().numpy()

    def rel(a, ref):
        return np.abs(a - ref).max() / np.abs(ref).max()
    for rows, ytol, gtol in ((slice(0, 40), 1e-3, 1.2e-4), (slice(40, 80), 1e-3, 2e-7), (slice(80, 120), 3e-7, 2e-7)):
        assert rel(yg[rows], yr[rows]) < ytol and rel(gxg[rows], gx[rows]) < gtol
    assert np.abs(w.grad.cpu().numpy() - (g64 * xh).sum(0)).max() < 4e-4 * np.abs(g64 * xh).sum(0).max()
    assert np.abs(b.grad.cpu().numpy() - g64.sum(0)).max() < 2e-7 * np.abs(g64).sum(0).max()


def test_row_helpers_keep_numpys_bits():
    """rows.colsum: the sum kernel's cascade over axis 0 (pairwise.lead_sum: the same bits with or without the
    product's temporary); rows.rowop: a tiled row operand gives the plain broadcast's bits, with rows left over past
    the last whole tile."""
    rng = np.random.default_rng(8)
    for dtype in (np.float32, np.float64, np.float16):
        for shape in ((1024, 128), (3, 5), (4097, 65), (2, 2), (100, 1)):
            a, b = rng.normal(size=shape).astype(dtype), rng.normal(size=shape).astype(dtype)
            cascade = dtype != np.float16 and shape[1] > 1 and shape[0] > pairwise.MIN_ROWS  # (else numpy's)
            lead = pairwise.lead_sum if cascade else functools.partial(np.add.reduce, axis=0)
            np.testing.assert_array_equal(rows.colsum(a), lead(a))
            np.testing.assert_array_equal(rows.colsum(a, b), lead(a * b))
            v = rng.normal(size=shape[1]).astype(dtype)
            for fn in (np.add, np.multiply):
                out = np.empty_like(a)
                rows.rowop(fn, a, v, out)
                np.testing.assert_array_equal(out, fn(a, v))


def test_linear_bias_and_its_gradient(device):
    rng = np.random.default_rng(11)
    xa, wa, ba = rng.normal(size=(300, 24)), rng.normal(size=(130, 24)), rng.normal(size=130)
    x, w, b = (torch.tensor(a.astype(np.float32), device=device, requires_grad=True) for a in (xa, wa, ba))
    y = F.linear(x, w, b)
    np.testing.assert_allclose(y.detach().cpu().numpy(), xa @ wa.T + ba, rtol=1e-5, atol=1e-5)
    ga = rng.normal(size=(300, 130)).astype(np.float32)
    y.backward(torch.tensor(ga, device=device))
    np.testing.assert_allclose(b.grad.cpu().numpy(), ga.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_backward_after_an_in_place_change_of_y_and_twice(device, affine):
    """The cpu forward keeps its normalised rows for the backward (with a weight or bias; without, they are y):
    an in-place change of y does not reach them, and a second backward reads them unchanged."""
    rng = np.random.default_rng(9)
    xa = rng.normal(size=(6, 5, 40)).astype(np.float32)
    ln = torch.nn.LayerNorm(40, elementwise_affine=affine).to(device)
    grads = []
    for change in (False, True):
        x = torch.tensor(xa, device=device, requires_grad=True)
        y = ln(x)
        if change:
            y.mul_(2)
        loss = (y * y).sum() if not change else (y * y).sum() / 4
        loss.backward(retain_graph=True)
        first = x.grad.cpu().numpy().copy()
        x.grad = None
        loss.backward()
        np.testing.assert_array_equal(x.grad.cpu().numpy(), first)
        grads.append(first)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_cpu_layer_norm_backward_from_kept_or_recomputed_rows():
    rng = np.random.default_rng(10)
    x, g = (rng.normal(size=(300, 96)).astype(np.float32) for _ in range(2))
    w, b = (rng.normal(size=96).astype(np.float32) for _ in range(2))
    y, mean, rstd = fused.layer_norm(x, w, b, 1e-5, 1)
    assert fused._XHAT.get(id(rstd)) is rstd.base
    kept = fused.layer_norm_backward(g, x, mean, rstd, w, 1, True, True, True)
    again = fused.layer_norm_backward(g, x, mean, rstd, w, 1, True, True, True)
    recomputed = fused.layer_norm_backward(g, x, mean, np.array(rstd, copy=True), w, 1, True, True, True)
    for a, b_, c in zip(kept, again, recomputed):
        np.testing.assert_array_equal(a, b_)
        np.testing.assert_array_equal(a, c)
    _, _, rstd_plain = fused.layer_norm(x, None, None, 1e-5, 1)
    assert fused._XHAT.get(id(rstd_plain)) is None
