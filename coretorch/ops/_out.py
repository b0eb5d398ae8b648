"""PyTorch's ``out=`` semantics, shared by every op that takes the keyword.

The result is written into ``out`` (a tensor, or a tuple of them for ops with several results) and ``out`` is
returned in the result's container type.  As PyTorch: an argument that requires grad (with grad mode on) raises; the
device must match; the dtype must match exactly for the ops whose kernels check it (``exact_dtype``: sort, linalg,
the factories, scatter, ...), else the result is cast when its category allows (float into an integer ``out`` raises
"result type Float can't be cast to the desired output type Long"); an ``out`` of another shape is resized inside its
storage as PyTorch's ``resize_`` (a fresh buffer where the storage is too small: ops/_out_resize.py), with PyTorch's
deprecation warning when it had elements, and checked for overlap with the inputs as PyTorch's kernels check it.
"""
from __future__ import annotations

import warnings

from ..autograd.grad_mode import state as _gs
from ..tensor import Tensor
from . import _out_resize as _rs, _overlap as _ov

_RESIZED = ("An output with one or more elements was resized since it had shape {}, which does not match the required "
            "output shape {}. This behavior is deprecated, and in a future PyTorch release outputs will not be resized "
            "unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
            "elements with t.resize_(0).")
# ops whose PyTorch kernels refuse an ``out`` sharing any memory with an input (assert_no_overlap: the joining ops
# and the gathers); the others given ``inputs`` refuse a partial overlap only (TensorIterator's rule: an identical
# input, ``torch.add(x, 1, out=x)``, is allowed)
_NO_OVERLAP = frozenset(("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
                         "row_stack", "index_select", "gather", "take", "masked_select", "cross", "linalg.cross",
                         "take_along_dim", "kthvalue"))
# the ops that are PyTorch's cat kernel
_CAT = frozenset(("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"))
# reductions along a dim whose kernels check the restrided views: an ``out`` spanning exactly the input's bytes is
# allowed whatever its shape (``torch.median(x.view(3, 1), 1, out=(x, i))``)
_SPAN_FULL = frozenset(("median", "nanmedian", "mode", "aminmax"))


def _check_overlap(op: str, outs: tuple, inputs) -> None:
    """PyTorch's memory-overlap check between each ``out`` tensor and each input tensor (before anything is
    written): ``torch.add(x[:-1], 1, out=x[1:])`` raises instead of giving a traversal-dependent result."""
    refuse = (_ov.PARTIAL, _ov.FULL) if op in _NO_OVERLAP else (_ov.PARTIAL,)
    for o in outs:
        table = o._be
        if not table.has("same_storage"):
            return
        for t in inputs:
            if not isinstance(t, Tensor) or t._be is not table:
                continue
            if not table.same_storage(o._data, t._data):
                continue
            st = _ov.status(table, o._data, t._data, o.dtype.itemsize, t.dtype.itemsize)
            if st == _ov.PARTIAL and op in _SPAN_FULL and _same_span(table, o, t):
                st = _ov.FULL
            if st in refuse:
                raise RuntimeError(_ov._MSG)


def _same_span(table, a: Tensor, b: Tensor) -> bool:
    """Whether two dense tensors of one storage cover the same bytes."""
    a0, b0 = table.storage_offset(a._data) * a.dtype.itemsize, table.storage_offset(b._data) * b.dtype.itemsize
    return a0 == b0 and a.numel() * a.dtype.itemsize == b.numel() * b.dtype.itemsize


def _c_strides(shape: tuple) -> tuple:
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def _restride_in_storage(o: Tensor, shape: tuple):
    """The native array PyTorch's ``resize_`` gives ``o``: ``shape``, C-contiguous, from o's first element in the
    storage it shares with its base (or, not a view, its own: the views of it see the result), when that storage
    holds it; None when it does not (PyTorch then grows the shared storage, which a backend array cannot: ``o`` takes
    a fresh buffer) or the base's layout is not addressable from its first element (negative strides)."""
    table, root = o._be, (o._vbase if o._vbase is not None else o)
    if not table.has("as_strided") or min((*root.stride(), *o.stride()), default=0) < 0:
        return None
    off = table.storage_offset(o._data) - table.storage_offset(root._data)
    n = 1
    for s in shape:
        n *= s
    rst = root.stride()
    size = 0 if 0 in root.shape else 1 + sum((s - 1) * t for s, t in zip(root.shape, rst))
    if o.numel() == 0 and off == 0 and size:
        return None  # an empty view keeps no offset in a backend array (numpy's neither): where it starts is unknown
    if off < 0 or off + n > size or (n and not root.is_contiguous()):
        return None  # (a non-contiguous base: its extent may hold memory no element of it reaches)
    return table.as_strided(root._data, shape, _c_strides(shape), off)


def write_out(op: str, out, res, *, exact_dtype: bool = False, inputs=()):
    """Write ``res`` (a Tensor, or a tuple / named tuple of Tensors) into ``out`` and return ``out``; ``res`` itself
    when ``out`` is None.  ``inputs``: the op's input tensors, for PyTorch's overlap check against ``out`` (ops
    whose kernels skip it, the reductions and products, pass none)."""
    if out is None:
        return res
    single = isinstance(res, Tensor)
    ress = (res,) if single else tuple(res)
    outs = (out,) if isinstance(out, Tensor) else tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(ress) or not all(isinstance(o, Tensor) for o in outs):
        want = "Tensor" if single else f"a tuple of {len(ress)} Tensors"
        raise TypeError(f"{op}(): argument 'out' must be {want}, not {type(out).__name__}")
    if _gs.enabled and any(r._rg or o._rg for r, o in zip(ress, outs)):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")
    same = all(tuple(o.shape) == tuple(r.shape) for o, r in zip(outs, ress))
    if inputs and (same or _rs.checks_before_resize(op)):
        _check_overlap(op, outs, inputs)  # (PyTorch's TensorIterator checks the out as given, before resizing it)
    for o, r in zip(outs, ress):
        if o.device != r.device:
            raise RuntimeError(f"{op}(): Expected out tensor to be on device {r.device}, but got {o.device} instead")
        if o.dtype is not r.dtype:
            if exact_dtype:
                raise RuntimeError(f"{op}(): Expected out tensor to have dtype {r.dtype}, but got {o.dtype} instead")
            if r.dtype.category > o.dtype.category:
                if op in _CAT:  # PyTorch's cat kernel checks the cast itself (a TypeError)
                    raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                                    f"{o.dtype._tname[:-6]}")
                raise RuntimeError(f"result type {r.dtype._tname[:-6]} can't be cast to the desired output type "
                                   f"{o.dtype._tname[:-6]}")
    # the layout each resized out takes: inside its storage (PyTorch's resize_: the base sees the result) or, when
    # the storage is too small, a fresh buffer (PyTorch grows the shared storage; a backend array cannot grow)
    inners = [None if tuple(o.shape) == tuple(r.shape) else _restride_in_storage(o, tuple(r.shape))
              for o, r in zip(outs, ress)]
    if inputs and not same:
        _rs.check_after_resize(op, outs, [o._data if tuple(o.shape) == tuple(r.shape) else inner
                                          for o, r, inner in zip(outs, ress, inners)], inputs,
                               [tuple(r.shape) for r in ress])
    for o, r, inner in zip(outs, ress, inners):
        table = o._be
        data = r._data if r.dtype is o.dtype else table.cast(r._data, o.dtype.np)
        if tuple(o.shape) == tuple(r.shape):
            table.assign_(o._data, data)
        else:
            if o.numel():
                warnings.warn(_RESIZED.format(list(o.shape), list(r.shape)), UserWarning, stacklevel=3)
            if inner is not None:
                o._data = inner
                table.assign_(inner, data)
            else:
                _rs.warn_fresh_buffer(op, o, tuple(r.shape))
                o._data = data if data is not r._data else table.contiguous(data)
        o._vc[0] += 1
    if single:
        return outs[0]
    return type(res)(*outs) if hasattr(res, "_fields") else tuple(outs)
