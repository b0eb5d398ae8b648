"""numpy kernels of the sorting and selection primitives (see coretorch._backend.PRIMITIVES).

sort packs each element's order-preserving 32-bit key and its index into one uint64 and sorts those with numpy's
SIMD sort: one sort gives values and indices, equal keys come out in index order (a stable sort for free), and it
is ~3x faster than ``np.argsort`` plus a gather (1M float32: 24 ms vs 66 ms; ``np.sort`` alone, values only: 7 ms).
64-bit dtypes take ``np.argsort``.  NaN sorts as the largest value, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

_I64 = np.dtype(np.int64)
_MIN32 = np.int32(-2 ** 31)


def _keys32(x):
    """int32 bit patterns whose unsigned order is x's order (NaN largest), for float32 / 32-bit-or-less ints."""
    if x.dtype == np.float32:
        x = x + np.float32(0)  # -0.0 + 0.0 is +0.0: both zeros get one key, so they keep input order (a tie)
        if np.isnan(x).any():  # one NaN bit pattern, positive: it sorts after +inf
            x = np.where(np.isnan(x), np.float32(np.nan), x)
        b = x.view(np.int32)
        k = b >> 31            # -1 for a set sign bit, else 0
        k |= _MIN32            # negative: flip every bit; positive: flip the sign bit
        k ^= b
        return k
    return x.astype(np.int32) ^ _MIN32


def _unkeys32(k, dt):
    if dt == np.float32:
        m = ~k
        m >>= 31
        m |= _MIN32
        m ^= k
        return m.view(np.float32)
    return (k ^ _MIN32).astype(dt)


def _packed_sort(x, descending: bool):
    """Sort the last axis of ``x`` (float32 or an integer type of <= 32 bits): (values, int64 indices)."""
    n = x.shape[-1]
    k = _keys32(x)
    if descending:
        k = ~k                 # reversed key order; the index half still breaks ties in input order
    p = np.empty(x.shape + (2,), np.uint32)   # little-endian uint64: high word the key, low word the index
    p[..., 1] = k.view(np.uint32)
    p[..., 0] = np.arange(n, dtype=np.uint32)
    q = p.view(np.uint64)[..., 0]
    q.sort(axis=-1)
    pv = q.view(np.uint32).reshape(x.shape + (2,))
    idx = pv[..., 0].astype(_I64)
    ks = pv[..., 1].view(np.int32)
    if descending:
        ks = ~ks
    v = _unkeys32(ks, x.dtype)
    if x.dtype == np.float32:
        zero = v == 0
        if zero.any():  # the keys made every zero +0.0: take the zeros' signs from the input
            v[zero] = np.take_along_axis(x, idx, -1)[zero]
    return v, idx


def _fits_int32(x) -> bool:
    return bool(x.min() >= -2 ** 31 and x.max() < 2 ** 31)


def _argsort(x, descending: bool, stable: bool):
    kind = "stable" if stable else None
    if not descending:
        return np.argsort(x, axis=-1, kind=kind)
    # descending with ties in input order and NaN first: the ascending order of the reversed row, reversed
    n = x.shape[-1]
    return (n - 1) - np.argsort(x[..., ::-1], axis=-1, kind=kind)[..., ::-1]


def sort(x, axis, descending: bool, stable: bool):
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    xm = np.moveaxis(x, axis, -1)
    if xm.size == 0:
        v, i = xm.copy(), np.zeros(xm.shape, _I64)
    elif x.dtype == np.float16:
        v, i = _packed_sort(xm.astype(np.float32), descending)
        v = v.astype(np.float16)
    elif x.dtype.kind not in "biuf":  # an ml_dtypes float (bfloat16): the order of its exact float32 values
        v, i = _packed_sort(xm.astype(np.float32), descending)
        v = v.astype(x.dtype)
    elif x.dtype.itemsize <= 4 and x.dtype != np.uint32 and xm.shape[-1] < 2 ** 32:
        v, i = _packed_sort(xm, descending)
    elif x.dtype == np.int64 and xm.shape[-1] < 2 ** 32 and _fits_int32(xm):
        # int64 values within int32's range (token ids, labels, counts): the packed sort on their int32 copies
        v, i = _packed_sort(xm.astype(np.int32), descending)
        v = v.astype(np.int64)
    else:
        i = _argsort(xm, descending, stable)
        v = np.take_along_axis(xm, i, -1)
    return np.ascontiguousarray(np.moveaxis(v, -1, axis)), np.ascontiguousarray(np.moveaxis(i, -1, axis))


def topk(x, k: int, axis, largest: bool, sorted_: bool):
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    if k == 0 or xm.size == 0:
        shape = xm.shape[:-1] + (k,)
        return (np.ascontiguousarray(np.moveaxis(np.empty(shape, x.dtype), -1, axis)),
                np.ascontiguousarray(np.moveaxis(np.zeros(shape, _I64), -1, axis)))
    if 4 * k >= n:  # a full sort costs about as much
        v, i = sort(xm, -1, largest, False)
        v, i = v[..., :k], i[..., :k]
    else:
        # argpartition puts NaN last (the largest, as PyTorch's topk)
        part = np.argpartition(xm, n - k if largest else k - 1, axis=-1)
        sel = part[..., n - k:] if largest else part[..., :k]
        vals = np.take_along_axis(xm, sel, -1)
        v, order = sort(vals, -1, largest, False)
        i = np.take_along_axis(sel, order, -1)
    return np.ascontiguousarray(np.moveaxis(v, -1, axis)), np.ascontiguousarray(np.moveaxis(i, -1, axis))


def kthvalue(x, k: int, axis):
    """The k-th smallest (0-based) along axis, the dim kept: one argpartition (NaN last, the largest)."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    i = np.take(np.argpartition(x, k, axis=axis), [k], axis=axis)
    return np.take_along_axis(x, i, axis), i.astype(_I64)


def searchsorted(seq, values, right: bool, out_dtype):
    """Insertion points of ``values`` in the rows of ``seq`` (1-D, or the same leading dims as values)."""
    side = "right" if right else "left"
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side).astype(out_dtype)
    s2 = seq.reshape(-1, seq.shape[-1])
    v2 = values.reshape(-1, values.shape[-1])
    B, N, M = s2.shape[0], s2.shape[1], v2.shape[1]
    if B <= 16 or v2.size == 0:  # a few rows: one searchsorted each
        out = np.empty(v2.shape, out_dtype)
        for r in range(B):
            out[r] = np.searchsorted(s2[r], v2[r], side=side)
        return out.reshape(values.shape)
    # many rows at once: order every row's boundaries and values together (by row, then value; a value goes after
    # equal boundaries for side='right', before them for 'left'); a value's answer is the boundaries before it
    rows = np.repeat(np.arange(B), N + M)
    both = np.concatenate([s2, v2], axis=1).reshape(-1)
    is_val = np.tile(np.r_[np.zeros(N, bool), np.ones(M, bool)], B)
    tie = is_val if right else ~is_val
    order = np.lexsort((tie, both, rows))
    bounds_before = np.cumsum(~is_val[order]) - np.repeat(np.arange(B) * N, N + M)
    out = np.empty(B * (N + M), np.int64)
    out[order] = bounds_before
    return out.reshape(B, N + M)[:, N:].reshape(values.shape).astype(out_dtype)


def _cum_extreme(ufunc):
    def k(x, axis):
        if x.ndim == 0:
            return x.copy(), np.zeros((), _I64)
        v = ufunc.accumulate(x, axis=axis)
        # the index moves to every element that equals the running extreme (the last of equal ones, as PyTorch)
        hit = x == v
        if x.dtype.kind == "f":
            hit |= np.isnan(x)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        pos = np.where(hit, np.arange(x.shape[axis]).reshape(shape), 0)
        return v, np.maximum.accumulate(pos, axis=axis).astype(_I64)
    return k


def logcumsumexp(x, axis):
    if x.ndim == 0:
        return x.copy()
    with np.errstate(invalid="ignore"):
        return np.logaddexp.accumulate(x, axis=axis)


KERNELS: dict = {"sort": sort, "topk": topk, "kthvalue": kthvalue, "searchsorted": searchsorted,
                 "cummax": _cum_extreme(np.maximum), "cummin": _cum_extreme(np.minimum), "logcumsumexp": logcumsumexp}
