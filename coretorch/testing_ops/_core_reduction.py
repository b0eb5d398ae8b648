"""The core op table's reduction and linear-algebra cases."""
from __future__ import annotations


import math
from typing import Any

import numpy as np

import coretorch
from coretorch.testing import (
    DEFAULT_FLOAT,
    FLOAT_DTYPES,
    OpCase,
)

from ._core_refs import (A, INT_DTYPES, _RED, _RED_EMPTY, _amax_vjp, _np_arg, _np_cumsum, _np_logsumexp,
                         _np_maxdim, _np_norm, _np_prod, _np_sum, _np_var, _npaxis, _reduction, _shares_input)


def reduction_cases() -> list[OpCase]:
    ct = coretorch
    F, I, B, H = FLOAT_DTYPES, INT_DTYPES, ("bool",), ("float16",)  # noqa: E741
    cases: list[OpCase] = []
    c = cases.extend
    npf: Any  # (loop variables reused across tables of different numpy callables)
    f: Any
    ref: Any

    # ---- reductions ----
    c(_reduction("sum", ct.sum, _np_sum, _RED + _RED_EMPTY, dtypes=F + I + B, gradgrad=True))
    cases.append(OpCase("sum.dtype", lambda x: x.sum(dtype=ct.float64), lambda a: _np_sum(a, dtype=np.float64),
                        (A(),), F + I))
    c(_reduction("mean", ct.mean, lambda a, dim=None, keepdim=False: np.asarray(
        np.mean(a, axis=_npaxis(dim), keepdims=keepdim)).astype(a.dtype), _RED + _RED_EMPTY, gradgrad=True))
    cases.append(OpCase("mean.dtype", lambda x: x.mean(1, dtype=ct.float64), lambda a: np.mean(
        a.astype(np.float64), 1), (A(),), ("float32",)))
    cases.append(OpCase("mean.int", ct.mean, None, (A((3,)),), I, raises=RuntimeError))
    c(_reduction("prod", ct.prod, _np_prod, tuple(v for v in _RED + _RED_EMPTY if "dims" not in v[0]),
                 "nonzero", dtypes=F + I + B, gradgrad=True))
    cases += [
        OpCase("prod.one_zero", lambda x: ct.prod(x * ct.tensor([1.0, 0.0, 1.0], dtype=x.dtype, device=x.device)
                                                  .reshape(3, 1), 1),
               lambda a: np.prod(a * np.array([1.0, 0.0, 1.0], a.dtype).reshape(3, 1), axis=1),
               (A((3, 4), "nonzero"),)),
        OpCase("prod.zeros", ct.prod, _np_prod, (A((5,), "zeros"),)),
        OpCase("prod.two_zeros", lambda x: ct.prod(ct.where(x > 0.5, 0.0, x)),
               lambda a: np.prod(np.where(a > 0.5, 0.0, a)), (A((6,), "distinct"),)),
    ]
    # max / min: full reductions split the gradient evenly between ties, dim reductions give (values, indices)
    for name, f, npf, npa in (("max", ct.max, np.max, np.argmax), ("min", ct.min, np.min, np.argmin)):
        ref_all = (lambda npf: lambda a: np.asarray(npf(a)))(npf)
        cases += [
            OpCase(name, f, ref_all, (A((4, 5), "distinct"),), F + I + B, gradgrad=True),
            OpCase(f"{name}.0d", f, ref_all, (A((), "distinct"),), F + I),
            OpCase(f"{name}.t", f, ref_all, (A((4, 5), "distinct", layout="t"),)),
            OpCase(f"{name}.empty", f, None, (A((0, 3)),), raises=RuntimeError),
            OpCase(f"{name}.ties", f, ref_all, (A((4, 5), "ties"),)) if name == "max" else
            OpCase(f"{name}.ties", lambda x, f=f: f(-x), lambda a, npf=npf: np.asarray(npf(-a)), (A((4, 5), "ties"),)),
            OpCase(f"{name}.ties3", f, ref_all, (A((2, 5), "ties3"),), vjp_ref=_amax_vjp(None, npf))
            if name == "max" else OpCase(f"{name}.ties3", lambda x, f=f: f(-x), lambda a, npf=npf: np.asarray(npf(-a)),
                                         (A((2, 5), "ties3"),), vjp_ref=lambda g, a: -_amax_vjp(None)(g, a)),
        ]
        c(_reduction(f"{name}.dim", f, _np_maxdim(npf, npa),
                     (("", (4, 5), {"dim": 1}), (".keepdim", (4, 5), {"dim": 0, "keepdim": True}),
                      (".neg", (2, 3, 4), {"dim": -2}), (".t", (4, 5), {"dim": 0}), (".0d", (), {"dim": 0}),
                      (".0d.keepdim", (), {"dim": -1, "keepdim": True}), (".empty", (0, 3), {"dim": 1})),
                     "distinct", dtypes=F + I + B))
        c(_reduction(f"arg{name}", getattr(ct, f"arg{name}"), _np_arg(npa),
                     (("", (4, 5), {}), (".dim1", (4, 5), {"dim": 1}), (".keepdim", (4, 5), {"dim": 0,
                                                                                             "keepdim": True}),
                      (".nodim.keepdim", (4, 5), {"keepdim": True}), (".t", (4, 5), {"dim": 1}),
                      (".0d", (), {}), (".empty", (0, 3), {"dim": 1})), "distinct", dtypes=F + I, grad=False))
    for name, f in (("amax", ct.amax), ("amin", ct.amin)):
        npf = np.max if name == "amax" else np.min
        ref = (lambda npf: lambda a, dim=None, keepdim=False: np.asarray(npf(a, axis=_npaxis(dim),
                                                                               keepdims=keepdim)))(npf)
        c(_reduction(name, f, ref, tuple(v for v in _RED if "empty" not in v[0]), "distinct", dtypes=F + I))
        sgn = 1 if name == "amax" else -1  # amin sees the ties of -x
        cases.append(OpCase(f"{name}.ties_dim", lambda x, f=f, sgn=sgn: f(x * sgn, 1),
                            lambda a, npf=npf, sgn=sgn: npf(a * sgn, axis=1), (A((4, 5), "ties"),)))
        if name == "amax":
            cases.append(OpCase("amax.ties3_dim", lambda x: ct.amax(x, 1), lambda a: np.max(a, axis=1),
                                (A((3, 5), "ties3"),), vjp_ref=_amax_vjp(1)))
    # var / std with correction
    var_variants: tuple = (
        ("", (4, 5), {}), (".dim1", (4, 5), {"dim": 1}), (".c0", (4, 5), {"dim": 0, "correction": 0}),
                    (".c2.keepdim", (4, 5), {"dim": 1, "correction": 2, "keepdim": True}),
                    (".dims", (2, 3, 4), {"dim": (0, 2)}), (".t", (4, 5), {"dim": 1}),
                    (".n1", (4, 1), {"dim": 1}), (".0d", (), {"correction": 0}))
    for name, f, post in (("var", ct.var, lambda v: v), ("std", ct.std, np.sqrt)):
        ref = (lambda post: lambda a, **k: post(_np_var(a, **k)))(post)
        c(_reduction(name, f, ref, tuple(v for v in var_variants if v[0] not in (".0d", ".n1")), gradgrad=True))
        # a 0-d std is 0, where its gradient is not defined (nan, as in PyTorch): forward only
        cases.append(OpCase(f"{name}.0d", lambda x, f=f: f(x, correction=0), lambda a, ref=ref: ref(a, correction=0),
                            (A(()),), grad=name == "var"))
        cases += [
            OpCase(f"{name}.n1", lambda x, f=f: f(x, 1), lambda a, ref=ref: ref(a, dim=1), (A((4, 1)),),
                   grad=False),
            OpCase(f"{name}.unbiased_false", lambda x, f=f: f(x, 1, unbiased=False),
                   lambda a, ref=ref: ref(a, dim=1, correction=0), (A(),)),
            OpCase(f"{name}.method", lambda x, name=name: getattr(x, name)(dim=0, correction=0, keepdim=True),
                   lambda a, ref=ref: ref(a, dim=0, correction=0, keepdim=True), (A(),)),
        ]
    c(_reduction("logsumexp", ct.logsumexp, _np_logsumexp,
                 (("", (4, 5), {"dim": 1}), (".keepdim", (4, 5), {"dim": 0, "keepdim": True}),
                  (".dims", (2, 3, 4), {"dim": (0, 2)}), (".t", (4, 5), {"dim": -1}), (".0d", (), {"dim": 0})),
                 gradgrad=True))
    cases.append(OpCase("logsumexp.neginf", lambda x, m: ct.logsumexp(x.masked_fill(m, -math.inf), 1),
                        lambda a, m: _np_logsumexp(np.where(m, -np.inf, a), 1), (A((3, 4)), A((3, 1), "mask")),
                        grad=False))
    cases.append(OpCase("var.legacy_unbiased", lambda x: x.var(False), lambda a: _np_var(a, correction=0), (A(),)))
    cases.append(OpCase("logsumexp.int", lambda x: ct.logsumexp(x, 1), lambda a: _np_logsumexp(
        a.astype(DEFAULT_FLOAT), 1), (A((3, 4)),), I, grad=False))
    cases.append(OpCase("norm.int", ct.norm, None, (A((3,)),), I, raises=RuntimeError))
    cases.append(OpCase("cumsum.dtype", lambda x: x.cumsum(0, dtype=ct.float64), lambda a: np.cumsum(
        a.astype(np.float64), 0), (A((4, 5)),), F + I))
    cases.append(OpCase("prod.dtype", lambda x: x.prod(1, dtype=ct.float64), lambda a: np.prod(
        a.astype(np.float64), 1), (A((4, 5)),), F + I))
    cases.append(OpCase("var.empty", ct.var, lambda a: _np_var(a), (A((0, 3)),)))
    cases.append(OpCase("logsumexp.large", lambda x: ct.logsumexp(x * 500, 1), lambda a: _np_logsumexp(a * 500, 1),
                        (A((3, 4)),), grad=False))
    c(_reduction("norm", ct.norm, _np_norm,
                 (("", (4, 5), {}), (".dim1", (4, 5), {"dim": 1}), (".p1", (4, 5), {"p": 1}),
                  (".pinf", (4, 5), {"p": math.inf, "dim": 1}), (".p3", (4, 5), {"p": 3, "dim": 0}),
                  (".p0", (4, 5), {"p": 0}), (".keepdim", (4, 5), {"dim": 0, "keepdim": True}),
                  (".dims", (2, 3, 4), {"dim": (1, 2)}), (".t", (4, 5), {"dim": 1}), (".0d", (), {})),
                 "distinct", gradgrad=True))
    cases += [
        OpCase("norm.zero", ct.norm, _np_norm, (A((4,), "zeros"),), vjp_ref=lambda g, a: 0 * a),
        OpCase("norm.zero_row", lambda x: ct.norm(x * ct.tensor([[0.0], [1.0]], dtype=x.dtype, device=x.device),
                                                  dim=1),
               lambda a: _np_norm(a * np.array([[0.0], [1.0]], a.dtype), dim=1), (A((2, 3)),),
               vjp_ref=lambda g, a: np.concatenate([0 * a[:1], g[1] * a[1:] / np.linalg.norm(a[1])]) * [[0], [1]]),
        OpCase("norm.p3.zero", lambda x: ct.norm(x, 3), lambda a: _np_norm(a, 3), (A((4,), "zeros"),),
               vjp_ref=lambda g, a: 0 * a),
        OpCase("norm.p1.zero", lambda x: ct.norm(x, 1), lambda a: _np_norm(a, 1), (A((4,), "zeros"),),
               vjp_ref=lambda g, a: 0 * a),
    ]
    for name, f, npf in (("all", ct.all, np.all), ("any", ct.any, np.any)):
        ref = (lambda npf: lambda a, dim=None, keepdim=False: np.asarray(npf(a, axis=_npaxis(dim),
                                                                               keepdims=keepdim)))(npf)
        c(_reduction(name, f, ref, _RED + _RED_EMPTY, "small", dtypes=B + F + I, grad=False))
        cases.append(OpCase(f"{name}.uint8", lambda x, f=f: f(x, 1), lambda a, ref=ref: ref(a, 1).astype(np.uint8),
                            (A((3, 4), "small"),), ("uint8",), grad=False))
    c(_reduction("cumsum", ct.cumsum, _np_cumsum,
                 (("", (4, 5), {"dim": 1}), (".dim0", (4, 5), {"dim": 0}), (".neg", (2, 3, 4), {"dim": -2}),
                  (".t", (4, 5), {"dim": 1}), (".0d", (), {"dim": 0}), (".empty", (0, 3), {"dim": 0})),
                 dtypes=F + I + B, gradgrad=True))

    # ---- linear algebra ----
    cases += [
        OpCase("matmul", ct.matmul, np.matmul, (A((3, 4)), A((4, 5))), F + I + H, gradgrad=True),
        OpCase("matmul.1d_1d", ct.matmul, np.matmul, (A((4,)), A((4,)))),
        OpCase("matmul.1d_2d", ct.matmul, np.matmul, (A((4,)), A((4, 3)))),
        OpCase("matmul.2d_1d", ct.matmul, np.matmul, (A((3, 4)), A((4,)))),
        OpCase("matmul.batched", ct.matmul, np.matmul, (A((2, 3, 4)), A((2, 4, 2)))),
        OpCase("matmul.bcast", ct.matmul, np.matmul, (A((2, 1, 3, 4)), A((3, 4, 2)))),
        OpCase("matmul.bcast_2d", ct.matmul, np.matmul, (A((2, 3, 4)), A((4, 2)))),
        OpCase("matmul.1d_3d", ct.matmul, np.matmul, (A((4,)), A((2, 4, 3)))),
        OpCase("matmul.t", ct.matmul, np.matmul, (A((3, 4), layout="t"), A((4, 5), layout="t"))),
        OpCase("matmul.mixed_chain", lambda x, w, y: (x @ w) * y, lambda a, b, c_: (a @ b) * c_,
               (A((2, 3), dtype="float32"), A((3, 2), dtype="float32"), A((2, 2), dtype="float64"))),
        OpCase("matmul.empty", ct.matmul, np.matmul, (A((0, 4)), A((4, 3)))),
        OpCase("matmul.empty_k", ct.matmul, np.matmul, (A((3, 0)), A((0, 2)))),
        OpCase("mm", ct.mm, np.matmul, (A((3, 4)), A((4, 2))), F + I, gradgrad=True),
        OpCase("mm.t", lambda x, y: x.mm(y), np.matmul, (A((3, 4), layout="s"), A((4, 2), layout="t"))),
        OpCase("bmm", ct.bmm, np.matmul, (A((2, 3, 4)), A((2, 4, 5))), F + I, gradgrad=True),
        OpCase("bmm.t", ct.bmm, np.matmul, (A((2, 3, 4), layout="t"), A((2, 4, 2), layout="s"))),
        OpCase("addmm", ct.addmm, lambda c_, a, b: c_ + a @ b, (A((3, 2)), A((3, 4)), A((4, 2))), F + I,
               gradgrad=True),
        OpCase("addmm.bcast", ct.addmm, lambda c_, a, b: c_ + a @ b, (A((2,)), A((3, 4)), A((4, 2)))),
        OpCase("addmm.alpha_beta", lambda c_, a, b: ct.addmm(c_, a, b, beta=0.5, alpha=2.0),
               lambda c_, a, b: 0.5 * c_ + 2.0 * (a @ b), (A((3, 2)), A((3, 4)), A((4, 2)))),
        OpCase("addmm.beta0", lambda c_, a, b: ct.addmm(c_, a, b, beta=0), lambda c_, a, b: a @ b,
               (A((3, 2)), A((3, 4)), A((4, 2)))),
        OpCase("matmul.dtype_mismatch", ct.matmul, None, (A((2, 3)), A((3, 2), dtype="float64")), ("float32",),
               raises=RuntimeError),
        OpCase("matmul.0d", ct.matmul, None, (A(()), A((3,))), raises=RuntimeError),
        OpCase("matmul.size_mismatch", ct.matmul, None, (A((2, 3)), A((4, 2))), raises=RuntimeError),
        OpCase("mm.1d", ct.mm, None, (A((3,)), A((3, 2))), raises=RuntimeError),
        OpCase("bmm.batch_mismatch", ct.bmm, None, (A((2, 3, 4)), A((3, 4, 2))), raises=RuntimeError),
        OpCase("t.3d", ct.t, None, (A((2, 3, 4)),), raises=RuntimeError),
        OpCase("t", ct.t, lambda a: a.T, (A((3, 4)),), F + I + B),
        OpCase("t.1d", ct.t, lambda a: a, (A((4,)),)),
        OpCase("t.0d", ct.t, lambda a: a, (A(()),)),
        OpCase("t.method", lambda x: x.t(), lambda a: a.T, (A((3, 4), layout="t"),)),
        OpCase("T", lambda x: x.T, lambda a: a.T, (A((3, 4)),), F + I, props=_shares_input),
        OpCase("T.3d", lambda x: x.T, lambda a: a.T, (A((2, 3, 4)),)),
        OpCase("mT", lambda x: x.mT, lambda a: np.swapaxes(a, -1, -2), (A((2, 3, 4)),)),
    ]
    return cases
