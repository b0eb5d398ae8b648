"""Integer kernels of the core's gcd/lcm and bitwise shifts (numpy's ufuncs, with PyTorch's rules for shift
counts outside [0, bits): a left shift gives 0, a right shift the sign fill; numpy leaves those undefined)."""
from __future__ import annotations

import numpy as np


def _count(x, n):
    """The shift count as an array of x's dtype (a Python int second operand included) and the out-of-range mask."""
    n = np.asarray(n, dtype=x.dtype)
    bits = x.dtype.itemsize * 8
    bad = (n >= bits) | (n < 0) if x.dtype.kind == "i" else n >= bits
    return np.where(bad, 0, n).astype(x.dtype, copy=False), bad, bits


def _lshift(x, n):
    c, bad, _ = _count(x, n)
    r = np.left_shift(x, c)
    return np.where(bad, np.zeros((), x.dtype), r) if bad.any() else r


def _rshift(x, n):
    c, bad, bits = _count(x, n)
    if not bad.any():
        return np.right_shift(x, c)
    if x.dtype.kind == "i":  # a count of bits - 1 is the sign fill (-1 or 0), as a too-large or negative count
        return np.right_shift(x, np.where(bad, np.asarray(bits - 1, x.dtype), c))
    return np.where(bad, np.zeros((), x.dtype), np.right_shift(x, c))


def _gcd(x, y):
    with np.errstate(all="ignore"):
        return np.asarray(np.gcd(x, np.asarray(y, dtype=x.dtype)))


def _lcm(x, y):
    with np.errstate(all="ignore"):
        return np.asarray(np.lcm(x, np.asarray(y, dtype=x.dtype)))


KERNELS: dict = {"gcd": _gcd, "lcm": _lcm, "bitwise_left_shift": _lshift, "bitwise_right_shift": _rshift}
