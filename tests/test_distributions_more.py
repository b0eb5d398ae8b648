"""Gumbel, HalfNormal, HalfCauchy, Pareto, Weibull, Kumaraswamy, InverseGamma, LogisticNormal: densities and
entropies against scipy.stats (closed forms), moments by sampling with fixed seeds, reparameterised gradients,
expand, and every device."""
import math

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import coretorch as torch
import coretorch.distributions as D
from coretorch.testing import available_devices

DEVICES = available_devices()
V = np.array([0.3, 1.2, 2.5])


def _t(x, device):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device)


def _kumaraswamy_logpdf(x, a, b):
    return np.log(a) + np.log(b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a)


# name -> (constructor from float64 tensors, parameters, scipy frozen law or None, values inside the support)
LAWS = {
    "Gumbel": (lambda p: D.Gumbel(p[0], p[1]), ([1.0, -0.5, 0.2], [2.0, 0.7, 1.1]),
               lambda p: st.gumbel_r(p[0], p[1]), V),
    "HalfNormal": (lambda p: D.HalfNormal(p[0]), ([1.5, 0.4, 2.0],), lambda p: st.halfnorm(scale=p[0]), V),
    "HalfCauchy": (lambda p: D.HalfCauchy(p[0]), ([1.5, 0.4, 2.0],), lambda p: st.halfcauchy(scale=p[0]), V),
    "Pareto": (lambda p: D.Pareto(p[0], p[1]), ([1.0, 0.5, 0.2], [3.0, 1.5, 4.5]),
               lambda p: st.pareto(p[1], scale=p[0]), np.array([1.3, 2.2, 3.0])),
    "Weibull": (lambda p: D.Weibull(p[0], p[1]), ([2.0, 0.5, 1.0], [1.5, 0.8, 3.0]),
                lambda p: st.weibull_min(p[1], scale=p[0]), V),
    "InverseGamma": (lambda p: D.InverseGamma(p[0], p[1]), ([3.0, 1.5, 4.0], [2.0, 0.5, 1.0]),
                     lambda p: st.invgamma(p[0], scale=p[1]), V),
    "Kumaraswamy": (lambda p: D.Kumaraswamy(p[0], p[1]), ([2.0, 0.5, 1.5], [3.0, 1.5, 2.0]), None,
                    np.array([0.3, 0.8, 0.5])),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(LAWS))
def test_log_prob_and_entropy_match_the_closed_forms(name, device):
    make, params, ref, v = LAWS[name]
    d = make([_t(p, device) for p in params])
    lp = d.log_prob(_t(v, device)).cpu().numpy()
    p = [np.asarray(x) for x in params]
    want = ref(p).logpdf(v) if ref is not None else _kumaraswamy_logpdf(v, p[0], p[1])
    np.testing.assert_allclose(lp, want, rtol=1e-10, atol=1e-12)
    if ref is not None:
        np.testing.assert_allclose(d.entropy().cpu().numpy(), ref(p).entropy(), rtol=1e-9, atol=1e-12)
    assert d.batch_shape == (3,) and d.event_shape == ()
    e = d.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.sample().shape == (2, 3)


@pytest.mark.parametrize("name", [n for n in LAWS if n != "HalfCauchy"])
def test_sample_moments_match_mean_and_variance(name):
    make, params, _, _ = LAWS[name]
    # parameters with a finite fourth moment (Pareto alpha, InverseGamma concentration > 4), so that the sample
    # variance converges
    params = tuple([max(x, 5.0) for x in p] if name in ("Pareto", "InverseGamma") and i == (1 if name == "Pareto"
                   else 0) else p for i, p in enumerate(params))
    d = make([torch.tensor(p, dtype=torch.float64) for p in params])
    torch.manual_seed(0)
    s = d.sample((200_000,))
    m, var = d.mean, d.variance
    np.testing.assert_allclose(s.mean(0).numpy(), m.numpy(), rtol=0.03, atol=0.01)
    np.testing.assert_allclose(s.var(0).numpy(), var.numpy(), rtol=0.1, atol=0.01)


def test_kumaraswamy_moments_and_entropy_by_quadrature():
    a, b = 2.0, 3.0
    d = D.Kumaraswamy(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64))
    x = np.linspace(1e-9, 1 - 1e-9, 200_001)
    pdf = np.exp(_kumaraswamy_logpdf(x, a, b))
    mean = np.trapezoid(x * pdf, x)
    assert float(d.mean) == pytest.approx(mean, rel=1e-6)
    assert float(d.mean) == pytest.approx(b * sp.beta(1 + 1 / a, b), rel=1e-12)
    ent = -np.trapezoid(pdf * np.log(pdf), x)
    assert float(d.entropy()) == pytest.approx(ent, rel=1e-5)
    assert float(d.mode) != float(d.mode) or 0 < float(d.mode) < 1  # PyTorch's expression (NaN here)


@pytest.mark.parametrize("device", DEVICES)
def test_half_laws_cdf_icdf_and_outside_support(device):
    for d, ref in ((D.HalfNormal(_t([1.5, 0.4], device)), st.halfnorm(scale=[1.5, 0.4])),
                   (D.HalfCauchy(_t([1.5, 0.4], device)), st.halfcauchy(scale=[1.5, 0.4]))):
        v = np.array([0.3, 1.2])
        np.testing.assert_allclose(d.cdf(_t(v, device)).cpu().numpy(), ref.cdf(v), rtol=1e-10)
        np.testing.assert_allclose(d.icdf(_t([0.2, 0.7], device)).cpu().numpy(), ref.ppf([0.2, 0.7]), rtol=1e-10)
        with pytest.raises(ValueError, match="support"):  # validated by default, as in PyTorch
            d.log_prob(_t([-1.0, 0.5], device))
        unchecked = type(d)(d.scale, validate_args=False)
        assert unchecked.log_prob(_t([-1.0, 0.5], device)).cpu().numpy()[0] == -math.inf
        assert torch.equal(d.mode.cpu(), torch.zeros(2, dtype=torch.float64))
    assert math.isinf(float(D.HalfCauchy(torch.tensor(1.0)).mean))


@pytest.mark.parametrize("device", DEVICES)
def test_reparameterised_samples_carry_gradients(device):
    for make in (lambda p: D.Gumbel(p, p + 1), lambda p: D.HalfNormal(p), lambda p: D.Weibull(p, p + 1),
                 lambda p: D.Pareto(p, p + 2), lambda p: D.Kumaraswamy(p + 1, p + 2),
                 lambda p: D.InverseGamma(p + 2, p)):
        p = torch.tensor([0.7, 1.3], dtype=torch.float64, device=device, requires_grad=True)
        d = make(p)
        assert d.has_rsample
        torch.manual_seed(1)
        d.rsample((5,)).sum().backward()
        assert p.grad is not None and bool(torch.isfinite(p.grad).all())


def test_pareto_support_depends_on_scale_and_validation():
    d = D.Pareto(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 3.0]), validate_args=True)
    assert d.support.check(torch.tensor([1.5, 1.5])).tolist() == [True, False]
    with pytest.raises(ValueError, match="support"):
        d.log_prob(torch.tensor([1.5, 1.5]))
    with pytest.raises(ValueError):
        D.Weibull(torch.tensor([-1.0]), torch.tensor([1.0]), validate_args=True)


@pytest.mark.parametrize("device", DEVICES)
def test_logistic_normal_lives_on_the_simplex(device):
    loc, scale = _t([0.1, -0.3], device), _t([1.0, 0.5], device)
    d = D.LogisticNormal(loc, scale)
    assert d.event_shape == (3,) and d.batch_shape == ()
    torch.manual_seed(0)
    s = d.sample((7,))
    assert s.shape == (7, 3)
    np.testing.assert_allclose(s.sum(-1).cpu().numpy(), 1.0, rtol=1e-12)
    # log density: the normal density of the pre-image y of x under stick-breaking, minus log|det dx/dy| (the
    # Jacobian of the map to x's first K - 1 coordinates, by central differences here)
    def stick(y):
        z = 1 / (1 + np.exp(-(y - np.log(np.arange(len(y), 0, -1)))))
        rest = np.concatenate([[1.0], np.cumprod(1 - z)])
        return np.concatenate([z, [1.0]]) * rest
    x = np.array([0.2, 0.3, 0.5])
    rest = 1 - np.concatenate([[0.0], np.cumsum(x[:-1])])[:-1]
    y = sp.logit(x[:-1] / rest) + np.log(np.arange(2, 0, -1))
    np.testing.assert_allclose(stick(y), x, rtol=1e-12)
    h = 1e-6
    jac = np.stack([(stick(y + h * e)[:-1] - stick(y - h * e)[:-1]) / (2 * h) for e in np.eye(2)], axis=1)
    want = st.norm(loc.cpu().numpy(), scale.cpu().numpy()).logpdf(y).sum() - np.log(abs(np.linalg.det(jac)))
    assert float(d.log_prob(_t(x, device))) == pytest.approx(want, rel=1e-7)
