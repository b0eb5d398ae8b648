"""torch.special: the special functions under PyTorch's names (most are also top-level coretorch ops)."""
from __future__ import annotations


from .nn import functional as _F
from .ops import pointwise as _P, reduction as _R
from .ops.special import (_out, digamma, entr, erfc, erfcx, erfinv, exp2, gammainc, gammaincc, i0, i0e, i1, i1e,
                          lgamma, log_ndtr, logit, mvlgamma, ndtr, ndtri, polygamma, sinc, xlog1py, xlogy)
from .ops._bessel import *  # noqa: F401,F403  (bessel_j0 & co, airy_ai, zeta)
from .ops._bessel import __all__ as _bessel
from .ops._polynomials import *  # noqa: F401,F403  (chebyshev_polynomial_t & co)
from .ops._polynomials import __all__ as _polynomials
from .tensor import Tensor

__all__ = ["expit", "logit", "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "xlogy", "xlog1py", "entr", "ndtr", "ndtri", "log_ndtr", "sinc", "i0", "i0e", "i1", "i1e",
           "logsumexp", "softmax", "log_softmax", "exp2", "expm1", "log1p", "round", "gammainc", "gammaincc",
           *_bessel, *_polynomials]

gammaln = lgamma
psi = digamma
multigammaln = mvlgamma


def expit(input: Tensor, *, out=None) -> Tensor:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return _out(_P.sigmoid(input), out, "expit", input)


def erf(input: Tensor, *, out=None) -> Tensor:
    """The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t**2) dt`` of each element."""
    return _out(_F.erf(input), out, "erf", input)


def expm1(input: Tensor, *, out=None) -> Tensor:
    """``exp(x) - 1`` of each element, accurate for small ``x``."""
    return _out(_P.expm1(input), out, "expm1", input)


def log1p(input: Tensor, *, out=None) -> Tensor:
    """``log(1 + x)`` of each element, accurate for small ``x``."""
    return _out(_P.log1p(input), out, "log1p", input)


def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:
    """Round each element to the nearest integer, half to even (or to ``decimals`` places)."""
    return _out(_P.round(input, decimals=decimals), out, "round", input)


def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out=None) -> Tensor:
    """``log(sum(exp(input), dim))``, computed stably (see :func:`coretorch.logsumexp`)."""
    return _out(_R.logsumexp(input, dim, keepdim), out, "logsumexp")


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``exp(input) / sum(exp(input), dim)`` along ``dim`` (see ``nn.functional.softmax``).  ``dtype`` may be
    positional, as in PyTorch's native binding (``special.log_softmax``, a Python function there, keeps it
    keyword-only)."""
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably (see ``nn.functional.log_softmax``)."""
    return _F.log_softmax(input, dim, dtype=dtype)


_REEXPORTED = (logit, erfc, erfcx, erfinv, digamma, polygamma, xlogy, xlog1py, entr, ndtr, ndtri, log_ndtr, sinc,
               i0, i0e, i1, i1e, exp2, gammainc, gammaincc)
