"""More of PyTorch's transforms: ``LowerCholeskyTransform``, ``PositiveDefiniteTransform`` (registered for
``transform_to`` of ``lower_cholesky`` / ``positive_definite``), ``CorrCholeskyTransform`` (``corr_cholesky``),
``StackTransform`` and ``CatTransform`` (``stack`` / ``cat``) and ``CumulativeDistributionTransform``."""
from __future__ import annotations

import math

import coretorch as torch
import coretorch.nn.functional as F

from . import constraints
from .constraint_registry import biject_to, transform_to
from .transforms import Transform
from .utils import _sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["LowerCholeskyTransform", "PositiveDefiniteTransform", "StackTransform", "CumulativeDistributionTransform",
           "CatTransform", "CorrCholeskyTransform"]


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices to lower triangular ones with a positive diagonal: the strictly lower part
    kept, the diagonal exponentiated (the upper part dropped)."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices to positive definite ones: ``L L^T`` with ``L`` from
    :class:`LowerCholeskyTransform`."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return L @ L.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(torch.linalg.cholesky(y))


class StackTransform(Transform):
    """Applies ``tseq[i]`` to ``x.select(dim, i)`` and stacks the results along ``dim``."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError(f"All elements of tseq must be Transform instances, got {[type(t) for t in tseq]}")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        if not -x.dim() <= self.dim < x.dim():
            raise AssertionError("dim out of range")
        if x.size(self.dim) != len(self.transforms):
            raise AssertionError("size of x along dim must equal the number of transforms")
        return torch.stack([t(xs) for xs, t in zip(self._slices(x), self.transforms)], dim=self.dim)

    def _inverse(self, y):
        return torch.stack([t.inv(ys) for ys, t in zip(self._slices(y), self.transforms)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        return torch.stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                            zip(self._slices(x), self._slices(y), self.transforms)], dim=self.dim)

    @property
    def bijective(self):  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):  # type: ignore[override]
        """The stack of the transforms' domains."""
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):  # type: ignore[override]
        """The stack of the transforms' codomains."""
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the i-th slice of ``dim`` (``lengths[i]`` long) and concatenates the results, as
    ``torch.cat`` would."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The size of ``dim`` the transform expects (the sum of ``lengths``)."""
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, z, name: str) -> None:
        if not -z.dim() <= self.dim < z.dim():
            raise AssertionError(f"dim {self.dim} out of range for {name} with {z.dim()} dimensions")
        if z.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {z.size(self.dim)} must equal length {self.length}")

    def _pieces(self, z):
        start = 0
        for t, length in zip(self.transforms, self.lengths):
            yield t, z.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        self._check(x, "x")
        return torch.cat([t(xs) for t, xs in self._pieces(x)], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y")
        return torch.cat([t.inv(ys) for t, ys in self._pieces(y)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x")
        self._check(y, "y")
        event_dim = self.event_dim
        parts = []
        for (t, xs), (_, ys) in zip(self._pieces(x), self._pieces(y)):
            ldj = t.log_abs_det_jacobian(xs, ys)
            parts.append(_sum_rightmost(ldj, event_dim - t.event_dim) if t.event_dim < event_dim else ldj)
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + event_dim
        return torch.cat(parts, dim=dim) if dim < 0 else sum(parts)

    @property
    def bijective(self):  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):  # type: ignore[override]
        """The concatenation of the transforms' domains."""
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):  # type: ignore[override]
        """The concatenation of the transforms' codomains."""
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class CorrCholeskyTransform(Transform):
    """A real vector of length D (D - 1) / 2 to the Cholesky factor of a D x D correlation matrix (lower
    triangular, positive diagonal, rows of unit norm): the vector fills the strictly lower triangle row by row,
    ``tanh`` maps it into (-1, 1), and a signed stick-breaking makes each row a unit vector (Stan's construction;
    the log-Jacobian is the one of ``x`` to the flattened strictly lower triangle of ``y``)."""
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = torch.finfo(x.dtype).eps
        r = vec_to_tril_matrix(torch.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + torch.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - torch.cumsum(y * y, dim=-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(y_cumsum_shifted, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        stick_breaking_logdet = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        N = shape[-1]
        D = round((0.25 + 2 * N) ** 0.5 + 0.5)
        if D * (D - 1) // 2 != N:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return torch.Size(tuple(shape[:-1]) + (D, D))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        D = shape[-1]
        return torch.Size(tuple(shape[:-2]) + (D * (D - 1) // 2,))


class CumulativeDistributionTransform(Transform):
    """A distribution's support to [0, 1] through its ``cdf`` (inverse: ``icdf``); the log-Jacobian is its
    ``log_prob``."""
    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):  # type: ignore[override]
        """The distribution's support."""
        return self.distribution.support

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


transform_to.register(constraints.lower_cholesky, lambda c: LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda c: PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda c: PositiveDefiniteTransform())
transform_to.register(constraints.stack, lambda c: StackTransform([transform_to(x) for x in c.cseq], c.dim))
biject_to.register(constraints.stack, lambda c: StackTransform([biject_to(x) for x in c.cseq], c.dim))
transform_to.register(constraints.cat, lambda c: CatTransform([transform_to(x) for x in c.cseq], c.dim, c.lengths))
biject_to.register(constraints.cat, lambda c: CatTransform([biject_to(x) for x in c.cseq], c.dim, c.lengths))
transform_to.register(constraints.corr_cholesky, lambda c: CorrCholeskyTransform())
biject_to.register(constraints.corr_cholesky, lambda c: CorrCholeskyTransform())
