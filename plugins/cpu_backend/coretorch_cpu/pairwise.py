"""Float sums over a leading axis in blocks (a cascade, as PyTorch's CPU sums), for the cpu kernels.

numpy sums pairwise only along an array's contiguous last axis; over any other axis it adds row after row into the
result, so a float32 column sum of K rows drifts by up to K/2 ulp: 20000 rows of 0.1 summed to 1999.66 where PyTorch
(and the exact sum) give 2000.0.  Here the rows go ``BLOCK`` at a time: each block is summed row after row (the
numpy reduction over the block axis of a (K // BLOCK, BLOCK, ...) view, no copy), then the block sums the same way,
level after level, so each result is ~BLOCK * log_BLOCK(K) additions deep instead of K: within a few ulp, at
about a plain pass's speed (one read of the input, 1 / BLOCK of it written)."""
from __future__ import annotations

import numpy as np

BLOCK = 16
MIN_ROWS = 128  # (outer_sum: shorter reductions stay numpy's row-after-row sums, at most 64 ulp)
_add_reduce = np.add.reduce
_einsum = np.einsum


def lead_sum(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """The sum over axis 0 of ``a`` (of ``a * b`` with ``b``, a 2-d array of a's shape and dtype: einsum's
    product without its temporary), a new array."""
    k = a.shape[0]
    if k <= BLOCK:
        return _add_reduce(a if b is None else np.multiply(a, b), axis=0)
    m = k // BLOCK
    full = m * BLOCK
    head = a[:full].reshape((m, BLOCK) + a.shape[1:])
    if b is None:
        s = _add_reduce(head, axis=1)
    else:
        s = _einsum("ibj,ibj->ij", head, b[:full].reshape(head.shape))
    r = lead_sum(s)
    if full < k:
        r += _add_reduce(a[full:] if b is None else np.multiply(a[full:], b[full:]), axis=0)
    return r


def outer_sum(x: np.ndarray, axes: tuple, keepdim: bool) -> np.ndarray | None:
    """``x`` summed over ``axes`` where numpy would add row after row (a float array whose innermost axis in memory
    is kept, more than MIN_ROWS values per result), else None (numpy's own reduction is pairwise along that axis, or
    short: up to MIN_ROWS rows the cascade's extra calls cost more than the few ulp they save)."""
    nd = x.ndim
    if nd < 2 or x.dtype.kind != "f":
        return None
    shape = x.shape
    ax = sorted({a % nd for a in axes})
    if ax[-1] == nd - 1 and x.flags.c_contiguous:   # (the innermost axis reduced: numpy's pairwise)
        return None
    k = 1
    for a in ax:
        k *= shape[a]
    if k <= MIN_ROWS or x.size == 0:
        return None
    st = x.strides
    inner = min((d for d in range(nd) if shape[d] > 1), key=lambda d: abs(st[d]), default=nd - 1)
    if inner in ax:
        return None
    kept = [d for d in range(nd) if d not in ax]
    y = x if ax == list(range(len(ax))) else x.transpose(ax + kept)
    r = lead_sum(y.reshape((k,) + tuple(shape[d] for d in kept)))
    if keepdim:
        r = r.reshape(tuple(1 if d in ax else s for d, s in enumerate(shape)))
    return r if r.flags.c_contiguous else np.ascontiguousarray(r)
