"""OpCases of the Tensor methods and nn.functional names added for PyTorch programs (coretorch/_tensor_names12.py,
nn.functional's pdist and in-place activations); part of coretorch.testing.CASES."""
from __future__ import annotations

import warnings

import numpy as np

import coretorch as ct
import coretorch.nn.functional as F
from coretorch.testing import Arg as A, OpCase

from .products import _cdist_ref

FI = ("float32", "float64", "int64")


def _pdist_ref(p):
    """cdist's reference of the rows against themselves, its upper triangle (diagonal excluded)."""
    cdist = _cdist_ref(p)

    def ref(a):
        i, j = np.triu_indices(a.shape[0], 1)
        return cdist(a, a)[i, j]
    return ref


def _resize(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-inplace resize is deprecated (tested elsewhere)
        return x.resize(2, 10)


def _nonzero_static_ref(size, fill):
    def ref(a):
        nz = np.argwhere(a != 0)[:size]
        pad = np.full((size - len(nz), a.ndim), fill, dtype=np.int64)
        return np.concatenate([nz.astype(np.int64), pad])
    return ref


def _elu_ref(a, alpha=1.0):
    return np.where(a > 0, a, alpha * np.expm1(np.minimum(a, 0))).astype(a.dtype)


def _inplace(fn):
    """``fn`` applied in place to a copy (the input of a gradcheck must stay unmodified)."""
    def run(x):
        y = x.clone()
        out = fn(y)
        assert out is y
        return out
    return run


def _reflector_product(a, tau):
    """The full m x m product H_1 ... H_k of the reflectors, H_i = I - tau_i v_i v_i^T (LAPACK's definition)."""
    m, k = a.shape[-2], tau.shape[-1]
    q = np.broadcast_to(np.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m)).copy()
    for i in range(k):
        v = np.tril(a, -1)[..., :, i].copy()
        v[..., i] = 1
        h = np.eye(m, dtype=a.dtype) - tau[..., i, None, None] * (v[..., :, None] * v[..., None, :])
        q = q @ h
    return q


def _getf2(a):
    """LAPACK's unblocked LU with partial pivoting (the first largest |value|), on each matrix of ``a``."""
    a = np.array(a, dtype=np.float64, copy=True)
    flat = a.reshape((-1,) + a.shape[-2:])
    m, n = a.shape[-2:]
    pivs = np.zeros((flat.shape[0], min(m, n)), np.int32)
    for b, x in enumerate(flat):
        for k in range(min(m, n)):
            p = k + int(np.argmax(np.abs(x[k:, k])))
            pivs[b, k] = p + 1
            x[[k, p]] = x[[p, k]]
            if x[k, k] != 0:
                x[k + 1:, k] /= x[k, k]
                x[k + 1:, k + 1:] -= np.outer(x[k + 1:, k], x[k, k + 1:])
    return flat.reshape(a.shape), pivs.reshape(a.shape[:-2] + (min(m, n),))


def _lu_factor_ref(a):
    lu, piv = _getf2(a)
    return lu.astype(a.dtype), piv


def _as_strided_scatter_ref(size, stride, offset):
    def ref(a, src):
        out = np.array(a, copy=True)
        pos = offset + sum(np.arange(n).reshape((-1,) + (1,) * (len(size) - 1 - k)) * st
                           for k, (n, st) in enumerate(zip(size, stride)))
        out.reshape(-1)[np.broadcast_to(pos, size).reshape(-1)] = src.reshape(-1)
        return out
    return ref


def _conv_tbc_ref(x, w, b, pad):
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    t_out = xp.shape[0] - w.shape[0] + 1
    out = np.stack([sum(xp[t + k] @ w[k] for k in range(w.shape[0])) for t in range(t_out)]) + b
    return out.astype(x.dtype)


def _lu_solve(a, b, **kw):
    lu, piv = ct.linalg.lu_factor(a)
    return ct.linalg.lu_solve(lu, piv, b, **kw)


def _ormqr_ref(left, transpose):
    def ref(a, tau, c):
        q = _reflector_product(a, tau)
        q = np.swapaxes(q, -1, -2) if transpose else q
        return (q @ c if left else c @ q).astype(a.dtype)
    return ref


CASES = []
for _tag, _p in (("", 2.0), (".p0", 0.0), (".p1", 1.0), (".pinf", float("inf")), (".p3", 3.0)):
    CASES.append(OpCase(f"pdist{_tag}", lambda x, p=_p: F.pdist(x, p), _pdist_ref(_p), (A((5, 3), "distinct"),),
                        grad=_p != 0, gradgrad=_p == 2.0))
CASES += [
    OpCase("pdist.t", F.pdist, _pdist_ref(2.0), (A((4, 3), "distinct", layout="t"),)),
    OpCase("pdist.one_row", F.pdist, _pdist_ref(2.0), (A((1, 3)),), grad=False),
    OpCase("pdist.3d", F.pdist, None, (A((2, 3, 2)),), raises=RuntimeError),
    OpCase("pdist.int", F.pdist, None, (A((3, 2), dtype="int64"),), raises=RuntimeError),
    OpCase("pdist.negative_p", lambda x: F.pdist(x, -1), None, (A((3, 2)),), raises=RuntimeError),
    OpCase("sum_to_size", lambda x: x.sum_to_size(1, 5), lambda a: a.sum(0, keepdims=True), (A((4, 5)),),
           dtypes=FI),
    OpCase("sum_to_size.lead", lambda x: x.sum_to_size((3, 1)), lambda a: a.sum((0, 2))[:, None],
           (A((2, 3, 4), layout="t"),)),
    OpCase("sum_to_size.same", lambda x: x.sum_to_size(4, 5), lambda a: a, (A((4, 5), layout="s"),)),
    OpCase("sum_to_size.bad", lambda x: x.sum_to_size(2, 5), None, (A((4, 5)),), raises=RuntimeError),
    OpCase("adjoint", lambda x: x.adjoint(), lambda a: np.swapaxes(a, -1, -2), (A((2, 3, 4)),), dtypes=FI),
    OpCase("mH", lambda x: x.mH, lambda a: np.swapaxes(a, -1, -2), (A((3, 4), layout="t"),)),
    OpCase("H", lambda x: x.H, lambda a: a.T, (A((3, 4), layout="s"),)),
    OpCase("H.3d", lambda x: x.H, None, (A((2, 3, 4)),), raises=RuntimeError),
    OpCase("adjoint.1d", lambda x: x.adjoint(), None, (A((3,)),), raises=RuntimeError),
    OpCase("resize", _resize, lambda a: a.reshape(2, 10), (A((4, 5), layout="t"),)),
    OpCase("nonzero_static.pad", lambda x: x.nonzero_static(size=20, fill_value=-7),
           _nonzero_static_ref(20, -7), (A((3, 4), "mask"),), dtypes=FI, grad=False),
    OpCase("nonzero_static.truncate", lambda x: x.nonzero_static(size=2), _nonzero_static_ref(2, -1),
           (A((3, 4), "small", layout="t"),), dtypes=FI, grad=False),
    OpCase("nonzero_static.empty", lambda x: x.nonzero_static(size=2), _nonzero_static_ref(2, -1),
           (A((0, 3)),), grad=False),
    OpCase("hardshrink.method", lambda x: x.hardshrink(0.7), lambda a: np.where(np.abs(a) > 0.7, a, 0).astype(a.dtype),
           (A((4, 5), "distinct"),)),
    OpCase("prelu.method", lambda x, w: x.prelu(w),
           lambda a, w: np.where(a >= 0, a, w[None, :, None] * a).astype(a.dtype),
           (A((2, 3, 4), "distinct"), A((3,)))),
    OpCase("elu_", _inplace(lambda x: F.elu_(x, 0.5)), lambda a: _elu_ref(a, 0.5), (A((4, 5), "distinct"),)),
    OpCase("celu_", _inplace(lambda x: F.celu_(x, 2.0)),
           lambda a: np.where(a > 0, a, 2.0 * np.expm1(np.minimum(a, 0) / 2.0)).astype(a.dtype),
           (A((4, 5), "distinct"),)),
    OpCase("selu_", _inplace(F.selu_), lambda a: (1.0507009873554804934193349852946 *
                                                  _elu_ref(a, 1.6732632423543772848170429916717)).astype(a.dtype),
           (A((4, 5), "distinct"),)),
    OpCase("hardtanh_", _inplace(lambda x: F.hardtanh_(x, -0.5, 0.8)), lambda a: np.clip(a, -0.5, 0.8),
           (A((4, 5), "distinct"),)),
    OpCase("leaky_relu_", _inplace(lambda x: F.leaky_relu_(x, 0.2)), lambda a: np.where(a > 0, a, 0.2 * a).astype(
        a.dtype), (A((4, 5), "distinct"),)),
    OpCase("threshold_", _inplace(lambda x: F.threshold_(x, 0.3, -2.0)),
           lambda a: np.where(a > 0.3, a, -2.0).astype(a.dtype), (A((4, 5), "distinct"),)),
]
CASES += [
    OpCase("householder_product", ct.linalg.householder_product,
           lambda a, t: _reflector_product(a, t)[..., :a.shape[-1]].astype(a.dtype), (A((5, 3)), A((2,))),
           gradgrad=True),
    OpCase("householder_product.batched", lambda a, t: a.orgqr(t),
           lambda a, t: _reflector_product(a, t)[..., :a.shape[-1]].astype(a.dtype), (A((2, 4, 3), layout="t"),
                                                                                      A((2, 3)))),
    OpCase("householder_product.wide", ct.linalg.householder_product, None, (A((3, 4)), A((2,))),
           raises=RuntimeError),
    OpCase("householder_product.tau", ct.linalg.householder_product, None, (A((4, 2)), A((3,))),
           raises=RuntimeError),
    OpCase("ormqr", ct.ormqr, _ormqr_ref(True, False), (A((4, 3)), A((3,)), A((4, 2)))),
    OpCase("ormqr.t", lambda a, t, c: a.ormqr(t, c, transpose=True), _ormqr_ref(True, True),  # (tau: PyTorch
           (A((4, 3)), A((3,)), A((4, 2), layout="s"))),  # requires min(other.shape[-2], input.shape[-1]) entries)
    OpCase("ormqr.right", lambda a, t, c: ct.ormqr(a, t, c, left=False), _ormqr_ref(False, False),
           (A((4, 3)), A((3,)), A((2, 4)))),
    OpCase("ormqr.right_t", lambda a, t, c: ct.ormqr(a, t, c, left=False, transpose=True), _ormqr_ref(False, True),
           (A((2, 4, 3)), A((2, 3)), A((2, 2, 4)))),
    OpCase("ormqr.shape", ct.ormqr, None, (A((4, 3)), A((3,)), A((3, 2))), raises=RuntimeError),
    # the gradient of input is 0 where src went (PyTorch 2.13's is the complement: it fails its own gradcheck)
    OpCase("as_strided_scatter", lambda a, b: ct.as_strided_scatter(a, b, (2, 2), (3, 1), 1),
           _as_strided_scatter_ref((2, 2), (3, 1), 1), (A((3, 3)), A((2, 2))), dtypes=FI),
    OpCase("as_strided_scatter.method", lambda a, b: a.as_strided_scatter(b, (3,), (4,)),
           _as_strided_scatter_ref((3,), (4,), 0), (A((3, 4)), A((3,)))),
    OpCase("as_strided_scatter.shape", lambda a, b: ct.as_strided_scatter(a, b, (2,), (1,)), None,
           (A((3, 3)), A((3,))), raises=RuntimeError),
    OpCase("conv_tbc", lambda x, w, b: F.conv_tbc(x, w, b, 1),
           lambda x, w, b: _conv_tbc_ref(x, w, b, 1), (A((5, 2, 3)), A((2, 3, 4)), A((4,)))),
    OpCase("lu_factor", lambda a: tuple(ct.linalg.lu_factor(a)), _lu_factor_ref, (A((4, 4), "distinct"),),
           nondiff=None),
    OpCase("lu_factor.batched_wide", lambda a: tuple(ct.linalg.lu_factor(a)), _lu_factor_ref,
           (A((2, 3, 5), "distinct", layout="t"),), nondiff=None),
    OpCase("lu_factor.tall", lambda a: ct.linalg.lu_factor(a).LU, lambda a: _lu_factor_ref(a)[0],
           (A((5, 3), "distinct"),)),
    OpCase("lu_factor.1d", ct.linalg.lu_factor, None, (A((3,)),), raises=RuntimeError),
    OpCase("lu.LU", lambda a: tuple(ct.linalg.lu(a))[1:], lambda a: (
        (np.tril(_getf2(a)[0], -1)[..., :, :3] + np.eye(3)).astype(a.dtype),
        np.triu(_getf2(a)[0])[..., :3, :].astype(a.dtype)), (A((3, 4), "distinct"),)),
    OpCase("lu_solve", lambda a, b: _lu_solve(a, b),
           lambda a, b: np.linalg.solve(a, b).astype(a.dtype), (A((4, 4), "distinct"), A((4, 2)))),
    OpCase("lu_solve.adjoint_right", lambda a, b: _lu_solve(a, b, left=False, adjoint=True),
           lambda a, b: (b @ np.linalg.inv(np.swapaxes(a, -1, -2))).astype(a.dtype),
           (A((2, 3, 3), "distinct"), A((2, 2, 3)))),
]
