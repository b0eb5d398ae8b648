"""torch.distributions: probability laws with sampling (reparameterised where PyTorch's are), log_prob, entropy,
moments, cdf/icdf, ``expand``, argument validation and ``kl_divergence`` with its registry.

Every law is a composition of differentiable tensor ops, so it runs on every device a backend provides."""
import sys

from . import constraint_registry, constraints, transforms
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, Multinomial, OneHotCategorical, Poisson
from .distribution import Distribution
from .gamma_family import Beta, Chi2, Dirichlet, Gamma, StudentT
from .independent import Independent, MixtureSameFamily
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .transformed import (ExpRelaxedCategorical, LogitRelaxedBernoulli, LogNormal, RelaxedBernoulli,
                          RelaxedOneHotCategorical, TransformedDistribution)
from .transformed_laws import (Gumbel, HalfCauchy, HalfNormal, InverseGamma, Kumaraswamy, LogisticNormal,
                               Pareto, Weibull)
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, IndependentTransform,
                         PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform, SoftplusTransform,
                         StickBreakingTransform, TanhTransform, Transform, identity_transform)

__all__ = ["constraints", "transforms", "biject_to", "transform_to", "constraint_registry",
           "Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Cauchy",
           "Bernoulli", "Categorical", "OneHotCategorical", "Geometric", "Poisson", "Binomial", "Multinomial",
           "MultivariateNormal", "Gamma", "Chi2", "Dirichlet", "Beta", "StudentT", "Independent",
           "MixtureSameFamily", "TransformedDistribution", "LogNormal",
           "ExpRelaxedCategorical", "RelaxedOneHotCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "kl_divergence", "register_kl", "Transform", "ComposeTransform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "TanhTransform", "SoftplusTransform", "AbsTransform", "AffineTransform",
           "SoftmaxTransform", "StickBreakingTransform", "IndependentTransform", "ReshapeTransform",
           "identity_transform", "Gumbel", "HalfNormal", "HalfCauchy", "Pareto", "Weibull", "Kumaraswamy",
           "InverseGamma", "LogisticNormal"]

from ._submodules import OneHotCategoricalStraightThrough, install as _install_submodules  # noqa: E402
from .negative_binomial import NegativeBinomial  # noqa: E402
from .continuous_bernoulli import ContinuousBernoulli  # noqa: E402
from .lowrank_multivariate_normal import LowRankMultivariateNormal  # noqa: E402
from . import continuous_bernoulli, lowrank_multivariate_normal, negative_binomial  # noqa: E402,F401
from . import kl_pairs  # noqa: E402,F401  (registers the rest of PyTorch's KL closed forms)
from .lkj_cholesky import LKJCholesky  # noqa: E402
from .wishart import Wishart  # noqa: E402
from .more_laws import ExponentialFamily, FisherSnedecor, GeneralizedPareto, VonMises  # noqa: E402
from . import transforms_matrix as _transforms_matrix  # noqa: E402
from .transforms_matrix import (CatTransform, CorrCholeskyTransform,  # noqa: E402
                                CumulativeDistributionTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                                StackTransform)

for _name in _transforms_matrix.__all__:  # PyTorch's programs import them from distributions.transforms too
    setattr(transforms, _name, getattr(_transforms_matrix, _name))
    if _name not in transforms.__all__:  # and `from torch.distributions.transforms import *` brings them
        transforms.__all__.append(_name)

__all__ += ["OneHotCategoricalStraightThrough", "NegativeBinomial", "ContinuousBernoulli", "LowRankMultivariateNormal",
            "LowerCholeskyTransform", "PositiveDefiniteTransform", "StackTransform", "CumulativeDistributionTransform",
            "CatTransform", "CorrCholeskyTransform",
            "ExponentialFamily", "FisherSnedecor", "VonMises", "GeneralizedPareto", "LKJCholesky",
            "Wishart"]
_install_submodules(sys.modules[__name__])  # torch.distributions.normal & co (PyTorch's one module per law)
