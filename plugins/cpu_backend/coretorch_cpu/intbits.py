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
    # (an array for 0-d operands too, where numpy's ufuncs give a scalar: a compiled replay records arrays only)
    return np.asarray(np.where(bad, np.zeros((), x.dtype), r) if bad.any() else r)


def _rshift(x, n):
    c, bad, bits = _count(x, n)
    if not bad.any():
        return np.asarray(np.right_shift(x, c))
    if x.dtype.kind == "i":  # a count of bits - 1 is the sign fill (-1 or 0), as a too-large or negative count
        return np.asarray(np.right_shift(x, np.where(bad, np.asarray(bits - 1, x.dtype), c)))
    return np.where(bad, np.zeros((), x.dtype), np.right_shift(x, c))


def _c_gcd(a: int, b: int, bits: int) -> int:
    """PyTorch's calc_gcd on one pair: |a| and |b| stored back in the dtype (|MIN| wraps to MIN), then Euclid with
    C's truncating remainder (so a MIN operand can give a negative gcd: gcd(int8 -128, 96) = -32)."""
    def wrap(v: int) -> int:
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v
    a, b = wrap(abs(a)), wrap(abs(b))
    while a != 0:
        r = abs(b) % abs(a)
        a, b = (-r if b < 0 else r), a
    return b


def _gcd(x, y):
    y = np.asarray(y, dtype=x.dtype)
    with np.errstate(all="ignore"):
        r = np.asarray(np.gcd(x, y))
    if x.dtype.kind == "i":  # only an operand equal to the dtype's minimum (whose |x| wraps) differs from numpy's
        lo = np.iinfo(x.dtype).min
        hit = (x == lo) | (y == lo)
        if hit.any():
            xb, yb = np.broadcast_arrays(x, y)
            r = np.array(r, copy=True)
            bits = x.dtype.itemsize * 8
            r[hit] = [_c_gcd(int(a), int(b), bits) for a, b in zip(xb[hit], yb[hit])]
    return r


def _lcm(x, y):
    """PyTorch's |a / gcd * b|: for 8/16-bit dtypes computed in C's int (exact) and then wrapped to the dtype, for
    wider ones wrapped first (the product overflows in the dtype: lcm(2**40, 2**40 - 1) = 2**40 in int64)."""
    y = np.asarray(y, dtype=x.dtype)
    g = _gcd(x, y)
    wide = np.int64 if x.dtype.itemsize <= 2 else x.dtype
    with np.errstate(all="ignore"):
        gw = g.astype(wide)
        q = np.floor_divide(x.astype(wide), np.where(gw == 0, 1, gw))  # exact division: floor is C's truncation
        p = np.abs(np.multiply(q, y.astype(wide)))
        return np.asarray(np.where(gw == 0, 0, p).astype(x.dtype))


KERNELS: dict = {"gcd": _gcd, "lcm": _lcm, "bitwise_left_shift": _lshift, "bitwise_right_shift": _rshift}
