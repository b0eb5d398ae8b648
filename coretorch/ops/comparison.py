"""Comparisons and tests: isinf, isfinite, isposinf, isneginf, isreal, isclose, allclose, equal, isin,
is_nonzero, is_complex (the special family; results are bool tensors or Python bools, never differentiable)."""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ..tensor import Tensor
from . import creation as _creation, reduction as _R
from .pointwise import abs as _abs, eq, isnan, le, logical_and, logical_not, logical_or, lt, mul, sub, where
from ._out import write_out
from ._util import bind_late
from ._special_util import _bool_out, _check

__all__: list[str] = ["isinf", "isfinite", "isposinf", "isneginf", "isreal", "isclose", "allclose", "equal", "isin",
                      "is_nonzero", "is_complex"]
METHODS: dict = {}

_bool = _dt.bool_
_ISIN_CHUNK = 1 << 24   # elements x test elements compared per pass (bounds isin's temporary)


def _const(t: Tensor, value: bool) -> Tensor:
    return _creation.full(tuple(t.shape), value, dtype=_bool, device=t.device)


def isinf(input: Tensor) -> Tensor:
    """A bool tensor: True where the element is positive or negative infinity."""
    _check("isinf", input)
    if not input.dtype.is_floating_point:
        return _const(input, False)
    return eq(_abs(input.detach()), math.inf)


def isposinf(input: Tensor, *, out=None) -> Tensor:
    """A bool tensor: True where the element is positive infinity."""
    _check("isposinf", input)
    r = eq(input.detach(), math.inf) if input.dtype.is_floating_point else _const(input, False)
    return _bool_out(r, out, "isposinf", input)


def isneginf(input: Tensor, *, out=None) -> Tensor:
    """A bool tensor: True where the element is negative infinity."""
    _check("isneginf", input)
    r = eq(input.detach(), -math.inf) if input.dtype.is_floating_point else _const(input, False)
    return _bool_out(r, out, "isneginf", input)


def isfinite(input: Tensor) -> Tensor:
    """A bool tensor: True where the element is neither infinite nor NaN."""
    _check("isfinite", input)
    if not input.dtype.is_floating_point:
        return _const(input, True)
    return lt(_abs(input.detach()), math.inf)   # False for inf and NaN


def isreal(input: Tensor) -> Tensor:
    """True everywhere: coretorch has no complex dtypes."""
    _check("isreal", input)
    return _const(input, True)


def is_complex(input: Tensor) -> bool:
    """Always False: coretorch has no complex dtypes."""
    _check("is_complex", input)
    return False


def is_nonzero(input: Tensor) -> bool:
    """bool(input) of a one-element tensor; RuntimeError for any other size, as PyTorch."""
    _check("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| elementwise (equal infinities are close; NaN only with equal_nan)."""
    _check("isclose", input)
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' must be Tensor, not {type(other).__name__}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype._tname[:-6]} did not match {other.dtype._tname[:-6]}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    a, b = input.detach(), other.detach()
    close = eq(a, b)
    if equal_nan and a.dtype.is_floating_point:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    if rtol == 0 and atol == 0:
        return close
    if not a.dtype.is_floating_point:
        # PyTorch compares bool and integer tensors in the default float dtype: no wrap-around in ``a - b``
        # (uint8 0 vs 255 is not within atol=1), and integer rtol products are not truncated
        a, b = a.to(_dt.default), b.to(_dt.default)
    if a.dtype.is_floating_point:
        # the equal pairs (already close) as zeros: no inf - inf (a NaN, and an IEEE warning on the cpu)
        a, b = where(close, 0.0, a), where(close, 0.0, b)
    err = _abs(sub(a, b))
    allowed = _abs(mul(b, rtol)) + atol if rtol else atol
    within = le(err, allowed)
    if err.dtype.is_floating_point:
        within = logical_and(within, lt(err, math.inf))   # an infinite error is never close
    return logical_or(close, within)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether ``|input - other| <= atol + rtol * |other|`` holds for every element (after broadcasting).

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor.
        rtol (float): relative tolerance (default 1e-05).
        atol (float): absolute tolerance (default 1e-08).
        equal_nan (bool): treat two NaNs as equal (default False).

    Returns:
        bool: a Python bool.
    """
    return bool(_R.all(isclose(input, other, rtol, atol, equal_nan)).item())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and elements (NaN is never equal)."""
    _check("equal", input)
    if not isinstance(other, Tensor):
        raise TypeError(f"equal(): argument 'other' must be Tensor, not {type(other).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(_R.all(eq(input.detach(), other.detach())).item())


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False, out=None) -> Tensor:
    """Whether each of ``elements`` is in ``test_elements`` (either may be a Python scalar): one broadcast
    comparison per chunk of test elements, reduced over them."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expected at least one of elements or test_elements to be a Tensor")
    ref = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(elements, Tensor):
        elements = _creation.tensor(elements, device=ref.device)
    if not isinstance(test_elements, Tensor):
        test_elements = _creation.tensor([test_elements], device=ref.device)
    e = elements.detach()
    t = test_elements.detach().reshape(-1)
    m = t.shape[0]
    r = _const(e, False)
    if m and e.numel():
        step = max(1, _ISIN_CHUNK // e.numel())
        col = e.unsqueeze(-1)
        for s in range(0, m, step):
            r = logical_or(r, _R.any(eq(col, t[s:s + step]), -1))
    return write_out("isin", out, logical_not(r) if invert else r)


METHODS.update({
    "isinf": isinf, "isfinite": isfinite, "isposinf": isposinf, "isneginf": isneginf, "isreal": isreal,
    "isclose": isclose, "allclose": allclose, "equal": equal, "is_nonzero": is_nonzero,
    "is_complex": is_complex,
})


bind_late(_R, globals())  # ops.reduction re-exports isfinite and isinf (it sits below this module)
