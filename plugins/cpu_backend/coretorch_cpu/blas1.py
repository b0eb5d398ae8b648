"""The in-place ``y += alpha * x`` (kernel ``axpy_``: SGD's update, ``Tensor.add_(x, alpha=a)``) through BLAS.

BLAS's ``saxpy``/``daxpy`` compute ``y + alpha * x`` in one pass, and OpenBLAS's vector kernels (AVX2 and later)
round once per element (fused multiply-add), which is what PyTorch's ``add_`` with ``alpha`` gives on the CPU (its
vectorised kernel is ``fmadd(x, alpha, y)``): the update matches PyTorch's bits and runs 2.5-3x numpy's two passes
(``x * alpha`` into a temporary, then the add) at the sizes of a layer's weights.  BLAS comes from scipy (a
dependency of this backend), imported on the first float32/float64 update: scipy.linalg costs ~0.2 s to import,
which programs that never update a parameter should not pay.  A probe at that import checks that this machine's
BLAS does round once; where it does not (a CPU without FMA), numpy's two passes serve, as for other dtypes
(integers are exact; float16/bfloat16 are computed in float32 by the dtype layer and rounded once).
Non-contiguous or overlapping operands are copied first, so the rounding never depends on the layout.
"""
from __future__ import annotations

import importlib

import numpy as np

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_blas: dict = {}  # {dtype: BLAS axpy} once probed; {"none": None} where BLAS does not round once
# OpenBLAS runs an axpy of more than 10000 elements on its threads; scipy's OpenBLAS is another copy than numpy's,
# and its idle threads spinning next to numpy's matmul threads cost more than the update (measured: a 3 ms MLP step
# became 24 ms): chunks of 8192 keep every call on the calling thread
_CHUNK = 8192
# OpenBLAS's vector kernels take blocks of 32 elements (64 on AVX-512) and finish the rest in plain C with two
# roundings: the last n % 64 elements go through a zero-padded block of 64, so every element is rounded once
_BLOCK = 64


def _rounds_once(f, dt) -> bool:
    """(1 + e)(1 - e) - 1 is -e^2 with one rounding and 0 with two (e: the dtype's epsilon)."""
    e = np.finfo(dt).eps
    y = np.full(_BLOCK, -1, dt)
    f(np.full(_BLOCK, 1 + e, dt), y, a=dt.type(1 - e))
    return bool((y == -dt.type(e) * dt.type(e)).all())


def _routines() -> dict:
    if not _blas:
        blas = importlib.import_module("scipy.linalg.blas")
        found = {_F32: blas.saxpy, _F64: blas.daxpy}
        if all(_rounds_once(f, dt) for dt, f in found.items()):
            _blas.update(found)
        else:
            _blas["none"] = None
    return _blas


def fused() -> bool:
    """Whether float32/float64 ``axpy`` rounds once per element on this machine (imports BLAS)."""
    return _F32 in _routines()


def _numpy_axpy(y: np.ndarray, a, x: np.ndarray) -> None:
    np.add(y, x if a == 1 else x * a, out=y)


def _blas_axpy(f, y: np.ndarray, a, x: np.ndarray) -> None:
    """``f`` (saxpy/daxpy) on C-contiguous ``y`` and ``x`` of one size, in chunks of whole blocks."""
    yf, xf = y.reshape(-1), x.reshape(-1)  # contiguous: views, so BLAS writes into y itself
    n = yf.size
    body = n - n % _BLOCK
    for i in range(0, body, _CHUNK):
        j = min(i + _CHUNK, body)
        f(xf[i:j], yf[i:j], a=a)
    if body < n:
        t = n - body
        yb, xb = np.zeros(_BLOCK, y.dtype), np.zeros(_BLOCK, y.dtype)
        yb[:t], xb[:t] = yf[body:], xf[body:]
        f(xb, yb, a=a)
        yf[body:] = yb[:t]


def axpy(y: np.ndarray, a, x: np.ndarray) -> None:
    """``y += a * x`` in place (one rounding per element for float32/float64 where BLAS fuses); ``x`` of
    ``y``'s shape."""
    yd = y.dtype
    # dtypes compare by value: an array from elsewhere may carry another float32 dtype object (explicit "<")
    dt: np.dtype | None = _F32 if yd is _F32 or yd == _F32 else _F64 if yd is _F64 or yd == _F64 else None
    # alpha == 0: BLAS returns at once, where y + 0 * x is NaN at an infinite or NaN x (PyTorch's add_ computes it)
    if dt is None or x.dtype != dt or not y.flags.writeable or not y.size or a == 0:
        _numpy_axpy(y, a, x)  # (a read-only y raises numpy's ValueError, which the kernel table reports)
        return
    f = (_blas or _routines()).get(dt)
    if f is None:
        _numpy_axpy(y, a, x)
        return
    if x is not y and np.may_share_memory(x, y):
        x = x.copy()  # y.add_(y.view(...), alpha=a): BLAS would read elements it has already written
    elif not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    if y.flags.c_contiguous:
        _blas_axpy(f, y, a, x)
        return
    yc = np.ascontiguousarray(y)  # a strided parameter view: the same rounding as every other update
    _blas_axpy(f, yc, a, x)
    y[...] = yc
