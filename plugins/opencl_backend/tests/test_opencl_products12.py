"""opencl-only checks of the product paths tuned for the AVX2 PoCL device (issue 17's opencl MLP step): x @ W.T's
kernel at AVX2's blockings, a weight gradient g.T @ x packed and k-chunked at a short k, and the plans matmul and
the reductions cache per operand layout.  Thresholds are lowered so that small odd shapes take the paths."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch_opencl import matmul as mm


def _t(a):
    return coretorch.tensor(a, device="opencl")


@pytest.mark.parametrize("blocks", [(4, 3, 8), (2, 4, 8)])
def test_x_at_w_t_kernel_blockings(monkeypatch, blocks, dt=np.float32):
    """The A @ B.T kernel (nn.Linear's x @ W.T) at AVX2's blockings (4 x 3 dot products of 8-wide vectors; 2 x 4
    where rows are 4 KiB apart or fewer than 4): n, m, k no multiples of the blocks (the last blocks shift back,
    k's tail is scalar), A sliced (rows at a longer pitch), batched, against numpy (n * m * k >= 32^3: smaller
    products take the plain kernel)."""
    monkeypatch.setattr(mm, "_NT_MIN_K", 1)
    monkeypatch.setattr(mm, "_NT_MIN_K_WIDE", 1)
    monkeypatch.setattr(mm, "nt_blocking", lambda dev, dt=None, aliased=False, n=4: blocks)
    rng = np.random.default_rng(0)
    cases = [((7, 301), (19, 301), None), ((3, 13, 90), (3, 34, 90), None), ((9, 300), (17, 241), (5, 246)),
             ((6, 900), (7, 900), None)]
    for sa, sw, cols in cases:
        a_np = rng.standard_normal(sa).astype(dt)
        w_np = rng.standard_normal(sw).astype(dt)
        a, w = _t(a_np), _t(w_np)
        if cols is not None:
            a, a_np = a[:, cols[0]:cols[1]], a_np[:, cols[0]:cols[1]]
        got = coretorch.matmul(a, w.transpose(-1, -2)).cpu().numpy()
        np.testing.assert_allclose(got, a_np @ np.swapaxes(w_np, -1, -2), rtol=1e-4, atol=1e-4)


def test_linear_bias_in_the_x_at_w_t_kernel(monkeypatch):
    """nn.Linear's bias added in the A @ B.T kernel's stores: one launch, bitwise the product and a separate add,
    numpy's within rounding; n, m, k no multiples of the blocks, a batched input (rows of one product)."""
    from coretorch_opencl import STATS
    monkeypatch.setattr(mm, "_NT_MIN_K", 1)
    monkeypatch.setattr(mm, "_NT_MIN_K_WIDE", 1)
    rng = np.random.default_rng(4)
    for sx, m in [((7, 301), 19), ((128, 40), 10), ((2, 5, 300), 17)]:
        x_np = rng.standard_normal(sx).astype(np.float32)
        w_np = rng.standard_normal((m, sx[-1])).astype(np.float32)
        b_np = rng.standard_normal(m).astype(np.float32)
        x, w, b = _t(x_np), _t(w_np), _t(b_np)
        coretorch.nn.functional.linear(x, w, b)
        before = STATS["launches"]
        got = coretorch.nn.functional.linear(x, w, b).cpu().numpy()
        assert STATS["launches"] - before == 1
        np.testing.assert_array_equal(got, (coretorch.matmul(x, w.t()) + b).cpu().numpy())
        np.testing.assert_allclose(got, x_np @ w_np.T + b_np, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_weight_gradient_packed_at_a_short_k_is_bitwise_the_unpacked_one(monkeypatch, dt):
    """g.T @ x (A read transposed in place) packed and k-chunked from a short k on: the same sums in the same order
    as the unpacked blocked kernel (bitwise), numpy's within rounding; rows and columns past the blocks, a
    column slice of x."""
    monkeypatch.setattr(mm, "_KC_MIN_GROUPS", 0)
    monkeypatch.setattr(mm, "_KC_AT_MIN_WORK", 0)
    monkeypatch.setattr(mm, "_KC", 16)
    rng = np.random.default_rng(1)
    for n, k, m in [(37, 40, 45), (6, 330, 17), (70, 24, 130)]:
        g_np = rng.standard_normal((k, n)).astype(dt)
        x_full = rng.standard_normal((k, m + 3)).astype(dt)
        g, x, x_np = _t(g_np), _t(x_full)[:, 2:m + 2], x_full[:, 2:m + 2]
        monkeypatch.setattr(mm, "_KC_AT_MIN_K", 1 << 30)
        ref = coretorch.matmul(g.t(), x).cpu().numpy()
        monkeypatch.setattr(mm, "_KC_AT_MIN_K", 1)
        got = coretorch.matmul(g.t(), x).cpu().numpy()
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_allclose(got, g_np.T @ x_np, rtol=1e-4, atol=1e-4)


def test_matmul_plans_follow_each_layout():
    """matmul's cached plans (one per operand layout): operands of one shape at other offsets, strides and
    transposes, with and without nn.Linear's bias, batched with a broadcast weight, empty and k = 0, each twice
    (the second call replays the plan), all against numpy."""
    rng = np.random.default_rng(2)
    big = rng.standard_normal((40, 70)).astype(np.float32)
    w_np = rng.standard_normal((33, 64)).astype(np.float32)
    bias_np = rng.standard_normal(33).astype(np.float32)
    tb, w, bias = _t(big), _t(w_np), _t(bias_np)
    ops = [(lambda: tb[:32, :64] @ w.t(), big[:32, :64] @ w_np.T),
           (lambda: tb[5:37, 3:67] @ w.t(), big[5:37, 3:67] @ w_np.T),
           (lambda: tb[:, :32].t() @ tb[:, 40:70], big[:, :32].T @ big[:, 40:70]),
           (lambda: coretorch.nn.functional.linear(tb[:32, :64], w, bias), big[:32, :64] @ w_np.T + bias_np),
           (lambda: coretorch.nn.functional.linear(tb[1:33, :64], w), big[1:33, :64] @ w_np.T),
           (lambda: tb[:24, :64].reshape(3, 8, 64) @ w.t(), big[:24, :64].reshape(3, 8, 64) @ w_np.T),
           (lambda: tb[:0, :64] @ w.t(), np.zeros((0, 33), np.float32)),
           (lambda: tb[:8, :0] @ w[:0, :].t().t(), np.zeros((8, 64), np.float32))]
    for _ in range(2):
        for fn, want in ops:
            np.testing.assert_allclose(fn().cpu().numpy(), want, rtol=1e-4, atol=1e-4)


def test_reduction_plans_follow_each_layout():
    """The reductions' cached plans (one per layout and arguments): sums of one shape at other offsets, strides,
    axes and dtypes (the bias gradient's column sum, its split-rows form, the generic kernel), each twice."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal((600, 40)).astype(np.float32)
    t = _t(big)
    ops = [(lambda: t[:520, :24].sum(0), big[:520, :24].sum(0)),
           (lambda: t[3:523, 9:33].sum(0), big[3:523, 9:33].sum(0)),
           (lambda: t[:24, :20].t().sum(0), big[:24, :20].T.sum(0)),
           (lambda: t[:520, :24].sum(1), big[:520, :24].sum(1)),
           (lambda: t[:520, :24].double().sum(0), big[:520, :24].astype(np.float64).sum(0)),
           (lambda: t[:520, :24].sum((0, 1), keepdim=True), big[:520, :24].sum(keepdims=True)),
           (lambda: t[:520, :24].amax(0), big[:520, :24].max(0)), (lambda: t[:0, :24].sum(0), np.zeros(24, np.float32))]
    for _ in range(2):
        for fn, want in ops:
            np.testing.assert_allclose(fn().cpu().numpy(), want, rtol=1e-4, atol=1e-3)
