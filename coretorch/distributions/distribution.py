"""torch.distributions.Distribution: shapes, argument and sample validation, and the methods every law offers."""
from __future__ import annotations

import warnings
from typing import Any

import coretorch as torch
from coretorch.tensor import Tensor

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution", "ExponentialFamily"]


def _law_below(cls: type, base: type) -> type:
    """The class of ``cls``'s MRO derived directly from the shared implementation ``base`` (Normal for a subclass
    of Normal): what ``expand`` checks a subclass's ``__init__`` against, as PyTorch's ``expand`` names its law."""
    return next(c for c in cls.__mro__ if base in c.__bases__)


class LocCentered:
    """A law whose mean and mode are its ``loc`` (a location-scale family, a normal, von Mises): listed before
    :class:`Distribution` in the bases."""

    loc: Any

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


class Distribution:
    """The base class of probability distributions (PyTorch's API: ``batch_shape``, ``event_shape``, ``sample``,
    ``rsample``, ``log_prob``, ``entropy``, ``expand``...).  ``validate_args`` checks parameters at construction
    and values given to ``log_prob``/``cdf``/``icdf``; it is on by default, as in PyTorch (off under ``python -O``)."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for distributions created later (on by default, as PyTorch)."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=torch.Size(), event_shape=torch.Size(), validate_args: bool | None = None):
        self._batch_shape = torch.Size(batch_shape)
        self._event_shape = torch.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = "
                              "{}` or initialize the distribution with `validate_args=False` to turn off validation.")
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # not computed yet: checking would compute it
                value = getattr(self, param)
                if not constraint.check(value).all():
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with the parameters broadcast to ``batch_shape`` (no copy of the parameters).

        Args:
            batch_shape (tuple of ints): the new batch shape; the current one must broadcast to it.
        """
        raise NotImplementedError

    @property
    def batch_shape(self) -> torch.Size:
        """The shape of the batch of independent distributions (the parameters' broadcast shape)."""
        return self._batch_shape

    @property
    def event_shape(self) -> torch.Size:
        """The shape of one sample of one distribution (``()`` for scalar laws)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """The constraint each parameter must satisfy, ``{name: constraints.Constraint}``."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint the samples satisfy (where ``log_prob`` is finite)."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode (the most probable value) of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation (``variance.sqrt()``)."""
        return self.variance.sqrt()

    def sample(self, sample_shape=torch.Size()) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape``, without gradient.

        Args:
            sample_shape (tuple of ints): the number of draws, as a shape (default ``()``: one).
        """
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=torch.Size()) -> Tensor:
        """Draw reparametrized samples (differentiable with respect to the parameters), of shape
        ``sample_shape + batch_shape + event_shape``. Raises NotImplementedError for laws without a
        reparametrization (``has_rsample`` is False).

        Example:
            >>> mu = torch.zeros(3, requires_grad=True)
            >>> torch.distributions.Normal(mu, 1.0).rsample((10,)).mean().backward()
            >>> mu.grad
            tensor([0.3333, 0.3333, 0.3333])
        """
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))`` (deprecated spelling)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(torch.Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density (or mass) at ``value``.

        Args:
            value (Tensor): broadcastable to ``batch_shape + event_shape``; validated against ``support`` when
                validation is on.

        Returns:
            Tensor: of the broadcast shape without ``event_shape``.
        """
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function (quantile function) at ``value`` in ``[0, 1]``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support, along a new leading dimension (expanded over the batch unless
        ``expand=False``).
        """
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy of each distribution of the batch (shape ``batch_shape``)."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return torch.exp(self.entropy())

    def _extended_shape(self, sample_shape=torch.Size()) -> torch.Size:
        return torch.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape = value.size()
        expected_shape = torch.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        if not support.check(value).all():
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _expanded(self, cls, batch_shape, names=(), _instance=None, event_dims: int = 0, **extra):
        """A new ``cls`` instance whose parameters ``names`` are this one's expanded to ``batch_shape`` (their
        ``event_dims`` rightmost dims kept), with ``extra`` attributes set as given and no validation (the
        shared body of most ``expand`` methods)."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = torch.Size(batch_shape)
        for name in names:
            v = getattr(self, name)
            setattr(new, name, v.expand(tuple(batch_shape) + tuple(v.shape[v.dim() - event_dims:])))
        for name, value in extra.items():
            setattr(new, name, value)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return f"{self.__class__.__name__}({args})"


class ExponentialFamily(Distribution):
    """Base of the laws with density ``exp(<t(x), theta> - F(theta) + k(x))``: a subclass defines
    ``_natural_params`` (theta), ``_log_normalizer(*theta)`` (F) and ``_mean_carrier_measure`` (E[k(x)]); the
    entropy follows from the Bregman divergence of F (its gradient by autograd), and kl_divergence of two laws of
    the same such class without a closed form of their own.  Normal, Exponential, Gamma (Chi2), Beta, Dirichlet,
    Bernoulli, Poisson and ContinuousBernoulli are subclasses, as in PyTorch."""

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
