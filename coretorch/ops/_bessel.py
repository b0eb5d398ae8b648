"""torch.special's Bessel functions of the first and second kind (J0, J1, Y0, Y1), the modified Bessel functions of
the second kind (K0, K1, and their exponentially scaled forms), the Airy function Ai and the Hurwitz zeta function:
one primitive kernel each (``coretorch._backend.PRIMITIVES``, the special block; numpy/scipy kernels in
``_special_host``).

As PyTorch: integer and bool inputs promote to the default float dtype, float16/bfloat16 raise
NotImplementedError (PyTorch has no half kernels for them), the unary functions are not differentiable (their
results never require grad), and zeta's gradient is defined with respect to ``other`` only
(``-input * zeta(input + 1, other)``; with respect to ``input`` its backward raises NotImplementedError).
"""
from __future__ import annotations

from typing import Callable

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from ._out import write_out
from ._pointwise_unary import _make_unary
from .comparison import isinf
from .pointwise import _binary_node, _make_binary, abs as _abs, add, div, lt, mul, neg, sin, where
from .special import i0 as _i0, i1 as _i1

__all__ = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "spherical_bessel_j0", "airy_ai", "zeta"]

_HALF = (_dt.float16, _dt.bfloat16)

_DOCS = {
    "bessel_j0": "The Bessel function of the first kind of order 0, J0(x).",
    "bessel_j1": "The Bessel function of the first kind of order 1, J1(x).",
    "bessel_y0": "The Bessel function of the second kind of order 0, Y0(x) (-inf at 0, NaN for x < 0).",
    "bessel_y1": "The Bessel function of the second kind of order 1, Y1(x) (-inf at 0, NaN for x < 0).",
    "modified_bessel_k0": "The modified Bessel function of the second kind of order 0, K0(x) (inf at 0, NaN for "
                          "x < 0).",
    "modified_bessel_k1": "The modified Bessel function of the second kind of order 1, K1(x) (inf at 0, NaN for "
                          "x < 0).",
    "scaled_modified_bessel_k0": "exp(x) * K0(x), the exponentially scaled modified Bessel function of order 0.",
    "scaled_modified_bessel_k1": "exp(x) * K1(x), the exponentially scaled modified Bessel function of order 1.",
    "airy_ai": "The Airy function Ai(x).",
}


def _no_half(name: str, dt) -> None:
    if dt in _HALF:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dt._tname[:-6]}'")


# the functions whose PyTorch schemas name the argument ``x`` (their keyword; the others' is ``input``)
_X_NAMED = frozenset(("scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai", "spherical_bessel_j0"))


def _keyword_x(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``fn(input, *, out)`` under the keyword ``x`` where PyTorch's schema calls it so (``airy_ai(x=t)``)."""
    if name not in _X_NAMED:
        return fn

    def xfn(x: Tensor, *, out=None) -> Tensor:
        return fn(x, out=out)
    return xfn


def _unary(name: str) -> Callable[..., Tensor]:
    f = _make_unary(name, None, True, None)

    def fn(input: Tensor, *, out=None) -> Tensor:
        if isinstance(input, Tensor):
            _no_half(name, input.dtype)
        r = f(input)
        return r if out is None else write_out(name, out, r, inputs=(input,))
    fn = _keyword_x(name, fn)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _DOCS[name] + " Not differentiable (as PyTorch); integer inputs promote to the default float."
    return fn


bessel_j0 = _unary("bessel_j0")
bessel_j1 = _unary("bessel_j1")
bessel_y0 = _unary("bessel_y0")
bessel_y1 = _unary("bessel_y1")
modified_bessel_k0 = _unary("modified_bessel_k0")
modified_bessel_k1 = _unary("modified_bessel_k1")
scaled_modified_bessel_k0 = _unary("scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _unary("scaled_modified_bessel_k1")
airy_ai = _unary("airy_ai")


def _nodiff(name: str, f: Callable[[Tensor], Tensor], doc: str) -> Callable[..., Tensor]:
    """A non-differentiable function (as PyTorch's) composed of differentiable ops: computed without a graph."""
    def fn(input: Tensor, *, out=None) -> Tensor:
        if not isinstance(input, Tensor):
            arg = "x" if name in _X_NAMED else "input"
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(input).__name__}")
        _no_half(name, input.dtype)
        x = input if input.dtype.is_floating_point else input.to(_dt.default)
        with no_grad():
            r = f(x)
        return r if out is None else write_out(name, out, r, inputs=(input,))
    fn = _keyword_x(name, fn)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " Not differentiable (as PyTorch); integer inputs promote to the default float."
    return fn


def _sph_j0(x: Tensor) -> Tensor:
    """PyTorch's formula: its Taylor polynomial below |x| = 0.5, sin(x) / x above, 0 at +-inf."""
    x2 = mul(x, x)
    p = 1.0 / 6227020800.0
    for c in (-1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0):
        p = add(mul(x2, p), c)
    series = add(mul(x2, p), 1.0)
    small = lt(_abs(x), 0.5)
    r = where(small, series, div(sin(x), where(small, 1.0, x)))
    return where(isinf(x), 0.0, r)


modified_bessel_i0 = _nodiff("modified_bessel_i0", _i0, "The modified Bessel function of the first kind of order 0 "
                             "(:func:`coretorch.i0`'s values).")
modified_bessel_i1 = _nodiff("modified_bessel_i1", _i1, "The modified Bessel function of the first kind of order 1 "
                             "(:func:`coretorch.special.i1`'s values).")
spherical_bessel_j0 = _nodiff("spherical_bessel_j0", _sph_j0, "The spherical Bessel function of the first kind of "
                              "order 0: sin(x) / x (1 at 0, 0 at +-inf).")


def _zeta_bw(self, g):
    x, q = self.saved()
    na, nb = self.need
    if na:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    if q is None:
        q = self.scalar
    return self.grads(None, mul(g, neg(mul(x, _zeta(add(x, 1), q)))))


# PyTorch's node names: 0 for two tensors, 1 for a number first (zeta(2.0, q)), 2 for a number second
SpecialZetaBackward0 = _binary_node("SpecialZetaBackward0", _zeta_bw)
SpecialZetaBackward1 = _binary_node("SpecialZetaBackward1", _zeta_bw)
SpecialZetaBackward2 = _binary_node("SpecialZetaBackward2", _zeta_bw)
_zeta = _make_binary("zeta", SpecialZetaBackward0, "div")
_zeta_number_first = _make_binary("zeta", SpecialZetaBackward1, "div")
_zeta_number_second = _make_binary("zeta", SpecialZetaBackward2, "div")


def zeta(input, other, *, out=None) -> Tensor:
    """The Hurwitz zeta function ``sum_{k>=0} (k + other) ** -input`` (the Riemann zeta at ``other == 1``): inf at
    ``input == 1``, NaN for ``input < 1``; either operand may be a Python number (not both)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"special_zeta() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
                        " * (Tensor input, Tensor other)\n * (Number self, Tensor other)\n"
                        " * (Tensor self, Number other)")
    _no_half("zeta", _dt.result_type((input, other), _dt.default))
    f = _zeta if isinstance(input, Tensor) and isinstance(other, Tensor) else \
        _zeta_number_second if isinstance(input, Tensor) else _zeta_number_first
    r = f(input, other)
    return r if out is None else write_out("zeta", out, r, inputs=tuple(t for t in (input, other)
                                                                           if isinstance(t, Tensor)))
