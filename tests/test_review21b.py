"""Review 21b (eager): pointwise math and torch.special at the edges (poles, infinities, NaN, integer and half
inputs), and gradients at kinks, ties and poles, against PyTorch 2.13's conventions (values from math/scipy or
the behaviour PyTorch documents)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

import coretorch as torch

INF, NAN = math.inf, math.nan


def arr(t):
    return t.detach().cpu().numpy()


# ---------------------------------------------------------------------------------------------
# torch.special's Bessel J/Y/K, Airy and zeta functions (missing before this review)
# ---------------------------------------------------------------------------------------------
_UNARY = {"bessel_j0": sp.j0, "bessel_j1": sp.j1, "bessel_y0": sp.y0, "bessel_y1": sp.y1,
          "modified_bessel_k0": sp.k0, "modified_bessel_k1": sp.k1, "scaled_modified_bessel_k0": sp.k0e,
          "scaled_modified_bessel_k1": sp.k1e, "airy_ai": lambda x: sp.airy(x)[0]}
_EDGES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 8.0, 30.0, -30.0, 700.0, 1e-300, INF, -INF, NAN]


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_bessel_airy_values_and_conventions(name, device):
    """PyTorch 2.13 has torch.special.<name> (coretorch had none): float64 to scipy's values at the edges too
    (poles: Y(0) = -inf, K(0) = inf; NaN below 0 for Y and K; NaN at +-inf but K's 0 at +inf), integer inputs
    give the default float, float32 keeps float32, out= works, and the result never requires grad (PyTorch
    defines no derivative: 'does not require grad')."""
    f = getattr(torch.special, name)
    x = np.array(_EDGES)
    got = f(torch.tensor(x, device=device, requires_grad=True))
    assert got.dtype is torch.float64 and not got.requires_grad
    with np.errstate(all="ignore"):
        want = _UNARY[name](x)
    np.testing.assert_allclose(arr(got), want, rtol=1e-13, atol=0)
    r32 = f(torch.tensor(x, dtype=torch.float32, device=device))
    assert r32.dtype is torch.float32
    with np.errstate(all="ignore"):
        want32 = _UNARY[name](x.astype(np.float32).astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(arr(r32), want32, rtol=3e-7, atol=1e-38)
    ri = f(torch.tensor([1, 2, 3], device=device))
    assert ri.dtype is torch.float32
    np.testing.assert_allclose(arr(ri), _UNARY[name](np.array([1.0, 2.0, 3.0])).astype(np.float32), rtol=3e-7)
    out = torch.empty(3, device=device)
    assert f(torch.tensor([1.0, 2.0, 3.0], device=device), out=out) is out
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        f(torch.tensor([1.0], dtype=torch.float16, device=device))


def test_bessel_edge_conventions_are_pytorchs():
    """The points where conventions could differ, as PyTorch gives them: J0(+-inf) and Ai(+-inf) NaN, K0(+inf) 0,
    Y0(-1) NaN, K0(-1) NaN, J1(-0.0) -0.0 (the same as PyTorch 2.13 gives)."""
    x = torch.tensor([INF, -INF, -1.0, -0.0], dtype=torch.float64)
    assert np.isnan(arr(torch.special.bessel_j0(x))[:2]).all()
    assert np.isnan(arr(torch.special.airy_ai(x))[:2]).all()
    k0 = arr(torch.special.modified_bessel_k0(x))
    assert k0[0] == 0 and np.isnan(k0[1:3]).all() and k0[3] == INF
    assert math.isnan(torch.special.bessel_y0(x)[2].item())
    assert math.copysign(1.0, torch.special.bessel_j1(x)[3].item()) == -1.0


def test_zeta_values_promotion_and_scalars(device):
    """torch.special.zeta(x, q), the Hurwitz zeta (missing before): scipy's values, inf at x = 1, NaN for x < 1,
    inf for an integer q <= 0, NaN at q = +inf (PyTorch's convention; scipy gives 0 there); a Python number on
    either side; integer tensors give float32; float32 with a float64 tensor gives float64; broadcasting."""
    x = np.array([2.0, 1.0, 0.5, 4.0, 2.0, 3.5, 2.0, INF, 30.0])
    q = np.array([1.0, 1.0, 1.0, -1.5, 0.0, -2.0, INF, 1.0, 0.5])
    got = torch.special.zeta(torch.tensor(x, device=device), torch.tensor(q, device=device))
    want = sp.zeta(x, q)
    want[6] = NAN
    np.testing.assert_allclose(arr(got), want, rtol=1e-13)
    assert got[1].item() == INF and math.isnan(got[2].item()) and got[4].item() == INF and got[5].item() == INF
    np.testing.assert_allclose(arr(torch.special.zeta(2.0, torch.tensor([1.0, 2.0], device=device))),
                               [math.pi ** 2 / 6, math.pi ** 2 / 6 - 1], rtol=1e-6)
    r = torch.special.zeta(torch.tensor([2, 3], device=device), 1)
    assert r.dtype is torch.float32
    np.testing.assert_allclose(arr(r), sp.zeta([2.0, 3.0], 1.0), rtol=1e-6)
    assert torch.special.zeta(torch.tensor([2.0], device=device),
                              torch.tensor([1.0], dtype=torch.float64, device=device)).dtype is torch.float64
    b = torch.special.zeta(torch.tensor([[2.0], [3.0]], device=device), torch.tensor([1.0, 2.0, 3.0], device=device))
    assert tuple(b.shape) == (2, 3)
    with pytest.raises(TypeError):
        torch.special.zeta(2, 1)
    with pytest.raises(NotImplementedError):
        torch.special.zeta(torch.tensor([2.0], dtype=torch.float16), torch.tensor([1.0], dtype=torch.float16))


def test_zeta_gradient(device):
    """PyTorch's derivatives.yaml: d/dq zeta(x, q) = -x zeta(x + 1, q); d/dx is not implemented (backward raises
    NotImplementedError), also for zeta(tensor, number)."""
    x = torch.tensor([2.5, 3.0], dtype=torch.float64, device=device)
    q = torch.tensor([1.5, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    y = torch.special.zeta(x, q)
    assert type(y.grad_fn).__name__ == "SpecialZetaBackward0"
    y.sum().backward()
    np.testing.assert_allclose(arr(q.grad), -np.array([2.5, 3.0]) * sp.zeta([3.5, 4.0], [1.5, 2.0]), rtol=1e-13)
    assert torch.autograd.gradcheck(lambda t: torch.special.zeta(x, t), (q,))
    xr = torch.tensor([2.5], dtype=torch.float64, device=device, requires_grad=True)
    y2 = torch.special.zeta(xr, 2.0)
    assert type(y2.grad_fn).__name__ == "SpecialZetaBackward2"
    with pytest.raises(NotImplementedError, match="derivative for 'zeta' is not implemented"):
        y2.sum().backward()
    y1 = torch.special.zeta(2.5, q)
    assert type(y1.grad_fn).__name__ == "SpecialZetaBackward1"
    (g1,) = torch.autograd.grad(y1.sum(), q)
    np.testing.assert_allclose(arr(g1), -2.5 * sp.zeta(3.5, [1.5, 2.0]), rtol=1e-13)


def test_opencl_special_host_fallback_listed():
    """On opencl the new functions run on the host (scipy) and say so, as the linalg decompositions do."""
    if "opencl" not in torch.testing.available_devices():
        pytest.skip("no opencl device")
    from coretorch._backend import get_table
    table = get_table(torch.device("opencl"))
    assert {"bessel_j0", "zeta", "airy_ai"} <= table.host_names


# ---------------------------------------------------------------------------------------------
# modified_bessel_i0/i1 and spherical_bessel_j0: PyTorch's conventions
# ---------------------------------------------------------------------------------------------
def test_spherical_bessel_j0_at_infinity(device):
    """PyTorch: spherical_bessel_j0(+-inf) is 0 (the limit of sin(x) / x); coretorch gave NaN (sinc(inf / pi))."""
    for dt in (torch.float32, torch.float64):
        r = torch.special.spherical_bessel_j0(torch.tensor([INF, -INF, 0.0, 50.0, NAN], dtype=dt, device=device))
        v = arr(r)
        assert v[0] == 0.0 and v[1] == 0.0 and v[2] == 1.0 and math.isnan(v[4])
        np.testing.assert_allclose(v[3], math.sin(50.0) / 50.0, rtol=3e-7 if dt is torch.float32 else 1e-15)


@pytest.mark.parametrize("name", ["modified_bessel_i0", "modified_bessel_i1", "spherical_bessel_j0"])
def test_special_bessel_first_kind_not_differentiable(name, device):
    """PyTorch defines no derivative for torch.special.modified_bessel_i0/i1 and spherical_bessel_j0 (their results
    do not require grad; half raises NotImplementedError); coretorch's (i0/i1/sinc underneath) required grad."""
    f = getattr(torch.special, name)
    x = torch.tensor([0.5, 1.5], dtype=torch.float64, device=device, requires_grad=True)
    assert not f(x).requires_grad
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        f(torch.tensor([1.0], dtype=torch.float16, device=device))


# ---------------------------------------------------------------------------------------------
# gradients at NaN inputs, kinks and infinities: PyTorch's backward formulas
# ---------------------------------------------------------------------------------------------
F = torch.nn.functional

def test_logit_eps_gradient(device):
    """PyTorch's logit_backward with eps: grad / (x (1 - x)) inside [eps, 1 - eps], 0 outside (and at NaN in its
    vectorised kernel), so eps=0 gives inf at 0 and 1.  coretorch (clamp then log) gave NaN at 0 and 1 for eps=0."""
    x = torch.tensor([NAN, 0.0, 1.0, 0.5, 0.1, 0.9, -0.5], dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(torch.logit(x, eps=0.0).sum(), x)
    v = arr(g)
    assert v[0] == 0.0 and v[1] == INF and v[2] == INF and v[6] == 0.0
    np.testing.assert_allclose(v[3:6], 1 / (np.array([0.5, 0.1, 0.9]) * (1 - np.array([0.5, 0.1, 0.9]))))
    y = torch.logit(x, eps=0.25)
    assert type(y.grad_fn).__name__ == "LogitBackward0"
    (g,) = torch.autograd.grad(y.sum(), x)
    v = arr(g)
    assert v[3] == 4.0 and (v[[0, 1, 2, 4, 5, 6]] == 0).all()
    np.testing.assert_allclose(arr(y.detach())[1:], np.log([1 / 3, 3, 1, 1 / 3, 3, 1 / 3]), rtol=1e-15)


def test_i1_gradient_at_nan_and_tiny(device):
    """PyTorch's i1/i1e backward: 0.5 (the limit at 0) wherever not |x| > eps (machine epsilon), NaN included;
    coretorch's threshold was 1e-300, so NaN gave NaN."""
    for f in (torch.special.i1, torch.special.i1e):
        x = torch.tensor([NAN, 0.0, 1e-17, 1.0], dtype=torch.float64, device=device, requires_grad=True)
        (g,) = torch.autograd.grad(f(x).sum(), x)
        v = arr(g)
        assert (v[:3] == 0.5).all()
        want = sp.i0(1.0) - sp.i1(1.0) if f is torch.special.i1 else sp.i0e(1.0) - 2 * sp.i1e(1.0)
        np.testing.assert_allclose(v[3], want, rtol=1e-13)


def test_lerp_gradient_formulas(device):
    """PyTorch's lerp backward: input grad * (1 - w), end grad * w, weight grad * (end - input) (LerpBackward1;
    LerpBackward0 for a number weight).  coretorch's where() composite gave NaN for every operand at infinite
    values (0 * inf from the untaken branch)."""
    a = torch.tensor([INF, 1.0, -INF, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    b = torch.tensor([INF, 3.0, INF, -1.0], dtype=torch.float64, device=device, requires_grad=True)
    w = torch.tensor([INF, 0.25, 2.0, 0.75], dtype=torch.float64, device=device, requires_grad=True)
    y = torch.lerp(a, b, w)
    assert type(y.grad_fn).__name__ == "LerpBackward1"
    ga, gb, gw = torch.autograd.grad(y.sum(), (a, b, w))
    np.testing.assert_array_equal(arr(ga), [-INF, 0.75, -1.0, 0.25])
    np.testing.assert_array_equal(arr(gb), [INF, 0.25, 2.0, 0.75])
    assert math.isnan(arr(gw)[0]) and arr(gw)[2] == INF
    np.testing.assert_array_equal(arr(gw)[[1, 3]], [2.0, -3.0])
    y = torch.lerp(a, b, 0.3)
    assert type(y.grad_fn).__name__ == "LerpBackward0"
    ga, gb = torch.autograd.grad(y.sum(), (a, b))
    np.testing.assert_array_equal(arr(ga), np.full(4, 1 - 0.3))
    np.testing.assert_array_equal(arr(gb), np.full(4, 0.3))
    # broadcast weight of another dtype (a 0-d float32 weight with float64 operands): its gradient in float32
    w0 = torch.tensor(0.5, dtype=torch.float32, device=device, requires_grad=True)
    (g0,) = torch.autograd.grad(torch.lerp(a[1:2], b[1:2], w0).sum(), w0)
    assert g0.dtype is torch.float32 and g0.item() == 2.0


@pytest.mark.parametrize("loss", ["smooth_l1", "huber"])
def test_smooth_l1_huber_gradient_at_infinite_and_nan_difference(loss, device):
    """PyTorch's backward: -grad / grad beyond -beta / beta (huber: times delta), x * grad / beta inside, so an
    infinite difference gives +-1 and a NaN one NaN.  coretorch's where() gave NaN at +-inf (0 * inf from the
    quadratic branch)."""
    f = F.smooth_l1_loss if loss == "smooth_l1" else F.huber_loss
    a = torch.tensor([INF, -INF, NAN, 0.5, 3.0], dtype=torch.float64, device=device, requires_grad=True)
    b = torch.tensor([-INF, INF, 1.0, 0.0, 0.0], dtype=torch.float64, device=device, requires_grad=True)
    ga, gb = torch.autograd.grad(f(a, b, reduction="sum"), (a, b))
    va, vb = arr(ga), arr(gb)
    np.testing.assert_array_equal(va[[0, 1, 3, 4]], [1.0, -1.0, 0.5, 1.0])
    np.testing.assert_array_equal(vb[[0, 1, 3, 4]], [-1.0, 1.0, -0.5, -1.0])
    assert math.isnan(va[2]) and math.isnan(vb[2])


def test_igamma_large_a_near_x_equal_a(device):
    """P(a, x) and Q(a, x) for a huge and x near a (a Gamma(a) CDF at its mean, a Poisson tail with a large rate):
    scipy's values (its Cephes code switches to the uniform asymptotic series there, as PyTorch's).  opencl's series
    and continued fraction, cut at 100000 terms, gave P(1e10, 1e10) = 0.34 and Q(1e20, 1e20) = 237."""
    rows = []
    for a in (2e6, 1e7, 1e10, 1e15, 1e20, 1e300):
        for k in (-3.0, -1.0, 0.0, 0.5, 1.0, 3.0):
            rows.append((a, a * (1 + k / math.sqrt(a))))
    a, x = (np.array(v) for v in zip(*rows))
    for dt, tol in ((torch.float64, 1e-11), (torch.float32, 3e-6)):
        at, xt = torch.tensor(a, dtype=dt, device=device), torch.tensor(x, dtype=dt, device=device)
        a_, x_ = (arr(t).astype(np.float64) for t in (at, xt))
        fin = np.isfinite(a_) & np.isfinite(x_)
        np.testing.assert_allclose(arr(torch.special.gammainc(at, xt))[fin], sp.gammainc(a_, x_)[fin], rtol=tol)
        np.testing.assert_allclose(arr(torch.special.gammaincc(at, xt))[fin], sp.gammaincc(a_, x_)[fin], rtol=tol)


def test_mvlgamma_has_no_domain_check(device):
    """PyTorch 2.13's mvlgamma checks only p >= 1 and a non-bool input: below (p - 1) / 2 it sums lgamma's values
    (inf at their poles), NaN propagates.  coretorch raised 'All elements must be greater than (p-1)/2'."""
    x = torch.tensor([0.6, 1.7, 0.5, NAN], dtype=torch.float64, device=device)
    got = arr(torch.mvlgamma(x, 3))
    want = [sum(math.lgamma(v - j / 2) for j in range(3)) + 1.5 * math.log(math.pi) for v in (0.6, 1.7)]
    np.testing.assert_allclose(got[:2], want, rtol=1e-13)
    assert got[2] == INF and math.isnan(got[3])
    with pytest.raises(RuntimeError, match="boolean"):
        torch.mvlgamma(torch.tensor([True], device=device), 1)


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "legendre_polynomial_p", "hermite_polynomial_h",
                                  "laguerre_polynomial_l"])
def test_orthogonal_polynomials_pytorch_conventions(name, device):
    """PyTorch's polynomial kernels return 1 for n == 0 and 0 for n < 0 whatever x is (inf and NaN too), are not
    differentiable and have no half kernels.  coretorch gave NaN there (x * 0 as the zero) and required grad."""
    f = getattr(torch.special, name)
    x = torch.tensor([INF, -INF, NAN, 0.5], dtype=torch.float64, device=device, requires_grad=True)
    assert arr(f(x, 0)).tolist() == [1.0] * 4
    assert arr(f(x, -2)).tolist() == [0.0] * 4
    assert not f(x, 3).requires_grad
    n = torch.tensor([0, -1, 0, 2], device=device)
    assert arr(f(x, n))[:3].tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(NotImplementedError):
        f(torch.tensor([0.5], dtype=torch.float16, device=device), 2)


def test_erfcx_large_negative_is_plus_infinity(device):
    """erfcx(x) = exp(x^2) erfc(x) is +inf once exp(x^2) overflows (x < -26.7 in float64, -9.4 in float32), as
    PyTorch's; opencl's exp(h) * (1 + l) * erfc(x), l the rounding error of x^2, gave -inf for x = -1e10 (float32)
    and -1e20 (float64), where l is below -1."""
    for dt in (torch.float32, torch.float64):
        x = torch.tensor([-1e10, -1e20, -4097.0, -30.0, -INF], dtype=dt, device=device)
        assert arr(torch.special.erfcx(x)).tolist() == [INF] * 5
    v = torch.special.erfcx(torch.tensor([-9.3], dtype=torch.float64, device=device)).item()
    assert v == pytest.approx(math.exp(9.3 ** 2) * math.erfc(-9.3), rel=1e-13)


def test_nextafter_gradient_zero_at_ties(device):
    """PyTorch 2.13's nextafter backward: input gets where(input != other, grad, 0) (the result is other at a tie,
    constant in input; NaN passes the gradient), other zeros.  coretorch passed the gradient at the ties too."""
    x = torch.tensor([0.0, 1.0, -0.0, 2.0, NAN, 3.0], dtype=torch.float64, device=device, requires_grad=True)
    o = torch.tensor([0.0, 0.0, 0.0, 2.0, 1.0, NAN], dtype=torch.float64, device=device, requires_grad=True)
    gx, go = torch.autograd.grad(torch.nextafter(x, o).sum(), (x, o))
    assert arr(gx).tolist() == [0.0, 1.0, 0.0, 0.0, 1.0, 1.0] and arr(go).tolist() == [0.0] * 6
    xb = torch.tensor([[1.0], [2.0]], device=device, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nextafter(xb, torch.tensor([2.0, 1.0, 3.0], device=device)).sum(), xb)
    assert arr(g).tolist() == [[2.0], [2.0]]


def test_sinc_gradient_near_zero(device):
    """d/dx sinc(x) = (cos(pi x) - sinc(x)) / x cancels near 0 (relative error ~3e-17 / x^2): at 1e-8 it gave
    -2.2e-8 for -pi^2 x / 3 = -3.29e-8 (PyTorch's own formula cancels the same way); its Taylor series is exact."""
    xs = np.array([1e-8, -1e-6, 1e-4, 0.03, 0.049, 0.051, 0.5, 1.5, 0.0])
    x = torch.tensor(xs, dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(torch.sinc(x).sum(), x)
    u = np.pi * xs
    with np.errstate(all="ignore"):
        direct = np.pi * (u * np.cos(u) - np.sin(u)) / (u * u)
    series = -np.pi * u * (1 / 3 - u ** 2 / 30 + u ** 4 / 840 - u ** 6 / 45360 + u ** 8 / 3991680)
    want = np.where(np.abs(xs) < 0.1, series, direct)
    np.testing.assert_allclose(arr(g), want, rtol=1e-12, atol=0)
    assert torch.autograd.gradgradcheck(torch.sinc, (torch.tensor([0.0, 0.03, -0.2, 1.5], dtype=torch.float64,
                                                                   device=device, requires_grad=True),))


def test_logaddexp_integer_raises(device):
    """PyTorch's logaddexp/logaddexp2 kernels are float only: two integer (or bool) tensors raise
    NotImplementedError ("logaddexp_cpu" not implemented for 'Long'); an integer with a float tensor promotes.
    coretorch returned float32."""
    i = torch.tensor([1, 2], device=device)
    for f in (torch.logaddexp, torch.logaddexp2):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            f(i, i)
        with pytest.raises(NotImplementedError, match="'Bool'"):
            f(i > 0, i > 0)
    r = torch.logaddexp(i, torch.tensor([1.0, 2.0], device=device))
    assert r.dtype is torch.float32
    np.testing.assert_allclose(arr(r), np.logaddexp([1.0, 2.0], [1.0, 2.0]), rtol=1e-6)


def test_polygamma_order_must_be_an_int(device):
    """PyTorch's polygamma takes an int order (a Python int, numpy integer or 0-d integer tensor); a float or bool
    raises TypeError ("argument 'n' (position 1) must be int, not float").  coretorch truncated 1.5 to 1."""
    x = torch.tensor([0.5, 1.5], dtype=torch.float64, device=device)
    np.testing.assert_allclose(arr(torch.polygamma(np.int64(1), x)), sp.polygamma(1, [0.5, 1.5]), rtol=1e-13)
    for n in (1.0, 1.5, True):
        with pytest.raises(TypeError, match="must be int"):
            torch.polygamma(n, x)
        with pytest.raises(TypeError, match="must be int"):
            x.polygamma(n)


@pytest.mark.parametrize("name", ["erfcx", "log_ndtr", "ndtri"])
def test_special_float_only_functions_refuse_half(name, device):
    """PyTorch dispatches special.erfcx / log_ndtr / ndtri over float32 and float64 only: float16 and bfloat16 raise
    NotImplementedError ("erfcx_cpu" not implemented for 'Half'); coretorch computed them."""
    f = getattr(torch.special, name)
    for dt in (torch.float16, torch.bfloat16):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            f(torch.tensor([0.3], dtype=dt, device=device))
    assert f(torch.tensor([0.3], device=device)).dtype is torch.float32
