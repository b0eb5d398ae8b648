"""PyTorch's ``torch._foreach_*`` in-place list ops, as optimizers use them (``_multi_tensor_sgd``).

Each pair whose tensors share device, dtype and shape, outside autograd, goes straight to the kernels (one
``axpy_`` per pair where the backend has it); any other pair takes the ordinary ``Tensor.add_``/``mul_`` path,
with its checks and errors.
"""
from __future__ import annotations

from ..autograd.grad_mode import state as _gs
from ..tensor import Tensor
from . import inplace as _IP, pointwise as _P

__all__ = ["_foreach_add_", "_foreach_mul_"]


def _pairs(op: str, self, other):
    """(self[i], other[i]) pairs, or (self[i], other) for one scalar; iterated once."""
    if not isinstance(other, (list, tuple)):
        return [(t, other) for t in self]
    if len(self) != len(other):
        raise RuntimeError(f"{op}: Tensor lists must have the same number of tensors, got {len(self)} and "
                           f"{len(other)}.")
    return zip(self, other)


def _foreach_add_(self: list, other, *, alpha=1) -> None:
    """``self[i].add_(other[i], alpha=alpha)`` for every i (``other`` a list of tensors or one scalar)."""
    plain = not _gs.enabled  # outside autograd a same-shape float pair needs no graph and no promotion
    for t, o in _pairs("_foreach_add_", self, other):
        # the pair binary_inplace would send to axpy_ anyway, without its per-call dispatch (2.4 % of a small
        # nn training step's instructions); every other pair goes through it
        be = t._be
        if plain and o.__class__ is Tensor and be is o._be and be.has_axpy and t.dtype is o.dtype \
                and t.dtype.is_floating_point and t._data.shape == o._data.shape:
            be.axpy_(t._data, alpha, o._data)
            t._vc[0] += 1
        else:
            _IP.binary_inplace(t, "add_", _P.add, o, alpha)


def _foreach_mul_(self: list, other) -> None:
    """``self[i].mul_(other[i])`` for every i (``other`` a list of tensors or one scalar)."""
    for t, o in _pairs("_foreach_mul_", self, other):
        _IP.binary_inplace(t, "mul_", _P.mul, o)
