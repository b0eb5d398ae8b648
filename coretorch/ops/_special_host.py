"""numpy kernels (scipy.special) of torch.special's Bessel, Airy and Hurwitz zeta functions: the cpu backend's
kernels and the opencl backend's host fallbacks (``coretorch._backend.PRIMITIVES``, the special block).

scipy is imported on the first call (it is the cpu plugin's dependency, never the core's: without it a kernel
raises NotImplementedError).  Each kernel computes in float64 and rounds once to the input's dtype; the points
where scipy's convention differs from PyTorch's are set to PyTorch's: ``zeta(x, +inf)`` is NaN for ``x != 1``
(scipy: 0).
"""
from __future__ import annotations

import importlib
from typing import Callable

import numpy as np

_F64 = np.dtype(np.float64)
_sp = None


def _scipy():
    global _sp
    if _sp is None:
        try:
            _sp = importlib.import_module("scipy.special")
        except ImportError as e:  # pragma: no cover (scipy comes with the cpu plugin)
            raise NotImplementedError("torch.special's Bessel, Airy and zeta functions need scipy "
                                      "(pip install scipy)") from e
    return _sp


def _unary(name: str, pick: Callable | None = None):
    def k(x):
        f = getattr(_scipy(), name)
        with np.errstate(all="ignore"):
            r = f(np.asarray(x, dtype=_F64))
        if pick is not None:
            r = pick(r)
        return np.asarray(r).astype(x.dtype, copy=False)
    k.__name__ = name
    return k


def _zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q) ** -x (x's dtype; q an array of it or a Python number)."""
    xd = np.asarray(x, dtype=_F64)
    qd = np.asarray(q, dtype=_F64)
    with np.errstate(all="ignore"):
        r = _scipy().zeta(xd, qd)
        r = np.where((qd == np.inf) & (xd != 1), np.nan, r)   # PyTorch's (Cephes') NaN, scipy's 0
    return np.asarray(r).astype(x.dtype, copy=False)


UNARY = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
         "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai")

KERNELS: dict = {
    "bessel_j0": _unary("j0"), "bessel_j1": _unary("j1"), "bessel_y0": _unary("y0"), "bessel_y1": _unary("y1"),
    "modified_bessel_k0": _unary("k0"), "modified_bessel_k1": _unary("k1"),
    "scaled_modified_bessel_k0": _unary("k0e"), "scaled_modified_bessel_k1": _unary("k1e"),
    "airy_ai": _unary("airy", lambda r: r[0]), "zeta": _zeta,
}
