"""OpCases of the products family (coretorch.ops.products); part of coretorch.testing.CASES."""
from __future__ import annotations

from typing import Any

import itertools
import warnings

import numpy as np

import coretorch as ct
from coretorch.testing import Arg as A, OpCase

F = ("float32", "float64")
FI = F + ("int64",)


def _ein(eq):
    return (lambda *xs: ct.einsum(eq, *xs)), (lambda *xs: np.asarray(np.einsum(eq, *xs)))


def _ein_cases() -> list:
    specs: list[tuple[Any, ...]] = [  # (name, equation, shapes, layouts, extra kwargs)
        ("einsum", "bij,bjk->bik", ((2, 3, 4), (2, 4, 5)), "cc", {"gradgrad": True, "dtypes": FI}),
        ("einsum.attention", "bhqd,bhkd->bhqk", ((2, 2, 3, 4), (2, 2, 5, 4)), "cc", {}),
        ("einsum.chain3", "ij,jk,kl->il", ((3, 4), (4, 5), (5, 2)), "ccc", {"gradgrad": True}),
        ("einsum.chain4", "ab,bc,cd,de->ae", ((2, 3), (3, 4), (4, 3), (3, 2)), "cccc", {}),
        ("einsum.diagonal", "ii->i", ((4, 4),), "c", {"dtypes": FI}),
        ("einsum.trace", "ii", ((4, 4),), "c", {}),
        ("einsum.batch_diagonal", "bii->bi", ((2, 3, 3),), "c", {}),
        ("einsum.diag_contract", "iij,jk->ik", ((3, 3, 4), (4, 2)), "cc", {}),
        ("einsum.ellipsis", "...ij,...jk", ((2, 3, 4), (4, 5)), "cc", {}),
        ("einsum.ellipsis_out", "i...->...", ((3, 2, 4),), "c", {}),
        ("einsum.ellipsis_mid", "a...b,b...->a...", ((2, 3, 4), (4, 3)), "cc", {}),
        ("einsum.implicit", "ij,jk", ((3, 4), (4, 5)), "cc", {}),
        ("einsum.implicit_order", "ba", ((3, 4),), "c", {}),
        ("einsum.transpose", "ij->ji", ((3, 4),), "t", {}),
        ("einsum.sum", "ijk->j", ((2, 3, 4),), "c", {"dtypes": FI}),
        ("einsum.sum_all", "ij->", ((3, 4),), "c", {}),
        ("einsum.outer", "i,j->ij", ((3,), (4,)), "cc", {}),
        ("einsum.dot", "i,i->", ((5,),), "c", {}),
        ("einsum.hadamard", "ij,ij->ij", ((3, 4), (3, 4)), "ts", {}),
        ("einsum.t", "ij,jk->ik", ((3, 4), (4, 5)), "ts", {}),
        ("einsum.0d", ",ij->ij", ((), (3, 4)), "cc", {}),
        ("einsum.empty", "ij,jk->ik", ((0, 3), (3, 4)), "cc", {}),
        ("einsum.empty_k", "ij,jk->ik", ((3, 0), (0, 4)), "cc", {}),
        ("einsum.bilinear", "bn,anm,bm->ba", ((2, 3), (4, 3, 5), (2, 5)), "ccc", {}),
        ("einsum.upper", "Ab,bC->AC", ((3, 4), (4, 2)), "cc", {}),
    ]
    out = []
    for name, eq, shapes, layouts, kw in specs:
        fn, ref = _ein(eq)
        if name == "einsum.dot":
            fn, ref = (lambda x: ct.einsum("i,i->", x, x)), (lambda a: np.asarray(np.einsum("i,i->", a, a)))
        args = tuple(A(s, layout=lay) for s, lay in zip(shapes, layouts))
        out.append(OpCase(name, fn, ref, args, kw.pop("dtypes", F), **kw))
    # size-1 dims broadcast against the other operand's size (PyTorch; numpy needs them expanded)
    out.append(OpCase("einsum.broadcast_one", lambda x, y: ct.einsum("ij,ij->i", x, y),
                      lambda a, b: np.einsum("ij,ij->i", *np.broadcast_arrays(a, b)), (A((3, 1)), A((3, 4)))))
    out.append(OpCase("einsum.list_form", lambda x, y: ct.einsum("ij,jk->ik", [x, y]), np.matmul,
                      (A((3, 4)), A((4, 2)))))
    out.append(OpCase("einsum.sublist", lambda x, y: ct.einsum(x, [0, 1], y, [1, 2], [0, 2]), np.matmul,
                      (A((3, 4)), A((4, 2)))))
    out.append(OpCase("einsum.too_many_operands", lambda x, y: ct.einsum("ij->i", x, y), None,
                      (A((3, 4)), A((3, 4))), raises=RuntimeError))
    out.append(OpCase("einsum.size_mismatch", lambda x, y: ct.einsum("ij,jk->ik", x, y), None,
                      (A((3, 4)), A((5, 2))), raises=RuntimeError))
    out.append(OpCase("einsum.subscript_count", lambda x: ct.einsum("ijk->i", x), None, (A((3, 4)),),
                      raises=RuntimeError))
    return out


def _tensordot_cases() -> list:
    td = ct.tensordot
    return [
        OpCase("tensordot", td, lambda a, b: np.tensordot(a, b), (A((3, 4, 5)), A((4, 5, 2))), FI, gradgrad=True),
        OpCase("tensordot.lists", lambda x, y: td(x, y, dims=([1, 0], [0, 1])),
               lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 1])), (A((3, 4, 5)), A((4, 3, 2)))),
        OpCase("tensordot.neg_dims", lambda x, y: td(x, y, dims=([-1, -3], [0, -1])),
               lambda a, b: np.tensordot(a, b, axes=([-1, -3], [0, -1])), (A((3, 2, 4)), A((4, 5, 3)))),
        OpCase("tensordot.int1", lambda x, y: td(x, y, dims=1), lambda a, b: np.tensordot(a, b, 1),
               (A((3, 4)), A((4, 5)))),
        OpCase("tensordot.int0", lambda x, y: td(x, y, dims=0), lambda a, b: np.tensordot(a, b, 0),
               (A((3,)), A((2, 2)))),
        OpCase("tensordot.tensor_dims", lambda x, y: td(x, y, dims=ct.tensor([[1], [0]])),
               lambda a, b: np.tensordot(a, b, ([1], [0])), (A((3, 4)), A((4, 5)))),
        OpCase("tensordot.t", lambda x, y: td(x, y, dims=([0], [1])), lambda a, b: np.tensordot(a, b, ([0], [1])),
               (A((4, 3), layout="t"), A((2, 4), layout="s"))),
        OpCase("tensordot.empty", td, lambda a, b: np.tensordot(a, b), (A((0, 2, 3)), A((2, 3, 4)))),
        OpCase("tensordot.mismatch", lambda x, y: td(x, y, dims=1), None, (A((3, 4)), A((5, 2))),
               raises=RuntimeError),
        OpCase("inner", ct.inner, np.inner, (A((3, 4)), A((2, 4))), FI, gradgrad=True),
        OpCase("inner.1d", ct.inner, np.inner, (A((4,)), A((4,)))),
        OpCase("inner.0d", ct.inner, lambda a, b: np.asarray(a * b), (A(()), A((2, 3)))),
        OpCase("inner.t", lambda x, y: x.inner(y), np.inner, (A((3, 4), layout="t"), A((2, 3, 4)))),
        OpCase("inner.mismatch", ct.inner, None, (A((3, 4)), A((3, 5))), raises=RuntimeError),
        OpCase("vdot", ct.vdot, lambda a, b: np.asarray(np.vdot(a, b)), (A((5,)), A((5,))), FI),
        OpCase("vdot.strided", lambda x, y: x.vdot(y), lambda a, b: np.asarray(np.vdot(a, b)),
               (A((5,), layout="s"), A((5,)))),
        OpCase("vdot.2d", ct.vdot, None, (A((2, 3)), A((2, 3))), raises=RuntimeError),
        OpCase("vdot.dtypes", ct.vdot, None, (A((3,), dtype="float32"), A((3,), dtype="float64")),
               raises=RuntimeError),
        OpCase("kron", ct.kron, np.kron, (A((2, 3)), A((3, 2))), FI, gradgrad=True),
        OpCase("kron.1d_2d", ct.kron, np.kron, (A((3,)), A((2, 2)))),
        OpCase("kron.3d", lambda x, y: x.kron(y), np.kron, (A((2, 1, 2)), A((2, 3)))),
        OpCase("kron.0d", ct.kron, lambda a, b: np.asarray(np.kron(a, b)), (A(()), A((2, 3)))),
        OpCase("kron.t", ct.kron, np.kron, (A((2, 3), layout="t"), A((3, 2), layout="s"))),
        OpCase("kron.empty", ct.kron, np.kron, (A((0, 2)), A((3, 2)))),
    ]


def _cross_default(x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ct.cross(x, y)


def _cross_cases() -> list:
    return [
        OpCase("cross", lambda x, y: ct.cross(x, y, dim=1), lambda a, b: np.cross(a, b, axis=1),
               (A((4, 3)), A((4, 3))), FI, gradgrad=True),
        OpCase("cross.default_dim", _cross_default, lambda a, b: np.cross(a, b, axis=0), (A((3, 3)), A((3, 3)))),
        OpCase("cross.neg_dim_bcast", lambda x, y: x.cross(y, dim=-1), lambda a, b: np.cross(a, b),
               (A((2, 1, 3)), A((1, 4, 3)))),
        OpCase("cross.t", lambda x, y: ct.cross(x, y, dim=0), lambda a, b: np.cross(a, b, axis=0),
               (A((3, 4), layout="t"), A((3, 4), layout="s"))),
        OpCase("cross.empty", lambda x, y: ct.cross(x, y, dim=1), lambda a, b: np.cross(a, b, axis=1),
               (A((0, 3)), A((0, 3)))),
        OpCase("cross.not3", lambda x, y: ct.cross(x, y, dim=1), None, (A((3, 4)), A((3, 4))), raises=RuntimeError),
        OpCase("cross.no_dim3", _cross_default, None, (A((2, 4)), A((2, 4))), raises=RuntimeError),
    ]


def _blas_cases() -> list:
    mm = np.matmul
    return [
        OpCase("baddbmm", ct.baddbmm, lambda c, a, b: c + mm(a, b), (A((2, 3, 5)), A((2, 3, 4)), A((2, 4, 5))), FI,
               gradgrad=True),
        OpCase("baddbmm.scaled_bcast", lambda c, a, b: ct.baddbmm(c, a, b, beta=0.5, alpha=2.0),
               lambda c, a, b: 0.5 * c + 2.0 * mm(a, b), (A((3, 5)), A((2, 3, 4)), A((2, 4, 5)))),
        OpCase("baddbmm.beta0_nan", lambda c, a, b: ct.baddbmm(c * float("nan"), a, b, beta=0),
               lambda c, a, b: mm(a, b), (A((2, 3, 5)), A((2, 3, 4)), A((2, 4, 5))), grad=False),
        OpCase("baddbmm.t", lambda c, a, b: c.baddbmm(a, b), lambda c, a, b: c + mm(a, b),
               (A((2, 3, 5)), A((2, 3, 4), layout="t"), A((2, 4, 5), layout="s"))),
        OpCase("baddbmm.inplace", lambda c, a, b: c.clone().baddbmm_(a, b, alpha=3),
               lambda c, a, b: c + 3 * mm(a, b), (A((2, 3, 5)), A((2, 3, 4)), A((2, 4, 5)))),
        OpCase("baddbmm.empty", ct.baddbmm, lambda c, a, b: c + mm(a, b),
               (A((0, 3, 5)), A((0, 3, 4)), A((0, 4, 5)))),
        OpCase("baddbmm.2d", ct.baddbmm, None, (A((3, 5)), A((3, 4)), A((4, 5))), raises=RuntimeError),
        OpCase("addbmm", ct.addbmm, lambda c, a, b: c + mm(a, b).sum(0), (A((3, 5)), A((2, 3, 4)), A((2, 4, 5))),
               FI, gradgrad=True),
        OpCase("addbmm.scaled", lambda c, a, b: c.addbmm(a, b, beta=2, alpha=0.5),
               lambda c, a, b: 2 * c + 0.5 * mm(a, b).sum(0), (A((5,)), A((3, 3, 4), layout="t"), A((3, 4, 5)))),
        OpCase("addbmm.inplace", lambda c, a, b: c.clone().addbmm_(a, b),
               lambda c, a, b: c + mm(a, b).sum(0), (A((3, 5)), A((2, 3, 4)), A((2, 4, 5)))),
        OpCase("addbmm.beta0_nan", lambda c, a, b: ct.addbmm(c * float("nan"), a, b, beta=0),
               lambda c, a, b: mm(a, b).sum(0), (A((3, 5)), A((2, 3, 4)), A((2, 4, 5))), grad=False),
        OpCase("addmv", ct.addmv, lambda c, a, b: c + a @ b, (A((3,)), A((3, 4)), A((4,))), FI, gradgrad=True),
        OpCase("addmv.scaled_0d", lambda c, a, b: c.addmv(a, b, beta=0.5, alpha=-1),
               lambda c, a, b: 0.5 * c - a @ b, (A(()), A((3, 4), layout="t"), A((4,), layout="s"))),
        OpCase("addmv.inplace", lambda c, a, b: c.clone().addmv_(a, b, alpha=2), lambda c, a, b: c + 2 * (a @ b),
               (A((3,)), A((3, 4)), A((4,)))),
        OpCase("addmv.beta0_nan", lambda c, a, b: ct.addmv(c * float("nan"), a, b, beta=0),
               lambda c, a, b: a @ b, (A((3,)), A((3, 4)), A((4,))), grad=False),
        OpCase("addmv.empty", ct.addmv, lambda c, a, b: c + a @ b, (A((3,)), A((3, 0)), A((0,)))),
        OpCase("addr", ct.addr, lambda c, a, b: c + np.outer(a, b), (A((3, 4)), A((3,)), A((4,))), FI,
               gradgrad=True),
        OpCase("addr.scaled_bcast", lambda c, a, b: c.addr(a, b, beta=2, alpha=0.5),
               lambda c, a, b: 2 * c + 0.5 * np.outer(a, b), (A((4,)), A((3,), layout="s"), A((4,)))),
        OpCase("addr.inplace", lambda c, a, b: c.clone().addr_(a, b), lambda c, a, b: c + np.outer(a, b),
               (A((3, 4), layout="t"), A((3,)), A((4,)))),
        OpCase("addr.beta0_nan", lambda c, a, b: ct.addr(c * float("nan"), a, b, beta=0),
               lambda c, a, b: np.outer(a, b), (A((3, 4)), A((3,)), A((4,))), grad=False),
        OpCase("addr.2d", ct.addr, None, (A((3, 4)), A((3, 1)), A((4,))), raises=RuntimeError),
        OpCase("addmm.inplace", lambda c, a, b: c.clone().addmm_(a, b, beta=0.5),
               lambda c, a, b: 0.5 * c + a @ b, (A((3, 2)), A((3, 4)), A((4, 2)))),
        OpCase("addmm.beta0_nan", lambda c, a, b: ct.addmm(c * float("nan"), a, b, beta=0),
               lambda c, a, b: a @ b, (A((3, 2)), A((3, 4)), A((4, 2))), grad=False),
        OpCase("chain_matmul", _chain, lambda a, b, c: a @ b @ c, (A((3, 4)), A((4, 6)), A((6, 2)))),
        OpCase("chain_matmul.four", _chain, lambda a, b, c, d: a @ b @ c @ d,
               (A((5, 2)), A((2, 6)), A((6, 3), layout="t"), A((3, 4)))),
        OpCase("chain_matmul.one", _chain, lambda a: a, (A((3, 4)),)),
        OpCase("chain_matmul.1d", _chain, None, (A((3, 4)), A((4,))), raises=RuntimeError),
    ]


def _chain(*ms):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ct.chain_matmul(*ms)


def _block_diag_ref(*arrs):
    mats = [a.reshape(1, 1) if a.ndim == 0 else a.reshape(1, -1) if a.ndim == 1 else a for a in arrs]
    dt = np.result_type(*[m.dtype for m in mats])
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)), dt)
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def _cartesian_ref(*arrs):
    if len(arrs) == 1:  # one input comes back as is (1-D), as in PyTorch
        return arrs[0]
    return np.array(list(itertools.product(*arrs)), dtype=arrs[0].dtype).reshape(-1, len(arrs))


def _comb_ref(r, rep=False):
    def ref(a):
        gen = itertools.combinations_with_replacement if rep else itertools.combinations
        return np.array(list(gen(a, r)), dtype=a.dtype).reshape(-1, r)
    return ref


def _set_cases() -> list:
    return [
        OpCase("block_diag", ct.block_diag, _block_diag_ref, (A((2, 3)), A((1, 2)), A((3, 1))), FI, gradgrad=True),
        OpCase("block_diag.0d_1d_2d", ct.block_diag, _block_diag_ref, (A(()), A((3,)), A((2, 2), layout="t"))),
        OpCase("block_diag.one", ct.block_diag, _block_diag_ref, (A((2, 3)),)),
        OpCase("block_diag.empty", ct.block_diag, _block_diag_ref, (A((0, 2)), A((2, 0)), A((2, 2)))),
        OpCase("block_diag.3d", ct.block_diag, None, (A((2, 2, 2)),), raises=RuntimeError),
        OpCase("cartesian_prod", ct.cartesian_prod, _cartesian_ref, (A((2,)), A((3,)), A((2,))), FI),
        OpCase("cartesian_prod.two_strided", ct.cartesian_prod, _cartesian_ref, (A((3,), layout="s"), A((4,)))),
        OpCase("cartesian_prod.one", ct.cartesian_prod, _cartesian_ref, (A((3,)),)),
        OpCase("cartesian_prod.empty", ct.cartesian_prod, _cartesian_ref, (A((0,)), A((3,)))),
        OpCase("cartesian_prod.2d", ct.cartesian_prod, None, (A((2, 2)), A((3,))), raises=RuntimeError),
        OpCase("combinations", ct.combinations, _comb_ref(2), (A((5,)),), FI),
        OpCase("combinations.r3", lambda x: ct.combinations(x, 3), _comb_ref(3), (A((5,)),)),
        OpCase("combinations.r1", lambda x: ct.combinations(x, r=1), _comb_ref(1), (A((4,)),)),
        OpCase("combinations.replacement", lambda x: ct.combinations(x, 2, with_replacement=True),
               _comb_ref(2, True), (A((4,), layout="s"),)),
        OpCase("combinations.r_gt_n", lambda x: ct.combinations(x, 4), _comb_ref(4), (A((3,)),)),
        OpCase("combinations.2d", ct.combinations, None, (A((2, 3)),), raises=RuntimeError),
    ]


def _cdist_ref(p):
    def ref(a, b):
        d = np.abs(a[..., :, None, :] - b[..., None, :, :])
        if p == 0:
            r = (d != 0).sum(-1).astype(a.dtype)
        elif np.isinf(p):
            r = d.max(-1) if d.shape[-1] else d.sum(-1)
        else:
            r = (d ** p).sum(-1) ** (1 / p)
        return np.asarray(r, dtype=a.dtype)
    return ref


def _dist_ref(p):
    def ref(a, b):
        d = np.abs(a - b).reshape(-1)
        if p == 0:
            r = (d != 0).sum()
        elif np.isinf(p):
            r = d.max() if p > 0 else d.min()
        else:
            r = (d ** p).sum() ** (1 / p)
        return np.asarray(r, dtype=np.result_type(a, b))
    return ref


def _dist_cases() -> list:
    out = []
    for tag, p in (("", 2.0), (".p0", 0.0), (".p1", 1.0), (".pinf", float("inf")), (".p3", 3.0),
                   (".p0_5", 0.5)):
        out.append(OpCase(f"cdist{tag}", lambda x, y, p=p: ct.cdist(x, y, p=p), _cdist_ref(p),
                          (A((4, 3), "distinct"), A((5, 3), "distinct")), grad=p != 0, gradgrad=p in (2.0, 3.0)))
        out.append(OpCase(f"dist{tag}", lambda x, y, p=p: ct.dist(x, y, p), _dist_ref(p),
                          (A((3, 4), "distinct"), A((4,), "distinct")), grad=p != 0, gradgrad=tag == ""))
    out += [
        OpCase("cdist.batched_bcast", ct.cdist, _cdist_ref(2.0), (A((2, 1, 4, 3)), A((3, 5, 3)))),
        OpCase("cdist.mm", lambda x, y: ct.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), _cdist_ref(2.0),
               (A((2, 4, 3)), A((2, 5, 3))), gradgrad=True, rtol=1e-4, atol=1e-5),
        OpCase("cdist.mm_large", ct.cdist, _cdist_ref(2.0), (A((30, 3)), A((6, 3))), rtol=1e-4, atol=1e-5),
        OpCase("cdist.t", lambda x, y: ct.cdist(x, y, p=1), _cdist_ref(1.0),
               (A((4, 3), layout="t"), A((5, 3), layout="s"))),
        OpCase("cdist.empty", ct.cdist, _cdist_ref(2.0), (A((0, 3)), A((5, 3)))),
        OpCase("cdist.no_columns", ct.cdist, _cdist_ref(2.0), (A((2, 0)), A((3, 0)))),
        OpCase("cdist.1d", ct.cdist, None, (A((3,)), A((4, 3))), raises=RuntimeError),
        OpCase("cdist.columns", ct.cdist, None, (A((3, 2)), A((4, 3))), raises=RuntimeError),
        OpCase("cdist.int", ct.cdist, None, (A((3, 2), dtype="int64"), A((4, 2), dtype="int64")),
               raises=RuntimeError),
        OpCase("cdist.negative_p", lambda x, y: ct.cdist(x, y, p=-1), None, (A((3, 2)), A((4, 2))),
               raises=RuntimeError),
        OpCase("cdist.mode", lambda x, y: ct.cdist(x, y, compute_mode="fast"), None, (A((3, 2)), A((4, 2))),
               raises=ValueError),
        OpCase("dist.pneg_inf", lambda x, y: x.dist(y, float("-inf")), _dist_ref(float("-inf")),
               (A((3, 4), "distinct"), A((3, 4), "distinct"))),
        OpCase("dist.0d", ct.dist, _dist_ref(2.0), (A(()), A(()))),
        OpCase("dist.t", ct.dist, _dist_ref(2.0), (A((3, 4), layout="t"), A((3, 4), layout="s"))),
        OpCase("dist.empty", ct.dist, _dist_ref(2.0), (A((0, 3)), A((3,)))),
    ]
    return out


CASES: list[OpCase] = _ein_cases() + _tensordot_cases() + _cross_cases() + _blas_cases() + _set_cases() \
    + _dist_cases()
