"""The special family beyond the OpCase table: torch.special's names, edge values (inf, nan, poles, -0.0), dtype
rules, out=, in-place variants, comparison semantics and errors, on every available device."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

import coretorch as torch
from coretorch.testing import available_devices

DEVICES = available_devices()
inf, nan = math.inf, math.nan


def _t(v, dev, dtype=torch.float64, **kw):
    return torch.tensor(v, dtype=dtype, device=dev, **kw)


def _np(t):
    return t.detach().cpu().numpy()


def test_special_namespace_has_pytorchs_names():
    names = ["expit", "logit", "erf", "erfc", "erfcx", "erfinv", "gammaln", "digamma", "psi", "polygamma",
             "multigammaln", "xlogy", "xlog1py", "entr", "ndtr", "ndtri", "log_ndtr", "sinc", "i0", "i0e", "i1", "i1e",
             "logsumexp", "softmax", "log_softmax", "exp2", "expm1", "log1p", "round"]
    for n in names:
        assert callable(getattr(torch.special, n)), n
    assert set(names) <= set(torch.special.__all__)
    assert torch.special.psi is torch.special.digamma and torch.special.gammaln is torch.lgamma
    for n in ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "arctan2", "isreal", "is_nonzero",
              "is_complex", "nanmean", "nansum", "float_power", "true_divide", "clamp_min", "clamp_max"):
        assert callable(getattr(torch, n)), n


@pytest.mark.parametrize("dev", DEVICES)
def test_edge_values_match_pytorch(dev):
    x = _t([0.0, -0.0, -1.0, -2.0, inf, -inf, nan], dev)
    np.testing.assert_array_equal(_np(torch.digamma(x)), [-inf, inf, nan, nan, inf, nan, nan])
    np.testing.assert_array_equal(_np(torch.lgamma(x)), [inf, inf, inf, inf, inf, inf, nan])
    np.testing.assert_array_equal(_np(torch.signbit(x)), [False, True, True, True, False, True, False])
    np.testing.assert_array_equal(_np(torch.isinf(x)), [False] * 4 + [True, True, False])
    np.testing.assert_array_equal(_np(torch.isfinite(x)), [True] * 4 + [False] * 3)
    np.testing.assert_array_equal(_np(torch.isposinf(x)), [False] * 4 + [True, False, False])
    np.testing.assert_array_equal(_np(torch.isneginf(x)), [False] * 5 + [True, False])
    y = _t([-1.0, 1.0, 1.5, -0.0, 0.0, 0.999999], dev)
    np.testing.assert_array_equal(_np(torch.erfinv(y))[:4], [-inf, inf, nan, 0.0])
    assert np.signbit(_np(torch.erfinv(y))[3]) and not np.signbit(_np(torch.erfinv(y))[4])
    np.testing.assert_allclose(_np(torch.erfinv(y))[5], sp.erfinv(0.999999), rtol=1e-13)
    # PyTorch's (Cephes) i0 and i1 give NaN at +-inf (exp(x) / sqrt(x) is inf / inf); scipy too
    np.testing.assert_array_equal(_np(torch.i0(_t([inf, -inf, 800.0], dev))), [nan, nan, inf])
    np.testing.assert_array_equal(_np(torch.special.i0e(_t([inf, 0.0], dev))), [0.0, 1.0])
    np.testing.assert_array_equal(_np(torch.special.i1(_t([0.0, -800.0], dev))), [0.0, -inf])
    np.testing.assert_array_equal(_np(torch.special.ndtri(_t([0.0, 1.0, 0.5, 2.0], dev))), [-inf, inf, 0.0, nan])
    np.testing.assert_array_equal(_np(torch.special.entr(_t([0.0, -1.0], dev))), [0.0, -inf])
    assert _np(torch.special.erfcx(_t([inf], dev)))[0] == 0.0
    np.testing.assert_allclose(_np(torch.special.log_ndtr(_t([-40.0, -1e3], dev))), sp.log_ndtr([-40.0, -1e3]),
                               rtol=1e-12)
    np.testing.assert_array_equal(_np(torch.logaddexp(_t([-inf, inf, -inf], dev), _t([-inf, inf, 2.0], dev))),
                                  [-inf, inf, 2.0])
    np.testing.assert_array_equal(_np(torch.xlogy(_t([0.0, 0.0, 0.0, 2.0], dev), _t([nan, 0.0, inf, 1.0], dev))),
                                  [nan, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(_np(torch.polygamma(1, _t([0.0], dev))), [inf])
    np.testing.assert_allclose(_np(torch.sinc(_t([0.0, 1.0, -2.0], dev))), [1.0, 0.0, 0.0], atol=1e-15)


@pytest.mark.parametrize("dev", DEVICES)
def test_signed_zero_copysign_signbit(dev):
    a = _t([1.0, -2.0, 3.0, 0.0], dev, requires_grad=True)
    b = _t([-0.0, 0.0, -1.0, -5.0], dev)
    r = torch.copysign(a, b)
    got = _np(r)
    np.testing.assert_array_equal(got, [-1.0, 2.0, -3.0, -0.0])
    assert np.signbit(got[3])
    r.backward(torch.ones_like(r))
    np.testing.assert_array_equal(_np(a.grad), [-1.0, -1.0, -1.0, 0.0])  # PyTorch: 0 where the input is 0
    assert torch.copysign(_t([1, 2], dev, torch.int64), -1).dtype is torch.float32
    assert torch.signbit(_t([-0.0], dev, torch.float16)).tolist() == [True]
    assert torch.signbit(_t([-3, 0, 2], dev, torch.int64)).tolist() == [True, False, False]


@pytest.mark.parametrize("dev", DEVICES)
def test_dtype_rules(dev):
    i = _t([1, 2, 3], dev, torch.int64)
    for f in (torch.tan, torch.asin, torch.log2, torch.exp2, torch.erfc, torch.lgamma, torch.digamma, torch.i0,
              torch.sinc, torch.deg2rad, torch.special.ndtr, torch.special.i1e, torch.special.expit):
        assert f(i).dtype is torch.float32, f
    assert torch.atan2(i, i).dtype is torch.float32
    assert torch.hypot(i, _t([2.0], dev, torch.float32)).dtype is torch.float32
    with pytest.raises(NotImplementedError, match="hypot_cpu"):  # no integer hypot kernel in PyTorch
        torch.hypot(i, i)
    assert torch.fmax(i, i).dtype is torch.int64 and torch.fmin(i, _t([2.5], dev, torch.float32)).dtype is torch.float32
    assert torch.ldexp(_t([1.0], dev), _t([3], dev, torch.int32)).tolist() == [8.0]
    assert torch.float_power(i, 2).dtype is torch.float64
    h = _t([0.5, 1.0], dev, torch.float16)
    assert torch.erfinv(h).dtype is torch.float16 and torch.special.i0e(h).dtype is torch.float16
    assert torch.nan_to_num(_t([inf, -inf, nan], dev, torch.float16)).tolist() == [65504.0, -65504.0, 0.0]
    assert torch.nan_to_num(_t([inf, nan], dev, torch.float32), nan=1.0).tolist()[1] == 1.0
    m, e = torch.frexp(_t([8.0, -0.375, 0.0, inf], dev, torch.float32))
    assert e.dtype is torch.int32 and m.dtype is torch.float32
    assert m.tolist()[:3] == [0.5, -0.75, 0.0] and e.tolist() == [4, -1, 0, 0]
    assert torch.nanmean(_t([[1.0, nan], [nan, nan]], dev), dim=1).tolist()[0] == 1.0
    assert math.isnan(torch.nanmean(_t([[1.0, nan], [nan, nan]], dev), dim=1).tolist()[1])
    with pytest.raises(RuntimeError, match="frexp"):
        torch.frexp(i)
    with pytest.raises(RuntimeError, match="nanmean"):
        torch.nanmean(i)


@pytest.mark.parametrize("dev", DEVICES)
def test_out_and_inplace(dev):
    x = _t([0.1, 0.2, 0.3], dev)
    o = torch.empty(3, dtype=torch.float64, device=dev)
    assert torch.tan(x, out=o) is o and np.allclose(_np(o), np.tan([0.1, 0.2, 0.3]))
    assert torch.atan2(x, x, out=o) is o and np.allclose(_np(o), math.pi / 4)
    assert torch.special.erf(x, out=o) is o and np.allclose(_np(o), sp.erf([0.1, 0.2, 0.3]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tan(x, out=torch.empty(3, dtype=torch.int64, device=dev))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        torch.tan(_t([1.0], dev, requires_grad=True), out=torch.empty(1, dtype=torch.float64, device=dev))
    y = x.clone()
    assert y.tan_() is y and np.allclose(_np(y), np.tan([0.1, 0.2, 0.3]))
    y = x.clone()
    y.atan2_(_t([1.0], dev))
    assert np.allclose(_np(y), np.arctan2([0.1, 0.2, 0.3], 1.0))
    y = x.clone()
    y.addcmul_(x, x, value=2)
    assert np.allclose(_np(y), [0.12, 0.28, 0.48])
    y.addcdiv_(x, x)
    assert np.allclose(_np(y), [1.12, 1.28, 1.48])
    z = _t([inf, nan, 1.0], dev)
    z.nan_to_num_(posinf=7.0)
    assert z.tolist() == [7.0, 0.0, 1.0]
    w = _t([0.0, 5.0, -5.0], dev)
    w.clamp_(min=_t([1.0, 1.0, -6.0], dev), max=_t([2.0, 2.0, 2.0], dev))
    assert w.tolist() == [1.0, 2.0, -5.0]
    w.clamp_min_(_t(1.5, dev)).clamp_max_(1.75)
    assert w.tolist() == [1.5, 1.75, 1.5]
    w = _t([1.0, 2.0], dev)
    w.float_power_(2)
    assert w.tolist() == [1.0, 4.0]
    with pytest.raises(RuntimeError, match="float_power_"):
        _t([1.0], dev, torch.float32).float_power_(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        _t([1], dev, torch.int64).tan_()
    # in-place on a non-leaf is recorded: d/dx tan(2x) = 2 (1 + tan(2x)^2)
    a = _t([0.3], dev, requires_grad=True)
    b = a * 2
    b.tan_()
    b.backward()
    assert np.allclose(_np(a.grad), 2 * (1 + np.tan(0.6) ** 2))
    p = _t([0.5], dev)
    p.polygamma_(1)
    assert np.allclose(_np(p), sp.polygamma(1, 0.5))


@pytest.mark.parametrize("dev", DEVICES)
def test_comparisons(dev):
    a = _t([1.0, inf, -inf, nan, 1e-9, 100.0], dev)
    b = _t([1.0 + 1e-6, inf, inf, nan, 0.0, 100.1], dev)
    assert torch.isclose(a, b).tolist() == [True, True, False, False, True, False]
    assert torch.isclose(a, b, equal_nan=True).tolist()[3] is True
    assert torch.isclose(a, b, rtol=0, atol=0).tolist() == [False, True, False, False, False, False]
    assert torch.allclose(a[:2], b[:2]) is True and torch.allclose(a, b) is False
    assert torch.equal(a[:3], a[:3].clone()) is True and torch.equal(a, a) is False   # NaN != NaN
    assert torch.equal(a, a[:3]) is False
    assert torch.equal(_t([1, 2], dev, torch.int64), _t([1.0, 2.0], dev)) is True
    with pytest.raises(RuntimeError, match="did not match"):
        torch.isclose(a, a.float())
    with pytest.raises(RuntimeError, match="rtol"):
        torch.isclose(a, a, rtol=-1)
    e = _t([[1, 2], [3, 4]], dev, torch.int64)
    assert torch.isin(e, _t([4, 1, 9], dev, torch.int64)).tolist() == [[True, False], [False, True]]
    assert torch.isin(e, _t([4, 1], dev, torch.int64), invert=True).tolist() == [[False, True], [True, False]]
    assert torch.isin(3, e).tolist() is True and torch.isin(e, 3).tolist() == [[False, False], [True, False]]
    assert torch.isin(e, _t([], dev, torch.int64)).tolist() == [[False, False], [False, False]]
    assert torch.isin(e, _t([2.0], dev)).tolist() == [[False, True], [False, False]]
    assert torch.is_nonzero(_t([0.5], dev)) is True and torch.is_nonzero(_t(0, dev, torch.int64)) is False
    with pytest.raises(RuntimeError, match="more than one value"):
        torch.is_nonzero(_t([1.0, 2.0], dev))
    with pytest.raises(RuntimeError, match="no values"):
        torch.is_nonzero(_t([], dev))
    assert torch.is_complex(a) is False and a.is_complex() is False and torch.is_floating_point(a)
    assert torch.isreal(a).tolist() == [True] * 6
    assert e.isclose(e).tolist() == [[True, True], [True, True]] and e.equal(e) and e.allclose(e)


@pytest.mark.parametrize("dev", DEVICES)
def test_argument_errors(dev):
    x = _t([0.5, 1.5], dev)
    with pytest.raises(RuntimeError, match="negative n"):
        torch.polygamma(-1, x)
    with pytest.raises(RuntimeError, match="boolean"):  # (PyTorch 2.13 has no (p-1)/2 domain check: review 21b)
        torch.mvlgamma(_t([1.0], dev).bool(), 2)
    with pytest.raises(RuntimeError, match="p has to be"):
        torch.mvlgamma(x, 0)
    with pytest.raises(RuntimeError, match="addcdiv"):
        torch.addcdiv(x, _t([1, 2], dev, torch.int64), _t([1, 2], dev, torch.int64))
    with pytest.raises(RuntimeError, match="without overflow"):  # PyTorch 2.13 truncates a float value, checked
        torch.addcmul(_t([1], dev, torch.int8), _t([1], dev, torch.int8), _t([1], dev, torch.int8), value=300.5)
    with pytest.raises(RuntimeError, match="heaviside"):
        torch.heaviside(x, _t([1.0], dev, torch.float32))
    with pytest.raises(TypeError, match="tan"):
        torch.tan([1.0])
    with pytest.raises(RuntimeError, match="frac"):
        torch.frac(_t([1], dev, torch.int64))


@pytest.mark.parametrize("dev", DEVICES)
def test_grad_fn_names_and_special_gradients(dev):
    x = _t([0.3, 0.7], dev, requires_grad=True)
    names = {"tan": torch.tan(x), "erfinv": torch.erfinv(x), "digamma": torch.digamma(x), "i0": torch.i0(x),
             "i0e": torch.special.i0e(x), "ndtri": torch.special.ndtri(x), "logit": torch.logit(x),
             "atan2": torch.atan2(x, x), "xlogy": torch.xlogy(x, x), "addcmul": torch.addcmul(x, x, x),
             "nan_to_num": torch.nan_to_num(x), "polygamma": torch.polygamma(2, x), "frac": torch.frac(x)}
    want = {"tan": "TanBackward0", "erfinv": "ErfinvBackward0", "digamma": "DigammaBackward0", "i0": "I0Backward0",
            "i0e": "SpecialI0EBackward0", "ndtri": "SpecialNdtriBackward0", "logit": "LogitBackward0",
            "atan2": "Atan2Backward0", "xlogy": "XlogyBackward0", "addcmul": "AddcmulBackward0",
            "nan_to_num": "NanToNumBackward0", "polygamma": "PolygammaBackward0", "frac": "FracBackward0"}
    for k, r in names.items():
        assert type(r.grad_fn).__name__ == want[k], k
    # nan_to_num passes the gradient only where the input is finite; logit(eps) is 0 outside [eps, 1 - eps]
    z = _t([1.0, inf, nan], dev, requires_grad=True)
    torch.nan_to_num(z).sum().backward()
    assert z.grad.tolist() == [1.0, 0.0, 0.0]
    w = _t([0.05, 0.5], dev, requires_grad=True)
    torch.logit(w, eps=0.1).sum().backward()
    assert w.grad.tolist() == [0.0, 4.0]
    # fmax: the gradient goes to the non-NaN operand
    p, q = _t([nan, 1.0], dev, requires_grad=True), _t([2.0, nan], dev, requires_grad=True)
    torch.fmax(p, q).sum().backward()
    assert p.grad.tolist() == [0.0, 1.0] and q.grad.tolist() == [1.0, 0.0]
    # frexp: d mantissa / dx = 2^-exponent
    f = _t([3.0, -10.0], dev, requires_grad=True)
    torch.frexp(f).mantissa.sum().backward()
    assert f.grad.tolist() == [0.25, 0.0625]


@pytest.mark.parametrize("dev", DEVICES)
def test_gradgradcheck_of_special_functions(dev):
    from coretorch.autograd import gradgradcheck
    x = _t([0.6, 1.3, 2.2], dev, requires_grad=True)
    for f in (torch.lgamma, torch.special.i1e, torch.special.erfcx, torch.special.log_ndtr,
              lambda t: torch.hypot(t, t * 0.5 + 1), lambda t: torch.logaddexp2(t, 1 - t)):
        assert gradgradcheck(f, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("dev", DEVICES)
def test_fused_gelu_primitive_matches_nn_functional(dev):
    """The optional 'gelu' kernel (one pass; for nn.functional.gelu's forward) agrees with the composite."""
    from coretorch.tensor import _make
    for dt, tol in ((torch.float64, 1e-13), (torch.float32, 1e-5)):
        x = torch.randn(1000, dtype=dt).to(dev) * 3
        table = x._be
        assert table.has("gelu")
        got = _make(table.gelu(x._data), x.dtype, table)
        np.testing.assert_allclose(_np(got), _np(torch.nn.functional.gelu(x)), rtol=tol, atol=tol)


@pytest.mark.parametrize("dev", DEVICES)
def test_heaviside_is_recorded_and_its_backward_raises_as_in_pytorch(dev):
    x = _t([-1.0, 0.0, 2.0], dev, torch.float32).requires_grad_()
    y = torch.heaviside(x, _t([0.5, 0.5, 0.5], dev, torch.float32))
    assert y.requires_grad and type(y.grad_fn).__name__ == "HeavisideBackward0"
    assert y.detach().cpu().tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="the derivative for 'heaviside' is not implemented"):
        y.sum().backward()
    with torch.no_grad():
        assert not torch.heaviside(x, _t([0.5, 0.5, 0.5], dev, torch.float32)).requires_grad


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "composite"])
def test_ldexp_integer_exponent_is_exact(dev, dtype, kernel, monkeypatch):
    """An integer exponent scales exactly (C's ldexp, one rounding), as PyTorch: before, 2 ** other was taken in
    float32, so float64's 1.5 * 2**200 was inf and float32's 2**100 * 2**-200 was 0.  The composite (a backend
    without the kernel) agrees wherever the result is a normal float, and keeps 0 * 2**huge at 0."""
    if not kernel:
        table = torch.empty(0, device=dev)._be
        monkeypatch.setattr(type(table), "has", lambda self, name, _has=type(table).has: name != "ldexp"
                            and _has(self, name))
    npd = dtype.np
    fi = np.finfo(npd)
    big = 1000 if dtype is torch.float64 else 120
    x = np.array([1.5, -3.0, 2.0 ** big, 2.0 ** -big, 0.0, -0.0, inf, -inf, nan, 0.7, fi.max, fi.tiny], npd)
    for e in ([3, -2, -2 * big, 2 * big, 2 ** 30, -(2 ** 30), 5, -5, 5, big // 2, -1, -1],
              [0, 7, -big, big, 1, -1, 0, 0, 0, -(big + 5), 0, 1]):
        e = np.array(e, np.int64)
        got = torch.ldexp(torch.tensor(x, device=dev), torch.tensor(e, device=dev))
        assert got.dtype is dtype
        want = np.ldexp(x, e.astype(np.int32))
        if kernel:
            np.testing.assert_array_equal(_np(got), want)
        else:
            normal = ~(np.abs(want) < fi.tiny) | (want == 0)
            np.testing.assert_array_equal(_np(got)[normal], want[normal])
    # the exponent as int32, wrapping (PyTorch: 2**31 is -2**31, so 1.0 * 2**(2**31) is 0)
    got = torch.ldexp(torch.tensor([1.0, 1.0], dtype=dtype, device=dev),
                      torch.tensor([2 ** 31, -(2 ** 31) - 3], device=dev))
    assert got.tolist() == [0.0, inf]


@pytest.mark.parametrize("dev", DEVICES)
def test_ldexp_dtypes_broadcasting_and_errors(dev):
    one = torch.tensor([1.5], device=dev)
    for dt in (torch.float16, torch.bfloat16):
        h = torch.tensor([1.5, 3.0], dtype=dt, device=dev)
        r = torch.ldexp(h, torch.tensor([-20, 2], device=dev))
        assert r.dtype is dt  # (was float32)
        assert r.float().tolist() == [float(np.float32(1.5 * 2.0 ** -20).astype(np.float16))
                                      if dt is torch.float16 else r.float().tolist()[0], 12.0]
    assert torch.ldexp(torch.tensor([1.5], dtype=torch.float16, device=dev), torch.tensor([-20.0], device=dev)).dtype \
        is torch.float32  # (a float exponent promotes)
    i = torch.tensor([3, 5], device=dev)
    assert torch.ldexp(i, torch.tensor([3], device=dev)).tolist() == [24.0, 40.0]
    # broadcasting both ways, a non-contiguous operand and a 0-d exponent
    x = torch.arange(12.0, dtype=torch.float64, device=dev).reshape(3, 4).t()
    e = torch.tensor([[1], [-1], [2], [0]], device=dev)
    np.testing.assert_array_equal(_np(torch.ldexp(x, e)), np.ldexp(_np(x), _np(e).astype(np.int32)))
    np.testing.assert_array_equal(_np(torch.ldexp(x, torch.tensor(-3, device=dev))), _np(x) / 8)
    np.testing.assert_array_equal(_np(torch.ldexp(torch.tensor(2.0, device=dev), e)), 2.0 * 2.0 ** _np(e))
    # in place and out=
    y = torch.tensor([1.0, 2.0], dtype=torch.float64, device=dev)
    y.ldexp_(torch.tensor([200, -3], device=dev))
    assert y.tolist() == [2.0 ** 200, 0.25]
    out = torch.empty(1, device=dev)
    assert torch.ldexp(one, torch.tensor([2], device=dev), out=out) is out and out.tolist() == [6.0]
    with pytest.raises(NotImplementedError, match="ldexp.*bool"):
        torch.ldexp(one, torch.tensor([True], device=dev))
    with pytest.raises(TypeError, match="ldexp.*other.*Tensor"):
        torch.ldexp(one, 3)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([3], device=dev).ldexp_(torch.tensor([1], device=dev))


@pytest.mark.parametrize("dev", DEVICES)
def test_ldexp_gradients(dev):
    x = torch.tensor([[1.5, -0.25, 3.0]], dtype=torch.float64, device=dev, requires_grad=True)
    e = torch.tensor([[3], [200], [-7]], device=dev)
    y = torch.ldexp(x, e)
    assert type(y.grad_fn).__name__ == "LdexpBackward0"
    y.backward(torch.ones_like(y))
    # exact: the sum over the broadcast rows of 2 ** e (float64 reaches 2**200; the old float32 2 ** e was inf)
    assert x.grad.tolist() == [[8.0 + 2.0 ** 200 + 2.0 ** -7] * 3]
    e = torch.tensor([[3], [1], [-2]], device=dev)  # (finite differences of 2**200-scaled outputs lose the rest)
    assert torch.autograd.gradcheck(lambda t: torch.ldexp(t, e), (x.detach().requires_grad_(),))
    assert torch.autograd.gradgradcheck(lambda t: torch.ldexp(t, e) ** 2, (x.detach().requires_grad_(),))
    # a float exponent: the gradient of both operands, PyTorch's grad_fn name
    xf = torch.tensor([1.5, 2.0], dtype=torch.float64, device=dev, requires_grad=True)
    ef = torch.tensor([3.0, -1.5], dtype=torch.float64, device=dev, requires_grad=True)
    yf = torch.ldexp(xf, ef)
    assert type(yf.grad_fn).__name__ == "LdexpBackward0"
    assert torch.autograd.gradcheck(torch.ldexp, (xf, ef))
