"""numpy kernels of the elementwise math and special functions primitives (see coretorch.plugins.KERNELS).

One vectorised numpy ufunc or scipy.special ufunc per kernel; erf, erfc and the fused GELU take float32 (and
float16, computed in float32) through the numpy polynomial evaluations of ``erf32`` (scipy's float32 loops are
scalar code, ~20x numpy's tanh beyond |x| = 1), float64 through scipy.  scipy computes float16 in float32 (it has
no half loops) and some of its ufuncs return float64 for a float32 array with a Python float: results are cast back
to the input's dtype.  scipy.special is imported on the first call of one of its kernels: its import costs ~0.3 s,
which `import coretorch` should not pay for programs that never call one.
"""
from __future__ import annotations

import importlib

import numpy as np

from coretorch.plugins import HOST_SPECIAL_KERNELS as _HOST_SPECIAL

from . import erf32

_nd = np.ndarray
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)


def _lazy(name: str):
    """scipy.special.<name>, resolved on the first call."""
    fn = None

    def call(*args):
        nonlocal fn
        if fn is None:
            fn = getattr(importlib.import_module("scipy.special"), name)
        return fn(*args)
    call.__name__ = name
    return call


class _SciPySpecial:
    """``sp.<name>``: the lazily imported scipy.special function of that name."""

    def __getattr__(self, name: str):
        f = _lazy(name)
        setattr(self, name, f)
        return f


sp = _SciPySpecial()


def _u(fn):
    """A unary float kernel: IEEE edge cases (poles, domain errors) are values, not warnings; the input's dtype."""
    def k(x):
        with np.errstate(all="ignore"):
            r = fn(x)
        if r.__class__ is not _nd or r.dtype != x.dtype:
            r = np.asarray(r).astype(x.dtype, copy=False)
        return r
    return k


def _b(fn):
    """A binary kernel (y an array of x's dtype or a Python scalar): x's dtype."""
    def k(x, y):
        with np.errstate(all="ignore"):
            r = fn(x, y)
        if r.__class__ is not _nd or r.dtype != x.dtype:
            r = np.asarray(r).astype(x.dtype, copy=False)
        return r
    return k


def _signbit(x):
    return np.asarray(np.signbit(x))


def _lgamma(x):
    """C's lgamma: +inf at -inf (scipy: -inf), and -log|x| for |x| below ~5e-309, where scipy's gammaln gives inf
    (lgamma(1e-310) is 713.8; -log|x| is exact to double precision for |x| < 1e-300)."""
    r = sp.gammaln(x)
    if r.size and np.isinf(r).any():
        with np.errstate(all="ignore"):
            ax = np.abs(x)
            r = np.where(x == -np.inf, np.inf, np.where((ax < 1e-300) & (ax > 0), -np.log(ax), r))
    return r


def _sinc(x):
    """numpy's sinc is three float16 operations for a float16 array (pi * x rounded to half: sinc(1) = 3e-4);
    PyTorch computes half in float32 and rounds once."""
    return np.sinc(x.astype(_F32)).astype(_F16) if x.dtype == _F16 else np.sinc(x)


def _erfinv(x):
    return np.copysign(sp.erfinv(x), x)  # erfinv(-0.0) = -0.0 as PyTorch (scipy drops the sign)


def _polygamma(x, n):
    with np.errstate(all="ignore"):
        return np.asarray(sp.polygamma(int(n), x)).astype(x.dtype, copy=False)


def _fast32(fast, slow):
    """``fast`` (a float32 function of erf32) for float32 and float16 arrays, ``slow`` (scipy) for the rest."""
    def k(x):
        if x.dtype == _F32:
            return fast(x)
        if x.dtype == _F16:
            return fast(x.astype(_F32)).astype(_F16)
        return slow(x)
    k.__name__ = slow.__name__
    return k


def _gelu64(x):
    with np.errstate(all="ignore"):
        r = np.asarray(sp.ndtr(x)).astype(x.dtype, copy=False)   # x Phi(x): two passes
        r *= x
    return r


_gelu = _fast32(erf32.gelu, _gelu64)


def _ldexp(x, e):
    """x * 2 ** e (x float32/float64, e int32 of x's shape): C's ldexp, one rounding."""
    with np.errstate(all="ignore"):
        return np.asarray(np.ldexp(x, e))


def _frexp(x):
    m, e = np.frexp(x)
    return np.asarray(m), np.asarray(e).astype(np.int32, copy=False)


KERNELS: dict = {
    **{n: _u(f) for n, f in {
        "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
        "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "log2": np.log2, "log10": np.log10,
        "exp2": np.exp2, "sinc": _sinc, "erf": _fast32(erf32.erf, sp.erf),
        "erfc": _fast32(erf32.erfc, sp.erfc), "lgamma": _lgamma, "ndtr": sp.ndtr,
        "entr": sp.entr, "erfinv": _erfinv, "digamma": sp.psi, "i0": sp.i0, "i0e": sp.i0e, "i1": sp.i1,
        "i1e": sp.i1e, "ndtri": sp.ndtri, "erfcx": sp.erfcx, "log_ndtr": sp.log_ndtr}.items()},
    **{n: _b(f) for n, f in {
        "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign, "logaddexp": np.logaddexp,
        "logaddexp2": np.logaddexp2, "xlogy": sp.xlogy, "xlog1py": sp.xlog1py, "fmax": np.fmax,
        "fmin": np.fmin, "igamma": sp.gammainc, "igammac": sp.gammaincc}.items()},
    "signbit": _signbit, "polygamma": _polygamma, "frexp": _frexp, "ldexp": _ldexp, "gelu": _gelu,
    **_HOST_SPECIAL,  # the Bessel, Airy and zeta functions (scipy.special, shared with the opencl host fallback)
}
