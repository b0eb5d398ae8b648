"""Elementwise math beyond the primitives and the special functions: trigonometric and hyperbolic
families, log2/log10/exp2, hypot, logaddexp, xlogy, erf family, gamma family, Bessel i0/i1, addcmul/addcdiv,
nan_to_num, frexp/ldexp, nanmean (the comparisons and tests are in ``comparison.py``).

Float functions promote integer and bool inputs to the default float dtype, as PyTorch; each is one primitive kernel
(see ``coretorch._backend.PRIMITIVES``, the ``special`` block) with its backward written in tensor ops (PyTorch's
formulas from derivatives.yaml), so double backward works.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .. import dtypes as _dt
from ..amp.autocast_mode import state as _ac, suspended as _ac_off
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _creation, reduction as _R
from ._util import edge, sum_to
from .inplace import apply_inplace
from ._ldexp import frexp, frexp_result, ldexp  # noqa: F401 - (public here: torch.frexp, torch.ldexp)
from ._special_util import _bool_out, _check, _float, _named, _out, _passthrough, _sq, _x
from .pointwise import (_binary_node, _make_binary, _make_unary, _save_first, abs as _abs, add, clamp, cos, div, eq,
                        exp, float_power, ge, gt, isnan, le, log, logical_and, logical_not, logical_or, lt, mul, neg,
                        sign, sin, sqrt, sub, trunc, where)

__all__: list[str] = [
    "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "asinh", "arcsinh", "acosh",
    "arccosh", "atanh", "arctanh", "log2", "log10", "exp2", "sinc", "deg2rad", "rad2deg", "frac", "logit", "erfc",
    "erfinv", "lgamma", "digamma", "polygamma", "mvlgamma", "i0", "signbit", "nan_to_num", "frexp", "ldexp",
    "atan2", "arctan2", "hypot", "logaddexp", "logaddexp2", "xlogy", "copysign", "heaviside", "fmax", "fmin",
    "addcmul", "addcdiv", "nanmean", "igamma", "igammac",
]
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods

_bool = _dt.bool_
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_SQRT_PI_2 = math.sqrt(math.pi) / 2
_TWO_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


# ops that backward lambdas call before their definition below (declared for type checkers)
cosh: Callable[..., Tensor]
digamma: Callable[..., Tensor]
i0e: Callable[..., Tensor]
i1: Callable[..., Tensor]
i1e: Callable[..., Tensor]
log_ndtr: Callable[..., Tensor]
erfcx: Callable[..., Tensor]
xlogy: Callable[..., Tensor]
xlog1py: Callable[..., Tensor]


# ---------------------------------------------------------------------------------------------
# unary float functions: one kernel each
# ---------------------------------------------------------------------------------------------
# PyTorch has no float16/bfloat16 kernels for these (its float-only dispatch): they raise NotImplementedError
_NO_HALF = frozenset({"erfcx", "log_ndtr", "ndtri"})


def _unary(name: str, backward, save: str = "x", node: str | None = None, doc: str = ""):
    f = _make_unary(name, backward, True, save, node_name=node)
    no_half = name in _NO_HALF

    def fn(input: Tensor, *, out=None) -> Tensor:
        if no_half and isinstance(input, Tensor) and (input.dtype is _dt.float16 or input.dtype is _dt.bfloat16):
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
        return f(input) if out is None else _out(f(input), out, name, input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"torch.{name}: elementwise, integer inputs promote to the default float dtype."
    return fn


def _sinc_bw(n, g):
    """(cos(pi x) - sinc(x)) / x; below |x| = 0.05 (where that difference cancels: its relative error is about
    3e-17 / x^2, 30 % at 1e-8) the Taylor series pi * (-u/3 + u^3/30 - u^5/840 + u^7/45360 - u^9/3991680), u = pi x,
    which is 0 at 0."""
    x = _x(n)
    small = lt(_abs(x), 0.05)
    safe = where(small, 1.0, x)
    px = mul(safe, math.pi)
    d = div(sub(cos(px), div(sin(px), px)), safe)
    u = mul(where(small, x, 0.0), math.pi)
    u2 = mul(u, u)
    p = 1.0 / 3991680
    for c in (-1.0 / 45360, 1.0 / 840, -1.0 / 30, 1.0 / 3):
        p = add(mul(u2, p), c)
    series = mul(u, mul(p, -math.pi))   # pi * (-u/3 + u^3/30 - ...) = -pi u (1/3 - u^2/30 + ...)
    return (mul(g, where(small, series, d)),)


def _tiny(x: Tensor) -> Tensor:
    """PyTorch's i1/i1e backward: 0.5 (the limit at 0) where not |x| > eps, NaN included."""
    return logical_not(gt(_abs(x), float(_dt.finfo(x.dtype).eps)))


def _i1_bw(n, g):
    x = _x(n)
    tiny = _tiny(x)
    safe = where(tiny, 1.0, x)
    return (mul(g, where(tiny, 0.5, sub(i0(safe), div(i1(safe), safe)))),)


def _i1e_bw(n, g):
    x = _x(n)
    tiny = _tiny(x)
    safe = where(tiny, 1.0, x)
    return (mul(g, where(tiny, 0.5, sub(i0e(safe), mul(i1e(safe), add(sign(safe), div(1.0, safe)))))),)


tan = _unary("tan", lambda n, g: (mul(g, add(_sq(_x(n)), 1)),), "out")
asin = _unary("asin", lambda n, g: (div(g, sqrt(sub(1, _sq(_x(n))))),))
acos = _unary("acos", lambda n, g: (neg(div(g, sqrt(sub(1, _sq(_x(n)))))),))
atan = _unary("atan", lambda n, g: (div(g, add(_sq(_x(n)), 1)),))
sinh = _unary("sinh", lambda n, g: (mul(g, cosh(_x(n))),))
cosh = _unary("cosh", lambda n, g: (mul(g, sinh(_x(n))),))
asinh = _unary("asinh", lambda n, g: (div(g, sqrt(add(_sq(_x(n)), 1))),))
# PyTorch's formula, 1 / sqrt(x^2 - 1): defined for x <= -1 too (inf at -1, 0 at -inf), nan inside (-1, 1)
acosh = _unary("acosh", lambda n, g: (div(g, sqrt(sub(_sq(_x(n)), 1))),))
atanh = _unary("atanh", lambda n, g: (div(g, sub(1, _sq(_x(n)))),))
log2 = _unary("log2", lambda n, g: (div(g, mul(_x(n), _LN2)),))
log10 = _unary("log10", lambda n, g: (div(g, mul(_x(n), _LN10)),))
exp2 = _unary("exp2", lambda n, g: (mul(g, mul(_x(n), _LN2)),), "out")
erfc = _unary("erfc", lambda n, g: (mul(g, mul(exp(neg(_sq(_x(n)))), -_TWO_SQRT_PI)),))


def _erfinv_bw(n, g):
    """PyTorch's formula saves the input and computes erfinv again: its result changed in place is no error."""
    return (mul(g, mul(exp(_sq(erfinv(_x(n)))), _SQRT_PI_2)),)


erfinv = _unary("erfinv", _erfinv_bw,
                doc="torch.erfinv: the inverse error function (erfinv(+-1) = +-inf, nan outside [-1, 1]).")
lgamma = _unary("lgamma", lambda n, g: (mul(g, digamma(_x(n))),))
digamma = _unary("digamma", lambda n, g: (mul(g, polygamma(1, _x(n))),),
                 doc="torch.digamma: the logarithmic derivative of the gamma function (-inf at 0, nan at "
                     "negative integers).")
sinc = _unary("sinc", _sinc_bw, doc="torch.sinc: sin(pi x) / (pi x), 1 at 0.")
i0 = _unary("i0", lambda n, g: (mul(g, i1(_x(n))),),
            doc="torch.i0: the modified Bessel function of the first kind, order 0.")
# torch.special only
i0e = _unary("i0e", lambda n, g: (mul(g, sub(i1e(_x(n)), mul(sign(_x(n)), i0e(_x(n))))),),
             node="SpecialI0EBackward0")
i1 = _unary("i1", _i1_bw, node="SpecialI1Backward0")
i1e = _unary("i1e", _i1e_bw, node="SpecialI1EBackward0")
ndtr = _unary("ndtr", lambda n, g: (mul(g, div(exp(mul(_sq(_x(n)), -0.5)), _SQRT_2PI)),),
              node="SpecialNdtrBackward0")
ndtri = _unary("ndtri", lambda n, g: (mul(g, mul(exp(mul(_sq(_x(n)), 0.5)), _SQRT_2PI)),), "out",
               node="SpecialNdtriBackward0")
log_ndtr = _unary("log_ndtr", lambda n, g: (mul(g, div(exp(sub(mul(_sq(_x(n)), -0.5), log_ndtr(_x(n)))),
                                                       _SQRT_2PI)),), node="SpecialLogNdtrBackward0")
erfcx = _unary("erfcx", lambda n, g: (mul(g, sub(mul(mul(_x(n), erfcx(_x(n))), 2.0), _TWO_SQRT_PI)),),
               node="SpecialErfcxBackward0")
entr = _unary("entr", lambda n, g: (mul(g, neg(add(log(_x(n)), 1))),), node="SpecialEntrBackward0")

arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


class PolygammaBackward0(Node):
    __slots__ = ("n",)

    def backward(self, g):
        (x,) = self.saved()
        return (mul(g, polygamma(self.n + 1, x)),)


def polygamma(n: int, input: Tensor, *, out=None) -> Tensor:
    """torch.polygamma: the n-th derivative of digamma (n = 0 is digamma)."""
    _check("polygamma", input)
    if isinstance(n, (bool, float)) or not hasattr(n, "__index__"):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _float(input)
    table = x._be
    r = table.polygamma(x._data, n) if n else table.digamma(x._data)
    if x._rg and _gs.enabled:
        node = PolygammaBackward0()
        node.n = n
        node.save(x)
        node.next_functions = (edge(x),)
        return _out(_make(r, x.dtype, table, node), out, "polygamma", input)
    return _out(_make(r, x.dtype, table), out, "polygamma", input)


MvlgammaBackward0 = _passthrough("MvlgammaBackward0")


def mvlgamma(input: Tensor, p: int, *, out=None) -> Tensor:
    """torch.mvlgamma: the multivariate log-gamma function of dimension ``p``, sum_i lgamma(x - i/2) + const (no
    domain check, as PyTorch 2.13: x <= (p - 1) / 2 gives lgamma's values there, inf at its poles)."""
    _check("mvlgamma", input)
    if input.dtype is _bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float(input)
    r = lgamma(x)
    for i in range(1, p):
        r = add(r, lgamma(sub(x, i / 2)))
    r = add(r, p * (p - 1) / 4 * math.log(math.pi))
    return _out(_named(r, MvlgammaBackward0), out, "mvlgamma")


def signbit(input: Tensor, *, out=None) -> Tensor:
    """torch.signbit: True where the sign bit is set (-0.0 included); integers: x < 0."""
    _check("signbit", input)
    if input.dtype.is_floating_point:
        r = _make(input._be.signbit(input._data), _bool, input._be)
    else:
        r = lt(input.detach(), 0)
    return _bool_out(r, out, "signbit", input)


# ---------------------------------------------------------------------------------------------
# composites (few kernels): deg2rad, rad2deg, frac, logit, nan_to_num, ldexp, frexp, addcmul, addcdiv
# ---------------------------------------------------------------------------------------------
Deg2RadBackward0 = _passthrough("Deg2RadBackward0")
Rad2DegBackward0 = _passthrough("Rad2DegBackward0")
FracBackward0 = _passthrough("FracBackward0")


class LogitBackward0(Node):
    """PyTorch's logit backward: without eps g / (x (1 - x)), nan outside [0, 1] (inf at 0 and 1); with eps
    g / (x (1 - x)) inside [eps, 1 - eps] (inf at 0 and 1 for eps=0), 0 outside and at NaN (PyTorch's vectorised
    kernel, what every tensor but a short tail gets; its scalar loop gives NaN there)."""
    __slots__ = ("eps",)

    def backward(self, g):
        (x,) = self.saved()
        eps = self.eps
        if eps is None:
            return (where(logical_or(lt(x, 0), gt(x, 1)), math.nan, div(g, mul(x, sub(1, x)))),)
        return (where(logical_and(ge(x, eps), le(x, 1 - eps)), div(g, mul(x, sub(1, x))), 0.0),)
class NanToNumBackward0(Node):
    """PyTorch's formula, grad * isfinite(x): a zero factor at the replaced elements (an infinite gradient there
    gives NaN, a finite one a signed zero, as PyTorch)."""
    __slots__ = ()

    def backward(self, g):
        x = self.saved()[0]
        return (mul(g, eq(sub(x, x), 0.0).to(g.dtype)),)  # (x - x is 0 exactly where x is finite)
class AddcmulBackward0(Node):
    """PyTorch's formula: each factor's gradient is ``grad * (other * value)`` at the broadcast shape, then summed to
    the factor's shape (a composite would sum first: an inf factor under gradients of mixed signs gives PyTorch's NaN
    only this way)."""
    __slots__ = ("value", "need", "shapes")

    def backward(self, g):
        t1, t2 = self.saved()
        ni, n1, n2 = self.need
        si, s1, s2 = self.shapes
        return (sum_to(g, si) if ni else None, sum_to(mul(g, mul(t2, self.value)), s1) if n1 else None,
                sum_to(mul(g, mul(t1, self.value)), s2) if n2 else None)


_AddcmulComposite = _passthrough("AddcmulBackward0")  # (mixed dtypes: the composite's graph, renamed)


AddcdivBackward0 = _passthrough("AddcdivBackward0")


def deg2rad(input: Tensor, *, out=None) -> Tensor:
    """Each element converted from degrees to radians (``input * pi / 180``; integers become float)."""
    _check("deg2rad", input)
    return _out(_named(mul(input, math.pi / 180), Deg2RadBackward0), out, "deg2rad", input)


def rad2deg(input: Tensor, *, out=None) -> Tensor:
    """Each element converted from radians to degrees (``input * 180 / pi``; integers become float)."""
    _check("rad2deg", input)
    return _out(_named(mul(input, 180 / math.pi), Rad2DegBackward0), out, "rad2deg", input)


def frac(input: Tensor, *, out=None) -> Tensor:
    """x - trunc(x) (float dtypes only, as PyTorch)."""
    _check("frac", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    return _out(_named(sub(input, trunc(input)), FracBackward0), out, "frac", input)


def logit(input: Tensor, eps: float | None = None, *, out=None) -> Tensor:
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] when ``eps`` is given (gradient 0 outside)."""
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return logit(input, eps, out=out)
    _check("logit", input)
    x = _float(input)
    if isinstance(eps, np.generic):  # (a numpy eps as PyTorch's double: 1 - np.uint8(2) would wrap in numpy)
        eps = float(eps)
    with no_grad():
        xc = x if eps is None else clamp(x, eps, 1 - eps)
        r = log(div(xc, sub(1, xc)))
    if x._rg and _gs.enabled:  # one node with PyTorch's formula (the composite's chain rule is nan at 0 and 1)
        node = LogitBackward0()
        node.eps = None if eps is None else float(eps)
        node.save(x)
        node.next_functions = (edge(x),)
        r = _make(r._data, r.dtype, r._be, node)
    return _out(r, out, "logit", input)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *,
               out=None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf`` (the dtype's max), -inf -> ``neginf`` (its lowest)."""
    _check("nan_to_num", input)
    if not input.dtype.is_floating_point:
        return _out(input.clone(), out, "nan_to_num", input)
    fi = np.finfo(input.dtype.np)
    with np.errstate(over="ignore"):  # (PyTorch casts each replacement to the dtype: half posinf=1e6 is inf)
        hi, lo, nan = (float(np.array(float(v), dtype=np.float64).astype(input.dtype.np))
                       for v in (fi.max if posinf is None else posinf, fi.min if neginf is None else neginf, nan))
    with no_grad():  # (one node below, PyTorch's formula)
        if lo <= -float(fi.max) and hi >= float(fi.max):  # every finite value lies in [lo, hi]: one clamp
            r = clamp(input, lo, hi)
        else:
            r = where(eq(input, math.inf), hi, where(eq(input, -math.inf), lo, input))
        r = where(isnan(input), float(nan), r)
    if input._rg and _gs.enabled:
        node = NanToNumBackward0()
        node.save(input)
        node.next_functions = (edge(input),)
        r = _make(r._data, r.dtype, r._be, node)
    return _out(r, out, "nan_to_num", input)


_HALF_TYPES = (_dt.float16, _dt.bfloat16)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """input + value * tensor1 * tensor2 (an integer result truncates a float value, checked, as PyTorch)."""
    if not input.dtype.is_floating_point:  # (a float input: nothing to check)
        rt = _dt.result_type((input, tensor1, tensor2), _dt.default)
        if rt is _dt.bool_:
            raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
        if not rt.is_floating_point and not rt.is_complex:
            if not isinstance(value, bool):
                value = int(_dt.fit_scalar(value, rt))
            # one integer dtype for the whole op, as PyTorch's (bool factors times value stay int32, not int64)
            tensor1, tensor2 = tensor1.to(rt), tensor2.to(rt)
    elif input.dtype is not tensor1.dtype or input.dtype is not tensor2.dtype:
        # one dtype for the whole op, as PyTorch's: integer factors with a 0-d float64 input compute in float64
        # (mul then add would promote pairwise: int32 * 0.5 is float32, and a dimensioned float32 beats the 0-d)
        rt = _dt.result_type((input, tensor1, tensor2), _dt.default)
        if tensor1.dtype is not rt:
            tensor1 = tensor1.to(rt)
        if tensor2.dtype is not rt:
            tensor2 = tensor2.to(rt)
    need = (input._rg, tensor1._rg, tensor2._rg) if _gs.enabled else (False, False, False)
    if (need[1] or need[2]) and input.dtype is tensor1.dtype is tensor2.dtype and input.dtype.is_floating_point:
        with no_grad():
            r = addcmul(input, tensor1, tensor2, value=value)
        node = AddcmulBackward0()
        node.value, node.need = value, need
        node.shapes = (tuple(input.shape), tuple(tensor1.shape), tuple(tensor2.shape))
        node.save(tensor1, tensor2)
        node.next_functions = (edge(input), edge(tensor1), edge(tensor2))
        return _out(_make(r._data, r.dtype, r._be, node), out, "addcmul", input, tensor1, tensor2)
    rd = input.dtype
    if rd in _HALF_TYPES and tensor1.dtype is rd and tensor2.dtype is rd:  # see _HALF_TYPES
        r = addcmul(input.float(), tensor1.float(), tensor2.float(), value=value).to(rd)
        return _out(_named(r, _AddcmulComposite), out, "addcmul", input, tensor1, tensor2)
    # PyTorch's kernel: self + value * tensor1 * tensor2, i.e. (value * tensor1) * tensor2 (its vectorised loop
    # then rounds the product and the sum once, an fma, where the CPU has one: not reproduced here)
    p = mul(tensor1, value) if value != 1 or type(value) is not int else tensor1
    return _out(_named(add(input, mul(p, tensor2)), _AddcmulComposite), out, "addcmul", input, tensor1, tensor2)


_ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
                "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """input + value * tensor1 / tensor2 (integer tensor1 and tensor2 raise, as PyTorch)."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError(_ADDCDIV_INT)
    rd = input.dtype
    if rd in _HALF_TYPES and tensor1.dtype is rd and tensor2.dtype is rd:  # see _HALF_TYPES
        r = addcdiv(input.float(), tensor1.float(), tensor2.float(), value=value).to(rd)
        return _out(_named(r, AddcdivBackward0), out, "addcdiv", input, tensor1, tensor2)
    # PyTorch's kernel: self + value * tensor1 / tensor2, i.e. (value * tensor1) / tensor2 (not value * (t1 / t2))
    q = mul(tensor1, value) if value != 1 or type(value) is not int else tensor1
    return _out(_named(add(input, div(q, tensor2)), AddcdivBackward0), out, "addcdiv", input, tensor1, tensor2)


# ---------------------------------------------------------------------------------------------
# binary float functions: one kernel each, PyTorch's promotion and broadcasting (pointwise's machinery)
# ---------------------------------------------------------------------------------------------
def _scalar_or(self, b):
    return self.scalar if b is None else b


def _atan2_bw(self, g):
    a, b = self.saved()
    b = _scalar_or(self, b)
    na, nb = self.need
    # PyTorch's formula: 1 / (a^2 + b^2) with an infinite reciprocal masked to 0, so the gradient at (0, 0) is 0
    d = add(_sq(a), _sq(b))
    r = div(1.0, d) if isinstance(d, Tensor) else (1.0 / d if d else 0.0)
    if isinstance(r, Tensor):
        r = where(eq(r, math.inf), 0.0, r)
    return self.grads(mul(mul(g, b), r) if na else None, mul(mul(g, neg(a)), r) if nb else None)


def _hypot_bw(self, g):
    a, b = self.saved()[:2]  # (the output is saved last, for its version check)
    b = _scalar_or(self, b)
    na, nb = self.need
    return self.grads(mul(g, div(a, self.out)) if na else None, mul(g, div(b, self.out)) if nb else None)


def _copysign_bw(self, g):
    a = self.saved()[0]   # saved (with the output) only where a's gradient is needed
    na, nb = self.need
    # PyTorch's formula: grad * (result / self masked to 0 where self == 0): a NaN gradient stays NaN there
    ga = mul(g, where(eq(a, 0), 0.0, div(self.out, a))) if na else None
    return self.grads(ga, _creation.zeros_like(g) if nb else None)


def _fmaxmin_bw(cmp):
    def bw(self, g):
        a, b = self.saved()
        na, nb = self.need
        if b is None:  # the scalar wins only where it is the larger (smaller) and a is not NaN-ignored
            s = self.scalar
            win = _creation.full(tuple(a.shape), True, dtype=_bool, device=a.device) if math.isnan(s) else cmp(a, s)
        else:
            win = logical_or(cmp(a, b), isnan(b))
        return self.grads(where(win, g, 0.0) if na else None, where(win, 0.0, g) if nb else None)
    return bw


def _logaddexp_bw(expf):
    def bw(self, g):
        a, b = self.saved()
        b = _scalar_or(self, b)
        na, nb = self.need
        return self.grads(div(g, add(expf(sub(b, a)), 1)) if na else None,
                          div(g, add(expf(sub(a, b)), 1)) if nb else None)
    return bw


def _xlogy_bw(fn, shift):
    """PyTorch's formula: d/dx = xlogy(grad, y) (xlog1py), set to 0 only where x == 0 and y <= 0 (y <= -1), off
    the log's domain (Note [Gradient formula for xlogy at x = 0, y <= 0]): at x == 0 inside it the gradient is
    log(y), the one-sided derivative a Beta/Dirichlet log_prob with a concentration of exactly 1 needs."""
    def bw(self, g):
        a, b = self.saved()
        b = _scalar_or(self, b)
        na, nb = self.need
        ga = None
        if na:
            ga = fn(g, b)
            if isinstance(b, Tensor):
                ga = where(logical_and(eq(a, 0), le(b, -shift)), 0.0, ga)
            elif b <= -shift:
                ga = where(eq(a, 0), 0.0, ga)
        gb = div(mul(g, a), add(b, shift) if shift else b) if nb else None
        return self.grads(ga, gb)
    return bw


Atan2Backward0 = _binary_node("Atan2Backward0", _atan2_bw)
def _save_own(a, b, need):
    """Each operand only where its own gradient is needed (hypot's reads its operand and the result, as PyTorch
    saves them: an operand not requiring grad may be changed in place before the backward)."""
    return (a if need[0] else None), (b if need[1] else None)


HypotBackward0 = _binary_node("HypotBackward0", _hypot_bw, save_output=True, to_save=_save_own)
CopysignBackward0 = _binary_node("CopysignBackward0", _copysign_bw, save_output="a", to_save=_save_first)
FmaxBackward0 = _binary_node("FmaxBackward0", _fmaxmin_bw(ge))
FminBackward0 = _binary_node("FminBackward0", _fmaxmin_bw(le))
LogaddexpBackward0 = _binary_node("LogaddexpBackward0", _logaddexp_bw(exp))
Logaddexp2Backward0 = _binary_node("Logaddexp2Backward0", _logaddexp_bw(lambda t: exp2(t)))
XlogyBackward0 = _binary_node("XlogyBackward0", _xlogy_bw(lambda a, b: xlogy(a, b), 0))
SpecialXlog1PyBackward0 = _binary_node("SpecialXlog1PyBackward0", _xlogy_bw(lambda a, b: xlog1py(a, b), 1))


def _binary(name: str, node_cls, kind: str = "div", doc: str = ""):
    """kind "div": integer operands promote to the default float (the kernel is float only); "arith": the
    operands' promoted dtype (fmax/fmin)."""
    f = _make_binary(name, node_cls, kind)

    def fn(input, other, *, out=None) -> Tensor:
        return f(input, other) if out is None else _out(f(input, other), out, name, input, other)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"torch.{name}: elementwise with broadcasting and PyTorch's type promotion."
    return fn


atan2 = arctan2 = _binary("atan2", Atan2Backward0)
_hypot = _binary("hypot", HypotBackward0)


def hypot(input, other, *, out=None) -> Tensor:
    """torch.hypot: sqrt(input**2 + other**2); floating point only (an integer result dtype raises, as PyTorch)."""
    rt = _dt.result_type((input, other), _dt.default)
    if not rt.is_floating_point:
        raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{rt._tname[:-6]}'")
    return _hypot(input, other, out=out)
copysign = _binary("copysign", CopysignBackward0, doc="torch.copysign: |input| with the sign of other (-0.0 too).")
fmax = _binary("fmax", FmaxBackward0, "arith", doc="torch.fmax: maximum that ignores NaN (NaN only if both are).")
fmin = _binary("fmin", FminBackward0, "arith", doc="torch.fmin: minimum that ignores NaN (NaN only if both are).")
def _float_result_only(name: str, f):
    """PyTorch's logaddexp/logaddexp2 kernels are float only: an integer (or bool) result dtype raises."""
    def fn(input, other, *, out=None) -> Tensor:
        rt = _dt.result_type((input, other), _dt.default)
        if not rt.is_floating_point:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{rt._tname[:-6]}'")
        return f(input, other, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f.__doc__
    return fn


logaddexp = _float_result_only("logaddexp", _binary("logaddexp", LogaddexpBackward0))
logaddexp2 = _float_result_only("logaddexp2", _binary("logaddexp2", Logaddexp2Backward0))
xlogy = _binary("xlogy", XlogyBackward0, doc="torch.xlogy: x * log(y), 0 where x == 0 (unless y is NaN).")
xlog1py = _binary("xlog1py", SpecialXlog1PyBackward0,
                  doc="torch.special.xlog1py: x * log1p(y), 0 where x == 0 (unless y is NaN).")


def _igamma_bw(name: str, negate: bool):
    def bw(self, g):
        a, x = self.saved()
        na, nx = self.need
        if na:  # as PyTorch: d/da has no closed form it implements
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        # PyTorch's formula: d/dx P(a, x) = exp((a - 1) log x - x - lgamma(a)) (Q: its negative)
        d = mul(g, exp(sub(sub(mul(sub(a, 1), log(x)), x), lgamma(a))))
        return self.grads(None, neg(d) if negate else d)
    return bw


IgammaBackward0 = _binary_node("IgammaBackward0", _igamma_bw("igamma", False))
IgammacBackward0 = _binary_node("IgammacBackward0", _igamma_bw("igammac", True))


def _igamma_op(name: str, node_cls, public: str, doc: str):
    """igamma/igammac: both operands tensors (PyTorch's TypeError), a floating result (integer operands raise
    NotImplementedError, as PyTorch's kernel); float16/bfloat16 are computed in float32."""
    f = _make_binary(name, node_cls, "arith")

    def fn(input: Tensor, other: Tensor, *, out=None) -> Tensor:
        for pos, (arg, v) in enumerate((("input", input), ("other", other)), 1):
            if not isinstance(v, Tensor):
                raise TypeError(f"{public}(): argument '{arg}' (position {pos}) must be Tensor, not "
                                f"{type(v).__name__}")
        rt = _dt.result_type((input, other), _dt.default)
        if not rt.is_floating_point:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{rt._tname[:-6]}'")
        if not input._be.has(name):
            raise RuntimeError(f"{public}: device '{input.device}' has no '{name}' kernel")
        if rt in (_dt.float16, _dt.bfloat16):
            r = f(input.to(_dt.float32), other.to(_dt.float32)).to(rt)
        else:
            r = f(input, other)
        return r if out is None else _out(r, out, public, input, other)
    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = doc
    return fn


igamma = _igamma_op("igamma", IgammaBackward0, "igamma",
                    "torch.igamma (torch.special.gammainc): the regularised lower incomplete gamma function "
                    "P(input, other); gradient with respect to ``other`` only, as PyTorch.")
igammac = _igamma_op("igammac", IgammacBackward0, "igammac",
                     "torch.igammac (torch.special.gammaincc): the regularised upper incomplete gamma function "
                     "Q(input, other) = 1 - P(input, other); gradient with respect to ``other`` only, as PyTorch.")
gammainc = _igamma_op("igamma", IgammaBackward0, "special_gammainc", igamma.__doc__)
gammaincc = _igamma_op("igammac", IgammacBackward0, "special_gammaincc", igammac.__doc__)
gammainc.__name__ = gammainc.__qualname__ = "gammainc"
gammaincc.__name__ = gammaincc.__qualname__ = "gammaincc"


def heaviside(input: Tensor, values: Tensor, *, out=None) -> Tensor:
    """0 where x < 0, ``values`` where x == 0, 1 where x > 0 (NaN gives 0, as PyTorch's kernel)."""
    _check("heaviside", input)
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' must be Tensor, not {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    with no_grad():
        r = where(eq(input, 0), values, gt(input, 0).to(input.dtype))
    if _gs.enabled and (input._rg or values._rg):  # PyTorch records the op and raises at backward
        node = HeavisideBackward0()
        node.next_functions = (edge(input), edge(values))
        r = _make(r._data, r.dtype, r._be, node)
    return _out(r, out, "heaviside", input, values)


class HeavisideBackward0(Node):
    __slots__ = ()

    def backward(self, g):
        raise RuntimeError("the derivative for 'heaviside' is not implemented.")


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """The mean of the non-NaN elements (NaN where there is none)."""
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return nanmean(input, dim, keepdim, dtype=dtype, out=out)
    _check("nanmean", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype._tname[:-6]}")
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {dtype._tname[:-6]}")
        input = input.to(dtype)
    elif isinstance(out, Tensor) and out.dtype.is_floating_point and out.dtype is not input.dtype:
        input = input.to(out.dtype)  # (PyTorch's out= kernel: nansum into the out tensor's dtype, then divide)
    count = _R.sum(logical_not(isnan(input.detach())), dim, keepdim)
    return _out(div(_R.nansum(input, dim, keepdim), count), out, "nanmean")


# ---------------------------------------------------------------------------------------------
# Tensor methods and in-place variants
# ---------------------------------------------------------------------------------------------
def _inplace(name: str, fn):
    def m(self, *args, **kwargs):
        other = next((a for a in args if isinstance(a, Tensor) and a._rg), None)
        return apply_inplace(self, name, lambda s: fn(s, *args, **kwargs), other)
    m.__name__ = name
    return m


def _float_power_(self, exponent):
    if self.dtype is not _dt.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype._tname[:-6]} but the operation's "
                           "result requires dtype Double")
    return apply_inplace(self, "float_power_", lambda s: float_power(s, exponent),
                         exponent if isinstance(exponent, Tensor) else None)


_UNARY_METHODS = {
    "tan": tan, "asin": asin, "arcsin": asin, "acos": acos, "arccos": acos, "atan": atan, "arctan": atan,
    "sinh": sinh, "cosh": cosh, "asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh, "atanh": atanh,
    "arctanh": atanh, "log2": log2, "log10": log10, "exp2": exp2, "sinc": sinc, "deg2rad": deg2rad,
    "rad2deg": rad2deg, "frac": frac, "logit": logit, "erfc": erfc, "erfinv": erfinv, "lgamma": lgamma,
    "digamma": digamma, "i0": i0, "nan_to_num": nan_to_num, "mvlgamma": mvlgamma,
}
_BINARY_METHODS = {
    "atan2": atan2, "arctan2": atan2, "hypot": hypot, "xlogy": xlogy, "copysign": copysign,
    "heaviside": heaviside, "ldexp": ldexp, "addcmul": addcmul, "addcdiv": addcdiv, "igamma": igamma,
    "igammac": igammac,
}
METHODS.update(_UNARY_METHODS)
METHODS.update(_BINARY_METHODS)
METHODS.update({f"{k}_": _inplace(f"{k}_", f) for k, f in {**_UNARY_METHODS, **_BINARY_METHODS}.items()})
METHODS.update({
    "logaddexp": logaddexp, "logaddexp2": logaddexp2, "fmax": fmax, "fmin": fmin, "signbit": signbit,
    "frexp": frexp, "nanmean": nanmean, "float_power": float_power, "float_power_": _float_power_,
    "polygamma": lambda self, n: polygamma(n, self),
    "polygamma_": lambda self, n: apply_inplace(self, "polygamma_", lambda s: polygamma(n, s)),
    "true_divide_": _inplace("true_divide_", div),
    "erf_": lambda self: apply_inplace(self, "erf_", lambda s: s.erf()),
})
