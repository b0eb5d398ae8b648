"""``torch.sparse`` and sparse COO tensors, **dense-backed**: the basics graph networks use.

    adj = torch.sparse_coo_tensor(edge_index, edge_weight, (n, n))   # or dense.to_sparse()
    h = torch.sparse.mm(adj, x)                                       # also torch.spmm(adj, x), adj @ x

A sparse COO tensor here is an ordinary tensor holding the *dense* value (so every op works on it, and memory is
that of the dense tensor: fine for graphs of thousands of nodes, not for millions) that also carries its COO form:
``indices()`` (sparse_dim x nnz, int64) and ``values()`` (nnz, *dense dims), with ``is_sparse``, ``layout``
(``torch.sparse_coo``), ``_indices()``/``_values()`` (as given, maybe uncoalesced), ``coalesce()``,
``is_coalesced()``, ``_nnz()``, ``sparse_dim()``, ``dense_dim()``, ``to_dense()``, and ``.to()``/``.cpu()``/
``.double()``/``.float()`` keep the layout.  Explicit zeros in ``values`` are kept, as in PyTorch.

``S.t()``, ``S.transpose()`` of sparse dimensions, ``-S``, ``S * number``, ``S / number`` and ``S + S`` stay
sparse; ``torch.sparse.FloatTensor(indices, values, size)`` (and Double/Long) are the deprecated constructors.
Differences from PyTorch, by design of the dense backing: other ops (``S * dense``, ``S.sum()``, ``S.exp()``) see
the dense value and return dense tensors (PyTorch keeps some of them sparse); in-place ops on a sparse tensor leave
its indices and values stale (don't); gradients reach ``values`` (and through them whatever made them) and the dense
operand of ``sparse.mm``, but the gradient of a sparse leaf is dense.  ``Embedding(sparse=True)`` gives its weight a
gradient marked sparse (the rows looked up, uncoalesced, padding lookups left out), which ``optim.SparseAdam``
(coretorch_extra_ops) requires, as in PyTorch.
"""
from __future__ import annotations

import builtins
import warnings
from typing import Any

import numpy as np

from . import dtypes as _dt
from ._coo import COO as _COO, SPARSE_ADD, SPARSE_CLASS, mark_sparse
from ._compat import sparse_coo, strided
from .ops.creation import tensor, zeros
from .ops.indexing import index_add as _index_add
from .ops.linalg import addmm as _addmm, mm as _mm
from .ops.reduction import sum as _sum
from .ops.shape import cat as _cat
from .tensor import Tensor, _disabled_torch_function_impl

__all__ = ["sparse_coo_tensor", "mm", "spmm", "sum", "addmm"]


def _coo(t: Tensor):
    return t.__dict__.get("_coo")


def is_sparse(t: Tensor) -> bool:
    return isinstance(t, Tensor) and "_coo" in t.__dict__


def _require(t: Tensor, op: str) -> _COO:
    c = _coo(t)
    if c is None:
        raise RuntimeError(f"{op} expected sparse coordinate tensor layout but got Strided")
    return c


def _linear(idx: np.ndarray, sizes: tuple) -> np.ndarray:
    return np.ravel_multi_index(tuple(idx), sizes) if idx.shape[0] else np.zeros(idx.shape[1], np.int64)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad: bool = False,
                      check_invariants=None, is_coalesced: bool | None = None) -> Tensor:
    """A sparse COO tensor from ``indices`` (sparse_dim x nnz) and ``values`` (nnz, *dense dims); duplicate
    indices are summed in the dense value (``coalesce()`` sums them in the COO form too).

    Args:
        indices (Tensor or array-like): int64 ``(sparse_dim, nnz)``: column ``k`` is the position of ``values[k]``.
        values (Tensor or array-like): ``(nnz, *dense_dims)``.
        size (tuple, optional): the tensor's shape (default: the smallest that holds the indices).
        dtype, device: of the values (default: those of ``values``).
        requires_grad (bool): record operations on the values for autograd.
        check_invariants, is_coalesced: accepted for PyTorch's signature.

    Returns:
        Tensor: a sparse COO tensor (``layout=torch.sparse_coo``; ``to_dense()`` gives the strided one).

    Example:
        >>> s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3., 4., 5.]), (2, 3))
        >>> s
        tensor(indices=tensor([[0, 1, 1],
                               [2, 0, 2]]),
               values=tensor([3., 4., 5.]),
               size=(2, 3), nnz=3, layout=torch.sparse_coo)
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 5.]])
    """
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype, device=device)
    elif dtype is not None or device is not None:
        values = values.to(device=device or values.device, dtype=dtype or values.dtype)
    if not isinstance(indices, Tensor):
        indices = tensor(indices, dtype=_dt.int64, device=values.device)
    if indices.dtype.is_floating_point or indices.dtype is _dt.bool_:
        raise RuntimeError(f"indices must be an int64 tensor, but got {indices.dtype}")
    indices = indices.to(device=values.device, dtype=_dt.int64)
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sparse_dim, nnz = indices.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        got = values.shape[0] if values.ndim else "a 0-d tensor"
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {got}")
    host = indices._host()
    if size is None:
        size = tuple(int(host[d].max()) + 1 if nnz else 0 for d in range(sparse_dim)) + tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    dense_dim = values.ndim - 1
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but "
                           f"got {len(size)}")
    if tuple(values.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sparse_dim:]]}, got "
                           f"{list(values.shape)}")
    for d in range(sparse_dim):
        if nnz and host[d].min() < 0:
            raise RuntimeError(f"found negative index {int(host[d].min())} for dim {d}")
        if nnz and host[d].max() >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{int(host[d].max())}")
    lin = tensor(_linear(host, size[:sparse_dim]), dtype=_dt.int64, device=values.device)
    n_rows = int(np.prod(size[:sparse_dim], dtype=np.int64))
    # the dense value: values added at their (linearised) indices, differentiable in values
    flat = _index_add(zeros((n_rows, *size[sparse_dim:]), dtype=values.dtype, device=values.device), 0, lin, values)
    out = flat.reshape(size)
    if requires_grad:
        if values.requires_grad:
            raise RuntimeError("sparse_coo_tensor(): requires_grad=True needs values that do not require grad")
        out = out.detach().requires_grad_(True)
    if is_coalesced is None:
        is_coalesced = nnz <= 1
    return mark_sparse(out, indices, values, bool(is_coalesced))


def _add(a: Tensor, b: Tensor) -> Tensor:
    """``a + b`` for gradients: sparse + sparse stays sparse (indices and values concatenated, uncoalesced, as
    PyTorch's sparse add); with a dense operand the sum is dense."""
    ca, cb = _coo(a), _coo(b)
    if ca is None or cb is None or a.shape != b.shape:
        return a + b  # (the sum of a sparse and a dense tensor is a plain tensor: ops see the dense values)
    return sparse_coo_tensor(_cat((ca.indices, cb.indices), 1), _cat((ca.values, cb.values), 0), tuple(a.shape))


def _coalesce(self: Tensor) -> Tensor:
    """The same sparse tensor with sorted, unique indices (duplicates summed)."""
    c = _require(self, "coalesce")
    if c.coalesced:
        return self
    sparse_dim = c.indices.shape[0]
    sizes = tuple(self.shape[:sparse_dim])
    lin = _linear(c.indices._host(), sizes)
    uniq, inv = np.unique(lin, return_inverse=True)
    dev = c.values.device
    vals = _index_add(zeros((len(uniq), *c.values.shape[1:]), dtype=c.values.dtype, device=dev), 0,
                      tensor(inv.reshape(-1), dtype=_dt.int64, device=dev), c.values)
    idx = np.stack(np.unravel_index(uniq, sizes)) if sparse_dim else np.zeros((0, len(uniq)), np.int64)
    return sparse_coo_tensor(tensor(idx.astype(np.int64), device=dev), vals, tuple(self.shape), is_coalesced=True)


def _to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
               dense_dim: int | None = None) -> Tensor:
    """The COO form of a dense tensor: its nonzero entries (rows with any nonzero for a hybrid ``sparse_dim``)."""
    if layout not in (None, sparse_coo):
        raise NotImplementedError(f"to_sparse(layout={layout}): coretorch has only the sparse_coo layout")
    if is_sparse(self):
        return self
    sd = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= self.ndim:
        raise RuntimeError(f"sparse_dim argument must be in [0, {self.ndim}] range, but {sd} is given")
    host = self._host()
    mask = host != 0
    if sd < self.ndim:
        mask = mask.reshape(*host.shape[:sd], -1).any(-1)
    idx = np.stack(np.nonzero(mask)).astype(np.int64) if sd else np.zeros((0, int(mask)), np.int64)
    it = tensor(idx, device=self.device)
    values = self[tuple(it[d] for d in range(sd))] if sd else self.unsqueeze(0)[:idx.shape[1]]
    return sparse_coo_tensor(it, values, tuple(self.shape), is_coalesced=True)


def _to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """A plain (strided) tensor with the same value (differentiable)."""
    out = self.clone() if is_sparse(self) else self
    return out if dtype is None else out.to(dtype)


def _indices(self: Tensor) -> Tensor:
    return _require(self, "_indices").indices


def _values(self: Tensor) -> Tensor:
    return _require(self, "_values").values


def _checked(self: Tensor, what: str) -> _COO:
    c = _require(self, what)
    if not c.coalesced:
        raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call .coalesce() first")
    return c


def _nnz(self: Tensor) -> int:
    return int(_require(self, "_nnz").indices.shape[1])


def _sparse_dim(self: Tensor) -> int:
    """The number of sparse dimensions (0 for a dense tensor)."""
    c = _coo(self)
    return 0 if c is None else int(c.indices.shape[0])


def _dense_dim(self: Tensor) -> int:
    """The number of dense dimensions (``ndim`` for a dense tensor)."""
    c = _coo(self)
    return self.ndim if c is None else int(c.values.ndim - 1)


def _is_coalesced(self: Tensor) -> bool:
    """Whether a sparse COO tensor has sorted, unique indices."""
    return _require(self, "is_coalesced").coalesced


def _sparse_repr(self: Tensor) -> str:
    c = _coo(self)
    ind = repr(c.indices.cpu()).replace("\n", "\n" + " " * 15)
    val = repr(c.values.detach().cpu())
    val = val.split(", dtype=")[0] + (")" if ", dtype=" in val else "")  # PyTorch prints the dtype once, after nnz
    val = val.replace("\n", "\n" + " " * 14)
    extra = f", device='{self.device}'" if self.device.type != "cpu" else ""
    dt = self.dtype
    if dt is not _dt.default and dt is not _dt.int64 and dt is not _dt.bool_:
        extra += f", dtype={dt}"
    extra += ", layout=torch.sparse_coo"
    if self.grad_fn is not None:
        extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
    elif self.requires_grad:
        extra += ", requires_grad=True"
    return (f"tensor(indices={ind},\n       values={val},\n       size={tuple(self.shape)}, "
            f"nnz={c.indices.shape[1]}{extra})")


# ---- torch.sparse functions ------------------------------------------------------------------------------------
def mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """``torch.sparse.mm``: sparse @ dense -> dense (gradients to the dense operand and to the sparse values);
    sparse @ sparse -> sparse.

    Args:
        mat1 (Tensor): ``(n, m)``, sparse COO (or dense).
        mat2 (Tensor): ``(m, p)``, dense or sparse COO.
        reduce (str, optional): only ``None``/``"sum"`` (other reductions raise NotImplementedError).

    Returns:
        Tensor: ``(n, p)``, sparse when both operands are.

    Example:
        >>> s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3., 4., 5.]), (2, 3))
        >>> torch.sparse.mm(s, torch.ones(3, 2))
        tensor([[3., 3.],
                [9., 9.]])
    """
    if reduce not in (None, "sum"):
        raise NotImplementedError(f"torch.sparse.mm(reduce={reduce!r}): only the sum reduction is supported")
    out = _mm(mat1, mat2)
    return _to_sparse(out) if is_sparse(mat1) and is_sparse(mat2) else out


def spmm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``torch.spmm``: sparse ``(n, m)`` @ dense ``(m, p)``, the same as ``torch.sparse.mm(mat1, mat2)``."""
    return mm(mat1, mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1``.

    Args:
        mat (Tensor): dense, broadcastable to ``(n, p)``.
        mat1 (Tensor): sparse COO ``(n, m)``.
        mat2 (Tensor): dense ``(m, p)``.
        beta, alpha (Number): the multipliers (default 1).

    Returns:
        Tensor: dense ``(n, p)``.

    Example:
        >>> s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3., 4., 5.]), (2, 3))
        >>> torch.sparse.addmm(torch.zeros(2, 2), s, torch.ones(3, 2), alpha=2)
        tensor([[ 6.,  6.],
                [18., 18.]])
    """
    return _addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001  (torch.sparse.sum)
    """``torch.sparse.sum``: over every dimension (a 0-d dense tensor) or over ``dim``; the result is sparse while
    sparse dimensions remain, as in PyTorch.

    Args:
        input (Tensor): a sparse COO tensor.
        dim (int or tuple of ints, optional): the dimensions to reduce (default: all).
        dtype (dtype, optional): the result's dtype.

    Example:
        >>> s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3., 4., 5.]), (2, 3))
        >>> torch.sparse.sum(s)
        tensor(12.)
        >>> torch.sparse.sum(s, dim=1).to_dense()
        tensor([3., 9.])
    """
    c = _require(input, "sparse.sum")
    if dim is None:
        return _sum(input, dtype=dtype)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(d % input.ndim for d in dims)
    out = _sum(input, dims, dtype=dtype)
    left = builtins.sum(1 for d in range(c.indices.shape[0]) if d not in dims)
    return _to_sparse(out, left) if left else out


def _legacy(name: str, dtype):
    def new(*args, device=None):
        """Deprecated: ``torch.sparse.FloatTensor(indices, values, size)`` (or sizes: an empty sparse tensor)."""
        warnings.warn(f"torch.sparse.{name}(indices, values, shape, *, device=) is deprecated.  Please use "
                      f"torch.sparse_coo_tensor(indices, values, shape, dtype=, device=).", UserWarning, stacklevel=2)
        if args and isinstance(args[0], Tensor):
            return sparse_coo_tensor(*args, dtype=dtype, device=device)
        size = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)
        return sparse_coo_tensor(zeros((len(size), 0), dtype=_dt.int64, device=device),
                                 zeros((0,), dtype=dtype, device=device), size)
    new.__name__ = new.__qualname__ = name
    return new


FloatTensor = _legacy("FloatTensor", _dt.float32)
DoubleTensor = _legacy("DoubleTensor", _dt.float64)
LongTensor = _legacy("LongTensor", _dt.int64)


# ---- the sparse tensor class and the Tensor methods ---------------------------------------------------------
def _keep_layout(name: str):
    """A conversion (``to``, ``double``, ``detach``...) that keeps the sparse layout: it converts the values too."""
    dense_method = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        c = self.__dict__["_coo"]
        if dense_method(self, *args, **kwargs) is self:
            return self
        vals = dense_method(c.values, *args, **kwargs)
        return sparse_coo_tensor(c.indices.to(vals.device), vals, tuple(self.shape), is_coalesced=c.coalesced)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = dense_method.__doc__
    return method


class _SparseCOOTensor(Tensor):
    """A tensor with the sparse COO layout: its dense value, plus the COO form in ``__dict__["_coo"]``.  Ops
    other than the sparse API see the dense value and return plain (strided) tensors, as nn.Parameter's do; the
    dense tensors keep their methods untouched (no cost for them)."""
    __torch_function__ = _disabled_torch_function_impl

    is_sparse = True
    layout = sparse_coo
    to, cpu, float, double, half, detach = (_keep_layout(n) for n in ("to", "cpu", "float", "double", "half",
                                                                      "detach"))

    def __repr__(self) -> str:
        return _sparse_repr(self)

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        c = self.__dict__["_coo"]
        return _rebuild_sparse, (c.indices.detach(), c.values.detach(), tuple(self.shape), c.coalesced,
                                 self.requires_grad and self.is_leaf)

    # the ops PyTorch keeps sparse and graph code uses: transposes, negation, scaling by a number, sparse + sparse
    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is "
                               f"{self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        c = self.__dict__["_coo"]
        n, sd = self.ndim, c.indices.shape[0]
        d0, d1 = dim0 % n, dim1 % n
        if d0 == d1:
            return self
        if d0 >= sd or d1 >= sd:  # a dense dimension: the dense value's transpose
            return Tensor.transpose(self, dim0, dim1)
        order = list(range(sd))
        order[d0], order[d1] = d1, d0
        size = list(self.shape)
        size[d0], size[d1] = size[d1], size[d0]
        idx = c.indices[tensor(order, dtype=_dt.int64, device=c.indices.device)]
        return sparse_coo_tensor(idx, c.values, tuple(size))

    def __neg__(self) -> Tensor:
        c = self.__dict__["_coo"]
        return sparse_coo_tensor(c.indices, -c.values, tuple(self.shape), is_coalesced=c.coalesced)

    def __mul__(self, other):
        if isinstance(other, (int, float, bool)):
            c = self.__dict__["_coo"]
            return sparse_coo_tensor(c.indices, c.values * other, tuple(self.shape), is_coalesced=c.coalesced)
        return Tensor.__mul__(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, (int, float)):
            return self * (1.0 / other)
        return Tensor.__truediv__(self, other)

    def __add__(self, other):
        if is_sparse(other) and other.shape == self.shape:
            return _add(self, other)
        return Tensor.__add__(self, other)

    def __sub__(self, other):
        if is_sparse(other) and other.shape == self.shape:
            return _add(self, -other)
        return Tensor.__sub__(self, other)

    def __deepcopy__(self, memo):
        c = self.__dict__["_coo"]
        return sparse_coo_tensor(c.indices.clone(), c.values.detach().clone(), tuple(self.shape),
                                 is_coalesced=c.coalesced, requires_grad=self.requires_grad and self.is_leaf)


def _rebuild_sparse(indices, values, size, coalesced, requires_grad):
    return sparse_coo_tensor(indices, values, size, is_coalesced=coalesced, requires_grad=requires_grad)


def _bind() -> None:
    T: Any = Tensor  # installs methods (their typed face: coretorch/_tensor_api.pyi)
    T.layout = strided
    T.to_sparse = T.to_sparse_coo = _to_sparse
    T.to_dense = _to_dense
    T.coalesce = _coalesce
    T.is_coalesced = _is_coalesced
    T._indices, T._values, T._nnz = _indices, _values, _nnz
    T.indices = lambda self: _checked(self, "indices").indices
    T.values = lambda self: _checked(self, "values").values
    T.sparse_dim, T.dense_dim = _sparse_dim, _dense_dim
    SPARSE_ADD[0] = _add
    SPARSE_CLASS[0] = _SparseCOOTensor


_bind()
