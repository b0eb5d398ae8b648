"""torch.special: the special functions under PyTorch's names (most are also top-level coretorch ops)."""
from __future__ import annotations

from .nn import functional as _F
from .ops import pointwise as _P, reduction as _R
from .ops.special import (_out, digamma, entr, erfc, erfcx, erfinv, exp2, gammainc, gammaincc, i0, i0e, i1, i1e,
                          lgamma, log_ndtr, logit, mvlgamma, ndtr, ndtri, polygamma, sinc, xlog1py, xlogy)
from .tensor import Tensor

__all__ = ["expit", "logit", "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "xlogy", "xlog1py", "entr", "ndtr", "ndtri", "log_ndtr", "sinc", "i0", "i0e", "i1", "i1e",
           "logsumexp", "softmax", "log_softmax", "exp2", "expm1", "log1p", "round", "gammainc", "gammaincc"]

gammaln = lgamma
psi = digamma
multigammaln = mvlgamma


def expit(input: Tensor, *, out=None) -> Tensor:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return _out(_P.sigmoid(input), out, "expit")


def erf(input: Tensor, *, out=None) -> Tensor:
    return _out(_F.erf(input), out, "erf")


def expm1(input: Tensor, *, out=None) -> Tensor:
    return _out(_P.expm1(input), out, "expm1")


def log1p(input: Tensor, *, out=None) -> Tensor:
    return _out(_P.log1p(input), out, "log1p")


def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:
    return _out(_P.round(input, decimals=decimals), out, "round")


def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out=None) -> Tensor:
    return _out(_R.logsumexp(input, dim, keepdim), out, "logsumexp")


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    return _F.log_softmax(input, dim, dtype=dtype)


_REEXPORTED = (logit, erfc, erfcx, erfinv, digamma, polygamma, xlogy, xlog1py, entr, ndtr, ndtri, log_ndtr, sinc,
               i0, i0e, i1, i1e, exp2, gammainc, gammaincc)
