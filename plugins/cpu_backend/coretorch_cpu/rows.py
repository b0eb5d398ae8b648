"""Row-wise helpers of the cpu kernels (issue 17's GPT step): a (D,) row operand against (M, D) rows, and column
sums, each in fewer passes than numpy's plain form and with the same bits."""
from __future__ import annotations

import numpy as np

from .pairwise import MIN_ROWS as _MIN_ROWS, lead_sum as _lead_sum

_add_reduce = np.add.reduce
_einsum = np.einsum
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
TILE = 8192   # elements of a tiled row operand: inner loops this long run at a plain pass's speed


def rowop(fn, a, v, out) -> None:
    """out = fn(a, v) for (M, D) ``a`` and ``out`` (may be ``a``) and a (D,) row ``v``.  numpy runs a broadcast
    row operand one D-long inner loop per row (~1.5-2x a plain pass for D = 128-512); for C-contiguous operands the
    rows go K at a time against ``v`` tiled K times (~8K elements): the same elementwise operations."""
    if a.ndim != 2:
        fn(a, v, out=out)
        return
    m, d = a.shape
    kk = min(TILE // d, m) if d else 0
    if kk < 2 or not (a.flags.c_contiguous and out.flags.c_contiguous) or v.shape != (d,):
        fn(a, v, out=out)
        return
    vt = np.empty((kk, d), v.dtype)
    vt[...] = v
    vt = vt.reshape(-1)
    full = m - m % kk
    fn(a[:full].reshape(-1, kk * d), vt, out=out[:full].reshape(-1, kk * d))
    if full < m:
        fn(a[full:], v, out=out[full:])


def colsum(a, b=None):
    """Column sums of (M, D) ``a`` (of a * b with ``b``): the sum kernel's cascade past pairwise.MIN_ROWS rows
    (pairwise.lead_sum: blocks of rows, the products of a block by einsum without a temporary), numpy's row-after-row
    sum (einsum) up to it: the same bits as ``sum(0)`` of the product (tests/test_cpu_kernels12.py checks it).
    (Row after row throughout, float32 bias gradients of long batches drifted by up to M/2 ulp.)"""
    if a.ndim == 2 and a.shape[1] > 1 and a.dtype in _FLOATS and a.flags.c_contiguous \
            and (b is None or (b.dtype == a.dtype and b.flags.c_contiguous)):
        if a.shape[0] > _MIN_ROWS:
            return _lead_sum(a, b)
        return _einsum("ij->j", a) if b is None else _einsum("ij,ij->j", a, b)   # (numpy's row-after-row bits)
    return _add_reduce(a if b is None else np.multiply(a, b), axis=0)
