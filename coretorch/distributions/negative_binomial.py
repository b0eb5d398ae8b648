"""NegativeBinomial (PyTorch's torch.distributions.negative_binomial): the number of successes before
``total_count`` failures, each trial a success with probability ``probs``."""
from __future__ import annotations

import coretorch as torch
import coretorch.nn.functional as F

from . import constraints
from .discrete import Poisson, _BinaryParameters, _expand_probs_logits, _set_count_and_param
from .distribution import Distribution
from .gamma_family import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_BinaryParameters, Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None): successes before ``total_count`` failures (a Gamma
    mixture of Poissons: sampling draws the rate from ``Gamma(total_count, exp(-logits))``)."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _set_count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_probs_logits(self, NegativeBinomial, batch_shape, _instance,
                                    total_count=self.total_count.expand(batch_shape))

    @property
    def mean(self):
        return self.total_count * torch.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / torch.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=torch.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return Poisson(rate, validate_args=False).sample()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -torch.lgamma(self.total_count + value) + torch.lgamma(1.0 + value) \
            + torch.lgamma(self.total_count)
        # 0 successes before 0 failures has probability 1 (lgamma(0) is inf: the term is dropped there)
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
