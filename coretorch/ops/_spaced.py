"""The values of a floating-point ``linspace`` as PyTorch's CPU kernel computes them: ``step = (end - start) /
(steps - 1)`` in the dtype, the first half ``start + step * i`` and the second half ``end - step * (steps - 1 - i)``,
each one fused multiply-add (one rounding: the compiler contracts the kernel's expression).  numpy's own linspace
(``start + i * step``, two roundings, from one end) differs in the last bit for about a third of the values, which
moves points on a bin edge of ``torch.histogram`` into the next bin."""
from __future__ import annotations

import numpy as np

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's splitting constant for float64


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * b = p + e`` exactly (Dekker's product of float64 arrays; no overflow for linspace's magnitudes)."""
    p = a * b
    ca, cb = _SPLIT * a, _SPLIT * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma64(a, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` (elementwise: ``c`` an array of ``b``'s shape) rounded once (to nearest, but for a
    double-rounding tie no linspace produces), float64."""
    a = np.float64(a)
    p, pe = _two_prod(np.full(b.shape, a), b)
    s = p + c
    bb = s - p
    se = (p - (s - bb)) + (c - bb)  # Knuth's two-sum error of p + c
    return s + (se + pe)


def float_spaced(start: float, end: float, steps: int, dt: np.dtype) -> np.ndarray:
    """``linspace(start, end, steps)`` of float32 or float64 ``dt``, bit for bit PyTorch's CPU values."""
    if steps == 0:
        return np.zeros(0, dt)
    s, e = dt.type(start), dt.type(end)
    if steps == 1:
        return np.array([s], dt)
    step = (e - s) / dt.type(steps - 1)
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    k = np.where(i < half, i, -(steps - 1 - i))  # (the second half counts back from end: end - step * (n - 1 - i))
    base = np.where(i < half, np.float64(s), np.float64(e))
    with np.errstate(all="ignore"):
        if dt == np.float64 and max(abs(float(s)), abs(float(e))) < 1e290:  # (the split would overflow beyond)
            return _fma64(step, k, base)
        # float32: the product of a float32 step and an index below 2**29 is exact in float64, then one rounding of
        # the sum to float64 and one to float32 (a double rounding only at ties the sum cannot reach in practice)
        return (np.float64(step) * k + base).astype(dt)  # (float64 beyond 1e290: two roundings)
