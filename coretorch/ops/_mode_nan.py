"""mode of rows holding NaN as PyTorch's CPU kernel computes it: it sorts (value, index) pairs with libstdc++'s
std::sort under ``a < b`` (a NaN compares false both ways, so it stays where the sort leaves it) and takes the first
longest run of equal neighbours (a NaN equals nothing: a run of one), reporting the run's last index.  Replayed on
the host row by row, for rows with a NaN only (elsewhere the values are the usual ones) and only up to a size where
that stays cheap."""
from __future__ import annotations

import numpy as np

from ._kth_ties import MAX_ELEMENTS, _insertion_sort, _move_median_to_first, _unguarded_partition

_THRESHOLD = 16  # libstdc++'s _S_threshold


def _lt(x, y) -> bool:
    return x[0] < y[0]


def _adjust_heap(q: list, first: int, hole: int, n: int, value) -> None:
    top, second = hole, hole
    while second < (n - 1) // 2:
        second = 2 * (second + 1)
        if _lt(q[first + second], q[first + second - 1]):
            second -= 1
        q[first + hole] = q[first + second]
        hole = second
    if n % 2 == 0 and second == (n - 2) // 2:
        second = 2 * (second + 1)
        q[first + hole] = q[first + second - 1]
        hole = second - 1
    parent = (hole - 1) // 2
    while hole > top and _lt(q[first + parent], value):
        q[first + hole] = q[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[first + hole] = value


def _heap_sort(q: list, first: int, last: int) -> None:
    """std::partial_sort(first, last, last): make_heap then sort_heap."""
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(q, first, parent, n, q[first + parent])
    while last - first > 1:
        last -= 1
        value = q[last]
        q[last] = q[first]
        _adjust_heap(q, first, 0, last - first, value)


def std_sort(row: list) -> list:
    """(value, original index) pairs of ``row`` in the order libstdc++'s std::sort leaves them under ``<``."""
    q = [(v, i) for i, v in enumerate(row)]
    n = len(q)
    if n < 2:
        return q
    stack = [(0, n, 2 * (n.bit_length() - 1))]
    while stack:  # the introsort loop (its recursion on the right part, then its loop on the left)
        first, last, depth = stack.pop()
        while last - first > _THRESHOLD:
            if depth == 0:
                _heap_sort(q, first, last)
                break
            depth -= 1
            mid = first + (last - first) // 2
            _move_median_to_first(q, first, first + 1, mid, last - 1, _lt)
            cut = _unguarded_partition(q, first + 1, last, first, _lt)
            stack.append((cut, last, depth))
            last = cut
    _insertion_sort(q, 0, min(n, _THRESHOLD), _lt)
    for i in range(_THRESHOLD, n):  # the unguarded insertion sort of the rest
        val, j = q[i], i
        while _lt(val, q[j - 1]):
            q[j] = q[j - 1]
            j -= 1
        q[j] = val
    return q


def row_mode(row: list) -> tuple:
    """(value, index) of PyTorch's CPU mode of one row."""
    q = std_sort(row)
    best, run, mode = 0, 0, q[0]
    for i, p in enumerate(q):
        run += 1
        if i == len(q) - 1 or not p[0] == q[i + 1][0]:
            if run > best:
                best, mode = run, p
            run = 0
    return mode


def pytorch_mode(x: np.ndarray, values: np.ndarray, indices: np.ndarray, d: int):
    """(values, indices) along d (the dim kept, as given) with the rows holding a NaN redone as PyTorch's CPU kernel;
    None when there is nothing to redo (or too much)."""
    xm = np.moveaxis(x, d, -1)
    n = xm.shape[-1]
    rows = xm.reshape(-1, n)
    nan_rows = np.isnan(rows).any(axis=1)
    if not nan_rows.any() or int(nan_rows.sum()) * n > MAX_ELEMENTS:
        return None
    vm, im = np.moveaxis(values, d, -1), np.moveaxis(indices, d, -1)
    vout, iout = vm.reshape(-1).copy(), im.reshape(-1).astype(np.int64)
    for r in np.flatnonzero(nan_rows):
        vout[r], iout[r] = row_mode(rows[r].tolist())
    return (np.ascontiguousarray(np.moveaxis(vout.reshape(vm.shape), -1, d)),
            np.ascontiguousarray(np.moveaxis(iout.reshape(im.shape), -1, d)))


def mode_in_pytorch_order(x: np.ndarray, values: np.ndarray, indices: np.ndarray, d: int):
    """(values, indices) of :func:`pytorch_mode`, or the given ones where it has nothing to redo."""
    fixed = pytorch_mode(x, values, indices, d)
    return (values, indices) if fixed is None else fixed
