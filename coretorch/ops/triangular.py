"""Triangular and diagonal ops: tril, triu (+ in place), tril_indices, triu_indices, diag, diagonal,
diag_embed, diagflat, trace, Tensor.fill_diagonal_.

``diagonal`` is a view (the backend's ``as_strided`` primitive: one stride, the sum of the two dims' strides);
tril/triu select with a mask of index comparisons built on the device."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _cr, indexing as _ix, pointwise as _pw, reduction as _red
from ._util import edge, norm_dim
from .inplace import apply_inplace
from .joining import _c_strides, strided_view
from .scatter import _out, _renamed
from .shape import clone, reshape

__all__: list[str] = ["tril", "triu", "tril_indices", "triu_indices", "diag", "diagonal", "diag_embed", "diagflat",
                      "trace", "diagonal_scatter"]


# ---------------------------------------------------------------------------------------------
# tril / triu
# ---------------------------------------------------------------------------------------------
def _tri_mask(table, n: int, m: int, k: int, lower: bool):
    """(n, m) bool array on the device: j - i <= k (lower) or j - i >= k (upper)."""
    r = table.view(table.arange(0, n, 1, np.int64), (n, 1))
    c = table.view(table.arange(0, m, 1, np.int64), (1, m))
    if not table.native_broadcast:
        r, c = table.expand(r, (n, m)), table.expand(c, (n, m))
    d = table.sub(c, r)
    return table.le(d, k) if lower else table.ge(d, k)


class TrilBackward0(Node):
    def backward(self, g):
        return (_tri(g, self.k, self.lower, "tril" if self.lower else "triu"),)


class TriuBackward0(TrilBackward0):
    pass


def _tri(input: Tensor, k: int, lower: bool, op: str) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    table = input._be
    shape = tuple(input.shape)
    dt = input.dtype
    if table.has("tri"):
        data = table.tri(input._data, int(k), lower)
    elif input.numel():
        mask = _tri_mask(table, shape[-2], shape[-1], int(k), lower)
        if mask.shape != shape:
            mask = table.expand(mask, shape)
        zero = False if dt is _dt.bool_ else 0.0 if dt.is_floating_point else 0
        data = table.where(mask, input._data, zero)
    else:
        data = table.contiguous(input._data)
    if input._rg and _gs.enabled:
        node = TrilBackward0() if lower else TriuBackward0()
        node.k, node.lower = int(k), lower
        node.next_functions = (edge(input),)
        return _make(data, dt, table, node)
    return _make(data, dt, table)


def tril(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """The lower triangle of the last two dims (j - i <= diagonal), zeros elsewhere."""
    return _out(_tri(input, diagonal, True, "tril"), out)


def triu(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """The upper triangle of the last two dims (j - i >= diagonal), zeros elsewhere."""
    return _out(_tri(input, diagonal, False, "triu"), out)


def _tri_indices(row: int, col: int, offset: int, dtype, device, lower: bool, op: str) -> Tensor:
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got row={row}, col={col}")
    dtype = _dt.from_python_type(dtype) or _dt.int64
    if dtype not in (_dt.int64, _dt.int32):
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtype._tname[:-6]}'")
    # a creation op: its values follow from the arguments alone (no tensor data is read)
    idx = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return _cr.tensor(np.stack(idx).astype(np.int64).reshape(2, -1), dtype=dtype, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) coordinates of the lower triangle of a row x col matrix, row by row."""
    return _tri_indices(row, col, offset, dtype, device, True, "tril_indices")


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) coordinates of the upper triangle of a row x col matrix, row by row."""
    return _tri_indices(row, col, offset, dtype, device, False, "triu_indices")


# ---------------------------------------------------------------------------------------------
# diagonal / diag_embed / diag / diagflat / trace
# ---------------------------------------------------------------------------------------------
def _diag_geometry(shape, strides, offset: int, d1: int, d2: int):
    """(shape, element strides, element offset) of the diagonal view (the diagonal's dim last)."""
    n1, n2 = shape[d1], shape[d2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        off = offset * strides[d2] if length else 0
    else:
        length = max(0, min(n1 + offset, n2))
        off = -offset * strides[d1] if length else 0
    keep = [k for k in range(len(shape)) if k not in (d1, d2)]
    return (tuple(shape[k] for k in keep) + (length,), tuple(strides[k] for k in keep) + (strides[d1] + strides[d2],),
            off)


def _diag_dims(op: str, ndim: int, dim1: int, dim2: int) -> tuple:
    d1, d2 = norm_dim(dim1, ndim, op), norm_dim(dim2, ndim, op)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


class DiagonalBackward0(Node):
    def backward(self, g):
        return (_embed_diag(g, self.in_shape, self.offset, self.d1, self.d2),)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal of dims (dim1, dim2), appended as the last dim."""
    d1, d2 = _diag_dims("diagonal", input.ndim, dim1, dim2)
    shape, st, off = _diag_geometry(tuple(input.shape), input.stride(), int(offset), d1, d2)
    node = None
    if input._rg:
        node = DiagonalBackward0()
        node.in_shape, node.offset, node.d1, node.d2 = tuple(input.shape), int(offset), d1, d2
    return strided_view(input, shape, st, off, node)


_diagonal = diagonal  # diag's argument named `diagonal` shadows the function there


class DiagEmbedBackward0(Node):
    def backward(self, g):
        return (diagonal(g, self.offset, self.d1, self.d2),)


def _embed_diag(g: Tensor, shape: tuple, offset: int, d1: int, d2: int) -> Tensor:
    """zeros(shape) with g written on its (offset, d1, d2) diagonal (differentiable: the backward is diagonal)."""
    table = g._be
    z = table.full(tuple(shape), 0, g.dtype.np)
    vshape, vst, voff = _diag_geometry(shape, tuple(table.strides(z)), offset, d1, d2)
    if g.numel():
        table.assign_(table.as_strided(z, vshape, vst, voff), g._data)
    if g._rg and _gs.enabled:
        node = DiagEmbedBackward0()
        node.offset, node.d1, node.d2 = offset, d1, d2
        node.next_functions = (edge(g),)
        return _make(z, g.dtype, table, node)
    return _make(z, g.dtype, table)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose (dim1, dim2) diagonals (shifted by offset) hold input's last dim, zeros elsewhere."""
    nd = input.ndim + 1
    d1, d2 = _diag_dims("diag_embed", nd, dim1, dim2)
    n = (input.shape[-1] if input.ndim else 1) + abs(int(offset))
    rest = list(input.shape[:-1])
    shape = []
    for k in range(nd):
        shape.append(n if k in (d1, d2) else rest.pop(0))
    src = input.reshape(1) if input.ndim == 0 else input
    return _embed_diag(src, tuple(shape), int(offset), d1, d2)


def diag(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """1-D: the square matrix with input on a diagonal; 2-D: a copy of a diagonal."""
    if input.ndim == 1:
        return _out(diag_embed(input, diagonal, 0, 1), out)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return _out(_renamed(clone(_diagonal(input, diagonal)), _DIAG_2D), out)


_DIAG_2D: dict = {"name": "DiagonalBackward0_copy"}  # PyTorch's name: diag(2-D) is diagonal_copy there


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The square matrix with the flattened input on the ``offset`` diagonal."""
    return diag_embed(reshape(input, (-1,)), offset, 0, 1)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix (integer inputs sum to int64)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype is _dt.bool_:  # PyTorch has no bool kernel (a bool sum would count the Trues)
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        (input,) = _ac_cast("trace", input)
    return _red.sum(diagonal(input))


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """input with ``src`` embedded on its (offset, dim1, dim2) diagonal."""
    d1, d2 = _diag_dims("diagonal_scatter", input.ndim, dim1, dim2)
    shape = tuple(input.shape)
    dshape = _diag_geometry(shape, _c_strides(shape), int(offset), d1, d2)[0]
    if tuple(src.shape) != dshape:
        raise RuntimeError(f"diagonal_scatter: Expected src to have a size equal to the diagonal of self. src size = "
                           f"{list(src.shape)}, diagonal size = {list(dshape)}")
    if src.dtype is not input.dtype:
        src = src.to(input.dtype)
    mask = _embed_diag(_cr.ones(dshape, dtype=_dt.bool_, device=input.device), shape, int(offset), d1, d2)
    return _renamed(_pw.where(mask, _embed_diag(src, shape, int(offset), d1, d2), input), _DIAGONAL_SCATTER)


_DIAGONAL_SCATTER: dict = {"name": "DiagonalScatterBackward0"}


# ---------------------------------------------------------------------------------------------
# fill_diagonal_ and the methods
# ---------------------------------------------------------------------------------------------
def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place (all dims equal beyond 2-D; ``wrap``: tall matrices restart every
    cols + 1 rows, as numpy.fill_diagonal)."""
    nd = self.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if nd > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    dev = self.device
    if nd == 2:
        rows, cols = shape
        end = rows * cols if wrap and rows > cols + 1 else min(rows, cols) * cols
        f = _cr.arange(0, end, cols + 1, device=dev)
        key: tuple = (f // cols, f % cols)
    else:
        i = _cr.arange(shape[0], device=dev)
        key = (i,) * nd
    _ix.setitem(self, key, fill_value)
    return self


def _tril_(self, diagonal=0):
    return apply_inplace(self, "tril_", lambda s: tril(s, diagonal))


def _triu_(self, diagonal=0):
    return apply_inplace(self, "triu_", lambda s: triu(s, diagonal))


METHODS: dict = {  # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
    "tril": tril, "triu": triu, "tril_": _tril_, "triu_": _triu_, "diag": diag, "diagonal": diagonal,
    "diag_embed": diag_embed, "diagflat": diagflat, "trace": trace, "fill_diagonal_": fill_diagonal_,
    "diagonal_scatter": diagonal_scatter,
}
