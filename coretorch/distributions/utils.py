"""Helpers shared by the distributions: parameter broadcasting, probs <-> logits, lazily computed attributes."""
from __future__ import annotations

import math
from numbers import Number

import coretorch as torch
from coretorch.tensor import Tensor

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs", "lazy_property", "euler_constant",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni


def broadcast_all(*values) -> tuple:
    """Tensors broadcast against each other; Python numbers become tensors of the first tensor's dtype and device
    (of the default dtype when there is no tensor), as torch.distributions.utils.broadcast_all."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or torch.Tensor.")
    if all(isinstance(v, Number) for v in values):
        return tuple(torch.tensor(float(v)) for v in values)
    ref = next(v for v in values if isinstance(v, Tensor))
    vals = [v if isinstance(v, Tensor) else torch.tensor(v, dtype=ref.dtype, device=ref.device) for v in values]
    return tuple(torch.broadcast_tensors(*vals))


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions (none when dim == 0)."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped into [eps, 1 - eps] of their dtype (keeps logs finite)."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    return torch.sigmoid(logits) if is_binary else torch.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    p = clamp_probs(probs)
    return torch.log(p) - torch.log1p(-p) if is_binary else torch.log(p)


class lazy_property:
    """A property computed on first access and then stored on the instance (so it is computed once)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with torch.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (from diagonal ``diag``) of a (batch of) square matrices, in row order, as vectors."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = torch.tril_indices(n, n, offset=diag, device=mat.device)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: vectors to lower triangular square matrices (zeros above)."""
    size = vec.shape[-1]
    n_real = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * size + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    n = round(n_real)
    rows, cols = torch.tril_indices(n, n, offset=diag, device=vec.device)
    if rows.numel() != size:
        raise ValueError(f"The size of last dimension is {size} which cannot be expressed as the lower triangular "
                         "part of a square D x D matrix.")
    flat = vec.new_zeros(tuple(vec.shape[:-1]) + (n * n,))
    return flat.index_add(-1, rows * n + cols, vec).reshape(tuple(vec.shape[:-1]) + (n, n))


def _standard_normal(shape, dtype, device) -> Tensor:
    return torch.randn(tuple(shape), dtype=dtype, device=device)


LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
