"""OpCases of the decomp family (coretorch.linalg and its top-level aliases); part of coretorch.testing.CASES.

Inputs are made well-conditioned inside ``fn`` (A + n I, or A A^T + n I for the positive-definite ones), so that
gradcheck differentiates through the construction; functions of eigen/singular vectors are gauge-invariant (|U|)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import coretorch
from coretorch.testing import Arg as A, OpCase

L = coretorch.linalg
INF = float("inf")


def _wc(x, k=3.0):
    """x + k I: a well-conditioned matrix (torch or numpy)."""
    n = x.shape[-1]
    if isinstance(x, np.ndarray):
        return x + k * np.eye(n, dtype=x.dtype)
    return x + k * coretorch.eye(n, dtype=x.dtype, device=x.device)


def _spd(x):
    """x x^T + n I: symmetric positive-definite."""
    if isinstance(x, np.ndarray):
        return x @ np.swapaxes(x, -1, -2) + x.shape[-1] * np.eye(x.shape[-1], dtype=x.dtype)
    return x @ x.mT + x.shape[-1] * coretorch.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _sym(x):
    return x + (np.swapaxes(x, -1, -2) if isinstance(x, np.ndarray) else x.mT)


def _quiet(fn):
    """torch.cholesky / torch.qr warn once that they are deprecated (tests/test_linalg.py checks that)."""
    def run(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*args, **kwargs)
    return run


def _i32(shape):
    return np.zeros(shape, np.int32)


def _np_expm(a):
    """exp(A) through the eigen-decomposition (a different algorithm from the op's Taylor scaling and squaring)."""
    w, v = np.linalg.eig(a.astype(np.float64))
    return np.real(v @ (np.exp(w)[..., :, None] * np.linalg.inv(v))).astype(a.dtype)


def _np_mpow(a, n):
    return np.linalg.matrix_power(a.astype(np.float64), n).astype(a.dtype)


def _np_vnorm(a, ord=2, dim=None, keepdim=False):
    x = np.abs(a.astype(np.float64))
    axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
    if ord == INF:
        r = x.max(axis=axis, keepdims=keepdim)
    elif ord == -INF:
        r = x.min(axis=axis, keepdims=keepdim)
    elif ord == 0:
        r = (x != 0).sum(axis=axis, keepdims=keepdim).astype(np.float64)
    else:
        r = (x ** ord).sum(axis=axis, keepdims=keepdim) ** (1.0 / ord)
    return np.asarray(r).astype(a.dtype)


def _np_mnorm(a, ord):
    return np.asarray(np.linalg.norm(a.astype(np.float64), ord, axis=(-2, -1))).astype(a.dtype)


def _cross(a, b, dim=-1):
    return np.cross(a, b, axis=dim).astype(np.result_type(a, b))


def _absU(res):
    return res[0], abs(res[1]), abs(res[2])


# (R4: composites against a different float64 algorithm; float32 rounding differs)
R4: dict[str, Any] = dict(rtol=1e-4, atol=1e-5)

CASES: list[OpCase] = [
    # inverse and determinants
    OpCase("linalg.inv", lambda a: L.inv(_wc(a)), lambda a: np.linalg.inv(_wc(a)), (A((2, 3, 3)),), gradgrad=True),
    OpCase("linalg.inv.2d", lambda a: L.inv(_wc(a)), lambda a: np.linalg.inv(_wc(a)), (A((4, 4)),)),
    OpCase("linalg.inv.t", lambda a: L.inv(_wc(a)), lambda a: np.linalg.inv(_wc(a)), (A((4, 4), layout="t"),)),
    OpCase("linalg.inv.empty", lambda a: L.inv(a), lambda a: a.copy(), (A((0, 2, 2)),)),
    OpCase("linalg.inv.singular", lambda a: L.inv(a), None, (A((3, 3), "zeros"),), raises=RuntimeError),
    OpCase("linalg.inv.nonsquare", lambda a: L.inv(a), None, (A((3, 4)),), raises=RuntimeError),
    OpCase("linalg.inv.int", lambda a: L.inv(a), None, (A((3, 3), dtype="int64"),), raises=RuntimeError),
    OpCase("linalg.inv_ex", lambda a: tuple(L.inv_ex(_wc(a))), lambda a: (np.linalg.inv(_wc(a)), _i32((2,))),
           (A((2, 3, 3)),)),
    OpCase("inverse", lambda a: coretorch.inverse(_wc(a)), lambda a: np.linalg.inv(_wc(a)), (A((3, 3)),)),
    OpCase("inverse.method", lambda a: _wc(a).inverse(), lambda a: np.linalg.inv(_wc(a)), (A((3, 3)),)),
    OpCase("linalg.det", lambda a: L.det(a), lambda a: np.linalg.det(a), (A((2, 3, 3)),), gradgrad=True),
    OpCase("linalg.det.singular", lambda a, b: L.det(a @ b), lambda a, b: np.linalg.det(a @ b) * 0,
           (A((2, 3, 2)), A((2, 2, 3))), atol=1e-5),
    OpCase("linalg.det.1x1", lambda a: L.det(a), lambda a: a[..., 0, 0], (A((4, 1, 1)),)),
    OpCase("det", lambda a: coretorch.det(a), lambda a: np.linalg.det(a), (A((4, 4)),)),
    OpCase("det.method", lambda a: a.det(), lambda a: np.linalg.det(a), (A((3, 3)),)),
    OpCase("linalg.slogdet", lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), (A((2, 3, 3)),),
           nondiff=None),
    OpCase("slogdet", lambda a: tuple(coretorch.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), (A((3, 3)),),
           nondiff=None),
    OpCase("slogdet.method", lambda a: tuple(a.slogdet()), lambda a: tuple(np.linalg.slogdet(a)), (A((3, 3)),),
           nondiff=None),
    OpCase("logdet", lambda a: coretorch.logdet(_spd(a)), lambda a: np.linalg.slogdet(_spd(a))[1], (A((2, 3, 3)),)),
    OpCase("logdet.negative", lambda a: coretorch.logdet(-_spd(a)), lambda a: np.full(a.shape[:-2], np.nan, a.dtype),
           (A((3, 3)),), grad=False),
    OpCase("logdet.method", lambda a: _spd(a).logdet(), lambda a: np.linalg.slogdet(_spd(a))[1], (A((3, 3)),)),
    # solve
    OpCase("linalg.solve", lambda a, b: L.solve(_wc(a), b), lambda a, b: np.linalg.solve(_wc(a), b),
           (A((2, 3, 3)), A((2, 3, 2))), gradgrad=True),
    OpCase("linalg.solve.vector", lambda a, b: L.solve(_wc(a), b), lambda a, b: np.linalg.solve(_wc(a), b),
           (A((3, 3)), A((3,)))),
    OpCase("linalg.solve.batch_vector", lambda a, b: L.solve(_wc(a), b),
           lambda a, b: np.linalg.solve(_wc(a), b[..., None])[..., 0], (A((2, 3, 3)), A((2, 3)))),
    OpCase("linalg.solve.bcast", lambda a, b: L.solve(_wc(a), b), lambda a, b: np.linalg.solve(_wc(a), b),
           (A((3, 3)), A((2, 3, 4)))),
    OpCase("linalg.solve.right", lambda a, b: L.solve(_wc(a), b, left=False),
           lambda a, b: np.swapaxes(np.linalg.solve(np.swapaxes(_wc(a), -1, -2), np.swapaxes(b, -1, -2)), -1, -2),
           (A((3, 3)), A((2, 3)))),
    OpCase("linalg.solve.singular", lambda a, b: L.solve(a, b), None, (A((3, 3), "zeros"), A((3, 1))),
           raises=RuntimeError),
    OpCase("linalg.solve_ex", lambda a, b: tuple(L.solve_ex(_wc(a), b)),
           lambda a, b: (np.linalg.solve(_wc(a), b), _i32((2,))), (A((2, 3, 3)), A((2, 3, 2)))),
    # cholesky
    OpCase("linalg.cholesky", lambda a: L.cholesky(_spd(a)), lambda a: np.linalg.cholesky(_spd(a)),
           (A((2, 3, 3)),), gradgrad=True),
    OpCase("linalg.cholesky.upper", lambda a: L.cholesky(_spd(a), upper=True),
           lambda a: np.swapaxes(np.linalg.cholesky(_spd(a)), -1, -2), (A((3, 3)),)),
    OpCase("linalg.cholesky.nonpd", lambda a: L.cholesky(-_spd(a)), None, (A((3, 3)),), raises=RuntimeError),
    OpCase("linalg.cholesky_ex", lambda a: tuple(L.cholesky_ex(_spd(a))),
           lambda a: (np.linalg.cholesky(_spd(a)), _i32((2,))), (A((2, 3, 3)),)),
    OpCase("cholesky", _quiet(lambda a: coretorch.cholesky(_spd(a))), lambda a: np.linalg.cholesky(_spd(a)),
           (A((3, 3)),)),
    OpCase("cholesky.method_upper", _quiet(lambda a: _spd(a).cholesky(upper=True)),
           lambda a: np.swapaxes(np.linalg.cholesky(_spd(a)), -1, -2), (A((3, 3)),)),
    # qr
    OpCase("linalg.qr", lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)), (A((2, 4, 3)),), gradgrad=True),
    OpCase("linalg.qr.wide", lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)), (A((3, 5)),)),
    OpCase("linalg.qr.complete_square", lambda a: tuple(L.qr(a, mode="complete")),
           lambda a: tuple(np.linalg.qr(a, mode="complete")), (A((2, 3, 3)),)),
    OpCase("linalg.qr.complete_tall", lambda a: tuple(L.qr(a, mode="complete")),
           lambda a: tuple(np.linalg.qr(a, mode="complete")), (A((4, 2)),), grad=False),
    OpCase("linalg.qr.r", lambda a: L.qr(a, mode="r").R, lambda a: np.linalg.qr(a, mode="r"), (A((4, 3)),),
           grad=False),
    OpCase("qr", _quiet(lambda a: tuple(coretorch.qr(a))), lambda a: tuple(np.linalg.qr(a)), (A((4, 3)),)),
    OpCase("qr.method_complete", _quiet(lambda a: tuple(a.qr(some=False))),
           lambda a: tuple(np.linalg.qr(a, "complete")),
           (A((3, 3)),)),
    # svd (|U|, |Vh|: invariant under the sign gauge)
    OpCase("linalg.svd", lambda a: _absU(L.svd(a, full_matrices=False)),
           lambda a: _absU(np.linalg.svd(a, full_matrices=False)), (A((2, 4, 3)),), gradgrad=True),
    OpCase("linalg.svd.wide", lambda a: _absU(L.svd(a, full_matrices=False)),
           lambda a: _absU(np.linalg.svd(a, full_matrices=False)), (A((3, 5)),)),
    OpCase("linalg.svd.full", lambda a: (L.svd(a).S, L.svd(a).U[..., :3].abs(), L.svd(a).Vh.abs()),
           lambda a: (np.linalg.svd(a)[1], abs(np.linalg.svd(a)[0][..., :3]), abs(np.linalg.svd(a)[2])),
           (A((5, 3)),)),
    OpCase("linalg.svd.US", lambda a: (lambda r: r.U * r.S.unsqueeze(-2))(L.svd(a, full_matrices=False)).abs(),
           lambda a: abs((lambda r: r[0] * r[1][..., None, :])(np.linalg.svd(a, full_matrices=False))),
           (A((4, 3)),)),
    OpCase("linalg.svdvals", lambda a: L.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False), (A((2, 4, 3)),),
           gradgrad=True),
    OpCase("svd", lambda a: _absU(coretorch.svd(a)),
           lambda a: _absU((lambda r: (r[0], r[1], np.swapaxes(r[2], -1, -2)))(np.linalg.svd(a, full_matrices=False))),
           (A((4, 3)),)),
    OpCase("svd.method_no_uv", lambda a: tuple(a.svd(compute_uv=False)),
           lambda a: (np.zeros((4, 4), a.dtype), np.linalg.svd(a, compute_uv=False), np.zeros((3, 3), a.dtype)),
           (A((4, 3)),), nondiff=None),
    # eigh
    OpCase("linalg.eigh", lambda a: (lambda r: (r[0], r[1].abs()))(L.eigh(_sym(a))),
           lambda a: (lambda r: (r[0], abs(r[1])))(np.linalg.eigh(_sym(a))), (A((2, 3, 3)),), gradgrad=True),
    OpCase("linalg.eigh.upper", lambda a: (lambda r: (r[0], r[1].abs()))(L.eigh(a, UPLO="U")),
           lambda a: (lambda r: (r[0], abs(r[1])))(np.linalg.eigh(a, UPLO="U")), (A((4, 4)),), grad=False),
    OpCase("linalg.eigvalsh", lambda a: L.eigvalsh(_sym(a)), lambda a: np.linalg.eigvalsh(_sym(a)), (A((2, 4, 4)),)),
    # pinv, matrix_rank, lstsq
    OpCase("linalg.pinv", lambda a: L.pinv(a), lambda a: np.linalg.pinv(a), (A((2, 4, 3)),), gradgrad=True, **R4),
    OpCase("linalg.pinv.wide", lambda a: L.pinv(a), lambda a: np.linalg.pinv(a), (A((3, 5)),), **R4),
    OpCase("linalg.pinv.hermitian", lambda a: L.pinv(_sym(a), hermitian=True),
           lambda a: np.linalg.pinv(_sym(a), hermitian=True), (A((3, 3)),), **R4),
    OpCase("pinverse", lambda a: coretorch.pinverse(a), lambda a: np.linalg.pinv(a), (A((4, 3)),), **R4),
    OpCase("linalg.matrix_rank", lambda a, b: L.matrix_rank(a @ b), lambda a, b: np.linalg.matrix_rank(a @ b),
           (A((2, 4, 2)), A((2, 2, 4))), grad=False),
    OpCase("linalg.matrix_rank.full", lambda a: L.matrix_rank(a), lambda a: np.linalg.matrix_rank(a), (A((4, 3)),),
           grad=False),
    OpCase("linalg.lstsq", lambda a, b: L.lstsq(a, b).solution, lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
           (A((5, 3)), A((5, 2))), gradgrad=True, **R4),
    OpCase("linalg.lstsq.batched", lambda a, b: L.lstsq(a, b).solution,
           lambda a, b: np.linalg.pinv(a.astype(np.float64)).astype(a.dtype) @ b, (A((2, 5, 3)), A((2, 5, 2))), **R4),
    OpCase("linalg.lstsq.wide", lambda a, b: L.lstsq(a, b).solution,
           lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0], (A((3, 5)), A((3, 2))), **R4),
    OpCase("linalg.lstsq.vector", lambda a, b: L.lstsq(a, b).solution,
           lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0], (A((5, 3)), A((5,))), **R4),
    # matrix functions and products
    OpCase("linalg.matrix_power", lambda a: L.matrix_power(a, 3), lambda a: _np_mpow(a, 3), (A((2, 3, 3)),),
           gradgrad=True, **R4),
    OpCase("linalg.matrix_power.0", lambda a: L.matrix_power(a, 0), lambda a: _np_mpow(a, 0), (A((2, 3, 3)),)),
    OpCase("linalg.matrix_power.1", lambda a: L.matrix_power(a, 1), lambda a: a.copy(), (A((3, 3)),)),
    OpCase("linalg.matrix_power.neg", lambda a: L.matrix_power(_wc(a), -2), lambda a: _np_mpow(_wc(a), -2),
           (A((3, 3)),), **R4),
    OpCase("matrix_power.method", lambda a: a.matrix_power(5), lambda a: _np_mpow(a, 5), (A((3, 3), "small"),), **R4),
    OpCase("linalg.matrix_exp", lambda a: L.matrix_exp(a), _np_expm, (A((2, 3, 3), "small"),), gradgrad=True, **R4),
    OpCase("linalg.matrix_exp.scaled", lambda a: L.matrix_exp(a * 3), lambda a: _np_expm(a * 3), (A((4, 4)),),
           rtol=1e-4, atol=5e-4),  # entries up to ~150: float32 rounding of the squarings is ~1e-5 absolute
    OpCase("matrix_exp.method", lambda a: a.matrix_exp(), _np_expm, (A((3, 3)),), **R4),
    OpCase("linalg.multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: a @ b @ c,
           (A((2, 5)), A((5, 3)), A((3, 4))), **R4),
    OpCase("linalg.multi_dot.vectors", lambda a, b, c, d: L.multi_dot([a, b, c, d]), lambda a, b, c, d: a @ b @ c @ d,
           (A((4,)), A((4, 2)), A((2, 6)), A((6,))), **R4),
    OpCase("linalg.vecdot", lambda a, b: L.vecdot(a, b), lambda a, b: (a * b).sum(-1), (A((3, 4)), A((4,)))),
    OpCase("linalg.vecdot.dim0", lambda a, b: L.vecdot(a, b, dim=0), lambda a, b: (a * b).sum(0),
           (A((3, 4)), A((3, 4), layout="t"))),
    OpCase("linalg.cross", lambda a, b: L.cross(a, b), _cross, (A((4, 3)), A((4, 3)))),
    OpCase("linalg.cross.bcast_dim0", lambda a, b: L.cross(a, b, dim=0), lambda a, b: _cross(a, b, 0),
           (A((3, 2)), A((3, 1)))),
    OpCase("linalg.cross.badsize", lambda a, b: L.cross(a, b), None, (A((4, 2)), A((4, 2))), raises=RuntimeError),
    OpCase("linalg.diagonal", lambda a: L.diagonal(a), lambda a: np.diagonal(a, 0, -2, -1).copy(), (A((2, 3, 4)),)),
    OpCase("linalg.diagonal.offset", lambda a: L.diagonal(a, offset=1, dim1=0, dim2=2),
           lambda a: np.diagonal(a, 1, 0, 2).copy(), (A((3, 2, 4)),)),
    OpCase("linalg.diagonal.neg_offset", lambda a: L.diagonal(a, offset=-1),
           lambda a: np.diagonal(a, -1, -2, -1).copy(), (A((4, 3)),)),
]



def _np_tri(a, upper, unit=False):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        t = t * (1 - np.eye(n, dtype=a.dtype)) + np.eye(n, dtype=a.dtype)
    return t


def _np_cond(a, p=None):
    if p is None:
        s = np.linalg.svd(a.astype(np.float64), compute_uv=False)
        return (s[..., 0] / s[..., -1]).astype(a.dtype)
    return np.asarray(np.linalg.cond(a.astype(np.float64), p)).astype(a.dtype)


CASES += [  # non-contiguous inputs: transposed matrices and every other matrix of a batch
    OpCase("linalg.solve.t", lambda a, b: L.solve(_wc(a), b), lambda a, b: np.linalg.solve(_wc(a), b),
           (A((3, 3), layout="t"), A((3, 2), layout="t"))),
    OpCase("linalg.cholesky.strided", lambda a: L.cholesky(_spd(a)), lambda a: np.linalg.cholesky(_spd(a)),
           (A((2, 3, 3), layout="s"),)),
    OpCase("linalg.qr.t", lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)), (A((4, 3), layout="t"),)),
    OpCase("linalg.svdvals.strided", lambda a: L.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False),
           (A((2, 4, 3), layout="s"),)),
    OpCase("linalg.eigvalsh.t", lambda a: L.eigvalsh(a), lambda a: np.linalg.eigvalsh(a), (A((4, 4), layout="t"),),
           grad=False),
    OpCase("linalg.det.strided", lambda a: L.det(a), lambda a: np.linalg.det(a), (A((2, 3, 3), layout="s"),)),
    OpCase("linalg.lstsq.t", lambda a, b: L.lstsq(a, b).solution, lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
           (A((5, 3), layout="t"), A((5, 2), layout="t")), **R4),
    OpCase("linalg.matrix_exp.t", lambda a: L.matrix_exp(a), _np_expm, (A((3, 3), "small", layout="t"),), **R4),
]
CASES += [  # empty batches and empty matrices
    OpCase("linalg.det.empty", lambda a: L.det(a), lambda a: np.linalg.det(a), (A((0, 3, 3)),)),
    OpCase("linalg.det.0x0", lambda a: L.det(a), lambda a: np.ones(2, a.dtype), (A((2, 0, 0)),)),
    OpCase("linalg.cholesky.empty", lambda a: L.cholesky(a), lambda a: a.copy(), (A((0, 3, 3)),)),
    OpCase("linalg.qr.empty", lambda a: tuple(L.qr(a)), lambda a: (np.zeros((2, 3, 0), a.dtype), np.zeros((2, 0, 0),
                                                                                                       a.dtype)),
           (A((2, 3, 0)),)),
    OpCase("linalg.svdvals.empty", lambda a: L.svdvals(a), lambda a: np.zeros((0, 3), a.dtype), (A((0, 4, 3)),)),
    OpCase("linalg.eigvalsh.empty", lambda a: L.eigvalsh(a), lambda a: np.zeros((2, 0), a.dtype), (A((2, 0, 0)),)),
    OpCase("linalg.solve.empty", lambda a, b: L.solve(a, b), lambda a, b: b.copy(), (A((0, 3, 3)), A((0, 3, 2)))),
]
CASES += [
    OpCase("linalg.solve_triangular.lower", lambda a, b: L.solve_triangular(_wc(a), b, upper=False),
           lambda a, b: np.linalg.solve(_np_tri(_wc(a), False), b), (A((2, 3, 3)), A((2, 3, 2))), gradgrad=True),
    OpCase("linalg.solve_triangular.upper_right", lambda a, b: L.solve_triangular(_wc(a), b, upper=True, left=False),
           lambda a, b: np.swapaxes(np.linalg.solve(np.swapaxes(_np_tri(_wc(a), True), -1, -2), np.swapaxes(b, -1, -2)),
                                    -1, -2), (A((3, 3)), A((4, 3)))),
    OpCase("linalg.solve_triangular.unit", lambda a, b: L.solve_triangular(a, b, upper=True, unitriangular=True),
           lambda a, b: np.linalg.solve(_np_tri(a, True, True), b), (A((3, 3), "small"), A((3, 2)))),
    OpCase("cholesky_solve", lambda a, b: coretorch.cholesky_solve(b, L.cholesky(_spd(a))),
           lambda a, b: np.linalg.solve(_spd(a), b), (A((2, 3, 3)), A((2, 3, 2))), **R4),
    OpCase("cholesky_solve.upper", lambda a, b: b.cholesky_solve(L.cholesky(_spd(a), upper=True), upper=True),
           lambda a, b: np.linalg.solve(_spd(a), b), (A((3, 3)), A((3, 1))), **R4),
    OpCase("cholesky_inverse", lambda a: coretorch.cholesky_inverse(L.cholesky(_spd(a))),
           lambda a: np.linalg.inv(_spd(a)), (A((2, 3, 3)),), **R4),
    OpCase("linalg.cond", lambda a: L.cond(_wc(a)), lambda a: _np_cond(_wc(a)), (A((2, 3, 3)),), **R4),
    OpCase("linalg.cond.fro", lambda a: L.cond(_wc(a), "fro"), lambda a: _np_cond(_wc(a), "fro"), (A((3, 3)),), **R4),
    OpCase("linalg.cond.1", lambda a: L.cond(_wc(a), 1), lambda a: _np_cond(_wc(a), 1), (A((3, 3), "distinct"),),
           **R4),
    OpCase("linalg.vander", lambda a: L.vander(a), lambda a: np.vander(a, increasing=True).astype(a.dtype),
           (A((4,)),), **R4),
    OpCase("linalg.vander.N", lambda a: L.vander(a, N=3),
           lambda a: np.stack([np.vander(r, 3, increasing=True) for r in a]).astype(a.dtype), (A((2, 4)),), **R4),
    OpCase("linalg.tensorinv", lambda a: L.tensorinv(_wc(a.reshape(6, 6)).reshape(2, 3, 6), ind=2),
           lambda a: np.linalg.tensorinv(_wc(a.reshape(6, 6)).reshape(2, 3, 6), ind=2), (A((36,)),), **R4),
    OpCase("linalg.tensorsolve", lambda a, b: L.tensorsolve(_wc(a.reshape(6, 6)).reshape(6, 2, 3), b),
           lambda a, b: np.linalg.tensorsolve(_wc(a.reshape(6, 6)).reshape(6, 2, 3), b), (A((36,)), A((6,))), **R4),
]

for _ord in (2, 1, INF, -INF, 3, 0.5, -1):
    CASES.append(OpCase(f"linalg.vector_norm.ord{_ord}", lambda a, o=_ord: L.vector_norm(a, o),
                        lambda a, o=_ord: _np_vnorm(a, o), (A((3, 4), "nonzero"),), **R4))
    CASES.append(OpCase(f"linalg.vector_norm.ord{_ord}.dim", lambda a, o=_ord: L.vector_norm(a, o, dim=(0, 2)),
                        lambda a, o=_ord: _np_vnorm(a, o, (0, 2)), (A((2, 3, 4), "nonzero"),), **R4))
CASES += [
    OpCase("linalg.vector_norm.ord0", lambda a: L.vector_norm(a, 0, dim=1, keepdim=True),
           lambda a: _np_vnorm(a, 0, 1, True), (A((3, 4)),), grad=False),
    OpCase("linalg.vector_norm.keepdim", lambda a: L.vector_norm(a, dim=-1, keepdim=True),
           lambda a: _np_vnorm(a, 2, -1, True), (A((3, 4)),), **R4),
    OpCase("linalg.vector_norm.int", lambda a: L.vector_norm(a), None, (A((3,), dtype="int64"),),
           raises=RuntimeError),
    OpCase("linalg.norm", lambda a: L.norm(a), lambda a: _np_vnorm(a), (A((2, 3, 4)),), **R4),
    OpCase("linalg.norm.vec_dim", lambda a: L.norm(a, 3, dim=1), lambda a: _np_vnorm(a, 3, 1), (A((3, 4)),), **R4),
    OpCase("linalg.norm.matrix_ord", lambda a: L.norm(a, 1), lambda a: _np_mnorm(a, 1), (A((3, 4)),), **R4),
    OpCase("linalg.norm.nuc_dims", lambda a: L.norm(a, "nuc", dim=(0, 2)),
           lambda a: _np_mnorm(np.moveaxis(a, 1, 0), "nuc"), (A((3, 2, 4)),), **R4),
]
for _mord in ("fro", "nuc", 2, -2, 1, -1, INF, -INF):
    CASES.append(OpCase(f"linalg.matrix_norm.{_mord}", lambda a, o=_mord: L.matrix_norm(a, o),
                        lambda a, o=_mord: _np_mnorm(a, o), (A((2, 3, 4), "distinct"),), **R4))
CASES += [
    OpCase("linalg.matrix_norm.keepdim_dims", lambda a: L.matrix_norm(a, 1, dim=(2, 0), keepdim=True),
           lambda a: np.linalg.norm(a.astype(np.float64), 1, axis=(2, 0), keepdims=True).astype(a.dtype),
           (A((3, 2, 4), "distinct"),), **R4),
    OpCase("linalg.matrix_norm.nuc_keepdim", lambda a: L.matrix_norm(a, "nuc", keepdim=True),
           lambda a: np.linalg.norm(a.astype(np.float64), "nuc", axis=(-2, -1), keepdims=True).astype(a.dtype),
           (A((2, 3, 4)),), **R4),
]
