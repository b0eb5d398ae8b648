"""LKJCholesky (PyTorch's torch.distributions.lkj_cholesky): the LKJ law over Cholesky factors L of correlation
matrices, density of M = L L^T proportional to det(M)^(concentration - 1); sampled by the onion method
(Lewandowski, Kurowicka and Joe, 2009, section 3)."""
from __future__ import annotations

import math

import coretorch as torch

from . import constraints
from .distribution import Distribution
from .gamma_family import Beta
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): lower triangular ``dim x dim`` factors with unit rows (``L @ L.mT`` is
    a correlation matrix); ``concentration == 1`` is uniform over correlation matrices, larger values concentrate
    towards the identity."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # row i's squared norm off the diagonal is Beta(i / 2, concentration + (dim - 2) / 2 - (i - 1) / 2) (the
        # onion method's Beta(k / 2, beta); PyTorch 2.13 draws Beta(i - 1/2, ...), which biases the rows from the
        # third on: every correlation's variance must be 1 / (2 concentration + dim - 1))
        marginal = self.concentration + 0.5 * (dim - 2)
        offset = torch.arange(dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = torch.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), torch.Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = torch.Size(batch_shape)
        return self._expanded(LKJCholesky, batch_shape, ("concentration",), _instance, dim=self.dim,
                              _beta=self._beta.expand(tuple(batch_shape) + (self.dim,)))

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = torch.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            first = torch.arange(self.dim, device=y.device).reshape(-1, 1) == 0  # row 0 has no off-diagonal part
            u = torch.where(first, torch.zeros_like(u), u / torch.where(first, torch.ones_like(norm), norm))
            w = torch.sqrt(y) * u
            diag = torch.clamp(1 - torch.sum(w ** 2, dim=-1), min=torch.finfo(w.dtype).tiny).sqrt()
            return w + torch.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = torch.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalised = torch.sum(order * diag.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normaliser = 0.5 * dm1 * math.log(math.pi) + torch.mvlgamma(alpha - 0.5, dm1) - torch.lgamma(alpha) * dm1
        return unnormalised - normaliser
