"""More of PyTorch's laws: ``ExponentialFamily`` (the base class whose entropy comes from the log-normaliser, as
PyTorch's) and ``FisherSnedecor`` (the F distribution)."""
from __future__ import annotations

import coretorch as torch

from . import constraints
from .distribution import Distribution
from .gamma_family import Gamma
from .utils import broadcast_all

__all__ = ["ExponentialFamily", "FisherSnedecor"]


class ExponentialFamily(Distribution):
    """Base of the laws with density ``exp(<t(x), theta> - F(theta) + k(x))``: a subclass defines
    ``_natural_params`` (theta), ``_log_normalizer(*theta)`` (F) and ``_mean_carrier_measure`` (E[k(x)]); the
    entropy follows from the Bregman divergence of F (its gradient by autograd)."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``."""
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with torch.enable_grad():
            lg = self._log_normalizer(*params)
            grads = torch.autograd.grad(lg.sum(), params, create_graph=True)
        result = result + lg
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): the F distribution, ``(X1 / df1) / (X2 / df2)`` for chi-square ``X1``, ``X2``
    (reparameterised through two Gamma draws)."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        scalar = not isinstance(df1, torch.Tensor) and not isinstance(df2, torch.Tensor)
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(torch.Size() if scalar else self.df1.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(FisherSnedecor, batch_shape, ("df1", "df2"), _instance)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = self.df2.clone()
        return torch.where(df2 > 2, df2 / (df2 - 2), torch.full_like(df2, float("nan")))

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return torch.where(self.df1 > 2, mode, torch.full_like(mode, float("nan")))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        v = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return torch.where(df2 > 4, v, torch.full_like(v, float("nan")))

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        tiny = torch.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        t1 = (a + b).lgamma() - a.lgamma() - b.lgamma()
        t2 = a * ratio.log() + (a - 1) * torch.log(value)
        t3 = (a + b) * torch.log1p(ratio * value)
        return t1 + t2 - t3
