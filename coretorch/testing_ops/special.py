"""OpCases of the special family (coretorch.ops.special, coretorch.ops.comparison, coretorch.special); part of
coretorch.testing.CASES.  References are numpy and scipy.special (imported when a reference runs: scipy is a
dependency of the cpu backend plugin and of the tests, never of the core)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

import coretorch as ct
from coretorch.testing import DEFAULT_FLOAT, FLOAT_DTYPES, OpCase
from coretorch.testing import Arg as A
from coretorch.testing_ops.core import _binary, _binref, _reduction, _unary, _uref, result_type

F = FLOAT_DTYPES
FI = F + ("int64",)


def _sp(name: str, float_only: bool = True):
    """A scipy.special ufunc as a reference in the input's (or the default float) dtype."""
    def ref(a, *rest):
        import scipy.special as sp
        if float_only and a.dtype.kind != "f":
            a = a.astype(DEFAULT_FLOAT)
        return np.asarray(getattr(sp, name)(a.astype(np.float64), *rest)).astype(a.dtype)
    return ref


def _fref(npop):
    """A binary float reference: PyTorch's promotion, integers to the default float, computed in float64."""
    def ref(a, b):
        dt = result_type(a, b)
        if dt.kind != "f":
            dt = DEFAULT_FLOAT
        f64 = [x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in (a, b)]
        return np.asarray(npop(*f64)).astype(dt)
    return ref


def _spbin(name):
    def op(a, b):
        import scipy.special as sp
        return getattr(sp, name)(a, b)
    return _fref(op)


def _heaviside(a, v):
    return np.where(a == 0, v, (a > 0).astype(a.dtype)).astype(a.dtype)


def _with_specials(a):
    """Inputs with +-inf (|x| > 1.5) and NaN (|x| < 0.2) put in."""
    return np.where(a > 1.5, np.inf, np.where(a < -1.5, -np.inf, np.where(np.abs(a) < 0.2, np.nan, a))).astype(a.dtype)


def _ct_specials(x):
    return ct.where(x > 1.5, math.inf, ct.where(x < -1.5, -math.inf, ct.where(x.abs() < 0.2, math.nan, x)))


def _nan_to_num_ref(a, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(_with_specials(a), nan=nan, posinf=posinf, neginf=neginf)


def _frexp_ref(a):
    m, e = np.frexp(a)
    return m, e.astype(np.int32)


def _ldexp_ref(a, e):
    """C's ldexp with the exponent as int32, in a's float dtype (the default float for an integer a)."""
    return np.ldexp(a.astype(a.dtype if a.dtype.kind == "f" else DEFAULT_FLOAT), e.astype(np.int32))


def _mvlgamma_ref(a, p):
    """sum_j lgamma(a - j/2) + p (p - 1) / 4 log(pi) (scipy's multigammaln refuses a <= (p - 1) / 2)."""
    import scipy.special as sp
    a64 = a.astype(np.float64)
    with np.errstate(all="ignore"):
        r = sum(sp.gammaln(a64 - j / 2) for j in range(p)) + p * (p - 1) / 4 * np.log(np.pi)
    return np.asarray(r).astype(a.dtype)


def _close_pair(a, b):
    return (a + np.where(b > 0, 1e-9, 1e-2).astype(a.dtype)).astype(a.dtype)


def _build() -> list[OpCase]:
    npf: Any  # (a loop variable over numpy callables of different kinds)
    cases: list[OpCase] = []
    c = cases.extend
    # ---- unary float functions (integer inputs promote) ----
    for name, npf, dom, gg in (("tan", np.tan, "small", True), ("asin", np.arcsin, "small", True),
                               ("acos", np.arccos, "small", False), ("atan", np.arctan, "any", False),
                               ("sinh", np.sinh, "any", True), ("cosh", np.cosh, "any", False),
                               ("asinh", np.arcsinh, "any", False), ("atanh", np.arctanh, "small", False),
                               ("log2", np.log2, "positive", True), ("log10", np.log10, "positive", False),
                               ("exp2", np.exp2, "any", True), ("sinc", np.sinc, "any", True)):
        c(_unary(name, getattr(ct, name), _uref(npf, True), dom, dtypes=FI if dom != "small" else F, gradgrad=gg))
    for alias, npf, dom in (("arcsin", np.arcsin, "small"), ("arccos", np.arccos, "small"),
                            ("arctan", np.arctan, "any"), ("arcsinh", np.arcsinh, "any"),
                            ("arctanh", np.arctanh, "small")):
        cases.append(OpCase(alias, getattr(ct, alias), _uref(npf, True), (A((3, 4), dom),)))
        cases.append(OpCase(f"{alias}.method", lambda x, n=alias: getattr(x, n)(), _uref(npf, True), (A((3, 4), dom),)))
    c(_unary("acosh", lambda x: ct.acosh(x + 1.5), lambda a: np.arccosh(a + np.asarray(1.5, a.dtype)), "positive"))
    cases.append(OpCase("arccosh", lambda x: (x + 1.5).arccosh(), lambda a: np.arccosh(a + np.asarray(1.5, a.dtype)),
                        (A((5,), "positive"),)))
    for name, dom, gg in (("erfc", "any", True), ("lgamma", "positive", True), ("digamma", "positive", True),
                          ("i0", "any", True)):
        c(_unary(name, getattr(ct, name), _sp({"lgamma": "gammaln", "digamma": "psi"}.get(name, name)), dom,
                 dtypes=FI, gradgrad=gg))
    c(_unary("erfinv", ct.erfinv, _sp("erfinv"), "small", gradgrad=True))
    for name, dom, gg in (("i0e", "any", True), ("i1", "any", True), ("i1e", "any", False), ("ndtr", "any", True),
                          ("log_ndtr", "any", True), ("erfcx", "any", True), ("entr", "positive", False)):
        c(_unary(f"special.{name}", getattr(ct.special, name), _sp(name), dom, dtypes=FI, gradgrad=gg))
    c(_unary("special.ndtri", lambda x: ct.special.ndtri((x + 1) / 2),
             lambda a: _sp("ndtri")((a + 1) / 2), "small", gradgrad=True))
    cases += [
        OpCase("special.i1.at0", ct.special.i1, _sp("i1"), (A((4,), "zeros"),), vjp_ref=lambda g, a: 0.5 * g),
        OpCase("special.i1e.at0", ct.special.i1e, _sp("i1e"), (A((4,), "zeros"),), vjp_ref=lambda g, a: 0.5 * g),
        OpCase("sinc.at0", ct.sinc, _uref(np.sinc), (A((4,), "zeros"),), vjp_ref=lambda g, a: 0 * g),
        OpCase("special.entr.zero", ct.special.entr, _sp("entr"), (A((4,), "zeros"),), grad=False),
        OpCase("special.expit", ct.special.expit, _uref(lambda a: 1 / (1 + np.exp(-a)), True), (A(),), FI),
        OpCase("special.gammaln", ct.special.gammaln, _sp("gammaln"), (A((3, 4), "positive"),)),
        OpCase("special.psi", ct.special.psi, _sp("psi"), (A((3, 4), "positive"),)),
        OpCase("special.xlog1py", ct.special.xlog1py, _spbin("xlog1py"), (A(), A((4, 5), "positive"))),
        OpCase("igamma", ct.igamma, _spbin("gammainc"), (A((3, 4), "positive"), A((3, 4), "positive")), grad=False),
        OpCase("special.gammaincc.bcast", ct.special.gammaincc, _spbin("gammaincc"),
               (A((3, 1), "positive"), A((4,), "positive")), grad=False),
        OpCase("igammac.dx", lambda x: ct.igammac(ct.full_like(x.detach(), 2.5), x),
               lambda a: _spbin("gammaincc")(np.full_like(a, 2.5), a), (A((3, 4), "positive"),)),
        # at x == 0 with y inside the log's domain the x-gradient is log1p(y) / log(y), as PyTorch 2.13
        OpCase("special.xlog1py.x0", ct.special.xlog1py, _spbin("xlog1py"), (A((5,), "zeros"), A((5,), "positive")),
               vjp_ref=lambda g, a, b: (g * np.log1p(b), 0 * g)),
        OpCase("special.multigammaln", lambda x: ct.special.multigammaln(x + 1.5, 3),
               lambda a: _mvlgamma_ref(a + np.asarray(1.5, a.dtype), 3), (A((3, 4), "positive"),)),
        OpCase("special.logsumexp", lambda x: ct.special.logsumexp(x, 1),
               lambda a: np.log(np.exp(a).sum(1)).astype(a.dtype), (A(),)),
        OpCase("special.softmax", lambda x: ct.special.softmax(x, 1),
               lambda a: (np.exp(a) / np.exp(a).sum(1, keepdims=True)).astype(a.dtype), (A(),)),
        OpCase("special.log_softmax", lambda x: ct.special.log_softmax(x, -1),
               lambda a: (a - np.log(np.exp(a).sum(-1, keepdims=True))).astype(a.dtype), (A(),)),
        OpCase("special.erf", ct.special.erf, _sp("erf"), (A(),), FI),
        OpCase("special.exp2", ct.special.exp2, _uref(np.exp2, True), (A(),)),
        OpCase("special.round", ct.special.round, _uref(np.round), (A(),), grad=False),
        OpCase("special.sinc", ct.special.sinc, _uref(np.sinc, True), (A(),)),
        OpCase("special.polygamma", lambda x: ct.special.polygamma(2, x), lambda a: _polygamma_ref(2, a),
               (A((3, 4), "positive"),)),
    ]
    cases += _bessel_cases()
    # polygamma, mvlgamma, logit, frac, deg2rad, rad2deg, nan_to_num, signbit, frexp
    for n in (0, 1, 3):
        cases.append(OpCase(f"polygamma.n{n}", lambda x, n=n: ct.polygamma(n, x), lambda a, n=n: _polygamma_ref(n, a),
                            (A((3, 4), "positive"),), FI, gradgrad=n == 1))
    cases += [
        OpCase("polygamma.method", lambda x: x.polygamma(2), lambda a: _polygamma_ref(2, a), (A((5,), "positive"),)),
        OpCase("polygamma.negative_n", lambda x: ct.polygamma(-1, x), None, (A((3,)),), raises=RuntimeError),
        OpCase("mvlgamma", lambda x: ct.mvlgamma(x + 1.0, 2), lambda a: _mvlgamma_ref(a + np.asarray(1.0, a.dtype), 2),
               (A((3, 4), "positive"),), gradgrad=True),
        OpCase("mvlgamma.p1", lambda x: x.mvlgamma(1), _sp("gammaln"), (A((3, 4), "positive"),)),
        # PyTorch 2.13 checks no domain: below (p - 1) / 2 the lgamma terms' values (inf at their poles)
        OpCase("mvlgamma.below_domain", lambda x: ct.mvlgamma(x * 0.5 + 0.3, 5),
               lambda a: _mvlgamma_ref(a * np.asarray(0.5, a.dtype) + np.asarray(0.3, a.dtype), 5),
               (A((3, 4), "positive"),), grad=False),
        OpCase("logit", lambda x: ct.logit(x * 0.5 + 0.5), lambda a: _uref(lambda v: np.log(v / (1 - v)))(
            (a * np.asarray(0.5, a.dtype) + np.asarray(0.5, a.dtype)).astype(a.dtype)), (A((4, 5), "small"),),
               gradgrad=True),
        OpCase("logit.eps", lambda x: x.logit(eps=0.2), lambda a: _uref(lambda v: np.log(v / (1 - v)))(
            np.clip(a, 0.2, 0.8).astype(a.dtype)), (A((4, 5), "distinct"),)),
        OpCase("logit.int", lambda x: ct.logit(x), _uref(lambda v: np.log(v / (1 - v)), True), (A((5,), "small"),),
               ("int64",), grad=False),
    ]
    c(_unary("frac", ct.frac, _uref(lambda a: a - np.trunc(a)), "any"))
    cases.append(OpCase("frac.int", ct.frac, None, (A((3,)),), ("int64",), raises=RuntimeError))
    c(_unary("deg2rad", ct.deg2rad, _uref(lambda a: a * (np.pi / 180), True), dtypes=FI))
    c(_unary("rad2deg", ct.rad2deg, _uref(lambda a: a * (180 / np.pi), True), dtypes=FI))
    c(_unary("nan_to_num", lambda x: ct.nan_to_num(_ct_specials(x)), _nan_to_num_ref, dtypes=F + ("float16",)))
    cases += [
        OpCase("nan_to_num.values", lambda x: _ct_specials(x).nan_to_num(1.5, 9.0, -9.0),
               lambda a: _nan_to_num_ref(a, 1.5, 9.0, -9.0), (A(),)),
        OpCase("nan_to_num.swapped", lambda x: ct.nan_to_num(_ct_specials(x), posinf=-5.0, neginf=5.0),
               lambda a: _nan_to_num_ref(a, posinf=-5.0, neginf=5.0), (A(),)),
        OpCase("nan_to_num.int", ct.nan_to_num, lambda a: a.copy(), (A(),), ("int64",)),
        OpCase("signbit", ct.signbit, np.signbit, (A(),), FI + ("float16",), grad=False),
        OpCase("signbit.t", lambda x: x.signbit(), np.signbit, (A((4, 5), layout="t"),), grad=False),
        OpCase("frexp", ct.frexp, _frexp_ref, (A(),), F + ("float16",)),
        OpCase("frexp.method", lambda x: x.frexp(), _frexp_ref, (A((3, 4), layout="t"),)),
        OpCase("frexp.int", ct.frexp, None, (A((3,)),), ("int64",), raises=RuntimeError),
    ]
    # ---- binary ----
    for name, ref, doms, gg in (("atan2", _fref(np.arctan2), ("any", "nonzero"), True),
                                ("hypot", _fref(np.hypot), ("nonzero", "nonzero"), True),
                                ("logaddexp", _fref(np.logaddexp), ("any", "any"), True),
                                ("logaddexp2", _fref(np.logaddexp2), ("any", "any"), False),
                                ("xlogy", _spbin("xlogy"), ("any", "positive"), True),
                                ("copysign", _fref(np.copysign), ("nonzero", "nonzero"), False)):
        # hypot and logaddexp(2) have no integer kernels in PyTorch (an integer result dtype raises): floats only, and
        # a raising case
        dts = F if name in ("hypot", "logaddexp", "logaddexp2") else FI
        # PyTorch's atan2/hypot/logaddexp take Tensors only (a number raises TypeError: test_hardening15b)
        scalars = (("", 1.5, F),) if name == "xlogy" else ()
        c(_binary(name, getattr(ct, name), ref, doms, dtypes=dts, gradgrad=gg, scalars=scalars))
    # copysign takes a number second only (PyTorch 2.13: torch.copysign(1.5, x) raises TypeError)
    cases += [OpCase("copysign.scalar", lambda x: ct.copysign(x, 1.5), lambda a: _fref(np.copysign)(a, 1.5),
                     (A((3, 4), "nonzero"),), F),
              OpCase("copysign.rscalar", lambda x: ct.copysign(1.5, x), None, (A((3,)),), F, raises=TypeError)]
    cases += [OpCase(f"{n}.int", getattr(ct, n), None, (A((3,)), A((3,))), ("int64",), raises=NotImplementedError)
              for n in ("hypot", "logaddexp", "logaddexp2")]
    for name, npf in (("fmax", np.fmax), ("fmin", np.fmin)):
        c(_binary(name, getattr(ct, name), _binref(npf), ("distinct", "distinct"), dtypes=FI, gradgrad=True))
        cases.append(OpCase(f"{name}.nan", lambda x, y, n=name: getattr(ct, n)(_ct_specials(x), _ct_specials(y)),
                            lambda a, b, f=npf: f(_with_specials(a), _with_specials(b)), (A((4, 5), "distinct"),
                                                                                         A((4, 5), "distinct")),
                            grad=False))
    cases += [
        OpCase("arctan2", ct.arctan2, _fref(np.arctan2), (A(), A((5,), "nonzero"))),
        OpCase("atan2.method", lambda x, y: x.atan2(y), _fref(np.arctan2), (A(), A((5,), "nonzero"))),
        OpCase("xlogy.x0", ct.xlogy, _spbin("xlogy"), (A((5,), "zeros"), A((5,), "positive")), FI,
               vjp_ref=lambda g, a, b: (g * np.log(b), 0 * g)),
        OpCase("xlogy.rscalar0", lambda y: ct.xlogy(0.0, y), lambda b: _spbin("xlogy")(0.0, b), (A((5,), "positive"),)),
        OpCase("copysign.int", ct.copysign, _fref(np.copysign), (A((3, 4)), A((3, 4), "nonzero")), ("int64",)),
        # recorded but not differentiable, as in PyTorch (backward raises: tests/test_special.py)
        OpCase("heaviside", ct.heaviside, _heaviside, (A((6,), "small"), A((6,))), FI, grad=False, nondiff=None),
        OpCase("heaviside.0d", lambda x, v: x.heaviside(v), _heaviside, (A((3, 4)), A(())), F, grad=False,
               nondiff=None),
        OpCase("heaviside.mixed", ct.heaviside, None, (A((3,)), A((3,), dtype="float64")), ("float32",),
               raises=RuntimeError),
        OpCase("ldexp", ct.ldexp, _ldexp_ref, (A(), A((4, 5), "small", "int64"))),
        OpCase("ldexp.method", lambda x, e: x.ldexp(e), _ldexp_ref, (A((3,)), A((3,), "small", "int32"))),
        OpCase("float_power.method", lambda x, y: x.float_power(y),
               lambda a, b: np.power(a.astype(np.float64), b.astype(np.float64)), (A((3, 4), "positive"), A((3, 4)))),
        OpCase("true_divide", ct.true_divide, _binref(np.true_divide, "div"), (A(), A((4, 5), "nonzero")), FI),
        OpCase("addcmul", lambda x, a, b: ct.addcmul(x, a, b, value=0.5),
               lambda x, a, b: (x + 0.5 * a * b).astype(x.dtype), (A(), A((5,)), A((4, 1))), gradgrad=True),
        OpCase("addcmul.method", lambda x, a, b: x.addcmul(a, b), lambda x, a, b: x + a * b, (A(), A(), A()), FI),
        OpCase("addcdiv", lambda x, a, b: ct.addcdiv(x, a, b, value=-2),
               lambda x, a, b: (x - 2 * (a / b)).astype(x.dtype), (A(), A(), A((4, 5), "nonzero")), gradgrad=True),
        OpCase("addcdiv.int", ct.addcdiv, None, (A((3,)), A((3,)), A((3,), "nonzero")), ("int64",),
               raises=RuntimeError),
    ]
    # ---- reductions ----
    c(_reduction("nanmean", ct.nanmean, lambda a, dim=None, keepdim=False: np.asarray(
        np.nanmean(a, axis=dim, keepdims=keepdim)).astype(a.dtype),
        [("", (4, 5), {}), (".dim", (4, 5), {"dim": 1}), (".neg_keep", (4, 5), {"dim": -2, "keepdim": True}),
         (".dims", (2, 3, 4), {"dim": (0, 2)})]))
    cases += [
        OpCase("nanmean.nan", lambda x: ct.where(x > 1.0, math.nan, x).nanmean(1),
               lambda a: np.nanmean(np.where(a > 1.0, np.nan, a), axis=1).astype(a.dtype), (A((5, 3)),)),
        OpCase("nanmean.int", ct.nanmean, None, (A((3,)),), ("int64",), raises=RuntimeError),
        OpCase("nansum.nan", lambda x: ct.where(x > 1.0, math.nan, x).nansum(1),
               lambda a: np.nansum(np.where(a > 1.0, np.nan, a), axis=1).astype(a.dtype), (A((5, 3)),)),
    ]
    # ---- comparisons and tests ----
    for name, npf in (("isinf", np.isinf), ("isfinite", np.isfinite), ("isposinf", np.isposinf),
                      ("isneginf", np.isneginf)):
        cases += [OpCase(name, lambda x, n=name: getattr(ct, n)(_ct_specials(x)), lambda a, f=npf: f(_with_specials(a)),
                         (A(),), F + ("float16",), grad=False),
                  OpCase(f"{name}.int", getattr(ct, name), npf, (A(),), ("int64", "bool"), grad=False),
                  OpCase(f"{name}.method_t", lambda x, n=name: getattr(x, n)(), npf, (A((4, 5), layout="t"),),
                         grad=False)]
    cases += [
        OpCase("isreal", ct.isreal, np.isreal, (A(),), FI, grad=False),
        OpCase("isclose", lambda x, y: ct.isclose(x, _close(x, y)), lambda a, b: np.isclose(a, _close_pair(a, b)),
               (A(), A()), grad=False),
        OpCase("isclose.method_bcast", lambda x, y: x.isclose(y, rtol=0.5, atol=0.1),
               lambda a, b: np.isclose(a, b, rtol=0.5, atol=0.1), (A((4, 5)), A((5,))), grad=False),
        OpCase("isclose.nan", lambda x: ct.isclose(_ct_specials(x), _ct_specials(x), equal_nan=True),
               lambda a: np.isclose(_with_specials(a), _with_specials(a), equal_nan=True), (A(),), grad=False),
        OpCase("isclose.int", lambda x, y: ct.isclose(x, y, atol=1), lambda a, b: np.isclose(a, b, atol=1, rtol=1e-5),
               (A(), A()), ("int64",), grad=False),
        OpCase("isclose.mixed", ct.isclose, None, (A((3,)), A((3,), dtype="float64")), ("float32",),
               raises=RuntimeError),
        OpCase("isin", ct.isin, np.isin, (A((4, 5)), A((3,))), ("int64", "int32"), grad=False),
        OpCase("isin.invert", lambda x, y: ct.isin(x, y, invert=True), lambda a, b: np.isin(a, b, invert=True),
               (A((4, 5), "small"), A((2, 2), "small")), ("int64",), grad=False),
        OpCase("isin.float", ct.isin, np.isin, (A((6,)), A((0,))), F, grad=False),
        OpCase("isin.scalar", lambda x: ct.isin(x, 2), lambda a: np.isin(a, 2), (A((4, 5)),), ("int64",), grad=False),
    ]
    return cases


def _airy_ref(a):
    import scipy.special as sp
    if a.dtype.kind != "f":
        a = a.astype(DEFAULT_FLOAT)
    return np.asarray(sp.airy(a.astype(np.float64))[0]).astype(a.dtype)


def _bessel_cases() -> list:
    """torch.special's Bessel J/Y/K, Airy and zeta functions (not differentiable but zeta's ``other``), and the
    modified Bessel I and spherical Bessel functions PyTorch also makes non-differentiable."""
    cases: list = []
    for name, spn, dom in (("bessel_j0", "j0", "any"), ("bessel_j1", "j1", "any"), ("bessel_y0", "y0", "positive"),
                           ("bessel_y1", "y1", "positive"), ("modified_bessel_k0", "k0", "positive"),
                           ("modified_bessel_k1", "k1", "positive"), ("scaled_modified_bessel_k0", "k0e", "positive"),
                           ("scaled_modified_bessel_k1", "k1e", "positive"), ("modified_bessel_i0", "i0", "any"),
                           ("modified_bessel_i1", "i1", "any")):
        cases += _unary(f"special.{name}", getattr(ct.special, name), _sp(spn), dom, dtypes=FI, nondiff=True)
        cases.append(OpCase(f"special.{name}.half", getattr(ct.special, name), None, (A((3,)),), ("float16",),
                            raises=NotImplementedError))
    cases += _unary("special.airy_ai", ct.special.airy_ai, _airy_ref, "any", dtypes=FI, nondiff=True)
    cases += _unary("special.spherical_bessel_j0", ct.special.spherical_bessel_j0,
                    _uref(lambda a: np.sinc(a / np.pi), True), "any", dtypes=FI, nondiff=True)
    cases += [
        OpCase("special.spherical_bessel_j0.inf", lambda x: ct.special.spherical_bessel_j0(_ct_specials(x)),
               lambda a: np.where(np.isinf(_with_specials(a)), 0.0, np.sinc(_with_specials(a) / np.pi)).astype(
                   a.dtype), (A(),), nondiff=True),
        OpCase("special.zeta", lambda x, q: ct.special.zeta(x + 1.5, q),
               lambda a, b: _spbin("zeta")(a + np.asarray(1.5, a.dtype), b), (A((4, 5), "positive"),
                                                                              A((4, 5), "positive")), grad=False),
        OpCase("special.zeta.bcast", lambda x, q: ct.special.zeta(x + 1.5, q),
               lambda a, b: _spbin("zeta")(a + np.asarray(1.5, a.dtype), b), (A((4, 1), "positive"),
                                                                              A((5,), "positive")), grad=False),
        OpCase("special.zeta.scalar", lambda q: ct.special.zeta(3.0, q), lambda b: _spbin("zeta")(3.0, b),
               (A((3, 4), "positive"),)),
        OpCase("special.zeta.rscalar", lambda x: ct.special.zeta(x + 1.5, 2), lambda a: _spbin("zeta")(
            a + np.asarray(1.5, a.dtype), 2.0), (A((3, 4), "positive"),), grad=False),
        OpCase("special.zeta.dq", lambda q: ct.special.zeta(ct.full_like(q.detach(), 2.5), q),
               lambda b: _spbin("zeta")(np.full_like(b, 2.5), b), (A((3, 4), "positive"),)),
        OpCase("special.zeta.half", ct.special.zeta, None, (A((3,)), A((3,))), ("float16",),
               raises=NotImplementedError),
    ]
    return cases


def _close(x, y):
    return x + ct.where(y > 0, 1e-9, 1e-2).to(x.dtype)


def _polygamma_ref(n, a):
    import scipy.special as sp
    if a.dtype.kind != "f":
        a = a.astype(DEFAULT_FLOAT)
    return np.asarray(sp.polygamma(n, a.astype(np.float64))).astype(a.dtype)


CASES: list[OpCase] = _build()
