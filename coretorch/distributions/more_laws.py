"""More of PyTorch's laws: ``ExponentialFamily`` (re-exported from ``distribution``), ``FisherSnedecor`` (the F
distribution), ``VonMises`` (the circular normal) and ``GeneralizedPareto``."""
from __future__ import annotations

import math

import coretorch as torch

from . import constraints
from .distribution import Distribution, ExponentialFamily, LocCentered
from .gamma_family import Gamma
from .utils import broadcast_all, lazy_property

__all__ = ["ExponentialFamily", "FisherSnedecor", "VonMises", "GeneralizedPareto"]


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


class VonMises(LocCentered, Distribution):
    """VonMises(loc, concentration): the circular normal on (-pi, pi], density ``exp(k cos(x - loc)) / (2 pi
    I0(k))``; sampled by Best and Fisher's (1979) rejection method, in float64."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, torch.Size(), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(VonMises, batch_shape, ("loc", "concentration"), _instance)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        log_i0 = torch.log(torch.special.i0e(k)) + k  # log I0(k), without overflow for large k
        return k * torch.cos(value - self.loc) - math.log(2 * math.pi) - log_i0

    @lazy_property
    def _proposal_r(self):
        k = self.concentration.to(torch.float64)
        tau = 1 + (1 + 4 * k ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        return torch.where(k < 1e-5, 1 / k + k, (1 + rho ** 2) / (2 * rho))  # small k: the Taylor form

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            shape = self._extended_shape(sample_shape)
            loc, k, r = self.loc.to(torch.float64), self.concentration.to(torch.float64), self._proposal_r
            x = torch.zeros(shape, dtype=torch.float64, device=loc.device)
            done = torch.zeros(shape, dtype=torch.bool, device=loc.device)
            while not _rounds_done(done):
                u1, u2, u3 = torch.rand((3,) + tuple(shape), dtype=torch.float64, device=loc.device).unbind()
                z = torch.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                x = torch.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @lazy_property
    def variance(self):
        """The circular variance ``1 - I1(k) / I0(k)``."""
        k = self.concentration
        return 1 - torch.special.i1e(k) / torch.special.i0e(k)


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration): the tail law of extreme values, survival ``(1 + c z)^(-1/c)``
    for ``z = (x - loc) / scale`` (``exp(-z)`` at c = 0); reparameterised through the inverse cdf."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        scalar = not any(isinstance(v, torch.Tensor) for v in (loc, scale, concentration))
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(torch.Size() if scalar else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(GeneralizedPareto, batch_shape, ("loc", "scale", "concentration"), _instance)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = torch.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                            torch.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def _zero_safe(self):
        """(where c is 0, c with those entries set to 1): the c = 0 limit is computed separately."""
        zero = torch.isclose(self.concentration, torch.zeros_like(self.concentration))
        return zero, torch.where(zero, torch.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._zero_safe()
        y = 1 / c + 1
        nonzero = torch.where(y == 0, y, y * torch.log1p(c * z))
        return -self.scale.log() - torch.where(zero, z, nonzero)

    def log_survival_function(self, value):
        """``log P(X > value)``."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._zero_safe()
        return torch.where(zero, -z, -torch.log1p(c * z) / c)

    def log_cdf(self, value):
        """``log P(X <= value)``."""
        return torch.log1p(-torch.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return torch.exp(self.log_cdf(value))

    def icdf(self, value):
        zero, c = self._zero_safe()
        log_u = torch.log1p(-value)
        return torch.where(zero, self.loc - self.scale * log_u, self.loc + self.scale / c * torch.expm1(-c * log_u))

    @property
    def mean(self):
        ok = self.concentration < 1
        c = torch.where(ok, self.concentration, torch.full_like(self.concentration, 0.5))
        return torch.where(ok, self.loc + self.scale / (1 - c), torch.full_like(self.loc, math.nan))

    @property
    def variance(self):
        ok = self.concentration < 0.5
        c = torch.where(ok, self.concentration, torch.full_like(self.concentration, 0.25))
        v = self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c))
        return torch.where(ok, v, torch.full_like(v, math.nan))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return torch.broadcast_to(torch.log(self.scale) + self.concentration + 1, tuple(self._batch_shape))


def _rounds_done(done) -> bool:
    """Whether every draw of a rejection loop is accepted: a host read whose answer depends on the random numbers,
    so under a compiled step that already wrote state a graph break (a checked read could only raise at a call
    needing another number of rounds; before any write it falls back to eager: see coretorch/_compile/rngundo.py)."""
    from ..ops._util import data_read
    data_read("a VonMises draw takes as many rejection rounds as its random numbers need")
    return bool(done.all())
