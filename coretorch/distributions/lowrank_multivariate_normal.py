"""LowRankMultivariateNormal (PyTorch's torch.distributions.lowrank_multivariate_normal): a multivariate normal
whose covariance is ``W W^T + diag(D)`` with ``W`` of rank m << n, evaluated through the m x m capacitance matrix
``C = I + W^T D^-1 W`` (the Woodbury identity and the matrix determinant lemma): O(n m^2), never O(n^3)."""
from __future__ import annotations

import math

import coretorch as torch

from . import constraints
from .distribution import Distribution, LocCentered
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _capacitance_tril(W, D):
    """The Cholesky factor of ``I + W^T D^-1 W``."""
    K = torch.matmul(W.mT / D.unsqueeze(-2), W)
    return torch.linalg.cholesky(K + torch.eye(W.shape[-1], dtype=W.dtype, device=W.device))


class LowRankMultivariateNormal(LocCentered, Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag): mean ``loc`` (n), covariance ``cov_factor @
    cov_factor.mT + diag(cov_diag)`` (``cov_factor`` n x m, ``cov_diag`` n, positive)."""
    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {tuple(event_shape)}")
        try:
            loc_, self.cov_factor, diag_ = torch.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                   cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = torch.Size(batch_shape)
        shape = batch_shape + self.event_shape
        new.loc, new.cov_diag = self.loc.expand(shape), self.cov_diag.expand(shape)
        new.cov_factor = self.cov_factor.expand(shape + self.cov_factor.shape[-1:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def variance(self):
        """The diagonal of the covariance: ``sum_j W_ij^2 + D_i``."""
        v = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return v.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        """``W W^T + diag(D)``."""
        W = self._unbroadcasted_cov_factor
        cov = torch.matmul(W, W.mT) + torch.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        """The Cholesky factor of the covariance, as ``D^1/2 chol(I + D^-1/2 W W^T D^-1/2)`` (well conditioned:
        the inner matrix's eigenvalues are at least 1)."""
        n = self._event_shape[0]
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        B = self._unbroadcasted_cov_factor / sqrt_d
        K = torch.matmul(B, B.mT) + torch.eye(n, dtype=B.dtype, device=B.device)
        return (sqrt_d * torch.linalg.cholesky(K)).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        """``D^-1 - D^-1 W C^-1 W^T D^-1`` (Woodbury)."""
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = torch.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        P = torch.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return P.expand(self._batch_shape + self._event_shape + self._event_shape)

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        eps_w = _standard_normal(tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:]), dtype=self.loc.dtype,
                                 device=self.loc.device)
        eps_d = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w) \
            + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _logdet(self):
        """log|W W^T + D| = log|C| + log|D| (the matrix determinant lemma)."""
        return 2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) \
            + self._unbroadcasted_cov_diag.log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        mahalanobis = (diff.pow(2) / D).sum(-1) \
            - _batch_mahalanobis(self._capacitance_tril, _batch_mv(W.mT / D.unsqueeze(-2), diff))
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._logdet() + mahalanobis)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._logdet())
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
