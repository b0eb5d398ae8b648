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
