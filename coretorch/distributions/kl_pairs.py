"""The rest of PyTorch's registered KL(p || q) closed forms: the generic Bregman divergence of two laws of one
ExponentialFamily class, the same-family pairs not in ``kl.py`` (Cauchy,
Gumbel, HalfNormal, Pareto, ContinuousBernoulli, the low-rank normals) and the cross-family pairs (a law against
Normal, Exponential, Gamma, Beta, Gumbel, Laplace, Uniform, Pareto, ContinuousBernoulli, Poisson, Binomial), with
PyTorch's infinities where p's support is not inside q's.  Importing the module registers them."""
from __future__ import annotations

import math

import coretorch as torch

from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import Bernoulli, Binomial, Poisson
from .distribution import ExponentialFamily
from .gamma_family import Beta, Gamma
from .kl import _inf_where, _kl_normal_normal, register_kl
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis, _batch_mv
from .transformed_laws import Gumbel, HalfNormal, Pareto
from .utils import _sum_rightmost, euler_constant as _EULER

__all__: list[str] = []

_LOG_2PI = math.log(2 * math.pi)


def _infinite_like(t):
    return torch.full_like(t, math.inf)


def _x_log_x(t):
    return torch.special.xlogy(t, t)  # 0 at t == 0


def _trace_XXT(m):
    """trace(M M^T) over the last two dims."""
    return m.pow(2).sum((-2, -1))


def _lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + diag(D))^-1 x by the Woodbury identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, _batch_mv(Wt_Dinv, x))


def _check_event(p, q) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with different event shapes "
                         "cannot be computed")


def _woodbury_A(q):
    """A with inv(cov_q) = inv(D_q) - A^T A."""
    Wt_Dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return torch.linalg.solve_triangular(q._capacitance_tril, Wt_Dinv, upper=False)


# same family

@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normaliser, for two laws of the same exponential family class."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_nparams = [t.detach().requires_grad_() for t in p._natural_params]
    q_nparams = q._natural_params
    with torch.enable_grad():
        lg_normal = p._log_normalizer(*p_nparams)
        gradients = torch.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log() - (4 * p.scale * q.scale).log()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + torch.log1p(-p.probs)
            - q._cont_bern_log_norm() - torch.log1p(-q.probs))


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    return (-ct1.log() - ct2 + ct3 + ct1 * _EULER + torch.exp(ct2 + (1 + ct1).lgamma() - ct3)
            - (1 + _EULER))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.scale < q.scale, result)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    _check_event(p, q)
    term1 = q._logdet() - p._logdet()
    term3 = _lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc,
                                 q._capacitance_tril)
    A = _woodbury_A(q)
    pD, qD = p._unbroadcasted_cov_diag, q._unbroadcasted_cov_diag
    term2 = ((pD / qD).sum(-1) + _trace_XXT(p._unbroadcasted_cov_factor * qD.rsqrt().unsqueeze(-1))
             - _trace_XXT(A * pD.sqrt().unsqueeze(-2)) - _trace_XXT(A.matmul(p._unbroadcasted_cov_factor)))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _check_event(p, q)
    p_L = p._unbroadcasted_scale_tril
    term1 = q._logdet() - 2 * p_L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    term3 = _lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc,
                                 q._capacitance_tril)
    A = _woodbury_A(q)
    term2 = _trace_XXT(p_L * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1)) - _trace_XXT(A.matmul(p_L))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _check_event(p, q)
    q_L = q._unbroadcasted_scale_tril
    term1 = 2 * q_L.diagonal(dim1=-2, dim2=-1).log().sum(-1) - p._logdet()
    term3 = _batch_mahalanobis(q_L, q.loc - p.loc)
    batch = torch.broadcast_shapes(q_L.shape[:-2], p._unbroadcasted_cov_factor.shape[:-2])
    n = p.event_shape[0]
    q_L = q_L.expand(tuple(batch) + (n, n))
    W = p._unbroadcasted_cov_factor.expand(tuple(batch) + (n, p.cov_factor.size(-1)))
    sqrt_D = torch.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(tuple(batch) + (n, n))
    term2 = (_trace_XXT(torch.linalg.solve_triangular(q_L, W, upper=False))
             + _trace_XXT(torch.linalg.solve_triangular(q_L, sqrt_D, upper=False)))
    return 0.5 * (term1 + term2 + term3 - n)


# different families: p's support outside q's gives inf

def _kl_infinity(attr: str):
    return lambda p, q: _infinite_like(getattr(p, attr))


for _p, _attr, _qs in ((Beta, "concentration1", (Pareto,)), (ContinuousBernoulli, "probs", (Pareto,)),
                       (Exponential, "rate", (Beta, ContinuousBernoulli, Pareto, Uniform)),
                       (Gamma, "concentration", (Beta, ContinuousBernoulli, Pareto, Uniform)),
                       (Gumbel, "loc", (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
                       (Laplace, "loc", (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
                       (Normal, "loc", (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
                       (Pareto, "scale", (Beta, ContinuousBernoulli, Uniform)),
                       (Poisson, "rate", (Bernoulli, Binomial))):
    for _q in _qs:
        register_kl(_p, _q)(_kl_infinity(_attr))


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
@register_kl(Uniform, ContinuousBernoulli)
def _kl_to_continuous_bernoulli(p, q):
    result = -p.entropy() - p.mean * q.logits - torch.log1p(-q.probs) - q._cont_bern_log_norm()
    if isinstance(p, Uniform):  # inf where p leaves [0, 1]
        result = _inf_where((p.high > 1) | (p.low < 0), result)
    return result


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    total = p.concentration1 + p.concentration0
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (p.concentration1.digamma() - total.digamma())
    return -p.entropy() + t2 - t3 + q.rate * p.concentration1 / total


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    total = p.concentration1 + p.concentration0
    mean = p.concentration1 / total
    var_normal = q.scale.pow(2)
    second_moment_half = (mean * (1 - mean) / (total + 1) + mean.pow(2)) * 0.5
    return (-p.entropy() + 0.5 * (var_normal * 2 * math.pi).log()
            + (second_moment_half - q.loc * mean + q.loc.pow(2) * 0.5) / var_normal)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    return _inf_where((q.low > 0) | (q.high < 1), -p.entropy() + (q.high - q.low).log())


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - torch.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    t2 = 0.5 * (_LOG_2PI + torch.square(q.loc / q.scale)) + torch.log(q.scale)
    t3 = (p.variance + torch.square(p.mean) - 2.0 * q.loc * p.mean) / (2.0 * torch.square(q.scale))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):  # finite only where q covers [0, 1]
    return _inf_where((q.low > 0) | (q.high < 1), -p.entropy() + (q.high - q.low).log())


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * torch.log(ratio) + ratio + q.concentration.lgamma() + q.concentration * _EULER
            - (1 + _EULER))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    prod = p.rate * q.scale
    loc_scale = q.loc / q.scale
    return prod.log() - 1 - loc_scale + torch.exp(loc_scale) * prod / (prod + 1) + prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * torch.log(rate_sqr * var_normal * 2 * math.pi)
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var_normal


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    a = p.concentration
    prod = p.rate * q.scale
    loc_scale = q.loc / q.scale
    t1 = (a - 1) * a.digamma() - a.lgamma() - a
    t2 = prod.log() + a / prod
    t3 = torch.exp(loc_scale) * (1 + prod.reciprocal()).pow(-a) - loc_scale
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    a = p.concentration
    var_normal = q.scale.pow(2)
    beta_sqr = p.rate.pow(2)
    t1 = 0.5 * torch.log(beta_sqr * var_normal * 2 * math.pi) - a - a.lgamma()
    t2 = 0.5 * (a.pow(2) + a) / beta_sqr
    return t1 + (a - 1) * a.digamma() + (t2 - q.loc * a / p.rate + 0.5 * q.loc.pow(2)) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var_normal = q.scale.pow(2)
    ratio = p.scale.pow(2) / var_normal
    t1 = 0.5 * torch.log(2 * ratio / math.pi)
    return -t1 + ratio + (0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)) / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_scale = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_scale = q.loc / q.scale
    return (-var_ratio.log() * 0.5 + mean_scale - loc_scale + torch.exp(-mean_scale + 0.5 * var_ratio + loc_scale)
            - 0.5 * (1 + _LOG_2PI))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    diff = p.loc - q.loc
    z = diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * torch.exp(-0.5 * z.pow(2))
    t3 = diff * torch.erf(math.sqrt(0.5) * z)
    return -torch.log(p.scale / q.scale) + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    prod = p.scale * q.rate
    result = (p.alpha / prod).log() - p.alpha.reciprocal() + p.alpha * prod / (p.alpha - 1) - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common = p.scale.log() + p.alpha.reciprocal()
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = p.alpha.log() - common + t2 + (1 - q.concentration) * common + t4 - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    return _inf_where(p.alpha <= 2, t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    return _inf_where((p.high > 1) | (p.low < 0), t3 + t4 - torch.log(width) - t2)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < 0, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < 0, -width.log() + t2 + t3 + q.rate * (p.high + p.low) / 2)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    common = q.scale / (p.high - p.low)
    high_z = (p.high - q.loc) / q.scale
    low_z = (p.low - q.loc) / q.scale
    return common.log() + 0.5 * (high_z + low_z) - common * (torch.exp(-high_z) - torch.exp(-low_z))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.scale, t2 * (q.alpha + 1) - t1)
