"""The special family's device kernels (coretorch_opencl/special.py and the builtins of codegen) against scipy on
wide ranges, in float64 (~1e-12 relative), float32 (~1e-5) and float16; strided inputs read in place; one kernel per
op."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import coretorch
from coretorch_opencl import STATS

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")

_RNG = np.random.default_rng(7)


def _wide():
    g = np.geomspace(1e-6, 700, 400)
    return np.concatenate([_RNG.uniform(-5, 5, 400), _RNG.uniform(-60, 60, 400), g, -g,
                           [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.0, 1.0, 2.0, 0.5, -0.5]])


def _unit():
    g = np.geomspace(1e-15, 0.5, 300)
    return np.concatenate([_RNG.uniform(-1, 1, 600), 1 - g, -1 + g, np.geomspace(1e-300, 1e-3, 200),
                           [0.0, -0.0, 1.0, -1.0, np.nan, 1.5, -1.5]])


def _prob():
    return np.concatenate([_RNG.uniform(0, 1, 600), np.geomspace(1e-300, 0.5, 300), 1 - np.geomspace(1e-16, 0.5, 300),
                           [0.0, 1.0, 0.5, 0.25, 0.75, np.nan, -1.0, 2.0]])


def _lgamma(x):
    return np.where(x == -np.inf, np.inf, sp.gammaln(x))   # PyTorch (C's lgamma): +inf at -inf, scipy -inf


# op -> (scipy/numpy reference, inputs, float64 rtol); float32 is checked to 2e-5 relative.  digamma and lgamma near
# their roots and sinc near the integers are compared with an absolute tolerance too (numpy's sinc rounds pi x; ours
# is exact).  lgamma is OpenCL's builtin, whose accuracy the spec leaves open: near a root (x = -2.4570247, where
# |Gamma| = 1; -2.7476; 1; 2) its value is a difference of terms (log(pi / |x sin(pi x)|) - lgamma(-x) for x < 0)
# whose rounding, and that of pi x, is absolute: an ulp of the argument's scale.  One PoCL build gave 4e-10 absolute,
# 2.3e-5 relative at -2.457; an fdlibm-style one may give a few 1e-7 (the inputs reach 4.7e-4 at x = -2.7479281)
ATOL = {"digamma": (1e-13, 2e-5), "sinc": (1e-15, 1e-7)}
ATOL_ARG = {"lgamma": 4}   # op -> this many ulps of max(1, |x|), absolute, in the dtype's epsilon
CASES = {
    "erfinv": (sp.erfinv, _unit, 1e-12), "digamma": (sp.psi, _wide, 1e-10), "lgamma": (_lgamma, _wide, 1e-10),
    "i0": (sp.i0, _wide, 1e-13), "special.i0e": (sp.i0e, _wide, 1e-13), "special.i1": (sp.i1, _wide, 1e-13),
    "special.i1e": (sp.i1e, _wide, 1e-13), "special.ndtri": (sp.ndtri, _prob, 1e-13),
    "special.erfcx": (sp.erfcx, _wide, 1e-12), "special.log_ndtr": (sp.log_ndtr, _wide, 1e-12),
    "special.ndtr": (sp.ndtr, _wide, 1e-12), "erfc": (sp.erfc, _wide, 1e-12), "special.entr": (sp.entr, _wide, 1e-14),
    "erf": (sp.erf, _wide, 1e-14), "tan": (np.tan, _wide, 1e-14), "atanh": (np.arctanh, _unit, 1e-14),
    "acosh": (np.arccosh, _wide, 1e-14), "sinc": (np.sinc, _wide, 1e-13), "exp2": (np.exp2, _wide, 1e-14),
}


def _fn(name):
    obj = coretorch
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _compare(got, want, x, rtol, tiny, huge, what, atol=0.0):
    """Finite values to ``rtol`` (where representable in the dtype), the rest (inf, nan, 0) exactly."""
    with np.errstate(all="ignore"):
        ok = np.isfinite(want) & (np.abs(want) > tiny) & (np.abs(want) < huge)
        atol = np.broadcast_to(atol, got.shape)[ok]   # a scalar, or one per input
        rel = np.maximum(np.abs(got[ok] - want[ok]) - atol, 0) / np.abs(want[ok])
    assert rel.size and rel.max() <= rtol, f"{what}: max rel {rel.max():.2e} at x = {x[ok][rel.argmax()]!r}"
    exact = ~np.isfinite(want)
    np.testing.assert_array_equal(got[exact], want[exact].astype(got.dtype), err_msg=what)


def _normal32(x):
    x32 = x.astype(np.float32)
    return ~((x32 != 0) & (np.abs(x32) < np.finfo(np.float32).tiny))


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_against_scipy(name):
    ref, inputs, rtol = CASES[name]
    x = inputs()
    with np.errstate(invalid="ignore", divide="ignore"):
        want = ref(x)
    got = _fn(name)(coretorch.tensor(x, dtype=coretorch.float64, device="opencl")).cpu().numpy()
    atol = ATOL.get(name, (0.0, 0.0))
    if name in ATOL_ARG:
        atol = tuple(ATOL_ARG[name] * np.finfo(d).eps * np.maximum(1.0, np.abs(v))
                     for d, v in ((np.float64, x), (np.float32, x[_normal32(x)])))
    _compare(got, want, x, rtol, 1e-290, 1e300, f"{name} float64", atol[0])
    x32 = x.astype(np.float32)[_normal32(x)]   # no subnormal inputs in float32
    with np.errstate(all="ignore"):
        want32 = ref(x32.astype(np.float64))
    got32 = _fn(name)(coretorch.tensor(x32, device="opencl")).cpu().numpy()
    assert got32.dtype == np.float32
    with np.errstate(over="ignore"):
        _compare(got32, want32.astype(np.float32), x32, 2e-5, 1e-30, 1e37, f"{name} float32", atol[1])


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_polygamma_against_scipy(n):
    x = np.concatenate([_RNG.uniform(0.01, 40, 500), -_RNG.uniform(0, 10, 300), [0.0, -1.0, np.inf, np.nan]])
    want = sp.polygamma(n, x)
    got = coretorch.polygamma(n, coretorch.tensor(x, device="opencl", dtype=coretorch.float64)).cpu().numpy()
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-11)
    got32 = coretorch.polygamma(n, coretorch.tensor(x[:500], device="opencl")).cpu().numpy()
    np.testing.assert_allclose(got32, want[:500], rtol=5e-5)


def test_float_erf_is_the_fitted_kernel():
    x = np.concatenate([_RNG.standard_normal(1000) * 3, [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 4.0, 1e-30]])
    t = coretorch.tensor(x.astype(np.float32), device="opencl")
    before = STATS["launches"]
    got = coretorch.erf(t).cpu().numpy()
    assert STATS["launches"] - before == 1
    want = sp.erf(x.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=1e-37)
    assert np.isnan(got[-5]) and np.signbit(got[-8]) and got[-7] == 1.0 and got[-6] == -1.0


def test_float16_computes_in_float():
    x = np.linspace(-0.99, 0.99, 101).astype(np.float16)
    got = coretorch.erfinv(coretorch.tensor(x, device="opencl")).cpu().numpy()
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, sp.erfinv(x.astype(np.float64)).astype(np.float16), rtol=2e-3, atol=1e-3)
    m, e = coretorch.frexp(coretorch.tensor(x, device="opencl"))
    wm, we = np.frexp(x)
    np.testing.assert_array_equal(m.cpu().numpy(), wm)
    np.testing.assert_array_equal(e.cpu().numpy(), we)


@pytest.mark.parametrize("name", ["digamma", "special.i1e", "erfinv", "tan", "special.ndtr", "erf"])
def test_strided_inputs_are_read_in_place_in_one_kernel(name):
    base = coretorch.tensor(np.random.default_rng(1).uniform(-0.9, 0.9, (6, 8, 10)), device="opencl",
                            dtype=coretorch.float64)
    view = base.permute(2, 0, 1)[::2, 1:, ::3]
    assert not view.is_contiguous()
    f = _fn(name)
    before = STATS["launches"]
    got = f(view)
    assert STATS["launches"] - before == 1, "one kernel, no copy of the strided input"
    want = f(view.contiguous().cpu()).numpy()
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-12, atol=1e-14)   # digamma: near a root


def test_binary_kernels_against_numpy():
    a = np.concatenate([_RNG.uniform(-50, 50, 300), [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0]])
    b = np.concatenate([_RNG.uniform(-50, 50, 300), [-0.0, 0.0, np.inf, np.inf, 1.0, np.nan]])
    ta, tb = (coretorch.tensor(v, device="opencl", dtype=coretorch.float64) for v in (a, b))
    for name, ref in (("atan2", np.arctan2), ("hypot", np.hypot), ("copysign", np.copysign), ("fmax", np.fmax),
                      ("fmin", np.fmin), ("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2),
                      ("xlogy", sp.xlogy)):
        got = getattr(coretorch, name)(ta, tb).cpu().numpy()
        with np.errstate(all="ignore"):
            want = ref(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0, equal_nan=True, err_msg=name)
        assert np.array_equal(np.signbit(got), np.signbit(want)) or name not in ("copysign",), name
