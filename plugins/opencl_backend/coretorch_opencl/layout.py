"""Layout helpers of the opencl backend (element units): every kernel module reads array views through these.

Kept apart from ``backend.py`` so that the kernel modules (indexing, scan, matmul, nn_kernels and the op
families) import them without an import circle through the backend.
"""
from __future__ import annotations

from coretorch.plugins import result_order

from .device import c_strides


def _desc(x):
    """(buffer, element offset, shape, element strides) of an array."""
    isz = x.dtype.itemsize
    return x.base_data, x.offset // isz, x.shape, tuple(s // isz for s in x.strides)


def _is_c(shape, strides) -> bool:
    acc = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s != 1 and st != acc:
            return False
        acc *= s
    return True


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _collapse(shape, stride_lists):
    """Drop size-1 dims and merge adjacent dims that are contiguous in every operand."""
    dims = [(s, [st[k] for st in stride_lists]) for k, s in enumerate(shape) if s != 1]
    if not dims:
        return (), [() for _ in stride_lists]
    out = [[dims[0][0], dims[0][1]]]
    for s, sts in dims[1:]:
        ps, psts = out[-1]
        if all(psts[j] == sts[j] * s for j in range(len(sts))):
            out[-1] = [ps * s, sts]
        else:
            out.append([s, sts])
    return tuple(o[0] for o in out), [tuple(o[1][j] for o in out) for j in range(len(stride_lists))]


def _expand_strides(shape, strides, target):
    """Strides of ``shape``/``strides`` broadcast to ``target`` (numpy rules; leading 1s of the source
    are dropped).  Raises ValueError when it does not broadcast."""
    shape, strides = list(shape), list(strides)
    while len(shape) > len(target) and shape[0] == 1:
        shape.pop(0)
        strides.pop(0)
    if len(shape) > len(target):
        raise ValueError(f"could not broadcast input array from shape {tuple(shape)} into shape {tuple(target)}")
    lead = len(target) - len(shape)
    out = [0] * lead
    for s, st, t in zip(shape, strides, target[lead:]):
        if s == t:
            out.append(st if t != 1 else 0)
        elif s == 1:
            out.append(0)
        else:
            raise ValueError(f"could not broadcast input array from shape {tuple(shape)} into shape "
                             f"{tuple(target)}")
    return tuple(out)


def _nocopy_strides(oshape, ostrides, nshape):
    """numpy's _attempt_nocopy_reshape: strides of a view with ``nshape`` or None."""
    od = [s for s in oshape if s != 1]
    os_ = [st for s, st in zip(oshape, ostrides) if s != 1]
    if _numel(nshape) == 0 or not od:
        return c_strides(nshape)
    nst = [0] * len(nshape)
    oi, oj, ni, nj = 0, 1, 0, 1
    nn, on = len(nshape), len(od)
    while ni < nn and oi < on:
        np_, op = nshape[ni], od[oi]
        while np_ != op:
            if np_ < op:
                np_ *= nshape[nj]
                nj += 1
            else:
                op *= od[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if os_[ok] != od[ok + 1] * os_[ok + 1]:
                return None
        nst[nj - 1] = os_[oj - 1]
        for nk in range(nj - 1, ni, -1):
            nst[nk - 1] = nst[nk] * nshape[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = nst[ni - 1] if ni >= 1 else 1
    for nk in range(ni, nn):
        nst[nk] = last
    return tuple(nst)


def _pad(dims, strides, nd: int = 4):
    """Prepend size-1 dims so that generated kernels take a fixed number of dims (fewer programs)."""
    n = max(nd, len(dims))
    p = n - len(dims)
    return (1,) * p + tuple(dims), (0,) * p + tuple(strides), n


def _c_ordered(shape, strides) -> bool:
    """Whether an operand's strides fall from the first dim to the last (zero strides and size-1 dims aside): an
    operand of TensorIterator's that never asks for a swap (row-major or a broadcast of a row-major array)."""
    last = -1
    for s, t in zip(shape, strides):
        if s != 1 and t:
            if last != -1 and t >= last:
                return False
            last = t
    return True


def _iter_order(shape, stride_lists):
    """The dims of an elementwise result from the slowest to the fastest in memory, as PyTorch's TensorIterator
    orders them; None when that order is the row-major one (the public helper of the plugin API)."""
    return result_order(shape, stride_lists)
