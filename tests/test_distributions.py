"""torch.distributions on every device: log_prob/cdf/entropy against scipy.stats, moments by sampling with fixed
seeds, gradients by gradcheck in float64, KL against Monte Carlo, shapes, expand, validation errors."""
import math

import numpy as np
import pytest
import scipy.stats as st

import coretorch as torch
from coretorch import distributions as D


def T(x, device, dtype=torch.float64):
    return torch.tensor(x, dtype=dtype, device=device)


def N(t):
    return t.detach().cpu().numpy()


# name -> (build(device) -> distribution, scipy frozen law with the same parameters, points to score)
LOC, SCALE = [0.5, -1.0, 2.0], [1.0, 0.5, 3.0]
LN_SCALE = [0.6, 0.5, 0.3]  # (sample moments of heavier-tailed LogNormals converge too slowly to test)
UNIVARIATE = {
    "Normal": (lambda d: D.Normal(T(LOC, d), T(SCALE, d)), st.norm(LOC, SCALE), [0.3, -2.0, 5.0]),
    "Laplace": (lambda d: D.Laplace(T(LOC, d), T(SCALE, d)), st.laplace(LOC, SCALE), [0.3, -2.0, 5.0]),
    "Cauchy": (lambda d: D.Cauchy(T(LOC, d), T(SCALE, d)), st.cauchy(LOC, SCALE), [0.3, -2.0, 5.0]),
    "Uniform": (lambda d: D.Uniform(T([0.0, -1.0, 2.0], d), T([1.0, 3.0, 2.5], d)),
                st.uniform([0.0, -1.0, 2.0], [1.0, 4.0, 0.5]), [0.3, 2.0, 2.1]),
    "Exponential": (lambda d: D.Exponential(T([0.5, 1.0, 4.0], d)), st.expon(scale=[2.0, 1.0, 0.25]),
                    [0.3, 2.0, 0.01]),
    "LogNormal": (lambda d: D.LogNormal(T(LOC, d), T(LN_SCALE, d)), st.lognorm(LN_SCALE, scale=np.exp(LOC)),
                  [0.3, 2.0, 5.0]),
}
HAS_ENTROPY = {"Normal", "Laplace", "Cauchy", "Uniform", "Exponential", "LogNormal"}


@pytest.mark.parametrize("name", sorted(UNIVARIATE))
def test_univariate_log_prob_cdf_icdf_entropy_against_scipy(device, name):
    build, ref, pts = UNIVARIATE[name]
    d = build(device)
    x = T(pts, device)
    np.testing.assert_allclose(N(d.log_prob(x)), ref.logpdf(pts), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(N(d.cdf(x)), ref.cdf(pts), rtol=1e-10, atol=1e-12)
    q = T([0.1, 0.5, 0.9], device)
    np.testing.assert_allclose(N(d.icdf(q)), ref.ppf([0.1, 0.5, 0.9]), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-10)
    assert d.batch_shape == torch.Size([3]) and d.event_shape == torch.Size([])


@pytest.mark.parametrize("name", sorted(set(UNIVARIATE) - {"Cauchy"}))
def test_univariate_moments_by_sampling(device, name):
    build, ref, _ = UNIVARIATE[name]
    d = build(device)
    torch.manual_seed(0)
    s = d.sample((20000,))
    assert s.shape == (20000, 3) and s.dtype == torch.float64 and s.device == d.mean.device
    np.testing.assert_allclose(N(d.mean), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(N(d.variance), ref.var(), rtol=1e-12)
    np.testing.assert_allclose(N(d.stddev), ref.std(), rtol=1e-12)
    sd = np.sqrt(ref.var())
    assert np.all(np.abs(N(s.mean(0)) - ref.mean()) < 5 * sd / np.sqrt(20000)), (N(s.mean(0)), ref.mean())
    assert np.all(np.abs(N(s.std(0)) / sd - 1) < 0.1)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Uniform", "Exponential", "LogNormal"])
def test_rsample_is_differentiable_gradcheck(device, name):
    build, _, pts = UNIVARIATE[name]
    d0 = build(device)
    x = T(pts, device)
    params = [p.detach().clone().requires_grad_() for p in
              ((d0.base_dist.loc, d0.base_dist.scale) if name == "LogNormal" else
               (d0.low, d0.high) if name == "Uniform" else (d0.rate,) if name == "Exponential" else
               (d0.loc, d0.scale))]
    cls = type(d0)

    def f(*ps):
        torch.manual_seed(3)  # the same noise at every evaluation
        return cls(*ps).rsample((4,))

    assert cls.has_rsample
    assert torch.autograd.gradcheck(f, params)

    def lp(*ps):
        return cls(*ps).log_prob(x)

    assert torch.autograd.gradcheck(lp, params)


def test_normal_log_prob_grad_matches_closed_form(device):
    loc = T([0.5, -1.0], device).requires_grad_()
    scale = T([1.5, 0.5], device).requires_grad_()
    x = T([0.0, 0.0], device)
    D.Normal(loc, scale).log_prob(x).sum().backward()
    xs, m, s = np.zeros(2), np.array([0.5, -1.0]), np.array([1.5, 0.5])
    np.testing.assert_allclose(N(loc.grad), (xs - m) / s ** 2)
    np.testing.assert_allclose(N(scale.grad), -1 / s + (xs - m) ** 2 / s ** 3)


def test_discrete_log_prob_against_scipy(device):
    p = [0.2, 0.7]
    b = D.Bernoulli(T(p, device))
    np.testing.assert_allclose(N(b.log_prob(T([1.0, 0.0], device))), st.bernoulli(p).logpmf([1, 0]))
    np.testing.assert_allclose(N(b.entropy()), st.bernoulli(p).entropy())
    np.testing.assert_allclose(N(D.Bernoulli(logits=T([0.3, -2.0], device)).probs), 1 / (1 + np.exp([-0.3, 2.0])))
    po = D.Poisson(T([0.5, 4.0], device))
    np.testing.assert_allclose(N(po.log_prob(T([0.0, 6.0], device))), st.poisson([0.5, 4.0]).logpmf([0, 6]))
    bi = D.Binomial(10, T([0.3, 0.6], device))
    np.testing.assert_allclose(N(bi.log_prob(T([3.0, 10.0], device))), st.binom(10, [0.3, 0.6]).logpmf([3, 10]))
    np.testing.assert_allclose(N(bi.entropy()), st.binom(10, [0.3, 0.6]).entropy(), rtol=1e-10)
    g = D.Geometric(T([0.3, 0.6], device))  # failures before the first success (scipy counts trials)
    np.testing.assert_allclose(N(g.log_prob(T([0.0, 4.0], device))), st.geom([0.3, 0.6]).logpmf([1, 5]))
    np.testing.assert_allclose(N(g.entropy()), st.geom([0.3, 0.6]).entropy(), rtol=1e-10)
    probs = np.array([0.2, 0.3, 0.5])
    m = D.Multinomial(5, T(probs, device))
    np.testing.assert_allclose(N(m.log_prob(T([1.0, 2.0, 2.0], device))), st.multinomial(5, probs).logpmf([1, 2, 2]))
    np.testing.assert_allclose(N(m.entropy()), st.multinomial(5, probs).entropy(), rtol=1e-10)
    c = D.Categorical(T([[1.0, 1.0, 2.0], [3.0, 1.0, 0.0]], device))  # unnormalised probs
    ref = np.array([[0.25, 0.25, 0.5], [0.75, 0.25, 0.0]])
    np.testing.assert_allclose(N(c.probs), ref)
    np.testing.assert_allclose(N(c.log_prob(T([2, 1], device, torch.int64))), np.log([0.5, 0.25]))
    np.testing.assert_allclose(N(c.entropy()), [st.entropy(r) for r in ref])
    oh = D.OneHotCategorical(T(ref, device))
    np.testing.assert_allclose(N(oh.log_prob(T([[0, 0, 1], [0, 1, 0]], device))), np.log([0.5, 0.25]))


def test_discrete_sampling_frequencies(device):
    torch.manual_seed(1)
    n = 20000
    c = D.Categorical(T([0.1, 0.2, 0.7], device))
    s = c.sample((n,))
    assert s.dtype == torch.int64 and s.shape == (n,)
    freq = np.bincount(N(s), minlength=3) / n
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.015)
    b = D.Bernoulli(T([0.3], device)).sample((n,))
    assert abs(N(b).mean() - 0.3) < 0.015
    bi = D.Binomial(T([4.0, 9.0], device), T([0.5, 0.25], device)).sample((n,))
    np.testing.assert_allclose(N(bi).mean(0), [2.0, 2.25], atol=0.05)
    np.testing.assert_allclose(N(bi).var(0), [1.0, 9 * 0.25 * 0.75], rtol=0.06)
    assert N(bi).max(0).tolist() <= [4.0, 9.0]
    m = D.Multinomial(6, T([0.5, 0.25, 0.25], device)).sample((n,))
    assert (N(m).sum(-1) == 6).all()
    np.testing.assert_allclose(N(m).mean(0), [3.0, 1.5, 1.5], atol=0.05)
    po = D.Poisson(T([3.0], device)).sample((n,))
    assert abs(N(po).mean() - 3.0) < 0.06 and abs(N(po).var() - 3.0) < 0.15
    g = D.Geometric(T([0.25], device)).sample((n,))
    assert abs(N(g).mean() - 3.0) < 0.15
    oh = D.OneHotCategorical(T([0.5, 0.5], device)).sample((10,))
    assert oh.shape == (10, 2) and (N(oh).sum(-1) == 1).all()


def test_multivariate_normal_three_parameterisations(device):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    loc = np.array([0.5, -1.0, 2.0])
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 3.0]])
    ref = st.multivariate_normal(loc, cov)
    L = np.linalg.cholesky(cov)
    for kw in ({"covariance_matrix": T(cov, device)}, {"scale_tril": T(L, device)},
               {"precision_matrix": T(np.linalg.inv(cov), device)}):
        m = D.MultivariateNormal(T(loc, device), **kw)
        np.testing.assert_allclose(N(m.log_prob(T(x, device))), ref.logpdf(x), rtol=1e-10)
        np.testing.assert_allclose(N(m.entropy()), ref.entropy(), rtol=1e-10)
        np.testing.assert_allclose(N(m.covariance_matrix), cov, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(N(m.precision_matrix), np.linalg.inv(cov), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(N(m.scale_tril), L, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(N(m.variance), np.diag(cov), rtol=1e-12)
    torch.manual_seed(2)
    s = N(D.MultivariateNormal(T(loc, device), T(cov, device)).sample((40000,)))
    np.testing.assert_allclose(np.cov(s.T), cov, atol=0.15)
    np.testing.assert_allclose(s.mean(0), loc, atol=0.05)
    batched = D.MultivariateNormal(T(np.zeros((2, 3)), device), scale_tril=T(L, device))
    assert batched.batch_shape == (2,) and batched.event_shape == (3,)
    assert batched.rsample((5,)).shape == (5, 2, 3)


def test_multivariate_normal_gradcheck(device):
    rng = np.random.default_rng(1)
    loc = T(rng.normal(size=3), device).requires_grad_()
    L = T(np.tril(rng.normal(size=(3, 3)), -1) + np.diag([1.0, 2.0, 1.5]), device).requires_grad_()
    x = T(rng.normal(size=(2, 3)), device)
    assert torch.autograd.gradcheck(lambda m, s: D.MultivariateNormal(m, scale_tril=s, validate_args=False)
                                    .log_prob(x), [loc, L])


def _mc_kl(p, q, n=100000):
    torch.manual_seed(5)
    s = p.sample((n,))
    return N((p.log_prob(s) - q.log_prob(s)).mean(0))


def test_kl_divergence_closed_forms_against_monte_carlo(device):
    pairs = [
        (D.Normal(T([0.0, 1.0], device), T([1.0, 2.0], device)),
         D.Normal(T([0.5, 0.0], device), T([1.5, 1.0], device))),
        (D.Laplace(T([0.0], device), T([1.0], device)), D.Laplace(T([0.5], device), T([2.0], device))),
        (D.Exponential(T([1.0, 2.0], device)), D.Exponential(T([0.5, 3.0], device))),
        (D.Uniform(T([0.0], device), T([1.0], device)), D.Uniform(T([-1.0], device), T([2.0], device))),
        (D.Bernoulli(T([0.3], device)), D.Bernoulli(T([0.6], device))),
        (D.Categorical(T([0.2, 0.3, 0.5], device)), D.Categorical(T([0.4, 0.4, 0.2], device))),
        (D.Poisson(T([2.0], device)), D.Poisson(T([3.0], device))),
        (D.Geometric(T([0.3], device)), D.Geometric(T([0.5], device))),
        (D.Binomial(5, T([0.3], device)), D.Binomial(5, T([0.5], device))),
        (D.LogNormal(T([0.0], device), T([0.5], device)), D.LogNormal(T([0.2], device), T([0.7], device))),
        (D.Uniform(T([0.0], device), T([1.0], device)), D.Normal(T([0.2], device), T([0.7], device))),
        (D.Independent(D.Normal(T([[0.0, 1.0]], device), T([[1.0, 2.0]], device)), 1),
         D.Independent(D.Normal(T([[0.3, 0.0]], device), T([[1.0, 1.0]], device)), 1)),
        (D.MultivariateNormal(T([0.0, 1.0], device), T([[2.0, 0.3], [0.3, 1.0]], device)),
         D.MultivariateNormal(T([0.5, 0.0], device), T([[1.0, -0.2], [-0.2, 1.5]], device))),
    ]
    for p, q in pairs:
        kl = N(D.kl_divergence(p, q))
        mc = _mc_kl(p, q)
        np.testing.assert_allclose(kl, mc, atol=0.02, rtol=0.03, err_msg=type(p).__name__)
        assert (kl >= 0).all()
    inf = D.kl_divergence(D.Uniform(T([0.0], device), T([2.0], device)), D.Uniform(T([0.0], device),
                                                                                   T([1.0], device)))
    assert math.isinf(inf.item())


def test_kl_registry_and_errors(device):
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(T([0.0], device), T([1.0], device)), D.Normal(T([1.0], device), T([1.0], device))
    np.testing.assert_allclose(N(D.kl_divergence(p, q)), [0.5])  # found through the subclass's MRO

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return torch.zeros_like(p.loc) + 42.0

    np.testing.assert_allclose(N(D.kl_divergence(p, q)), [42.0])
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Laplace(T([0.0], device), T([1.0], device)), D.Poisson(T([1.0], device)))
    with pytest.raises(NotImplementedError, match="different exponential families"):  # both ExponentialFamily
        D.kl_divergence(D.Normal(T([0.0], device), T([1.0], device)), D.Poisson(T([1.0], device)))
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


def test_kl_normal_gradient(device):
    mu = T([0.3], device).requires_grad_()
    sd = T([0.8], device).requires_grad_()
    assert torch.autograd.gradcheck(lambda m, s: D.kl_divergence(D.Normal(m, s), D.Normal(0.0, 1.0)), [mu, sd])


def test_validation_errors_as_pytorch(device):
    with pytest.raises(ValueError, match="scale.*GreaterThan"):
        D.Normal(T([0.0], device), T([-1.0], device))
    with pytest.raises(ValueError, match="low .*LessThan"):
        D.Uniform(T([1.0], device), T([0.0], device))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Bernoulli()
    with pytest.raises(ValueError, match="within the support"):
        D.Exponential(T([1.0], device)).log_prob(T([-1.0], device))
    with pytest.raises(ValueError, match="event_shape"):
        D.MultivariateNormal(T([0.0, 0.0], device), T(np.eye(2), device)).log_prob(T([0.0, 0.0, 0.0], device))
    with pytest.raises(ValueError, match="must be a Tensor"):
        D.Normal(T([0.0], device), T([1.0], device)).log_prob(0.0)
    with pytest.raises(ValueError, match="Exactly one"):
        D.MultivariateNormal(T([0.0], device))
    # validate_args=False skips the checks (log_prob of an impossible value is then computed, as in PyTorch)
    lp = D.Exponential(T([1.0], device), validate_args=False).log_prob(T([-1.0], device))
    np.testing.assert_allclose(N(lp), [1.0])
    assert D.Distribution._validate_args is True


def test_expand_enumerate_support_repr(device):
    n = D.Normal(T(0.0, device), T(1.0, device))
    e = n.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.sample().shape == (2, 3)
    assert repr(D.Normal(T([0.0, 1.0], device), T([1.0, 1.0], device))) == \
        "Normal(loc: coretorch.Size([2]), scale: coretorch.Size([2]))"
    b = D.Bernoulli(T([0.2, 0.9], device))
    assert N(b.enumerate_support()).tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert b.enumerate_support(expand=False).shape == (2, 1)
    c = D.Categorical(logits=T(np.zeros((2, 4)), device)).expand((5, 2))
    assert c.batch_shape == (5, 2) and c.sample((3,)).shape == (3, 5, 2)
    assert N(D.Categorical(T([0.1, 0.9], device)).enumerate_support()).tolist() == [0, 1]
    ind = D.Independent(D.Normal(T(np.zeros((4, 3)), device), T(np.ones((4, 3)), device)), 1)
    assert ind.batch_shape == (4,) and ind.event_shape == (3,)
    assert ind.log_prob(T(np.zeros((4, 3)), device)).shape == (4,)
    np.testing.assert_allclose(N(ind.entropy()), 3 * st.norm().entropy())
    assert ind.expand((2, 4)).batch_shape == (2, 4)


def test_mixture_same_family(device):
    mix = D.Categorical(T([0.3, 0.7], device))
    comp = D.Normal(T([-2.0, 1.0], device), T([0.5, 1.0], device))
    gmm = D.MixtureSameFamily(mix, comp)
    x = np.array([-2.0, 0.0, 1.5])
    ref = np.log(0.3 * st.norm(-2, 0.5).pdf(x) + 0.7 * st.norm(1, 1).pdf(x))
    np.testing.assert_allclose(N(gmm.log_prob(T(x, device))), ref, rtol=1e-10)
    np.testing.assert_allclose(N(gmm.mean), 0.3 * -2 + 0.7 * 1)
    var = 0.3 * (0.25 + 4) + 0.7 * (1 + 1) - (0.3 * -2 + 0.7) ** 2
    np.testing.assert_allclose(N(gmm.variance), var)
    np.testing.assert_allclose(N(gmm.cdf(T(x, device))), 0.3 * st.norm(-2, 0.5).cdf(x) + 0.7 * st.norm(1, 1).cdf(x))
    torch.manual_seed(4)
    s = N(gmm.sample((20000,)))
    assert abs(s.mean() - N(gmm.mean)) < 0.05 and abs(s.var() - var) < 0.1
    mvn_mix = D.MixtureSameFamily(D.Categorical(T([0.5, 0.5], device)),
                                  D.Independent(D.Normal(T(np.zeros((2, 3)), device), T(np.ones((2, 3)), device)), 1))
    assert mvn_mix.sample((4,)).shape == (4, 3) and mvn_mix.log_prob(T(np.zeros((4, 3)), device)).shape == (4,)


def test_transforms_and_transformed_distribution(device):
    T_ = D.transforms
    x = T([-1.5, 0.2, 2.0], device)
    for t in (T_.ExpTransform(), T_.SigmoidTransform(), T_.TanhTransform(), T_.SoftplusTransform(),
              T_.AffineTransform(1.0, 3.0),
              T_.AffineTransform(T([0.5, 1.0, -1.0], device), T([2.0, -1.0, 0.5], device)),
              T_.ComposeTransform([T_.AffineTransform(0.0, 0.5), T_.ExpTransform()])):
        y = t(x)
        np.testing.assert_allclose(N(t.inv(y)), N(x), rtol=1e-9, atol=1e-12, err_msg=repr(t))
        # log |dy/dx| against a central difference, elementwise
        h = 1e-6
        num = np.log(np.abs((N(t(x + h)) - N(t(x - h))) / (2 * h)))
        np.testing.assert_allclose(N(t.log_abs_det_jacobian(x, y)), num, rtol=1e-5, atol=1e-6, err_msg=repr(t))
    sb = T_.StickBreakingTransform()
    v = T([0.3, -0.4], device)
    y = sb(v)
    assert y.shape == (3,) and abs(y.sum().item() - 1) < 1e-12
    np.testing.assert_allclose(N(sb.inv(y)), N(v), rtol=1e-9)
    # a Normal pushed through exp is a LogNormal
    td = D.TransformedDistribution(D.Normal(T([0.3], device), T([0.8], device)), [T_.ExpTransform()])
    ln = D.LogNormal(T([0.3], device), T([0.8], device))
    pts = T([0.5, 1.5], device).unsqueeze(-1)
    np.testing.assert_allclose(N(td.log_prob(pts)), N(ln.log_prob(pts)), rtol=1e-12)
    np.testing.assert_allclose(N(td.cdf(pts)), st.lognorm(0.8, scale=np.exp(0.3)).cdf([[0.5], [1.5]]))
    # an affine map with a negative scale reverses the cdf
    neg = D.TransformedDistribution(D.Normal(T([0.0], device), T([1.0], device)), T_.AffineTransform(0.0, -2.0))
    np.testing.assert_allclose(N(neg.cdf(T([1.0], device))), st.norm(0, 2).cdf(1.0), rtol=1e-10)
    assert isinstance(T_.identity_transform, T_.ComposeTransform)


def test_relaxed_distributions(device):
    torch.manual_seed(6)
    r = D.RelaxedOneHotCategorical(T(0.5, device), probs=T([0.2, 0.3, 0.5], device))
    s = r.rsample((2000,))
    assert s.shape == (2000, 3)
    np.testing.assert_allclose(N(s.sum(-1)), 1.0, rtol=1e-9)
    logits = T([0.1, -0.3, 0.5], device).requires_grad_()
    D.RelaxedOneHotCategorical(T(0.7, device), logits=logits).rsample((3,))[..., 0].sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    assert r.log_prob(s[:5]).shape == (5,) and torch.isfinite(r.log_prob(s[:5])).all()
    rb = D.RelaxedBernoulli(T(0.3, device), probs=T([0.8], device))
    sb = N(rb.sample((4000,)))
    assert ((sb > 0) & (sb < 1)).all() and abs((sb > 0.5).mean() - 0.8) < 0.03
    # low temperature: the relaxed sample approaches a one-hot draw with the right frequencies
    cold = N(D.RelaxedOneHotCategorical(T(0.05, device), probs=T([0.2, 0.8], device)).sample((4000,)))
    assert abs((cold[:, 1] > 0.5).mean() - 0.8) < 0.03


def test_vae_step_trains(device):
    # the reparameterised Normal and kl_divergence in a tiny VAE: the loss falls
    torch.manual_seed(0)
    nn = torch.nn
    enc, dec = nn.Linear(6, 4).to(device), nn.Linear(2, 6).to(device)
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.05)
    data = torch.randn(64, 2).to(device) @ torch.randn(2, 6).to(device)
    losses = []
    for _ in range(60):
        h = enc(data)
        q = D.Normal(h[:, :2], torch.nn.functional.softplus(h[:, 2:]) + 1e-3)
        z = q.rsample()
        rec = D.Normal(dec(z), 1.0).log_prob(data).sum(-1)
        kl = D.kl_divergence(q, D.Normal(torch.zeros_like(z), torch.ones_like(z))).sum(-1)
        loss = (kl - rec).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])


# ---- the Gamma family: Gamma, Chi2, Beta, Dirichlet, StudentT and torch._standard_gamma ----------------------
GAMMA_FAMILY = {
    "Gamma": (lambda d: D.Gamma(T([0.5, 2.0, 9.0], d), T([1.0, 3.0, 0.5], d)),
              st.gamma([0.5, 2.0, 9.0], scale=[1.0, 1 / 3, 2.0]), [0.3, 1.0, 15.0]),
    "Chi2": (lambda d: D.Chi2(T([1.0, 3.0, 8.0], d)), st.chi2([1.0, 3.0, 8.0]), [0.3, 2.0, 9.0]),
    "Beta": (lambda d: D.Beta(T([0.5, 2.0, 5.0], d), T([0.7, 5.0, 1.5], d)),
             st.beta([0.5, 2.0, 5.0], [0.7, 5.0, 1.5]), [0.3, 0.2, 0.9]),
    "StudentT": (lambda d: D.StudentT(T([3.0, 5.0, 30.0], d), T([0.0, 1.0, -2.0], d), T([1.0, 2.0, 0.5], d)),
                 st.t([3.0, 5.0, 30.0], [0.0, 1.0, -2.0], [1.0, 2.0, 0.5]), [0.3, -2.0, -1.5]),
}


@pytest.mark.parametrize("name", sorted(GAMMA_FAMILY))
def test_gamma_family_against_scipy(device, name):
    build, ref, pts = GAMMA_FAMILY[name]
    d = build(device)
    np.testing.assert_allclose(N(d.log_prob(T(pts, device))), ref.logpdf(pts), rtol=1e-10)
    np.testing.assert_allclose(N(d.entropy()), ref.entropy(), rtol=1e-10)
    np.testing.assert_allclose(N(d.mean), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(N(d.variance), ref.var(), rtol=1e-12)
    torch.manual_seed(7)
    s = d.sample((20000,))
    assert s.shape == (20000, 3) and d.has_rsample
    sd = np.sqrt(ref.var())
    assert np.all(np.abs(N(s.mean(0)) - ref.mean()) < 5 * sd / np.sqrt(20000)), (N(s.mean(0)), ref.mean())
    # the sample's distribution: a Kolmogorov-Smirnov distance against scipy's cdf
    for j in range(3):
        ks = st.kstest(N(s[:, j]), lambda v, j=j: ref.cdf(np.stack([v] * 3, -1))[..., j]).statistic
        assert ks < 0.015, (name, j, ks)


def test_dirichlet_against_scipy(device):
    alpha = np.array([0.7, 2.0, 3.5])
    d = D.Dirichlet(T(alpha, device))
    x = np.array([[0.2, 0.3, 0.5], [0.05, 0.15, 0.8]])
    np.testing.assert_allclose(N(d.log_prob(T(x, device))), [st.dirichlet(alpha).logpdf(v) for v in x], rtol=1e-10)
    np.testing.assert_allclose(N(d.entropy()), st.dirichlet(alpha).entropy(), rtol=1e-10)
    np.testing.assert_allclose(N(d.mean), st.dirichlet(alpha).mean(), rtol=1e-12)
    np.testing.assert_allclose(N(d.variance), st.dirichlet(alpha).var(), rtol=1e-12)
    torch.manual_seed(8)
    s = N(d.sample((20000,)))
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(s.mean(0), st.dirichlet(alpha).mean(), atol=0.01)
    np.testing.assert_allclose(s.var(0), st.dirichlet(alpha).var(), rtol=0.05)
    assert N(D.Dirichlet(T([2.0, 3.0, 5.0], device)).mode).tolist() == pytest.approx([1 / 7, 2 / 7, 4 / 7])
    assert N(D.Dirichlet(T([0.5, 0.9, 0.2], device)).mode).tolist() == [1.0, 0.0, 0.0]  # all < 1: first corner
    samples = torch._sample_dirichlet(T(np.ones((5, 4)), device))
    assert samples.shape == (5, 4) and np.allclose(N(samples).sum(-1), 1)


def test_standard_gamma_gradient_is_the_implicit_reparameterisation(device):
    from scipy.special import gammainc, gammaincinv
    # exact: d x / d alpha at a fixed quantile u, against a central difference of scipy's inverse cdf
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 120.0])
    u = np.array([0.01, 0.5, 0.99, 0.3, 0.7, 0.5])
    x = gammaincinv(alpha, u)
    h = alpha * 1e-6
    ref = (gammaincinv(alpha + h, u) - gammaincinv(alpha - h, u)) / (2 * h)
    got = N(torch._standard_gamma_grad(T(alpha, device), T(x, device)))
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    # by use: draws are Gamma(alpha, 1) and dE[x]/dalpha = 1, dE[log x]/dalpha = trigamma(alpha)
    a = T([0.4, 3.0], device).requires_grad_()
    torch.manual_seed(9)
    s = torch._standard_gamma(a.expand(40000, 2))
    assert s.grad_fn is not None and type(s.grad_fn).__name__ == "StandardGammaBackward0"
    assert st.kstest(N(s[:, 0]), lambda v: gammainc(0.4, v)).statistic < 0.01
    g1 = torch.autograd.grad(s.mean(0).sum(), a, retain_graph=True)[0]
    np.testing.assert_allclose(N(g1), [1.0, 1.0], rtol=0.03)
    from scipy.special import polygamma
    g2 = torch.autograd.grad(s.log().mean(0).sum(), a)[0]
    np.testing.assert_allclose(N(g2), polygamma(1, [0.4, 3.0]), rtol=0.03)
    with pytest.raises(NotImplementedError, match="\"gamma_cpu\" not implemented for .Long."):  # (PyTorch's)
        torch._standard_gamma(torch.tensor([1, 2], device=device))


def test_gamma_family_kl_and_reparameterised_training(device):
    pairs = [(D.Gamma(T([2.0], device), T([3.0], device)), D.Gamma(T([1.5], device), T([1.0], device))),
             (D.Beta(T([2.0], device), T([3.0], device)), D.Beta(T([1.0], device), T([1.5], device))),
             (D.Dirichlet(T([1.0, 2.0, 3.0], device)), D.Dirichlet(T([2.0, 2.0, 2.0], device)))]
    for p, q in pairs:
        np.testing.assert_allclose(N(D.kl_divergence(p, q)), _mc_kl(p, q), atol=0.02, rtol=0.03,
                                   err_msg=type(p).__name__)
    # fit a Gamma's concentration by maximising E[log q] through rsample: it moves towards the target mean
    torch.manual_seed(10)
    log_c = T([0.0], device).requires_grad_()
    opt = torch.optim.Adam([log_c], lr=0.1)
    for _ in range(60):
        x = D.Gamma(log_c.exp(), 1.0).rsample((256,))
        loss = ((x - 4.0) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert 2.5 < log_c.exp().item() < 5.0


def test_reinforce_agent_with_categorical_learns(device):
    # a two-armed contextual bandit: REINFORCE with Categorical(logits=policy(x)) learns to pick the rewarded arm
    torch.manual_seed(0)
    policy = torch.nn.Linear(2, 2).to(device)
    opt = torch.optim.Adam(policy.parameters(), lr=0.05)
    rewards = []
    for _ in range(80):
        ctx = torch.randint(0, 2, (64,)).to(device)
        x = torch.nn.functional.one_hot(ctx, 2).float()
        dist = D.Categorical(logits=policy(x))
        action = dist.sample()
        reward = (action == ctx).float()  # the arm that matches the context pays 1
        loss = -(dist.log_prob(action) * (reward - reward.mean())).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        rewards.append(reward.mean().item())
    assert np.mean(rewards[:10]) < 0.7 and np.mean(rewards[-10:]) > 0.9, rewards
