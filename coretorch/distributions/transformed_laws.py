"""Laws defined as a simple law pushed through transforms: Gumbel, HalfNormal, HalfCauchy, Pareto, Weibull,
Kumaraswamy, InverseGamma and LogisticNormal (PyTorch's constructions, so samples, reparameterised gradients and
log densities follow from TransformedDistribution; closed-form moments and entropies where they exist)."""
from __future__ import annotations

import math
from numbers import Number

import coretorch as torch

from . import constraints
from .continuous import Cauchy, Exponential, Normal, Uniform
from .distribution import _law_below
from .gamma_family import Gamma
from .transformed import TransformedDistribution
from .transforms import AbsTransform, AffineTransform, ExpTransform, PowerTransform, StickBreakingTransform
from .utils import broadcast_all, euler_constant

__all__ = ["Gumbel", "HalfNormal", "HalfCauchy", "Pareto", "Weibull", "Kumaraswamy", "InverseGamma",
           "LogisticNormal"]

_LOG2 = math.log(2.0)


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): loc - scale * log(-log U) for U uniform on (0, 1)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = torch.finfo(self.loc.dtype)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base = Uniform(fi.tiny, 1 - fi.eps, validate_args=validate_args)
        else:
            base = Uniform(torch.full_like(self.loc, fi.tiny), torch.full_like(self.loc, 1 - fi.eps),
                           validate_args=validate_args)
        # u -> -log u -> log(-log u) ... as an affine/exp chain: x = loc - scale * log(-log u)
        chain = [ExpTransform().inv, AffineTransform(0, -torch.ones_like(self.scale)), ExpTransform().inv,
                 AffineTransform(loc, -self.scale)]
        super().__init__(base, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return z - z.exp() - self.scale.log()

    @property
    def mean(self):
        return self.loc + euler_constant * self.scale

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale * (math.pi / math.sqrt(6.0))

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1.0 + euler_constant)


class _Folded(TransformedDistribution):
    """|X| for X symmetric about 0 (HalfNormal, HalfCauchy): twice the base density on [0, inf)."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _value_in_scale_dtype = False

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(_law_below(type(self), _Folded), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return torch.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        if self._value_in_scale_dtype:  # PyTorch's HalfCauchy (not HalfNormal) reads the value in scale's dtype
            value = torch.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        lp = self.base_dist.log_prob(value) + _LOG2
        return torch.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - _LOG2


class HalfNormal(_Folded):
    """HalfNormal(scale): |X| for X ~ Normal(0, scale)."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2.0 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1.0 - 2.0 / math.pi)


class HalfCauchy(_Folded):
    """HalfCauchy(scale): |X| for X ~ Cauchy(0, scale) (no finite mean or variance)."""
    _value_in_scale_dtype = True

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return torch.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return torch.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha) of type I: scale * exp(E) for E ~ Exponential(alpha); support [scale, inf)."""
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(0, self.scale)], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale, new.alpha = self.scale.expand(batch_shape), self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):  # infinite for alpha <= 1 (alpha clamped to 1 gives scale / 0)
        a = self.alpha.clamp(min=1)
        return self.scale * a / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):  # infinite for alpha <= 2
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + 1 + self.alpha.reciprocal()


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): scale * E^(1/concentration) for E ~ Exponential(1)."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        super().__init__(Exponential(torch.ones_like(self.scale), validate_args=validate_args),
                         self._chain(self.scale, self.concentration_reciprocal), validate_args=validate_args)

    @staticmethod
    def _chain(scale, k_inv) -> list:
        return [PowerTransform(exponent=k_inv), AffineTransform(0, scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale, new.concentration = self.scale.expand(batch_shape), self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        # the transforms hold the parameters: rebuild them at the new shape
        TransformedDistribution.__init__(new, self.base_dist.expand(batch_shape),
                                         self._chain(new.scale, new.concentration_reciprocal), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * torch.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        g1 = torch.lgamma(1 + self.concentration_reciprocal)
        g2 = torch.lgamma(1 + 2 * self.concentration_reciprocal)
        return self.scale.pow(2) * (g2.exp() - (2 * g1).exp())

    def entropy(self):
        k_inv = self.concentration_reciprocal
        return euler_constant * (1 - k_inv) + (self.scale * k_inv).log() + 1


def _kumaraswamy_moment(a, b, n: int):
    """E[X^n] = b * B(1 + n / a, b)."""
    s = 1 + n / a
    return b * (torch.lgamma(s) + torch.lgamma(b) - torch.lgamma(s + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1 = a, concentration0 = b) on [0, 1]: (1 - U^(1/b))^(1/a) for U uniform."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(torch.full_like(self.concentration0, 0), torch.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        chain = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(1.0, -1.0),
                 PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, chain, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # PyTorch's expression (kept for parity): NaN wherever a concentration is below 1
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return torch.where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = torch.digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()


class InverseGamma(TransformedDistribution):
    """InverseGamma(concentration, rate): 1 / X for X ~ Gamma(concentration, rate)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-base.rate.new_ones(())), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        """The shape parameter ``alpha``."""
        return self.base_dist.concentration

    @property
    def rate(self):
        """The scale parameter ``beta`` (the rate of the Gamma law of ``1 / X``)."""
        return self.base_dist.rate

    @property
    def mean(self):
        c = self.concentration
        return torch.where(c > 1, self.rate / (c - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        return torch.where(c > 2, self.rate.square() / ((c - 1).square() * (c - 2)), math.inf)

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()


class LogisticNormal(TransformedDistribution):
    """LogisticNormal(loc, scale) on the simplex: stick-breaking of X ~ Normal(loc, scale) (K - 1 dims -> K)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        """The mean of the underlying Normal."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of the underlying Normal."""
        return self.base_dist.base_dist.scale
