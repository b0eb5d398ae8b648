"""Results of composite ops that PyTorch's kernels return as tensors of their own.  A composite built from views
(reshape, permute, slicing) can end on a view: of the op's input (``F.pad`` of crops only, ``pixel_shuffle(x, 1)``:
a write into the result reached the input) or of the op's own temporary (``roll``, ``rot90``, ``kron``: the result
had a ``_base``, and ``detach_()`` or an in-place op in grad mode on a result made in no_grad mode raised)."""
from __future__ import annotations

from ..tensor import _VIEW_FIELDS, Tensor
from . import _memfmt


def own(r: Tensor) -> Tensor:
    """``r``, a view of a temporary nothing else holds, made a tensor of its own in place (same memory, no copy)."""
    if r._vbase is not None:
        d = r.__dict__
        for f in _VIEW_FIELDS:
            d.pop(f, None)
    return r


def suggested_rank(like: Tensor) -> int:
    """4 or 5 where ``like``'s strides suggest a channels-last layout (PyTorch's suggest_memory_format), else 0."""
    n = like.ndim
    return n if n in (4, 5) and _memfmt.strides_like_channels_last(tuple(like.shape), like.stride()) else 0


def fresh_like(r: Tensor, like: Tensor, channels_last: bool = True) -> Tensor:
    """``r`` (``like`` itself, a view of it or a new tensor) as a new tensor laid out as PyTorch's kernels allocate
    their outputs: channels-last where ``like`` suggests it (and ``channels_last``), else row-major.  ``r`` itself
    when it is a new tensor so laid out already; a copy (differentiable) otherwise."""
    from .. import _compat  # (on use: _compat imports the ops)
    from .shape import clone
    rank = suggested_rank(like) if channels_last and r.ndim == like.ndim else 0
    if rank:
        if r is like or r._vbase is not None or tuple(r.stride()) != _memfmt.canonical_strides(tuple(r.shape), rank):
            return clone(r, memory_format=_compat.channels_last if rank == 4 else _compat.channels_last_3d)
        return r
    if r is like or r._vbase is not None or not r.is_contiguous():
        return clone(r, memory_format=_compat.contiguous_format)
    return r
