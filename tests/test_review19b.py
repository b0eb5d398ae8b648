"""Review 19b: torch.distributions against PyTorch 2.13 (eager): log_prob/cdf/icdf/entropy/moments at and off the
support, sample shapes, gradients of log_prob and rsample, validation, kl_divergence, transforms,
Independent/MixtureSameFamily, Categorical/OneHotCategorical, the relaxed laws; on every installed device.
Expected values come from scipy/numpy/math or from facts PyTorch documents, never from PyTorch itself."""
import math

import numpy as np
import pytest
import scipy.special as sp

import coretorch as torch
import coretorch.distributions as D


def _t(x, device, requires_grad=False):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device, requires_grad=requires_grad)


def test_beta_and_dirichlet_log_prob_gradient_at_concentration_one(device):
    """d/dc0 log Beta(x; c1, c0) = log(1 - x) - digamma(c0) + digamma(c1 + c0), also at c0 == 1 (the log_prob's
    xlogy(c0 - 1, 1 - x) has x == 0 there).  PyTorch's xlogy gradient is xlogy(grad, y), zeroed only where x == 0
    and y <= 0; coretorch's was xlogy(x != 0, y), 0 at x == 0, so the gradient lost log(1 - x) (0.614 for 0.257)."""
    c1 = _t([0.5, 3.0], device, True)
    c0 = _t([1.0, 1.0], device, True)
    x = np.array([0.3, 0.9])
    D.Beta(c1, c0).log_prob(_t(x, device)).sum().backward()
    a, b = np.array([0.5, 3.0]), np.array([1.0, 1.0])
    np.testing.assert_allclose(c0.grad.cpu().numpy(), np.log1p(-x) - sp.digamma(b) + sp.digamma(a + b), rtol=1e-12)
    np.testing.assert_allclose(c1.grad.cpu().numpy(), np.log(x) - sp.digamma(a) + sp.digamma(a + b), rtol=1e-12)
    conc = _t([[1.0, 2.0, 1.0]], device, True)
    v = np.array([[0.2, 0.3, 0.5]])
    D.Dirichlet(conc).log_prob(_t(v, device)).sum().backward()
    c = np.array([[1.0, 2.0, 1.0]])
    np.testing.assert_allclose(conc.grad.cpu().numpy(), np.log(v) - sp.digamma(c) + sp.digamma(c.sum()), rtol=1e-12)


@pytest.mark.parametrize("fn,shift", [(torch.xlogy, 0.0), (torch.special.xlog1py, 1.0)])
def test_xlogy_gradient_at_x_zero(device, fn, shift):
    """PyTorch (Note [Gradient formula for xlogy at x = 0, y <= 0]): d/dx xlogy(x, y) = log(y) wherever y > 0, x == 0
    included, and 0 at x == 0 with y <= 0 (xlog1py: log1p(y), 0 at x == 0 with y <= -1); a Python-number y as well.
    coretorch gave 0 at every x == 0."""
    x = _t([0.0, 0.0, 0.0, 0.5], device, True)
    y = np.array([0.7, 2.0, -shift, 2.0])
    fn(x, _t(y, device)).sum().backward()
    log = np.log1p if shift else np.log
    expected = np.where(np.arange(4) == 2, 0.0, log(np.where(np.arange(4) == 2, 1.0, y)))
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected, rtol=1e-12)
    for number in (0.7, -shift - 0.5):
        x.grad = None
        fn(x, number).sum().backward()
        want = np.full(4, float(log(number)) if number > -shift else math.nan)
        if number <= -shift:
            want[:3] = 0.0
        np.testing.assert_allclose(x.grad.cpu().numpy(), want, rtol=1e-12)


def test_mixture_same_family_support_checks_each_batch_against_its_components(device):
    """PyTorch 2.13's MixtureSameFamily.support is MixtureSameFamilyConstraint(component support): the value gets the
    component dimension back before the check, and must satisfy every component of its own batch entry.  coretorch
    checked the bare value against the components' (batch + (K,))-shaped support: with K == batch size a valid value
    was compared with the wrong batch entry's bounds and rejected; otherwise a broadcasting RuntimeError."""
    cat2 = D.Categorical(_t(np.ones((2, 2)), device))
    mix = D.MixtureSameFamily(cat2, D.Uniform(_t([[0., 0.], [10., 10.]], device), _t([[1., 1.], [11., 11.]], device)))
    assert repr(mix.support).startswith("MixtureSameFamilyConstraint(Interval(")
    assert mix.support.event_dim == 0 and not mix.support.is_discrete
    np.testing.assert_allclose(mix.log_prob(_t([0.5, 10.5], device)).cpu().numpy(), [0.0, 0.0], atol=1e-15)
    assert mix.support.check(_t([[0.5, 10.5], [10.5, 0.5]], device)).cpu().numpy().tolist() == [[True, True],
                                                                                                 [False, False]]
    cat3 = D.Categorical(_t(np.ones((2, 3)), device))
    mix3 = D.MixtureSameFamily(cat3, D.Uniform(_t([[0., 0., 0.], [0., 1., 2.]], device),
                                               _t([[5., 6., 7.], [3., 3., 3.]], device)))
    np.testing.assert_allclose(mix3.log_prob(_t([1., 2.5], device)).cpu().numpy(),
                               [math.log(np.mean([1 / 5, 1 / 6, 1 / 7])), math.log(np.mean([1 / 3, 1 / 2, 1]))])
    with pytest.raises(ValueError, match="within the support"):
        mix3.log_prob(_t([6., 2.5], device))  # 6 is outside the first component of batch entry 0
    binom = D.MixtureSameFamily(D.Categorical(_t([0.5, 0.5], device)),
                                D.Binomial(_t([2., 5.], device), _t([0.3, 0.6], device)))
    assert binom.support.is_discrete
    with pytest.raises(ValueError, match="within the support"):
        binom.log_prob(_t([0., 2., 4.], device))  # 4 > total_count 2 of the first component
    with pytest.raises(ValueError, match="needs to be an instance"):
        D.MixtureSameFamily(D.Categorical(_t([0.5, 0.5], device)), _t([0., 1.], device))
    mvn = D.MixtureSameFamily(D.Categorical(_t([0.3, 0.7], device)),
                              D.Independent(D.Normal(_t(np.zeros((2, 2)), device), _t(np.ones((2, 2)), device)), 1))
    assert mvn.support.event_dim == 1
    assert mvn.support.check(_t([[0.5, 1.], [2., 3.]], device)).cpu().numpy().tolist() == [True, True]


# (p, q): coretorch constructors from float lists and the matching scipy.stats laws; KL(p || q) by quadrature
_KL_CONT = {
    "Normal-Laplace": ("Normal", (0.3, 1.2), "Laplace", (-0.5, 0.8)),
    "Normal-Gumbel": ("Normal", (0.3, 1.2), "Gumbel", (-0.5, 1.5)),
    "Laplace-Normal": ("Laplace", (0.3, 1.2), "Normal", (-0.5, 1.8)),
    "Gumbel-Normal": ("Gumbel", (0.3, 1.2), "Normal", (-0.5, 1.8)),
    "Gumbel-Gumbel": ("Gumbel", (0.3, 1.2), "Gumbel", (-0.5, 1.8)),
    "Cauchy-Cauchy": ("Cauchy", (0.3, 1.2), "Cauchy", (-0.5, 1.8)),
    "HalfNormal-HalfNormal": ("HalfNormal", (1.2,), "HalfNormal", (0.7,)),
    "Exponential-Gamma": ("Exponential", (1.5,), "Gamma", (2.5, 1.2)),
    "Exponential-Gumbel": ("Exponential", (1.5,), "Gumbel", (0.5, 1.2)),
    "Exponential-Normal": ("Exponential", (1.5,), "Normal", (0.5, 1.2)),
    "Gamma-Exponential": ("Gamma", (2.5, 1.2), "Exponential", (0.7,)),
    "Gamma-Gumbel": ("Gamma", (2.5, 1.2), "Gumbel", (1.5, 2.0)),
    "Gamma-Normal": ("Gamma", (2.5, 1.2), "Normal", (1.5, 2.0)),
    "Beta-Exponential": ("Beta", (2.5, 1.2), "Exponential", (0.7,)),
    "Beta-Gamma": ("Beta", (2.5, 1.2), "Gamma", (1.5, 2.0)),
    "Beta-Normal": ("Beta", (2.5, 1.2), "Normal", (0.2, 0.5)),
    "Beta-Uniform": ("Beta", (2.5, 1.2), "Uniform", (-0.5, 2.0)),
    "Pareto-Pareto": ("Pareto", (1.5, 3.0), "Pareto", (1.0, 2.0)),
    "Pareto-Exponential": ("Pareto", (1.5, 3.0), "Exponential", (0.7,)),
    "Pareto-Gamma": ("Pareto", (1.5, 3.0), "Gamma", (2.5, 1.2)),
    "Pareto-Normal": ("Pareto", (1.5, 3.0), "Normal", (2.0, 1.5)),
    "Uniform-Beta": ("Uniform", (0.2, 0.7), "Beta", (2.5, 1.2)),
    "Uniform-Exponential": ("Uniform", (0.2, 1.7), "Exponential", (0.7,)),
    "Uniform-Gamma": ("Uniform", (0.2, 1.7), "Gamma", (2.5, 1.2)),
    "Uniform-Gumbel": ("Uniform", (-0.2, 1.7), "Gumbel", (0.5, 1.2)),
    "Uniform-Pareto": ("Uniform", (1.2, 1.7), "Pareto", (1.0, 2.5)),
}


def _scipy_law(name, a):
    import scipy.stats as st
    return {"Normal": lambda: st.norm(a[0], a[1]), "Laplace": lambda: st.laplace(a[0], a[1]),
            "Gumbel": lambda: st.gumbel_r(a[0], a[1]), "Cauchy": lambda: st.cauchy(a[0], a[1]),
            "HalfNormal": lambda: st.halfnorm(scale=a[0]), "Exponential": lambda: st.expon(scale=1 / a[0]),
            "Gamma": lambda: st.gamma(a[0], scale=1 / a[1]), "Beta": lambda: st.beta(a[0], a[1]),
            "Uniform": lambda: st.uniform(a[0], a[1] - a[0]), "Pareto": lambda: st.pareto(a[1], scale=a[0])}[name]()


@pytest.mark.parametrize("pair", sorted(_KL_CONT))
def test_kl_divergence_of_every_pytorch_pair_by_quadrature(device, pair):
    """PyTorch 2.13 registers KL closed forms for these pairs (same family and across families); coretorch had
    only 17 of PyTorch's 87 registered pairs and raised NotImplementedError for these.  The value is checked against
    the integral of p log(p / q) over p's support (scipy.integrate.quad), with a batch of two equal entries."""
    from scipy.integrate import quad
    pn, pa, qn, qa = _KL_CONT[pair]
    p = getattr(D, pn)(*[_t([v, v], device) for v in pa])
    q = getattr(D, qn)(*[_t([v, v], device) for v in qa])
    kl = D.kl_divergence(p, q)
    sp_, sq = _scipy_law(pn, pa), _scipy_law(qn, qa)
    lo, hi = sp_.support()

    def integrand(x):
        d = sp_.pdf(x)
        return 0.0 if d == 0 else d * (sp_.logpdf(x) - sq.logpdf(x))
    expected = quad(integrand, lo, hi, epsabs=1e-13, epsrel=1e-11, limit=400)[0]
    assert kl.shape == (2,) and kl.dtype == torch.float64
    np.testing.assert_allclose(kl.cpu().numpy(), [expected, expected], rtol=1e-7, atol=1e-9)


def test_kl_divergence_infinite_and_lowrank_pairs(device):
    """PyTorch 2.13: KL is inf where p's support is not inside q's (a real-line law against a positive or bounded
    one, Poisson against Bernoulli/Binomial, Uniform leaving Beta's [0, 1], Pareto with p.scale < q.scale, Pareto's
    alpha <= 1 against Exponential); the low-rank normal pairs equal the dense MultivariateNormal KL (closed form in
    numpy here); Bernoulli || Poisson is a two-term sum.  coretorch raised NotImplementedError for all of them."""
    t = lambda x: _t(x, device)  # noqa: E731
    inf2 = [math.inf, math.inf]
    for p, q in [(D.Normal(t([0., 1.]), t([1., 2.])), D.Exponential(t([1., 2.]))),
                 (D.Laplace(t([0., 1.]), t([1., 2.])), D.Uniform(t([0., 1.]), t([1., 2.]))),
                 (D.Gumbel(t([0., 1.]), t([1., 2.])), D.Gamma(t([1., 2.]), t([1., 2.]))),
                 (D.Exponential(t([1., 2.])), D.Beta(t([1., 2.]), t([1., 2.]))),
                 (D.Gamma(t([1., 2.]), t([1., 2.])), D.Pareto(t([1., 2.]), t([1., 2.]))),
                 (D.Poisson(t([1., 2.])), D.Bernoulli(t([0.3, 0.5]))),
                 (D.Poisson(t([1., 2.])), D.Binomial(5, t([0.3, 0.5])))]:
        assert D.kl_divergence(p, q).cpu().numpy().tolist() == inf2
    got = D.kl_divergence(D.Uniform(t([-0.1, 0.2]), t([0.5, 0.7])), D.Beta(t([2., 2.]), t([3., 3.])))
    assert math.isinf(got[0].item()) and math.isfinite(got[1].item())
    got = D.kl_divergence(D.Pareto(t([1., 2.]), t([3., 3.])), D.Pareto(t([1.5, 1.]), t([2., 2.])))
    assert math.isinf(got[0].item()) and math.isfinite(got[1].item())
    got = D.kl_divergence(D.Pareto(t([1., 2.]), t([1., 0.5])), D.Exponential(t([2., 3.])))
    assert got.cpu().numpy().tolist() == inf2
    rate, prob = np.array([1.5, 3.0]), np.array([0.2, 0.7])
    expected = prob * np.log(prob) + (1 - prob) * np.log1p(-prob) - prob * np.log(rate) + rate
    np.testing.assert_allclose(D.kl_divergence(D.Bernoulli(t(prob)), D.Poisson(t(rate))).cpu().numpy(), expected,
                               rtol=1e-12)

    def mvn_kl(m0, S0, m1, S1):
        S1i = np.linalg.inv(S1)
        return 0.5 * (np.trace(S1i @ S0) + (m1 - m0) @ S1i @ (m1 - m0) - len(m0)
                      + np.log(np.linalg.det(S1) / np.linalg.det(S0)))
    W0, d0, m0 = np.array([[1.], [0.5], [0.2]]), np.array([1., 2., 0.5]), np.array([0., 1., -1.])
    W1, d1, m1 = np.array([[0.3, 0.1], [0.2, 0.4], [1., 0.]]), np.array([0.7, 1., 1.5]), np.array([1., 0., 0.5])
    S0, S1 = W0 @ W0.T + np.diag(d0), W1 @ W1.T + np.diag(d1)
    lr0, lr1 = D.LowRankMultivariateNormal(t(m0), t(W0), t(d0)), D.LowRankMultivariateNormal(t(m1), t(W1), t(d1))
    full0, full1 = D.MultivariateNormal(t(m0), t(S0)), D.MultivariateNormal(t(m1), t(S1))
    for p, q, want in [(lr0, lr1, mvn_kl(m0, S0, m1, S1)), (lr0, full1, mvn_kl(m0, S0, m1, S1)),
                       (full0, lr1, mvn_kl(m0, S0, m1, S1)), (lr1, lr0, mvn_kl(m1, S1, m0, S0))]:
        np.testing.assert_allclose(D.kl_divergence(p, q).item(), want, rtol=1e-10)
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(D.MultivariateNormal(t(np.zeros(2)), t(np.eye(2))), lr0)


def test_kl_divergence_continuous_bernoulli_pairs(device):
    """PyTorch 2.13 registers ContinuousBernoulli against ContinuousBernoulli, Exponential, Normal, Uniform and
    Pareto (inf), and Beta/Uniform against ContinuousBernoulli; coretorch raised NotImplementedError.  Checked
    against the quadrature of p log(p / q) with the density lam^x (1 - lam)^(1 - x) C(lam) written out here."""
    import scipy.stats as st
    from scipy.integrate import quad

    def cb_logpdf(x, lam):
        norm = np.log(2 * np.arctanh(1 - 2 * lam) / (1 - 2 * lam))
        return x * np.log(lam) + (1 - x) * np.log1p(-lam) + norm

    def kl(lp, lq, lo=0.0, hi=1.0):
        return quad(lambda x: np.exp(lp(x)) * (lp(x) - lq(x)), lo, hi, epsabs=1e-13, epsrel=1e-11)[0]
    lam, lam2 = 0.3, 0.8
    t = lambda x: _t([x], device)  # noqa: E731
    cb, cb2 = D.ContinuousBernoulli(t(lam)), D.ContinuousBernoulli(t(lam2))
    cases = [(cb, cb2, kl(lambda x: cb_logpdf(x, lam), lambda x: cb_logpdf(x, lam2))),
             (cb, D.Exponential(t(1.5)), kl(lambda x: cb_logpdf(x, lam), st.expon(scale=1 / 1.5).logpdf)),
             (cb, D.Normal(t(0.2), t(0.7)), kl(lambda x: cb_logpdf(x, lam), st.norm(0.2, 0.7).logpdf)),
             (cb, D.Uniform(t(-0.5), t(2.0)), kl(lambda x: cb_logpdf(x, lam), st.uniform(-0.5, 2.5).logpdf)),
             (D.Beta(t(2.5), t(1.2)), cb, kl(st.beta(2.5, 1.2).logpdf, lambda x: cb_logpdf(x, lam))),
             (D.Uniform(t(0.2), t(0.7)), cb2, kl(st.uniform(0.2, 0.5).logpdf, lambda x: cb_logpdf(x, lam2), 0.2, 0.7))]
    for p, q, want in cases:
        np.testing.assert_allclose(D.kl_divergence(p, q).item(), want, rtol=1e-7)
    assert D.kl_divergence(cb, D.Pareto(t(1.), t(2.))).item() == math.inf
    assert D.kl_divergence(cb, D.Uniform(t(0.1), t(2.0))).item() == math.inf
    # Uniform(0, 1) covers the support exactly: KL = -entropy (PyTorch 2.13's non-strict bounds give inf here)
    np.testing.assert_allclose(D.kl_divergence(cb, D.Uniform(t(0.0), t(1.0))).item(), -cb.entropy().item(),
                               rtol=1e-12)
    np.testing.assert_allclose(D.kl_divergence(D.Uniform(t(0.0), t(1.0)), cb).item(),
                               -quad(lambda x: cb_logpdf(x, lam), 0, 1)[0], rtol=1e-9)


def test_cat_and_corr_cholesky_transforms_and_their_registry(device):
    """PyTorch 2.13 has transforms.CatTransform and CorrCholeskyTransform, and biject_to/transform_to of
    constraints.cat, constraints.corr_cholesky (and biject_to of constraints.stack) return them; coretorch had
    neither transform and raised NotImplementedError("Cannot transform ...") from the registry.  Values: the
    pieces' own maps; a correlation Cholesky factor has unit rows and a positive diagonal; the log-Jacobian is
    log|det| of the finite-difference Jacobian of x -> strictly lower triangle of y."""
    Tr = D.transforms
    x = np.array([-1.0, 0.5, 2.0])
    cat = Tr.CatTransform([Tr.ExpTransform(), Tr.AffineTransform(1.0, 2.0)], dim=0, lengths=[1, 2])
    y = cat(_t(x, device))
    np.testing.assert_allclose(y.cpu().numpy(), [math.exp(-1.0), 2.0, 5.0], rtol=1e-15)
    np.testing.assert_allclose(cat.inv(y).cpu().numpy(), x, rtol=1e-15)
    np.testing.assert_allclose(cat.log_abs_det_jacobian(_t(x, device), y).cpu().numpy(), [-1.0, math.log(2),
                                                                                            math.log(2)])
    assert cat.bijective and cat.event_dim == 0 and repr(cat.codomain) == "Cat()"
    for reg in (D.biject_to, D.transform_to):
        t_cat = reg(D.constraints.cat([D.constraints.positive, D.constraints.real], 0, [2, 1]))
        assert isinstance(t_cat, Tr.CatTransform)
        assert D.constraints.cat([D.constraints.positive, D.constraints.real], 0, [2, 1]).check(
            t_cat(_t([-3.0, 0.0, -7.0], device))).all()
    assert isinstance(D.biject_to(D.constraints.stack([D.constraints.positive, D.constraints.real], 0)),
                      Tr.StackTransform)
    corr = D.biject_to(D.constraints.corr_cholesky)
    assert isinstance(corr, Tr.CorrCholeskyTransform) and isinstance(D.transform_to(D.constraints.corr_cholesky),
                                                                     Tr.CorrCholeskyTransform)
    xv = np.array([0.3, -0.2, 0.5, 1.1, -0.7, 0.05])  # D = 4
    L = corr(_t(xv, device))
    Ln = L.cpu().numpy()
    assert L.shape == (4, 4) and corr.forward_shape((2, 6)) == (2, 4, 4) and corr.inverse_shape((4, 4)) == (6,)
    np.testing.assert_allclose((Ln ** 2).sum(-1), np.ones(4), rtol=1e-14)
    assert np.all(np.diag(Ln) > 0) and np.allclose(np.triu(Ln, 1), 0)
    assert D.constraints.corr_cholesky.check(L).item()
    np.testing.assert_allclose(corr.inv(L).cpu().numpy(), xv, rtol=1e-12)
    rows, cols = np.tril_indices(4, -1)

    def f(v):
        return corr(_t(v, device)).cpu().numpy()[rows, cols]
    h = 1e-6
    J = np.stack([(f(xv + h * e) - f(xv - h * e)) / (2 * h) for e in np.eye(6)], axis=1)
    np.testing.assert_allclose(corr.log_abs_det_jacobian(_t(xv, device), L).item(), np.linalg.slogdet(J)[1],
                               rtol=1e-7)
    # PyTorch: shape maps return torch.Size; CumulativeDistributionTransform's codomain is unit_interval itself
    assert type(Tr.StickBreakingTransform().forward_shape(torch.Size([2, 3]))) is torch.Size
    assert type(Tr.ReshapeTransform((2, 3), (6,)).inverse_shape(torch.Size([6]))) is torch.Size
    assert repr(Tr.CumulativeDistributionTransform(D.Normal(0.0, 1.0)).codomain) == \
        "Interval(lower_bound=0.0, upper_bound=1.0)"


def test_beta_dirichlet_gamma_draws_with_small_concentrations(device):
    """PyTorch draws Dirichlet's (so Beta's) Gamma variates in double and clamps the normalised draw into
    [tiny, nextafter(1, 0)]; Gamma.rsample clamps value / rate to at least tiny.  coretorch normalised in the input
    dtype without a clamp: Beta(1e-3, 1e-3) drew exactly 1.0 about a third of the time (log_prob +inf), and in
    float32 u^(1/alpha) underflowed so Beta(0.01, 0.01) drew 0.5 far too often (a visibly smaller variance); a
    Gamma draw divided by a huge rate became 0.  Sampling statistics are seeded (coretorch's generator is not
    PyTorch's); the variance of Beta(c, c) is 1 / (4 (2c + 1))."""
    torch.manual_seed(0)
    c = _t(np.full(4000, 1e-3), device, True)
    beta = D.Beta(c, c)
    x = beta.rsample()
    assert bool(((x > 0) & (x < 1)).all()) and x.max().item() <= 1 - 2.0 ** -53
    assert bool(torch.isfinite(beta.log_prob(x.detach())).all())
    x.sum().backward()
    assert bool(torch.isfinite(c.grad).all())
    d = torch._sample_dirichlet(_t(np.full((4000, 2), 1e-3), device))
    assert d.min().item() > 0 and d.max().item() < 1
    cf = torch.full((20000,), 0.01, dtype=torch.float32, device=device)
    s = D.Beta(cf, cf).sample().double()
    assert abs(s.var().item() - 1 / (4 * 1.02)) < 0.006
    assert ((s > 0.01) & (s < 0.99)).double().mean().item() < 0.1
    g = D.Gamma(_t([1e-3, 2.0], device), _t([1e300, 1.0], device)).rsample((2000,))
    assert g.min().item() == np.finfo(np.float64).tiny or g.min().item() > 0


def test_exponential_family_laws_and_the_bregman_kl(device):
    """In PyTorch 2.13 Normal, Exponential, Gamma (so Chi2), Beta, Dirichlet, Bernoulli, Poisson and
    ContinuousBernoulli are ExponentialFamily subclasses with _natural_params/_log_normalizer, and
    kl_divergence(ExponentialFamily, ExponentialFamily) is the Bregman divergence of the log normaliser for two
    laws of one class (NotImplementedError across classes).  coretorch's laws were plain Distributions and no such
    KL was registered: a user's ExponentialFamily subclass had no KL."""
    for name in ("Normal", "Exponential", "Gamma", "Chi2", "Beta", "Dirichlet", "Bernoulli", "Poisson",
                 "ContinuousBernoulli"):
        assert issubclass(getattr(D, name), D.ExponentialFamily), name
    for name in ("Laplace", "Categorical", "Binomial", "Uniform", "StudentT", "MultivariateNormal"):
        assert not issubclass(getattr(D, name), D.ExponentialFamily), name

    class Rate(D.ExponentialFamily):  # an Exponential law written only through its natural parameter
        arg_constraints: dict = {}
        _mean_carrier_measure = 0

        def __init__(self, rate):
            self.rate = rate
            super().__init__(rate.shape)

        @property
        def _natural_params(self):
            return (-self.rate,)

        def _log_normalizer(self, x):
            return -torch.log(-x)

    r1, r2 = np.array([0.5, 2.0]), np.array([1.0, 3.0])
    kl = D.kl_divergence(Rate(_t(r1, device)), Rate(_t(r2, device)))
    np.testing.assert_allclose(kl.detach().cpu().numpy(), np.log(r1 / r2) + r2 / r1 - 1, rtol=1e-12)
    np.testing.assert_allclose(Rate(_t(r1, device)).entropy().detach().cpu().numpy(), 1 - np.log(r1), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Bernoulli(_t([0.3], device)), D.Normal(_t([0.0], device), _t([1.0], device)))
    # the natural parameters reproduce the closed-form entropy through the Bregman identity
    n = D.Normal(_t([0.3, -1.0], device), _t([1.5, 0.2], device))
    np.testing.assert_allclose(D.ExponentialFamily.entropy(n).detach().cpu().numpy(), n.entropy().cpu().numpy(),
                               rtol=1e-12)
    g = D.Gamma(_t([2.5, 0.7], device), _t([1.5, 0.2], device))
    np.testing.assert_allclose(D.ExponentialFamily.entropy(g).detach().cpu().numpy(), g.entropy().cpu().numpy(),
                               rtol=1e-12)


def test_independent_constraint_argument_errors():
    """PyTorch 2.13's constraints.independent raises AssertionError("reinterpreted_batch_ndims must be >= 0, got
    -1") (and for a non-int or a non-Constraint base); coretorch raised ValueError/TypeError with other words."""
    with pytest.raises(AssertionError, match="must be >= 0, got -1"):
        D.constraints.independent(D.constraints.real, -1)
    with pytest.raises(AssertionError, match="must be an int, got float"):
        D.constraints.independent(D.constraints.real, 1.0)
    with pytest.raises(AssertionError, match="must be a Constraint, got int"):
        D.constraints.independent(3, 1)


@pytest.mark.parametrize("name,args", [("Normal", (0.0, 1.0)), ("Cauchy", (0.0, 1.0)), ("Laplace", (0.0, 1.0)),
                                       ("HalfNormal", (1.0,)), ("HalfCauchy", (1.0,))])
def test_expand_of_a_subclass_with_its_own_init(name, args):
    """PyTorch's Normal/Cauchy/Laplace/HalfNormal/HalfCauchy.expand check the instance against their own class: a
    subclass defining __init__ without expand raises NotImplementedError ("... must also define a custom .expand()
    method"), a subclass without its own __init__ expands to its own type.  coretorch checked type(self) against
    itself, so the subclass was expanded without its __init__ (attributes it sets were missing)."""
    base = getattr(D, name)

    class WithInit(base):
        def __init__(self, *a):
            super().__init__(*[torch.tensor([v], dtype=torch.float64) for v in a])
            self.extra = 1

    class Plain(base):
        pass

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        WithInit(*args).expand((2,))
    e = Plain(*[torch.tensor([v], dtype=torch.float64) for v in args]).expand((3, 1))
    assert type(e) is Plain and e.batch_shape == (3, 1) and e.mean.shape == (3, 1)


def test_mixed_dtype_value_in_multivariate_normal_and_half_cauchy(device):
    """PyTorch 2.13: torch.linalg.solve_triangular solves in A's dtype (a float64 B with a float32 A gives float32),
    so MultivariateNormal(float32).log_prob(float64 value) works and is float32; HalfCauchy.log_prob reads the value
    in scale's dtype (float32) while HalfNormal's promotes (float64).  coretorch raised "linalg.solve: Expected A
    and B to have the same dtype" and HalfCauchy gave float64."""
    A = torch.tensor([[2.0, 0.0], [0.5, 1.0]], device=device, requires_grad=True)
    B = torch.tensor([[1.0], [2.0]], dtype=torch.float64, device=device, requires_grad=True)
    X = torch.linalg.solve_triangular(A, B, upper=False)
    assert X.dtype == torch.float32
    np.testing.assert_allclose(X.detach().cpu().numpy(), [[0.5], [1.75]], rtol=1e-7)
    X.sum().backward()
    assert A.grad.dtype == torch.float32 and B.grad.dtype == torch.float64
    mvn = D.MultivariateNormal(torch.zeros(2, device=device), torch.eye(2, device=device))
    lp = mvn.log_prob(torch.tensor([0.5, -1.0], dtype=torch.float64, device=device))
    assert lp.dtype == torch.float32
    np.testing.assert_allclose(lp.item(), -math.log(2 * math.pi) - 0.5 * 1.25, rtol=1e-6)
    value = torch.tensor([0.5, 2.0], dtype=torch.float64, device=device)
    assert D.HalfCauchy(torch.ones(2, device=device)).log_prob(value).dtype == torch.float32
    assert D.HalfNormal(torch.ones(2, device=device)).log_prob(value).dtype == torch.float64


def test_lkj_cholesky(device):
    """PyTorch 2.13 has distributions.LKJCholesky (coretorch: "not yet").  For dim 2, L = [[1, 0], [r, sqrt(1 -
    r^2)]] and r has density (1 - r^2)^(eta - 1) / B(1/2, eta) on (-1, 1): exp(log_prob) integrates to 1 over r.
    The onion sampler's correlations r_ij of L L^T have mean 0 and variance 1 / (2 eta + dim - 1) (seeded draws;
    coretorch's generator is not PyTorch's); draws satisfy constraints.corr_cholesky.  (PyTorch 2.13's sampler
    draws row i's squared norm from Beta(i - 1/2, .) instead of the onion method's Beta(i / 2, .): for dim >= 3 its
    correlations from the third row on have a larger variance, 0.25-0.27 instead of 0.217 here; coretorch draws
    the LKJ law.)"""
    from scipy.integrate import quad
    eta = 1.7
    lkj2 = D.LKJCholesky(2, _t(eta, device))

    def density(r):
        L = _t([[1.0, 0.0], [r, math.sqrt(1 - r * r)]], device)
        return math.exp(lkj2.log_prob(L).item())
    total = quad(density, -1, 1)[0]
    np.testing.assert_allclose(total, 1.0, rtol=1e-9)
    torch.manual_seed(0)
    lkj = D.LKJCholesky(4, _t([0.8, 3.0], device))
    assert lkj.batch_shape == (2,) and lkj.event_shape == (4, 4)
    L = lkj.sample((6000,))
    assert L.shape == (6000, 2, 4, 4) and bool(D.constraints.corr_cholesky.check(L).all())
    M = (L @ L.mT).cpu().numpy()
    rows, cols = np.tril_indices(4, -1)
    r = M[..., rows, cols]  # (6000, 2, 6)
    var = 1 / (2 * np.array([0.8, 3.0]) + 3)
    np.testing.assert_allclose(r.var(0).mean(-1), var, rtol=0.05)
    assert np.all(np.abs(r.mean(0)) < 5 * np.sqrt(var[:, None] / 6000))
    e = lkj.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.log_prob(L[:1]).shape == (3, 2)
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        D.LKJCholesky(1)


def test_wishart(device):
    """PyTorch 2.13 has distributions.Wishart (coretorch: "not yet"): log_prob and entropy are scipy.stats.wishart's
    for each of the covariance/precision/scale_tril parameterisations, mean df * cov, Bartlett draws are positive
    definite with that mean (seeded; coretorch's generator is not PyTorch's), rsample carries gradients to df and
    the scale, df <= p - 1 raises ValueError."""
    import scipy.stats as st
    cov = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 1.5]])
    V = np.array([[3.0, 0.2, 0.4], [0.2, 2.0, 0.1], [0.4, 0.1, 1.0]])
    dfs = np.array([4.0, 6.5])
    for kind, M in [("covariance_matrix", cov), ("precision_matrix", np.linalg.inv(cov)),
                    ("scale_tril", np.linalg.cholesky(cov))]:
        w = D.Wishart(_t(dfs, device), **{kind: _t(M, device)})
        assert w.batch_shape == (2,) and w.event_shape == (3, 3) and w.has_rsample
        np.testing.assert_allclose(w.log_prob(_t(V, device)).cpu().numpy(),
                                   [st.wishart(df, cov).logpdf(V) for df in dfs], rtol=1e-10)
        np.testing.assert_allclose(w.entropy().cpu().numpy(), [st.wishart(df, cov).entropy() for df in dfs],
                                   rtol=1e-10)
        np.testing.assert_allclose(w.mean.cpu().numpy(), dfs[:, None, None] * cov, rtol=1e-12)
    torch.manual_seed(0)
    df = _t(dfs, device, True)
    L = _t(np.linalg.cholesky(cov), device, True)
    s = D.Wishart(df, scale_tril=L).rsample((4000,))
    assert bool(D.constraints.positive_definite.check(s.detach()).all())
    sn = s.detach().cpu().numpy()
    sd = np.sqrt(dfs[:, None, None] * (cov ** 2 + np.outer(np.diag(cov), np.diag(cov))) / 4000)
    assert np.all(np.abs(sn.mean(0) - dfs[:, None, None] * cov) < 5 * sd)
    s.sum().backward()
    assert bool(torch.isfinite(df.grad).all()) and bool(torch.isfinite(L.grad).all())
    with pytest.raises(ValueError, match="greater than ndim - 1"):
        D.Wishart(_t(1.5, device), _t(cov, device))
