"""kthvalue's index among equal values, as PyTorch's CPU kernel picks it: the position its selection algorithm
(Sedgewick's quickselect with a median-of-three pivot, aten/src/ATen/native/Sorting.cpp) leaves at k.  The value is
the same whatever the algorithm; only rows where the k-th value occurs more than once are redone, element by element
on the host, and only up to a size where that stays cheap (larger ones keep the backend's own choice)."""
from __future__ import annotations

import numpy as np

MAX_ELEMENTS = 1 << 16  # (Python work per redone element: ~1 us)


def _last(a: np.ndarray, d: int) -> np.ndarray:
    """``a`` with axis d moved last (np.moveaxis costs ~4 us a call even when it is already last)."""
    return a if d == a.ndim - 1 else np.moveaxis(a, d, -1)


def _gt(x, y) -> bool:
    """PyTorch's comparison: NaN is the largest."""
    return (x != x and y == y) or x > y


def select_index(row: list, k: int) -> int:
    """The original index of the element PyTorch's quickselect puts at position k (0-based) of ``row``."""
    vals, idx = list(row), list(range(len(row)))

    def swap(a: int, b: int) -> None:
        vals[a], vals[b] = vals[b], vals[a]
        idx[a], idx[b] = idx[b], idx[a]
    lo, hi = 0, len(vals) - 1
    while hi > lo:
        if hi == lo + 1:
            if _gt(vals[lo], vals[hi]):
                swap(lo, hi)
            break
        swap((lo + hi) >> 1, lo + 1)
        if _gt(vals[lo + 1], vals[hi]):
            swap(lo + 1, hi)
        if _gt(vals[lo], vals[hi]):
            swap(lo, hi)
        if _gt(vals[lo + 1], vals[lo]):
            swap(lo + 1, lo)
        i, j, piv = lo + 1, hi, vals[lo]
        while True:
            i += 1
            while _gt(piv, vals[i]):
                i += 1
            j -= 1
            while _gt(vals[j], piv):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return idx[k]


def pytorch_tie_indices(x: np.ndarray, values: np.ndarray, indices: np.ndarray, k: int, d: int):
    """The indices (the dim d kept, like ``values``) with the rows whose k-th value is tied redone as PyTorch's;
    None when there is nothing to redo (or too much)."""
    xm, vm = _last(x, d), _last(values, d)
    n = xm.shape[-1]
    rows = xm.reshape(-1, n)
    want = vm.reshape(-1, 1)
    same = rows == want
    if x.dtype.kind not in "iub" and np.count_nonzero(want != want):  # a NaN k-th value: NaN equals NaN
        same |= np.isnan(rows) & np.isnan(want)
    elif np.count_nonzero(same) == rows.shape[0]:  # every row holds its k-th value once (the common case)
        return None
    tied = np.count_nonzero(same, axis=1) > 1
    if not tied.any() or int(tied.sum()) * n > MAX_ELEMENTS:
        return None
    moved = _last(indices, d)
    out = moved.reshape(-1).astype(np.int64)  # (a copy)
    for r in np.flatnonzero(tied):
        out[r] = select_index(rows[r].tolist(), k)
    return np.ascontiguousarray(np.moveaxis(out.reshape(moved.shape), -1, d))


# ---- topk: PyTorch's CPU kernel runs std::nth_element then std::sort on the first k - 1 (libstdc++'s
# introselect: median-of-three pivot, unguarded partition, insertion sort below 4 elements) ----
def _move_median_to_first(q: list, res: int, a: int, b: int, c: int, comp) -> None:
    if comp(q[a], q[b]):
        m = b if comp(q[b], q[c]) else (c if comp(q[a], q[c]) else a)
    else:
        m = a if comp(q[a], q[c]) else (c if comp(q[b], q[c]) else b)
    q[res], q[m] = q[m], q[res]


def _unguarded_partition(q: list, first: int, last: int, pivot: int, comp) -> int:
    while True:
        while comp(q[first], q[pivot]):
            first += 1
        last -= 1
        while comp(q[pivot], q[last]):
            last -= 1
        if not first < last:
            return first
        q[first], q[last] = q[last], q[first]
        first += 1


def _insertion_sort(q: list, first: int, last: int, comp) -> None:
    for i in range(first + 1, last):
        val = q[i]
        if comp(val, q[first]):
            q[first + 1:i + 1] = q[first:i]
            q[first] = val
        else:
            j = i
            while comp(val, q[j - 1]):
                q[j] = q[j - 1]
                j -= 1
            q[j] = val


def topk_order(row: list, k: int, largest: bool):
    """The original indices of PyTorch's sorted topk of ``row`` (its nth_element path: k * 64 > len(row)), or None
    where that path needs what is not emulated here (an exhausted depth limit, a sort of more than 16)."""
    n = len(row)
    if k * 64 <= n or k - 1 > 16:
        return None
    if largest:
        def comp(x, y):
            return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]
    else:
        def comp(x, y):
            return (x[0] == x[0] and y[0] != y[0]) or x[0] < y[0]
    q = [(v, i) for i, v in enumerate(row)]
    first, last, nth = 0, n, k - 1
    depth = 2 * (n.bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            return None
        depth -= 1
        mid = first + (last - first) // 2
        _move_median_to_first(q, first, first + 1, mid, last - 1, comp)
        cut = _unguarded_partition(q, first + 1, last, first, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last, comp)
    _insertion_sort(q, 0, k - 1, comp)  # (std::sort of k - 1 <= 16 elements is an insertion sort)
    return [i for _, i in q[:k]]


def pytorch_topk(x: np.ndarray, values: np.ndarray, indices: np.ndarray, k: int, d: int, largest: bool):
    """(values, indices) of a sorted topk along d with the rows where equal values compete redone in PyTorch's
    order; None when there is nothing to redo (or too much)."""
    xm, vm = _last(x, d), _last(values, d)
    n = xm.shape[-1]
    rows = xm.reshape(-1, n)
    sel = vm.reshape(-1, k)
    # a selected value occurs again in its row iff two neighbours of the (sorted) selection are equal or the last,
    # the boundary one, occurs again (an equal unselected value can only tie with the boundary); NaN equals NaN
    last = sel[:, k - 1:]
    same = rows == last
    adjacent = sel[:, 1:] == sel[:, :-1]
    if x.dtype.kind not in "iub" and np.count_nonzero(sel != sel):
        nan = np.isnan(sel)
        same |= np.isnan(rows) & nan[:, k - 1:]
        adjacent |= nan[:, 1:] & nan[:, :-1]
    elif np.count_nonzero(same) == rows.shape[0] and not np.count_nonzero(adjacent):
        return None  # (the common case: one count instead of per-row ones)
    tied = (np.count_nonzero(same, axis=1) > 1) | adjacent.any(axis=1)
    if not tied.any() or int(tied.sum()) * n > MAX_ELEMENTS:
        return None
    im = _last(indices, d)
    vout, iout = vm.reshape(-1, k).copy(), im.reshape(-1, k).astype(np.int64)
    for r in np.flatnonzero(tied):
        order = topk_order(rows[r].tolist(), k, largest)
        if order is not None:
            iout[r] = order
            vout[r] = rows[r][order]
    return (np.ascontiguousarray(np.moveaxis(vout.reshape(vm.shape), -1, d)),
            np.ascontiguousarray(np.moveaxis(iout.reshape(im.shape), -1, d)))


def topk_in_pytorch_order(x: np.ndarray, values: np.ndarray, indices: np.ndarray, k: int, d: int, largest: bool):
    """(values, indices) of :func:`pytorch_topk`, or the given ones where it has nothing to redo."""
    fixed = pytorch_topk(x, values, indices, k, d, largest)
    return (values, indices) if fixed is None else fixed


def kth_in_pytorch_order(x: np.ndarray, values: np.ndarray, indices: np.ndarray, k: int, d: int):
    """The indices of :func:`pytorch_tie_indices`, or the given ones where it has nothing to redo."""
    fixed = pytorch_tie_indices(x, values, indices, k, d)
    return indices if fixed is None else fixed
