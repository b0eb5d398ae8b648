"""The float32 erf family written out in OpenCL C (coretorch_opencl/fastmath.py: erf, erfc, special.ndtr, GELU's
forward and backward kernels) against scipy.special on a dense grid: the body, both tails to underflow, +-0, +-inf,
NaN and denormal inputs.  Tolerances are in float32 ulps of the correctly rounded result (its spacing, at least the
smallest denormal's):

* erf: 3 ulp (erf(z)/z fit and erfc = exp * fit both ~1e-9 relative; float evaluation of a degree-9 polynomial ~1.5
  ulp, one product, and 1 - erfc rounds once; measured 2.3);
* erfc, ndtr: 8 ulp (exp(-z^2) is the device's exp builtin, times the exact-split factor and the erfcx fit (~1.5
  ulp each), two products: measured 4.1 and 5.4 in the far tail with PoCL's exp (up to 1 ulp), 6.7 and 7.6 with
  every builtin's result 1-2 ulp off (an exp within OpenCL's 3 ulp): another machine's PoCL build may have that exp);
* GELU x Phi(x): the ndtr bound plus the final product's half ulp, 9 ulp (measured 5.6; 7.6 with the worse exp);
* GELU backward Phi(x) + x phi(x): cancels for x < 0 (the sum ~ phi(x) / x^2), so the bound is in ulps of the
  terms' size Phi(x) + |x| phi(x): 8 (the ndtr bound, plus the roundings of x phi and of the sum; measured 6.2
  near x = -13.3, where the result is within a factor 2 of float's smallest normal; 6.7 with the worse exp).
Float64 keeps OpenCL C's builtins (the gradchecks of tests/test_ops.py cover it)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import coretorch
import coretorch.nn.functional as F

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -3e-39, 1.1754944e-38, 0.5, -0.5,
            0.70710677, -0.70710677, 2.0, -2.0, 10.05, 10.06, -10.06, 13.0, -13.0, 14.0, -14.0, -20.0, 1e30, -1e30]


def _grid() -> np.ndarray:
    """~110k float32 values: the body densely, both tails to past underflow, tiny and denormal magnitudes."""
    g = np.geomspace(1e-45, 1.0, 4000)
    return np.concatenate([np.linspace(-15.0, 15.0, 100001), g, -g, _SPECIAL]).astype(np.float32)


def _ulps(got: np.ndarray, ref: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """|got - ref| in ulps of float32(scale) (default: the reference); NaN must match NaN and infinities exactly."""
    scale = np.abs(ref if scale is None else scale).astype(np.float32)
    ulp = np.maximum(np.spacing(scale).astype(np.float64), 2.0 ** -149)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - ref) / ulp
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    return np.where(same, 0.0, err)


def _run(fn, x: np.ndarray) -> np.ndarray:
    return fn(coretorch.tensor(x, device="opencl")).cpu().numpy()


@pytest.mark.parametrize("name, fn, ref, tol", [
    ("erf", coretorch.erf, sp.erf, 3.0),
    ("erfc", coretorch.erfc, sp.erfc, 8.0),
    ("ndtr", coretorch.special.ndtr, sp.ndtr, 8.0),
    ("gelu", F.gelu, lambda x: x * sp.ndtr(x), 9.0),
])
def test_float32_against_scipy_in_ulps(name, fn, ref, tol):
    x = _grid()
    got = _run(fn, x)
    with np.errstate(invalid="ignore"):   # x * ndtr(x) at -inf
        want = ref(x.astype(np.float64))
    assert got.dtype == np.float32
    err = _ulps(got, want)
    worst = int(np.argmax(err))
    assert err[worst] <= tol, f"{name}({x[worst]!r}) = {got[worst]!r}: {err[worst]:.2f} ulp"
    assert np.array_equal(np.signbit(got[x == 0]), np.signbit(ref(x[x == 0].astype(np.float64)))), name


def test_gelu_backward_kernel_against_scipy():
    x = _grid()
    t = coretorch.tensor(x, device="opencl", requires_grad=True)
    F.gelu(t).backward(coretorch.ones_like(t))
    got = t.grad.cpu().numpy()
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        pdf = np.exp(-0.5 * xd * xd) / np.sqrt(2 * np.pi)
        ref = sp.ndtr(xd) + xd * pdf                     # inf * 0 = NaN at +-inf, as the kernel (and PyTorch)
        err = _ulps(got, ref, sp.ndtr(xd) + np.abs(xd) * pdf)
    worst = int(np.argmax(err))
    assert err[worst] <= 8.0, f"gelu'({x[worst]!r}) = {got[worst]!r}: {err[worst]:.2f} ulp"


def test_tanh_gelu_and_strided_reads():
    """approximate='tanh' (composite ops), and erf/erfc reading a strided operand in place (the "_s" kernels)."""
    x = np.linspace(-9, 9, 2001).astype(np.float32)
    inner = np.sqrt(2 / np.pi) * (x.astype(np.float64) + 0.044715 * x.astype(np.float64) ** 3)
    got = _run(lambda t: F.gelu(t, approximate="tanh"), x)
    np.testing.assert_allclose(got, 0.5 * x * (1 + np.tanh(inner)), rtol=1e-5, atol=1e-6)
    ts = coretorch.tensor(x.reshape(-1, 1).repeat(2, 1), device="opencl")[:, 1]
    assert _ulps(coretorch.erfc(ts).cpu().numpy(), sp.erfc(x.astype(np.float64))).max() <= 8.0
    assert _ulps(coretorch.erf(ts).cpu().numpy(), sp.erf(x.astype(np.float64))).max() <= 3.0


def test_tanh_against_numpy_in_ulps():
    """tanh written out (fastmath): 2.5 ulp (the polynomial ~0.8 ulp below 0.625; above, 1 - 2 / (exp(2|x|) + 1)
    with exp's error shrunk by 2 / (e + 1) <= 0.45 (OpenCL allows exp 3 ulp: 1.35), the division and the
    subtraction: measured 1.2 with PoCL's exp, 1.96 with an exp 1-2 ulp worse)."""
    x = np.concatenate([_grid(), np.linspace(-0.7, 0.7, 20001, dtype=np.float32), [50.0, -50.0, 100.0]])
    x = x.astype(np.float32)
    got = _run(coretorch.tanh, x)
    err = _ulps(got, np.tanh(x.astype(np.float64)))
    worst = int(np.argmax(err))
    assert err[worst] <= 2.5, f"tanh({x[worst]!r}) = {got[worst]!r}: {err[worst]:.2f} ulp"
    assert np.array_equal(np.signbit(got[x == 0]), np.signbit(x[x == 0]))
