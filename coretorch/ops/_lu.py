"""The LU factorization with partial pivoting: ``linalg.lu_factor`` / ``lu_factor_ex`` / ``lu`` / ``lu_solve``,
``torch.lu_unpack`` and the deprecated ``torch.lu`` / ``lu_solve`` (Tensor methods too).

The factorization is LAPACK's getf2 (pivot: the first largest magnitude in the column; a zero column is left as is
and reported in ``info``) written with tensor ops, one elimination step per column: it runs on every device with no
host round trip, and the factors are differentiable (through the row swaps, which are piecewise constant).
"""
from __future__ import annotations


from .. import dtypes as _dt
from .._warn_once import warn_once
from ..tensor import Tensor
from . import creation as _C, indexing as _I, pointwise as _P, reduction as _R, shape as _S, triangular as _T
from ._decomp_extra import solve_triangular
from ._decomp_ops import LinAlgError, check_float
from ._own import own
from ._util import broadcast_shapes, return_type
from .scatter import scatter

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "lu_unpack"]

_factor_t = return_type("linalg_lu_factor", ("LU", "pivots"))
_factor_ex_t = return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_lu_t = return_type("linalg_lu", ("P", "L", "U"))
_unpack_t = return_type("lu_unpack", ("P", "L", "U"))


def _check(op: str, A: Tensor) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype._tname[:-6]}")
    if A.dtype in (_dt.float16, _dt.bfloat16):  # (PyTorch's LU kernel has no half variant: its dispatch says so)
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{A.dtype._tname[:-6]}'")


def _swap_index(ar: Tensor, k: int, p: Tensor) -> Tensor:
    """Per matrix, the row order that swaps rows k and p (p: int64 of the batch shape) in ``ar`` (an index)."""
    pe = _S.unsqueeze(p, -1)
    return _P.where(ar == k, pe, _P.where(ar == pe, k, ar))


def _factor(A: Tensor, pivot: bool):
    """(LU, row order (int64), info (int32)) by getf2's elimination."""
    m, n = A.shape[-2:]
    batch = tuple(A.shape[:-2])
    dev = A.device
    rows = _C.arange(m, device=dev)
    cols = _C.arange(n, device=dev)
    perm = _S.expand(rows, batch + (m,)).clone() if batch else rows.clone()
    info = _C.zeros(batch, dtype=_dt.int32, device=dev)
    pivots = []
    lu = A
    for k in range(min(m, n)):
        col = lu[..., :, k]
        if pivot:
            p = _R.argmax(_P.where(rows >= k, _P.abs(col), -1.0), -1)  # the first largest |value| at or below k
            order = _swap_index(rows, k, p)
            lu = _I.gather(lu, -2, _S.expand(_S.unsqueeze(order, -1), batch + (m, n)))
            perm = _I.gather(perm, -1, order)
            col = lu[..., :, k]
        else:
            p = _C.full(batch, k, dtype=_dt.int64, device=dev)
        pivots.append(p)
        piv = col[..., k]
        zero = piv == 0
        info = _P.where(zero & (info == 0), k + 1, info).to(_dt.int32)
        below = rows > k
        factors = _P.where(_S.unsqueeze(zero, -1) | ~below, 0.0, col / _S.unsqueeze(_P.where(zero, 1.0, piv), -1))
        update = _S.unsqueeze(factors, -1) * _S.unsqueeze(lu[..., k, :], -2)
        lu = lu - _P.where(_S.unsqueeze(below, -1) & (cols > k), update, 0.0)
        lu = _P.where(_S.unsqueeze(below, -1) & (cols == k), _S.unsqueeze(factors, -1), lu)
    piv_t = _S.stack(pivots, -1) if pivots else _C.zeros(batch + (0,), dtype=_dt.int64, device=dev)
    return lu, (piv_t + 1).to(_dt.int32), perm, info


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    """``(LU, pivots, info)``: the compact LU factorization of ``A`` (L below the diagonal with its unit diagonal
    implied, U on and above it), LAPACK's 1-based row swaps, and 0 or the first zero pivot (1-based) per matrix."""
    _check("torch.linalg.lu_factor_ex", A)
    lu_, piv, _, info = _factor(A, pivot)
    if check_errors and bool((info != 0).any()):
        raise LinAlgError(f"torch.linalg.lu_factor_ex: U[{int(info.max())},{int(info.max())}] is zero and using it on "
                          "lu_solve would result in a division by zero.")
    return _factor_ex_t(lu_, piv, info)


def lu_factor(A: Tensor, *, pivot: bool = True):
    """``(LU, pivots)``: the compact LU factorization (raises for a singular matrix; see :func:`lu_factor_ex`)."""
    _check("torch.linalg.lu_factor", A)
    lu_, piv, _, info = _factor(A, pivot)
    if A.shape[-2] == A.shape[-1] and bool((info != 0).any()):
        i = int(info.reshape(-1)[(info.reshape(-1) != 0).int().argmax()])
        raise LinAlgError(f"torch.linalg.lu_factor: U[{i},{i}] is zero and using it on lu_solve would result in a "
                          "division by zero. If you still want to perform the factorization, consider calling "
                          "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return _factor_t(lu_, piv)


def _perm_matrix(perm: Tensor, m: int, dtype) -> Tensor:
    """P with A = P @ (rows of A in ``perm`` order): column i is e_{perm[i]}."""
    eye = _C.eye(m, dtype=dtype, device=perm.device)
    return own(_S.transpose(_I.index_select(eye, 0, perm.reshape(-1)).reshape(tuple(perm.shape) + (m,)), -2, -1))


def _unpack(lu_: Tensor, m: int, n: int):
    k = min(m, n)
    L = _T.tril(_I.narrow(lu_, -1, 0, k), -1) + _C.eye(m, k, dtype=lu_.dtype, device=lu_.device)
    U = _T.triu(_I.narrow(lu_, -2, 0, k))
    return L, U


def lu(A: Tensor, *, pivot: bool = True):
    """``(P, L, U)`` with ``A = P @ L @ U``: P a permutation, L unit lower triangular (m x k), U upper (k x n)."""
    _check("torch.linalg.lu", A)
    m, n = A.shape[-2:]
    lu_, _, perm, _ = _factor(A, pivot)
    L, U = _unpack(lu_, m, n)
    return _lu_t(_perm_matrix(perm, m, A.dtype), L, U)


def _perm_from_pivots(pivots: Tensor, m: int) -> Tensor:
    """The row order LAPACK's 1-based swaps make of ``range(m)``."""
    batch = tuple(pivots.shape[:-1])
    rows = _C.arange(m, device=pivots.device)
    perm = _S.expand(rows, batch + (m,)).clone() if batch else rows.clone()
    p0 = pivots.to(_dt.int64) - 1
    for k in range(pivots.shape[-1]):
        order = _swap_index(rows, k, p0[..., k])
        perm = _I.gather(perm, -1, order)
    return perm


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True):
    """``(P, L, U)`` from ``lu_factor``'s compact form (empty tensors for the parts not unpacked)."""
    m, n = LU_data.shape[-2:]
    empty = _C.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    L, U = _unpack(LU_data, m, n) if unpack_data else (empty, empty)
    P = _perm_matrix(_perm_from_pivots(LU_pivots, m), m, LU_data.dtype) if unpack_pivots else empty
    return _unpack_t(P, L, U)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """X with ``A X = B`` (``X A = B`` for ``left=False``; ``A^T`` for ``adjoint``) from ``lu_factor``'s output."""
    if isinstance(LU, Tensor) and LU.dtype in (_dt.float16, _dt.bfloat16):
        check_float("linalg.lu_solve", LU)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _S.transpose(lu_solve(LU, pivots, _S.transpose(B, -2, -1), adjoint=not adjoint), -2, -1)
    m = LU.shape[-1]
    perm = _perm_from_pivots(pivots, m)
    Lm = _T.tril(LU, -1) + _C.eye(m, dtype=LU.dtype, device=LU.device)
    Um = _T.triu(LU)
    batch = tuple(broadcast_shapes(tuple(perm.shape[:-1]), tuple(B.shape[:-2])))
    Bb = _S.expand(B, batch + tuple(B.shape[-2:]))
    idx = _S.expand(_S.unsqueeze(_S.expand(perm, batch + (m,)), -1), batch + tuple(B.shape[-2:]))
    if not adjoint:  # P L U X = B: X = U^-1 L^-1 P^T B, P^T B = B's rows in perm order
        y = solve_triangular(Lm, _I.gather(Bb, -2, idx), upper=False, unitriangular=True)
        return solve_triangular(Um, y, upper=True)
    # U^T L^T P^T X = B: P^T X = L^-T U^-T B, then X = P (that): scatter the rows back
    z = solve_triangular(_S.transpose(Lm, -2, -1), solve_triangular(_S.transpose(Um, -2, -1), Bb, upper=False),
                         upper=True, unitriangular=True)
    return scatter(_P.mul(z, 0.0), -2, idx, z)


# ---- the deprecated torch.lu / lu_solve ------------------------------------------------------------------------
def lu_deprecated(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """Deprecated ``torch.lu``: ``(LU, pivots)`` (and ``infos`` with ``get_infos``); use ``linalg.lu_factor``."""
    # (TORCH_WARN_ONCE in PyTorch: once a process, not once a call site)
    warn_once("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                  "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
                  "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
                  "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                  "torch.linalg.lu_factor_ex(A, compute_pivots)", stacklevel=2)
    lu_, piv, info = lu_factor_ex(A, pivot=pivot)
    return (lu_, piv, info) if get_infos else (lu_, piv)


def lu_solve_deprecated(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Deprecated ``torch.lu_solve(b, LU, pivots)`` (keyword ``input=`` for b, as PyTorch's): use
    ``linalg.lu_solve(LU, pivots, b)``."""
    b = input
    warn_once("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be removed in a "
                  "future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                  "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)",
                  stacklevel=2)  # (TORCH_WARN_ONCE)
    return lu_solve(LU_data, LU_pivots, b)


lu_deprecated.__name__ = lu_deprecated.__qualname__ = "lu"
lu_solve_deprecated.__name__ = lu_solve_deprecated.__qualname__ = "lu_solve"
