"""ContinuousBernoulli (Loaiza-Ganem & Cunningham, 2019; PyTorch's torch.distributions.continuous_bernoulli): the
density ``C(p) p^x (1 - p)^(1 - x)`` on [0, 1], a proper likelihood for [0, 1]-valued data such as pixels.

Near ``p = 1/2`` the closed forms divide 0 by 0, so inside ``lims`` the normaliser and the moments use their
Taylor expansions around 1/2 (as PyTorch's)."""
from __future__ import annotations

import math
from numbers import Number

import coretorch as torch
import coretorch.nn.functional as F

from . import constraints
from .distribution import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)): on [0, 1], density proportional to
    ``probs^x (1 - probs)^(1 - x)`` (reparameterised sampling through the inverse cdf)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        scalar = isinstance(given, Number)
        (t,) = broadcast_all(given)
        if probs is not None:
            if validate_args is not None and not bool(constraints.unit_interval.check(t).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(t)  # checked first: the clamped values would always pass
            self._param = self.probs
        else:
            self.logits = t
            self._param = t
        self._lims = lims
        super().__init__(torch.Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = tuple(n for n in ("probs", "logits") if n in self.__dict__)
        new = self._expanded(ContinuousBernoulli, batch_shape, names, _instance, _lims=self._lims)
        new._param = getattr(new, names[-1])
        return new

    @lazy_property
    def logits(self):
        """``log(probs / (1 - probs))``."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The parameter ``p`` (``sigmoid(logits)``), kept away from 0 and 1."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        """The shape of the parameter given (``probs`` or ``logits``)."""
        return self._param.size()

    def _stable(self):
        """Where ``probs`` is outside ``lims``: the closed forms are accurate there."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """``probs`` with the values inside ``lims`` replaced by ``lims[0]`` (the unused closed-form branch stays
        finite, so its gradient is not NaN)."""
        return torch.where(self._stable(), self.probs, torch.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        """log C(p) = log(|log(1 - p) - log p| / |1 - 2p|), its Taylor expansion near 1/2."""
        p = self._cut_probs()
        low = torch.where(p <= 0.5, p, torch.zeros_like(p))
        high = torch.where(p >= 0.5, p, torch.ones_like(p))
        closed = torch.log(torch.abs(torch.log1p(-p) - torch.log(p))) \
            - torch.where(p <= 0.5, torch.log1p(-2.0 * low), torch.log(2.0 * high - 1.0))
        d2 = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2
        return torch.where(self._stable(), closed, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / (torch.log1p(-p) - torch.log(p))
        d = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d ** 2) * d
        return torch.where(self._stable(), closed, taylor)

    @property
    def variance(self):
        p = self._cut_probs()
        closed = p * (p - 1.0) / (1.0 - 2.0 * p) ** 2 + 1.0 / (torch.log1p(-p) - torch.log(p)) ** 2
        d2 = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2
        return torch.where(self._stable(), closed, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        closed = (p ** value * (1.0 - p) ** (1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = torch.where(self._stable(), closed, value)
        return torch.where(value <= 0.0, torch.zeros_like(value),
                           torch.where(value >= 1.0, torch.ones_like(value), inside))

    def icdf(self, value):
        p = self._cut_probs()
        closed = (torch.log1p(-p + value * (2.0 * p - 1.0)) - torch.log1p(-p)) / (torch.log(p) - torch.log1p(-p))
        return torch.where(self._stable(), closed, value)

    def entropy(self):
        log_q, log_p = torch.log1p(-self.probs), torch.log(self.probs)
        return self.mean * (log_q - log_p) - self._cont_bern_log_norm() - log_q

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normaliser as a function of the natural parameter (PyTorch's formula and cut-offs)."""
        unstable = torch.le(x, self._lims[0] - 0.5) | torch.gt(x, self._lims[1] - 0.5)
        cut = torch.where(unstable, x, (self._lims[0] - 0.5) * torch.ones_like(x))
        log_norm = torch.log(torch.abs(torch.special.expm1(cut))) - torch.log(torch.abs(cut))
        taylor = 0.5 * x + torch.pow(x, 2) / 24.0 - torch.pow(x, 4) / 2880.0
        return torch.where(unstable, log_norm, taylor)
