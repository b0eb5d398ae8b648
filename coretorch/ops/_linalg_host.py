"""The linear-algebra decompositions on numpy arrays (batched over leading dims): the cpu backend's kernels and
the opencl backend's host fallbacks (``coretorch._backend.PRIMITIVES``, the linalg block).

Every function keeps the input's float dtype.  The ``info`` arrays are int32 with the batch shape, as LAPACK's
(and PyTorch's ``*_ex`` functions'): 0 for success, k > 0 for the failing pivot / leading minor of order k.
"""
from __future__ import annotations

from typing import Any, Callable, Literal

import numpy as np

_LinAlgError = np.linalg.LinAlgError


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a singular or non-positive-definite input (a RuntimeError, as in PyTorch)."""


LinAlgError.__module__ = "coretorch.linalg"


def _no_convergence(op: str, a: np.ndarray) -> LinAlgError:
    """PyTorch's error when LAPACK's SVD does not converge (numpy's: 'SVD did not converge')."""
    if not np.all(np.isfinite(a)):
        return LinAlgError(f"{op}: The algorithm failed to converge because the input matrix contained non-finite "
                           "values.")
    return LinAlgError(f"{op}: The algorithm failed to converge because the input matrix is ill-conditioned or has "
                       f"too many repeated singular values (error code: {min(a.shape[-2:])}).")


def _flat(a: np.ndarray) -> np.ndarray:
    return a.reshape((-1,) + a.shape[-2:])


def _lu_info(a: np.ndarray) -> np.ndarray:
    """getrf's info for each matrix of ``a`` (..., n, n): 1 + the first exactly-zero pivot of the LU with partial
    pivoting, 0 when there is none (unblocked elimination, vectorised over the batch)."""
    x = np.array(_flat(a), dtype=a.dtype, copy=True)
    nb, n = x.shape[0], x.shape[-1]
    info = np.zeros(nb, np.int32)
    rows = np.arange(nb)
    for j in range(n):
        p = j + np.argmax(np.abs(x[:, j:, j]), axis=1)
        top = x[rows, j].copy()
        x[rows, j] = x[rows, p]
        x[rows, p] = top
        piv = x[:, j, j]
        zero = piv == 0
        info[(info == 0) & zero] = j + 1
        lower = x[:, j + 1:, j] / np.where(zero, 1, piv)[:, None]  # a zero pivot's column is zero below it too
        x[:, j + 1:, j + 1:] -= lower[:, :, None] * x[:, j, None, j + 1:]
    return info.reshape(a.shape[:-2])


def _per_matrix(fn, a: np.ndarray, out: np.ndarray, info: np.ndarray, *rest) -> None:
    """out[i] = fn(a[i], *rest[i]) for each matrix; where LAPACK reports it singular, NaN (undefined, as LAPACK's)
    and an info of at least 1 (the LU's own zero pivot when the unblocked elimination finds one, else n)."""
    fa, fo, finfo = _flat(a), out.reshape((-1,) + out.shape[a.ndim - 2:]), info.reshape(-1)
    frest = [_flat(r) for r in rest]
    for i in range(fa.shape[0]):
        try:
            fo[i] = fn(fa[i], *[r[i] for r in frest])
            finfo[i] = 0
        except _LinAlgError:
            fo[i] = np.nan
            finfo[i] = finfo[i] or fa.shape[-1]


def inv_ex(a: np.ndarray):
    try:
        return np.linalg.inv(a), np.zeros(a.shape[:-2], np.int32)
    except _LinAlgError:
        info = _lu_info(a)
        out = np.empty_like(a)
        _per_matrix(np.linalg.inv, a, out, info)
        return out, info


def solve_ex(a: np.ndarray, b: np.ndarray):
    try:
        return np.linalg.solve(a, b), np.zeros(a.shape[:-2], np.int32)
    except _LinAlgError:
        info = _lu_info(a)
        out = np.empty(a.shape[:-1] + b.shape[-1:], a.dtype)
        _per_matrix(np.linalg.solve, a, out, info, b)
        return out, info


def det(a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):  # NaN / inf inputs give NaN quietly, as PyTorch
        return np.asarray(np.linalg.det(a), a.dtype)


def slogdet(a: np.ndarray):
    with np.errstate(all="ignore"):
        sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign, a.dtype), np.asarray(logabs, a.dtype)


def _chol_order(m: np.ndarray) -> int:
    """The order of the first leading minor of ``m`` that is not positive-definite (leading minors of a PD minor
    are PD, so a bisection finds it)."""
    lo, hi = 0, m.shape[-1]  # minor lo is PD (0: trivially), minor hi is not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            np.linalg.cholesky(m[:mid, :mid])
            lo = mid
        except _LinAlgError:
            hi = mid
    return hi


def cholesky_ex(a: np.ndarray, upper: bool):
    x = np.swapaxes(a, -1, -2) if upper else a  # potrf reads the triangle it writes: upper reads the upper one
    try:
        with np.errstate(all="ignore"):
            out, info = np.linalg.cholesky(x), np.zeros(a.shape[:-2], np.int32)
    except _LinAlgError:
        fx = _flat(x)
        info = np.array([_chol_order(m) if _fails(m) else 0 for m in fx], np.int32).reshape(a.shape[:-2])
        out = np.empty_like(a)
        _per_matrix(np.linalg.cholesky, x, out, info)
    # a NaN in the input passes numpy's check (its pivot tests are false for NaN) but not LAPACK's potrf under
    # PyTorch: info is then the order of the first NaN pivot, where the NaN reaches the diagonal
    nan = np.isnan(np.diagonal(out, axis1=-2, axis2=-1))
    if nan.any():
        info = np.where((info == 0) & nan.any(-1), nan.argmax(-1) + 1, info).astype(np.int32)
    return (np.swapaxes(out, -1, -2).copy() if upper else out), info


def _fails(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m)
        return False
    except _LinAlgError:
        return True


def qr(a: np.ndarray, mode: Literal["reduced", "complete", "r"]):
    m, n = a.shape[-2:]
    if a.size == 0:  # numpy's qr rejects empty stacks
        k = m if mode == "complete" else min(m, n)
        q = np.broadcast_to(np.eye(m, k, dtype=a.dtype), a.shape[:-2] + (m, k)).copy()
        r = np.zeros(a.shape[:-2] + (k, n), a.dtype)
        return (np.zeros((0,), a.dtype) if mode == "r" else q), r
    if mode == "r":
        return np.zeros((0,), a.dtype), np.asarray(np.linalg.qr(a, mode="r"), a.dtype)
    q, r = np.linalg.qr(a, mode=mode)
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


def svd(a: np.ndarray, full_matrices: bool, compute_uv: bool):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        s = np.zeros(a.shape[:-2] + (k,), a.dtype)
        if not compute_uv:
            return None, s, None
        um, vn = (m, n) if full_matrices else (k, k)
        u = np.broadcast_to(np.eye(m, um, dtype=a.dtype), a.shape[:-2] + (m, um)).copy()
        vh = np.broadcast_to(np.eye(vn, n, dtype=a.dtype), a.shape[:-2] + (vn, n)).copy()
        return u, s, vh
    try:
        if not compute_uv:
            return None, np.linalg.svd(a, compute_uv=False).astype(a.dtype, copy=False), None
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    except _LinAlgError:
        raise _no_convergence("linalg.svd", a) from None
    return u.astype(a.dtype, copy=False), s.astype(a.dtype, copy=False), vh.astype(a.dtype, copy=False)


def eigh(a: np.ndarray, uplo: Literal["L", "U"], compute_v: bool):
    if a.size == 0:
        lam = np.zeros(a.shape[:-1], a.dtype)
        return lam, (np.zeros(a.shape, a.dtype) if compute_v else None)
    if not compute_v:
        return np.linalg.eigvalsh(a, UPLO=uplo).astype(a.dtype, copy=False), None
    lam, v = np.linalg.eigh(a, UPLO=uplo)
    return lam.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False)


def lstsq(a: np.ndarray, b: np.ndarray, rcond: float):
    """The minimum-norm least-squares solution (..., n, k) of a (..., m, n) x = b (..., m, k), the effective rank
    (int64, singular values above rcond * the largest) and the singular values (..., min(m, n))."""
    m, n = a.shape[-2:]
    if a.size == 0 or b.size == 0:
        return (np.zeros(a.shape[:-2] + (n, b.shape[-1]), a.dtype), np.zeros(a.shape[:-2], np.int64),
                np.zeros(a.shape[:-2] + (min(m, n),), a.dtype))
    try:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
    except _LinAlgError:
        raise _no_convergence("torch.linalg.lstsq", a) from None
    keep = s > rcond * s[..., :1]
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    x = np.swapaxes(vh, -1, -2) @ (sinv[..., :, None] * (np.swapaxes(u, -1, -2) @ b))
    return x.astype(a.dtype, copy=False), keep.sum(-1).astype(np.int64), s.astype(a.dtype, copy=False)


KERNELS: dict[str, Callable[..., Any]]  # functions of different signatures
KERNELS = {"linalg_inv_ex": inv_ex, "linalg_solve_ex": solve_ex, "linalg_det": det, "linalg_slogdet": slogdet,
           "linalg_cholesky_ex": cholesky_ex, "linalg_qr": qr, "linalg_svd": svd, "linalg_eigh": eigh,
           "linalg_lstsq": lstsq}
