"""PyTorch's one-module-per-law paths (``from torch.distributions.normal import Normal``): each is registered as a
module of the laws it defines, so programs importing a law from its own module run unchanged.  The laws live in
the family modules of this package; these modules only name them."""
from __future__ import annotations

import sys
import types

from ..tensor import Tensor
from .discrete import OneHotCategorical


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through to ``probs``: the one-hot draw plus
    ``probs - probs.detach()`` (Bengio et al., 2013)."""
    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        """A one-hot draw whose gradient with respect to ``probs`` is the identity."""
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached: the gradient reaches the parameter it came from
        return samples + (probs - probs.detach())


_MODULES = {  # PyTorch's module name -> the laws it defines there
    "bernoulli": ("Bernoulli",), "beta": ("Beta",), "binomial": ("Binomial",), "categorical": ("Categorical",),
    "cauchy": ("Cauchy",), "chi2": ("Chi2",), "dirichlet": ("Dirichlet",), "exponential": ("Exponential",),
    "gamma": ("Gamma",), "geometric": ("Geometric",), "gumbel": ("Gumbel",), "half_cauchy": ("HalfCauchy",),
    "half_normal": ("HalfNormal",), "inverse_gamma": ("InverseGamma",), "kumaraswamy": ("Kumaraswamy",),
    "laplace": ("Laplace",), "log_normal": ("LogNormal",), "logistic_normal": ("LogisticNormal",),
    "mixture_same_family": ("MixtureSameFamily",), "multinomial": ("Multinomial",), "normal": ("Normal",),
    "one_hot_categorical": ("OneHotCategorical", "OneHotCategoricalStraightThrough"), "pareto": ("Pareto",),
    "poisson": ("Poisson",), "relaxed_bernoulli": ("RelaxedBernoulli", "LogitRelaxedBernoulli"),
    "relaxed_categorical": ("RelaxedOneHotCategorical", "ExpRelaxedCategorical"), "studentT": ("StudentT",),
    "transformed_distribution": ("TransformedDistribution",), "uniform": ("Uniform",), "weibull": ("Weibull",),
    "exp_family": ("ExponentialFamily",), "fishersnedecor": ("FisherSnedecor",), "von_mises": ("VonMises",),
    "generalized_pareto": ("GeneralizedPareto",), "lkj_cholesky": ("LKJCholesky",),
    "wishart": ("Wishart",),
}


def install(package: types.ModuleType) -> None:
    """Register ``<package>.<name>`` for every entry of ``_MODULES`` (in sys.modules and as package attributes)."""
    for name, laws in _MODULES.items():
        full = f"{package.__name__}.{name}"
        mod = sys.modules.get(full)
        if mod is None:
            mod = types.ModuleType(full, f"The {', '.join(laws)} law{'s' if len(laws) > 1 else ''} "
                                         f"(PyTorch's torch.distributions.{name}).")
            for law in laws:
                setattr(mod, law, getattr(package, law))
            setattr(mod, "__all__", list(laws))
            sys.modules[full] = mod
        setattr(package, name, mod)
