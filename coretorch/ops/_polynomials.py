"""The classical orthogonal polynomials of torch.special (Chebyshev T/U/V/W and their shifted forms, Hermite H/He,
Laguerre L, Legendre P) by their three-term recurrences in tensor ops: one step per degree up to the largest
``n`` (read from ``n`` when it is a tensor), each element taking the value of its own degree; ``n < 0`` gives 0 and
a non-integer ``n`` is truncated, as PyTorch's.  As PyTorch's, they are not differentiable (the results never
require grad), float16/bfloat16 raise NotImplementedError, and ``n == 0`` gives 1 (``n < 0`` 0) at any ``x``, inf
and NaN too."""
from __future__ import annotations

from typing import Callable

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import creation as _C, pointwise as _P

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
           "legendre_polynomial_p"]


def _args(op: str, x, n):
    if not isinstance(x, Tensor) and not isinstance(n, Tensor):
        raise TypeError(f"{op}(): expected input or n to be a Tensor")
    ref = x if isinstance(x, Tensor) else n
    dt = _dt.result_type((x, n), _dt.default)
    if not dt.is_floating_point:
        dt = _dt.default
    if dt in (_dt.float16, _dt.bfloat16):
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{dt._tname[:-6]}'")
    xt = x.to(dt) if isinstance(x, Tensor) else _C.full((), float(x), dtype=dt, device=ref.device)
    if isinstance(n, Tensor):
        nt = n.to(_dt.int64)
        top = int(nt.max()) if nt.numel() else 0
    else:
        nt, top = int(n), int(n)
    return xt, nt, top


def _recurrence(op: str, x, n, p1: Callable, step: Callable, shift: bool = False, out=None) -> Tensor:
    """p_0 = 1, p_1 = p1(x), p_{k+1} = step(k, x, p_k, p_{k-1}); each element gets p_n (0 for n < 0)."""
    xt, nt, top = _args(op, x, n)
    if shift:
        xt = 2 * xt - 1
    zero = _C.zeros_like(xt)  # (not x * 0: NaN and inf inputs still give 1 for n == 0, 0 for n < 0)
    if isinstance(nt, Tensor):
        p_prev, p = zero + 1.0, p1(xt)
        res = _P.where(nt == 0, p_prev, _P.where(nt == 1, p, zero))
        for k in range(1, top):
            p_prev, p = p, step(k, xt, p, p_prev)
            res = _P.where(nt == k + 1, p, res)
        # the result's shape: x and n broadcast (n's shape already in the where)
        res = res + zero
    elif nt < 0:
        res = zero
    elif nt == 0:
        res = zero + 1.0
    else:
        p_prev, p = zero + 1.0, p1(xt)
        for k in range(1, nt):
            p_prev, p = p, step(k, xt, p, p_prev)
        res = p
    if out is not None:
        out.copy_(res)
        return out
    return res


def _cheb(k, x, p, q):
    return 2 * x * p - q


def _make(name: str, p1: Callable, step: Callable, shift: bool, doc: str):
    def fn(x, n, *, out=None) -> Tensor:  # (``x``: PyTorch's keyword for these, not ``input``)
        with no_grad():
            return _recurrence(name, x, n, p1, step, shift, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


chebyshev_polynomial_t = _make("chebyshev_polynomial_t", lambda x: x, _cheb, False,
                               "The Chebyshev polynomial of the first kind T_n(input).")
chebyshev_polynomial_u = _make("chebyshev_polynomial_u", lambda x: 2 * x, _cheb, False,
                               "The Chebyshev polynomial of the second kind U_n(input).")
chebyshev_polynomial_v = _make("chebyshev_polynomial_v", lambda x: 2 * x - 1, _cheb, False,
                               "The Chebyshev polynomial of the third kind V_n(input).")
chebyshev_polynomial_w = _make("chebyshev_polynomial_w", lambda x: 2 * x + 1, _cheb, False,
                               "The Chebyshev polynomial of the fourth kind W_n(input).")
shifted_chebyshev_polynomial_t = _make("shifted_chebyshev_polynomial_t", lambda x: x, _cheb, True,
                                       "The shifted Chebyshev polynomial of the first kind T_n(2 input - 1).")
shifted_chebyshev_polynomial_u = _make("shifted_chebyshev_polynomial_u", lambda x: 2 * x, _cheb, True,
                                       "The shifted Chebyshev polynomial of the second kind U_n(2 input - 1).")
shifted_chebyshev_polynomial_v = _make("shifted_chebyshev_polynomial_v", lambda x: 2 * x - 1, _cheb, True,
                                       "The shifted Chebyshev polynomial of the third kind V_n(2 input - 1).")
shifted_chebyshev_polynomial_w = _make("shifted_chebyshev_polynomial_w", lambda x: 2 * x + 1, _cheb, True,
                                       "The shifted Chebyshev polynomial of the fourth kind W_n(2 input - 1).")
hermite_polynomial_h = _make("hermite_polynomial_h", lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q,
                             False, "The physicists' Hermite polynomial H_n(input).")
hermite_polynomial_he = _make("hermite_polynomial_he", lambda x: x, lambda k, x, p, q: x * p - k * q, False,
                              "The probabilists' Hermite polynomial He_n(input).")
laguerre_polynomial_l = _make("laguerre_polynomial_l", lambda x: 1 - x,
                              lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1), False,
                              "The Laguerre polynomial L_n(input).")
legendre_polynomial_p = _make("legendre_polynomial_p", lambda x: x,
                              lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1), False,
                              "The Legendre polynomial P_n(input).")
