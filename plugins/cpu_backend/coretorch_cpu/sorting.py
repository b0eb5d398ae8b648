"""numpy kernels of the sorting and selection primitives (see coretorch.plugins.KERNELS).

sort packs each element's order-preserving 32-bit key and its index into one 64-bit word, ``key << 31 | index``,
and sorts those words with numpy's SIMD sort: one sort gives values and indices, equal keys come out in index order
(a stable sort for free).  The words are sorted as float64: with the top bit clear and the exponent never all ones
(NaN has one canonical key), positive doubles order as their bit patterns, and numpy's AVX2 float64 sort is ~1.3x
faster than its int64 one (AVX2 has no 64-bit integer min/max).  Only the two results are allocated: the keys are
built in the values' buffer and decoded back into it, and the words become the indices in place.  1M float32:
~2.2-2.5x ``np.sort`` of the values alone (the float64 sort by itself is 1.6-1.85x numpy's float32 one on AVX2: the
floor of any one-sort method; benchmarks/results.md lists the alternatives measured), against ~5x for
``np.argsort`` + a gather.  1-byte integers take numpy's stable argsort (a counting sort, ~2x faster), arrays of
<= 1,024 elements a plain stable argsort, 64-bit dtypes outside int32's range ``np.argsort``.  NaN sorts as the
largest value, as in PyTorch.
"""
from __future__ import annotations

from typing import Literal

import numpy as np

_I64 = np.dtype(np.int64)
_F32 = np.dtype(np.float32)
_MIN32 = np.int32(-2 ** 31)
_LOW31 = np.int64(2 ** 31 - 1)
_F64_SAFE_INT32 = 0x7FE00000  # int32 keys at or above it would give a double with an all-ones exponent (NaN/inf)
_AR_CACHE_MAX = 1 << 22     # aranges up to this length are kept between calls (an 8 n-byte pass saved per sort)
_CHUNK = 1 << 16          # elements per piece of the passes before and after the sort (L2-sized)
_ar_cache: list = [np.arange(0, dtype=np.int64)]


def _moveaxis(a, src: int, dst: int):
    """``np.moveaxis``, free when the axis stays where it is (the common last-axis call; numpy's costs ~10 us)."""
    n = a.ndim
    if n and src % n == dst % n:
        return a
    return np.moveaxis(a, src, dst)


def _arange(n: int):
    """np.arange(n) as int64, sliced from a cached one when n is small enough."""
    a = _ar_cache[0]
    if n <= a.size:
        return a[:n]
    a = np.arange(n, dtype=np.int64)
    if n <= _AR_CACHE_MAX:
        _ar_cache[0] = a
    return a


def _take_last(a, i):
    """``np.take_along_axis(a, i, -1)``: one fancy index for 1-D and 2-D arrays (numpy's builds its index tuple in
    Python, ~4 us of a small topk's budget per call)."""
    if a.ndim == 1:
        return a[i]
    if a.ndim == 2:
        return a[_arange(a.shape[0])[:, None], i]
    return np.take_along_axis(a, i, -1)


def _chunks(rows: int, n: int):
    """(lo, hi, cols) spans of a C-ordered (rows, n) array's flat order, ~_CHUNK elements each, each covering whole
    rows (cols = slice(0, n)) or a piece of one row: the passes around the sort run on cache-sized pieces."""
    if n <= _CHUNK:
        step = max(_CHUNK // max(n, 1), 1)
        for r in range(0, rows, step):
            yield r * n, min(r + step, rows) * n, slice(0, n)
    else:
        for r in range(rows):
            for j in range(0, n, _CHUNK):
                yield r * n + j, r * n + min(j + _CHUNK, n), slice(j, min(j + _CHUNK, n))


def _packed_sort(x, descending: bool):
    """Sort the last axis of ``x`` (float32 or an integer type of <= 32 bits): (values, int64 indices)."""
    shape, n = x.shape, x.shape[-1]
    rows = x.size // n
    kb = np.empty(shape, np.int32)   # the keys, then the values (float32 ones in place)
    q = np.empty(shape, _I64)        # the packed words, then the indices
    is_float = x.dtype == _F32
    if is_float:
        y = kb.view(np.float32)
        np.add(x, np.float32(0), out=y)  # -0.0 + 0.0 is +0.0: both zeros get one key, so they tie (input order)
        if np.isnan(y.max()):            # one NaN bit pattern, positive: it sorts after +inf
            y[np.isnan(y)] = np.float32(np.nan)
        safe = True
    else:
        np.copyto(kb, x, casting="unsafe")
        safe = x.dtype.itemsize < 4 or int(x.max()) < _F64_SAFE_INT32
    kf, qf = kb.reshape(-1), q.reshape(-1)
    ar = _arange(n)
    tmp = np.empty(min(_CHUNK, x.size) if n <= _CHUNK else _CHUNK, np.int32)
    for lo, hi, cols in _chunks(rows, n):
        k, t, w = kf[lo:hi], tmp[:hi - lo], qf[lo:hi]
        if is_float:                 # negative: flip every bit; positive: flip the sign bit
            np.right_shift(k, 31, out=t)
            t |= _MIN32
            k ^= t
        else:
            k ^= _MIN32
        if descending:
            np.invert(k, out=k)      # reversed key order; the index half still breaks ties in input order
        np.copyto(w, k.view(np.uint32))
        w <<= 31
        w = w.reshape(-1, cols.stop - cols.start)
        w |= ar[cols]
    (q.view(np.float64) if safe else q).sort(axis=-1)
    zero = False
    zt = np.empty(tmp.size, bool)
    for lo, hi, _ in _chunks(rows, n):
        k, t, w = kf[lo:hi], tmp[:hi - lo], qf[lo:hi]
        np.right_shift(w, 31, out=k, casting="unsafe")
        w &= _LOW31
        if descending:
            np.invert(k, out=k)
        if is_float:
            np.invert(k, out=t)
            t >>= 31
            t |= _MIN32
            k ^= t
            z = zt[:hi - lo]
            np.equal(k, 0, out=z)
            zero = zero or bool(z.any())
        else:
            k ^= _MIN32
    if is_float:
        v = kb.view(np.float32)
        if zero:  # the keys made every zero +0.0: take the zeros' signs from the input (a gather of the zeros)
            z = np.flatnonzero(v == 0)
            v.reshape(-1)[z] = x.reshape(-1)[z // n * n + qf[z]]
        return v, q
    return (kb if x.dtype == kb.dtype else kb.astype(x.dtype)), q


def _fits_int32(x) -> bool:
    return bool(x.min() >= -2 ** 31 and x.max() < 2 ** 31)


_SMALL = 1024  # elements: below this a plain stable argsort beats the packed sort


def _argsort(x, descending: bool, stable: bool):
    kind: Literal["stable"] | None = "stable" if stable else None
    if not descending:
        return x.argsort(axis=-1, kind=kind)  # (the methods skip numpy's Python wrappers: small topk calls)
    # descending with ties in input order and NaN first: the ascending order of the reversed row, reversed
    n = x.shape[-1]
    return (n - 1) - x[..., ::-1].argsort(axis=-1, kind=kind)[..., ::-1]


def sort(x, axis, descending: bool, stable: bool):
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    xm = _moveaxis(x, axis, -1)
    if xm.size == 0:
        v, i = xm.copy(), np.zeros(xm.shape, _I64)
    elif xm.size <= _SMALL and x.dtype.kind in "biuf":
        # small (topk's selected values, short rows): numpy's stable argsort has no packing overhead (~60 us);
        # the same order as the packed sort (ties in input order, NaN last ascending and first descending)
        i = _argsort(xm, descending, True)
        v = _take_last(xm, i)
    elif x.dtype.itemsize == 1 and x.dtype.kind in "biu":
        # int8 / uint8 (bool): numpy's stable argsort of one-byte keys is a counting sort, ~2x the packed sort
        i = _argsort(xm, descending, True)
        v = np.take_along_axis(xm, i, -1)
    elif x.dtype == np.float16:
        v, i = _packed_sort(xm.astype(np.float32), descending)
        v = v.astype(np.float16)
    elif x.dtype.kind not in "biuf":  # an ml_dtypes float (bfloat16): the order of its exact float32 values
        v, i = _packed_sort(xm.astype(np.float32), descending)
        v = v.astype(x.dtype)
    elif x.dtype.itemsize <= 4 and x.dtype != np.uint32 and xm.shape[-1] < 2 ** 31:
        v, i = _packed_sort(xm, descending)
    elif x.dtype == np.int64 and xm.shape[-1] < 2 ** 31 and _fits_int32(xm):
        # int64 values within int32's range (token ids, labels, counts): the packed sort on their int32 copies
        v, i = _packed_sort(xm.astype(np.int32), descending)
        v = v.astype(np.int64)
    else:
        i = _argsort(xm, descending, stable)
        v = np.take_along_axis(xm, i, -1)
    return np.ascontiguousarray(_moveaxis(v, -1, axis)), np.ascontiguousarray(_moveaxis(i, -1, axis))


def topk(x, k: int, axis, largest: bool, sorted_: bool):
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    xm = _moveaxis(x, axis, -1)
    n = xm.shape[-1]
    if k == 0 or xm.size == 0:
        shape = xm.shape[:-1] + (k,)
        return (np.ascontiguousarray(_moveaxis(np.empty(shape, x.dtype), -1, axis)),
                np.ascontiguousarray(_moveaxis(np.zeros(shape, _I64), -1, axis)))
    if 4 * k >= n:  # a full sort costs about as much
        v, i = sort(xm, -1, largest, False)
        v, i = v[..., :k], i[..., :k]
    else:
        # argpartition puts NaN last (the largest, as PyTorch's topk)
        part = xm.argpartition(n - k if largest else k - 1, axis=-1)
        sel = part[..., n - k:] if largest else part[..., :k]
        vals = _take_last(xm, sel)
        if vals.size <= _SMALL and vals.dtype.kind in "biuf":  # sort()'s small path, without its checks and copies
            order = _argsort(vals, largest, True)
            v = _take_last(vals, order)
        else:
            v, order = sort(vals, -1, largest, False)
        i = _take_last(sel, order)
    return np.ascontiguousarray(_moveaxis(v, -1, axis)), np.ascontiguousarray(_moveaxis(i, -1, axis))


def kthvalue(x, k: int, axis):
    """The k-th smallest (0-based) along axis, the dim kept: one argpartition (NaN last, the largest)."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    if axis % x.ndim == x.ndim - 1:  # (the common case: a slice and a fancy index instead of take's copies)
        i = x.argpartition(k, axis=-1)[..., k:k + 1]
        return _take_last(x, i), i.astype(_I64)
    i = np.take(np.argpartition(x, k, axis=axis), [k], axis=axis)
    return np.take_along_axis(x, i, axis), i.astype(_I64)


def _bisect(seq, values, right: bool, out_dtype):
    """PyTorch's binary search, replayed for every value at once (a NaN boundary compares false both ways, so the
    answer depends on the probes: numpy, which sorts NaN last, answers otherwise; so for an unsorted row)."""
    n = seq.shape[-1]
    s2 = seq.reshape(-1, n)
    v2 = values.reshape(s2.shape[0] if seq.ndim > 1 else 1, -1)
    lo = np.zeros(v2.shape, np.int64)
    hi = np.full(v2.shape, n, np.int64)
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) >> 1
        probe = np.minimum(mid, n - 1)
        y = np.take_along_axis(s2, probe, axis=1) if s2.shape[0] > 1 else s2[0][probe]
        with np.errstate(invalid="ignore"):
            go = ~(y > v2) if right else ~(y >= v2)
        lo = np.where(active & go, mid + 1, lo)
        hi = np.where(active & ~go, mid, hi)
    return lo.reshape(values.shape).astype(out_dtype)


def searchsorted(seq, values, right: bool, out_dtype):
    """Insertion points of ``values`` in the rows of ``seq`` (1-D, or the same leading dims as values)."""
    side: Literal["left", "right"] = "right" if right else "left"
    if seq.size and values.size:
        with np.errstate(invalid="ignore"):
            plain = bool((seq[..., 1:] >= seq[..., :-1]).all()) and (
                seq.dtype.kind != "f" or not np.isnan(seq[..., -1:]).any())
        if not plain:  # NaN boundaries (a sorted row has them last) or an unsorted row: PyTorch's probes
            return _bisect(seq, values, right, out_dtype)
    if seq.ndim == 1:  # (an array for 0-d values too, where numpy gives a scalar: a compiled replay records arrays)
        return np.asarray(np.searchsorted(seq, values, side=side)).astype(out_dtype)
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
        v = np.ascontiguousarray(ufunc.accumulate(x, axis=axis))  # (row-major as PyTorch's; numpy keeps x's order)
        # the index moves to every element that equals the running extreme (the last of equal ones, as PyTorch)
        hit = x == v
        if x.dtype.kind == "f":
            hit |= np.isnan(x)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        pos = np.where(hit, np.arange(x.shape[axis]).reshape(shape), 0)
        idx = np.ascontiguousarray(np.maximum.accumulate(pos, axis=axis), _I64)
        if x.dtype.kind == "f":
            # the value is the element at the index, as PyTorch's kernel takes it: numpy's minimum/maximum of 0.0
            # and -0.0 keeps either one depending on the dtype's loop (float16's cummin gave 0.0 where -0.0 is)
            v = np.ascontiguousarray(np.take_along_axis(x, idx, axis))
        return v, idx
    return k


def logcumsumexp(x, axis):
    """float16/float32 accumulate in float64, as PyTorch's CPU kernel (acc_type): in float32, 300000 values of 0.1
    ended at 12.7151 for log(300000) + 0.1 = 12.7115."""
    if x.ndim == 0:
        return x.copy()
    with np.errstate(invalid="ignore"):
        if x.dtype == np.float32 or x.dtype == np.float16:
            return np.logaddexp.accumulate(x, axis=axis, dtype=np.float64).astype(x.dtype, order="C")
        return np.ascontiguousarray(np.logaddexp.accumulate(x, axis=axis))


KERNELS: dict = {"sort": sort, "topk": topk, "kthvalue": kthvalue, "searchsorted": searchsorted,
                 "cummax": _cum_extreme(np.maximum), "cummin": _cum_extreme(np.minimum), "logcumsumexp": logcumsumexp}
