"""The layout (strides) of an advanced-indexing result, as PyTorch's index kernel lays it: its TensorIterator has no
output, so the output's dims run in the order the inputs' strides give (``reorder_dimensions``).  The inputs are the
source restrided to the result's shape (stride 0 along the index dims) and the index tensors broadcast to it (stride
0 along the other dims).  So a row-major source indexed by row-major index tensors gives a row-major result
(``x[:, idx].view(-1)`` works), where numpy's fancy indexing puts a slice's dims after the index dims in memory."""
from __future__ import annotations

from typing import Any

from ._memfmt import inverse, iter_order

_FULL = slice(None)


def laid(table: Any, src: Any, key: tuple, out: Any) -> Any:
    """``out`` (``src[key]``, ``key`` full slices and index arrays) in PyTorch's layout: itself when it has it (the
    common case, row-major operands: checks only), else a re-laid copy."""
    isc = table.is_contiguous
    if isc(src):
        for k in key:
            if k.__class__ is not slice and not isc(k):
                break
        else:
            return out if isc(out) else table.contiguous(out)
    order = _order(table, src, key, tuple(out.shape))
    if order is None:
        return out if table.is_contiguous(out) else table.contiguous(out)
    return table.permute(table.contiguous(table.permute(out, order)), inverse(order))


def _order(table: Any, src: Any, key: tuple, rshape: tuple) -> list | None:
    """The result's dims from the slowest to the fastest in memory (None: row-major)."""
    sst = tuple(table.strides(src))
    nd = len(src.shape)
    key = key + (_FULL,) * (nd - sum(1 if k.__class__ is slice else len(k.shape) if k.dtype.kind == "b" else 1
                                     for k in key))
    arrays = [i for i, k in enumerate(key) if k.__class__ is not slice]
    adjacent = arrays[-1] - arrays[0] + 1 == len(arrays)
    nb = len(rshape) - sum(1 for k in key if k.__class__ is slice)  # the broadcast index dims
    plain: list = []  # the source's strides along the result's slice dims, in order
    before = 0        # slice dims ahead of the index dims in the result
    d = 0
    for i, k in enumerate(key):
        if k.__class__ is slice:
            plain.append(sst[d])
            if adjacent and i < arrays[0]:
                before += 1
            d += 1
        else:
            d += len(k.shape) if k.dtype.kind == "b" else 1
    after = len(plain) - before
    lists = [tuple(plain[:before]) + (0,) * nb + tuple(plain[before:])]
    for i in arrays:
        k = key[i]
        if k.dtype.kind == "b":  # one index per mask dim, a count long (PyTorch's nonzero columns)
            ist: tuple = (1,)
        else:
            ist = tuple(0 if s == 1 else t for s, t in zip(k.shape, table.strides(k)))
        ist = (0,) * (nb - len(ist)) + ist
        lists.append((0,) * before + ist + (0,) * after)
    return iter_order(rshape, lists)
