"""PyTorch's memory-overlap rules for an ``out=`` tensor of the wrong shape, which is resized (ops/_out.py).

Measured on PyTorch 2.13: TensorIterator's ops (the pointwise family, ``outer``, ``diff``) and ``index_select``,
``take``, ``masked_select``, ``kthvalue`` check the ``out`` as given, before resizing it (``torch.add(x[3:9], 1,
out=x[:4])`` raises; ``torch.add(x[5:11], 1, out=x[:5])`` does not, although the resized out then reaches
``x[5]``).  The structured kernels below resize first and check the re-laid-out ``out``: the joining ops, the
gathers, ``cross``, the reductions along a dim that return indices and ``index_add`` refuse any overlap; the scans,
``sort``/``msort``/``topk``, ``renorm`` and ``addmm`` a partial one.  The scatter family checks both.  A resized
``out`` that takes a fresh buffer (its storage is too small) is checked where PyTorch lays it out in the grown
storage (its base's: ``torch.cat([x[2:8]] * 2, out=x[1:2])`` raises).
"""
from __future__ import annotations

import warnings

from ..tensor import Tensor
from . import _overlap as _ov

# resize first, then refuse any overlap with an input
_AFTER_ANY = frozenset(("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
                        "row_stack", "gather", "take_along_dim", "cross", "linalg.cross", "median", "nanmedian",
                        "mode", "aminmax", "max", "min", "index_add", "scatter", "scatter_add", "scatter_reduce"))
# resize first, then refuse a partial overlap (an out covering exactly an input is allowed)
_AFTER_PARTIAL = frozenset(("cumsum", "cumprod", "logcumsumexp", "sort", "msort", "topk", "renorm", "addmm"))
# ops checking the given out before resizing it and the re-laid-out one after
_BOTH = frozenset(("scatter", "scatter_add", "scatter_reduce"))
# ops whose kernels check nothing against a resized out
_UNCHECKED = frozenset(("narrow_copy",))
# reductions along a dim whose kernels check the restrided views: an out spanning exactly the input's bytes passes
_SPAN_FULL = frozenset(("median", "nanmedian", "mode", "aminmax"))

_FRESH = ("{}(): the out= view needs more memory than its storage holds ({} elements from its offset, {} there): "
          "coretorch gives it a buffer of its own, so the tensor it views does not see the result (PyTorch enlarges "
          "the shared storage; a device array cannot grow in place). Pass an out tensor of the result's shape.")
_EMPTY = ("{}(): the out= view is empty: coretorch gives it a buffer of its own, so the tensor it views does not see "
          "the result (PyTorch writes it into that storage from the view's offset, which an empty backend array "
          "does not keep). Pass an out tensor of the result's shape.")


def checks_before_resize(op: str) -> bool:
    """Whether ``op``'s PyTorch kernel checks an ``out`` of the wrong shape against its inputs before resizing it."""
    return op in _BOTH or not (op in _AFTER_ANY or op in _AFTER_PARTIAL or op in _UNCHECKED)


def check_after_resize(op: str, outs, targets, inputs, shapes=None) -> None:
    """The check of the structured kernels that resize ``out`` first: each out in the layout it takes (``targets``:
    its native array as written, None for one that takes a fresh buffer: checked as PyTorch lays it out in its
    grown storage, contiguous ``shapes[i]`` from its offset, where it still overlaps the inputs of that storage)."""
    if op not in _AFTER_ANY and op not in _AFTER_PARTIAL:
        return
    refuse: tuple = (_ov.PARTIAL, _ov.FULL) if op in _AFTER_ANY else (_ov.PARTIAL,)
    for k, (o, data) in enumerate(zip(outs, targets)):
        table = o._be
        if not table.has("same_storage") or (data is None and (shapes is None or not o.numel())):
            continue  # (an empty view keeps no offset: where PyTorch would lay it out is unknown)
        for t in inputs:
            # (a grown out: the storage of its base, whose memory may lie beyond the view's own elements)
            probe = data if data is not None else (o._vbase if o._vbase is not None else o)._data
            if not isinstance(t, Tensor) or t._be is not table or not table.same_storage(probe, t._data):
                continue
            if data is None:
                st = _grown_status(table, o, shapes[k], t)
            else:
                st = _ov.status(table, data, t._data, o.dtype.itemsize, t.dtype.itemsize)
            if st == _ov.PARTIAL and op in _SPAN_FULL and _same_span(table, data, t, o.dtype.itemsize):
                st = _ov.FULL
            if st in refuse:
                raise RuntimeError(_ov._MSG)


def _grown_status(table, o, shape: tuple, t) -> int:
    """get_overlap_status of ``o`` resized to ``shape`` in its grown storage (C-contiguous from its offset) against
    ``t`` in the same storage: PyTorch grows the shared storage, so the inputs there still overlap the out."""
    n = 1
    for s in shape:
        n *= s
    if n == 0 or t.numel() == 0:
        return _ov.NO
    if not _ov._dense(tuple(t.shape), tuple(table.strides(t._data))):
        return _ov.TOO_HARD
    isz, tsz = o.dtype.itemsize, t.dtype.itemsize
    a0, b0 = table.storage_offset(o._data) * isz, table.storage_offset(t._data) * tsz
    a1, b1 = a0 + n * isz, b0 + t.numel() * tsz
    if a0 == b0 and a1 == b1:
        return _ov.FULL if tuple(t.shape) == tuple(shape) and t.is_contiguous() else _ov.PARTIAL
    return _ov.PARTIAL if a0 < b1 and b0 < a1 else _ov.NO


def _same_span(table, data, t, isz: int) -> bool:
    n = 1
    for s in data.shape:
        n *= s
    return (table.storage_offset(data) * isz == table.storage_offset(t._data) * t.dtype.itemsize
            and n * isz == t.numel() * t.dtype.itemsize)


def warn_fresh_buffer(op: str, o, shape: tuple) -> None:
    """coretorch's warning where a resized ``out`` view takes a buffer of its own although PyTorch would write into
    memory its base holds (the view's offset lies inside the base's extent, or the view is empty: its offset is
    lost)."""
    root = o._vbase
    if root is None:
        return
    table = o._be
    if not table.has("storage_offset"):
        return
    off = table.storage_offset(o._data) - table.storage_offset(root._data)
    extent = 0 if 0 in root.shape else 1 + sum((s - 1) * abs(t) for s, t in zip(root.shape, root.stride()))
    if o.numel() == 0 and off == 0 and extent:
        warnings.warn(_EMPTY.format(op), UserWarning, stacklevel=4)
    elif 0 <= off < extent:
        n = 1
        for s in shape:
            n *= s
        warnings.warn(_FRESH.format(op, n, extent - off), UserWarning, stacklevel=4)

