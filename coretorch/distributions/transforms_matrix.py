"""More of PyTorch's transforms: ``LowerCholeskyTransform``, ``PositiveDefiniteTransform`` (registered for
``transform_to`` of ``lower_cholesky`` / ``positive_definite``), ``StackTransform`` and
``CumulativeDistributionTransform``."""
from __future__ import annotations

import coretorch as torch

from . import constraints
from .constraint_registry import transform_to
from .transforms import Transform

__all__ = ["LowerCholeskyTransform", "PositiveDefiniteTransform", "StackTransform", "CumulativeDistributionTransform"]


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


class CumulativeDistributionTransform(Transform):
    """A distribution's support to [0, 1] through its ``cdf`` (inverse: ``icdf``); the log-Jacobian is its
    ``log_prob``."""
    bijective = True
    codomain = constraints.independent(constraints.unit_interval, 0)
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
transform_to.register(constraints.stack, lambda c: StackTransform([transform_to(x) for x in c.cseq], c.dim))
