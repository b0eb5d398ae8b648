"""OpCases of the triangular family (coretorch.ops.triangular); part of coretorch.testing.CASES."""
from __future__ import annotations

import numpy as np

import coretorch as ct
from coretorch.testing import Arg as A
from coretorch.testing import OpCase
from coretorch.testing_ops.core import _shares_input

F, I, B = ("float32", "float64"), ("int64", "int32"), ("bool",)  # noqa: E741


def _np_diag_embed(a, offset=0, d1=-2, d2=-1):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    i = np.arange(a.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = a
    nd = out.ndim
    d1, d2 = d1 % nd, d2 % nd
    rest = [k for k in range(nd) if k not in (d1, d2)]
    order = [0] * nd  # the embedded dims (last two of out) go to d1, d2
    for src, dst in zip(range(nd - 2), rest):
        order[dst] = src
    order[d1], order[d2] = nd - 2, nd - 1
    return np.transpose(out, order)


def _np_diag_scatter(a, b, offset=0, d1=0, d2=1):
    out = a.copy()
    idx = np.arange(b.shape[-1])
    r, c = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    view = np.moveaxis(out, (d1, d2), (-2, -1))  # a view: writes reach out
    view[..., r, c] = b
    return out


def _np_fill_diag(a, v, wrap=False):
    out = a.copy()
    np.fill_diagonal(out, v, wrap=wrap)
    return out


def _tri_cases() -> list:
    out = []
    for name, fn, npf in (("tril", ct.tril, np.tril), ("triu", ct.triu, np.triu)):
        out += [
            OpCase(name, fn, npf, (A((4, 5)),), F + I + B, gradgrad=True),
            OpCase(f"{name}.diag1", lambda x, f=fn: f(x, 1), lambda a, f=npf: f(a, 1), (A((4, 5)),)),
            OpCase(f"{name}.diag_neg2", lambda x, f=fn: f(x, diagonal=-2), lambda a, f=npf: f(a, -2), (A((5, 3)),),
                   F + I),
            OpCase(f"{name}.batched", lambda x, n=name: getattr(x, n)(), npf, (A((2, 3, 4, 4)),)),
            OpCase(f"{name}.t", fn, npf, (A((4, 5), layout="t"),)),
            OpCase(f"{name}.strided", lambda x, f=fn: f(x, -1), lambda a, f=npf: f(a, -1), (A((3, 4), layout="s"),)),
            OpCase(f"{name}.empty", fn, npf, (A((0, 3)),)),
            OpCase(f"{name}.far_diag", lambda x, f=fn: f(x, 10), lambda a, f=npf: f(a, 10), (A((3, 4)),)),
            OpCase(f"{name}_.inplace", lambda x, n=name: getattr(x.clone(), n + "_")(1), lambda a, f=npf: f(a, 1),
                   (A((4, 4)),)),
            OpCase(f"{name}.1d", fn, None, (A((4,)),), raises=RuntimeError),
        ]
    out += [
        OpCase("tril_indices", lambda x: ct.tril_indices(4, 3, device=x.device),
               lambda a: np.stack(np.tril_indices(4, 0, 3)).astype(np.int64), (A((1,)),), grad=False),
        OpCase("tril_indices.offset", lambda x: ct.tril_indices(3, 5, -1, device=x.device, dtype=ct.int32),
               lambda a: np.stack(np.tril_indices(3, -1, 5)).astype(np.int32), (A((1,)),), grad=False),
        OpCase("triu_indices", lambda x: ct.triu_indices(4, 4, 1, device=x.device),
               lambda a: np.stack(np.triu_indices(4, 1, 4)).astype(np.int64), (A((1,)),), grad=False),
        OpCase("triu_indices.empty", lambda x: ct.triu_indices(0, 3, device=x.device),
               lambda a: np.zeros((2, 0), np.int64), (A((1,)),), grad=False),
        OpCase("tril_indices.negative", lambda x: ct.tril_indices(-1, 3, device=x.device), None, (A((1,)),),
               raises=RuntimeError),
    ]
    return out


def _diag_cases() -> list:
    return [
        OpCase("diagonal", ct.diagonal, np.diagonal, (A((4, 5)),), F + I + B, gradgrad=True, props=_shares_input),
        OpCase("diagonal.offset", lambda x: x.diagonal(2), lambda a: np.diagonal(a, 2), (A((4, 5)),)),
        OpCase("diagonal.offset_neg", lambda x: x.diagonal(-1), lambda a: np.diagonal(a, -1), (A((4, 5), layout="t"),)),
        OpCase("diagonal.dims", lambda x: ct.diagonal(x, 1, -1, 0), lambda a: np.diagonal(a, 1, 2, 0),
               (A((3, 2, 4)),), props=_shares_input),
        OpCase("diagonal.strided", lambda x: x.diagonal(), lambda a: np.diagonal(a), (A((3, 4), layout="s"),)),
        OpCase("diagonal.out_of_range", lambda x: x.diagonal(7), lambda a: np.diagonal(a, 7), (A((4, 5)),)),
        OpCase("diagonal.empty", ct.diagonal, np.diagonal, (A((0, 3)),)),
        OpCase("diagonal.same_dims", lambda x: x.diagonal(0, 1, 1), None, (A((3, 3)),), raises=RuntimeError),
        OpCase("diagonal.1d", ct.diagonal, None, (A((3,)),), raises=IndexError),
        OpCase("diagonal.bad_dim", lambda x: x.diagonal(0, 0, 2), None, (A((3, 3)),), raises=IndexError),
        OpCase("diag.1d", ct.diag, np.diag, (A((4,)),), F + I, gradgrad=True),
        OpCase("diag.1d_offset", lambda x: ct.diag(x, -2), lambda a: np.diag(a, -2), (A((3,), layout="s"),)),
        OpCase("diag.2d", lambda x: x.diag(1), lambda a: np.diag(a, 1), (A((4, 5)),), F + I),
        OpCase("diag.2d_t", ct.diag, np.diag, (A((4, 5), layout="t"),)),
        OpCase("diag.3d", ct.diag, None, (A((2, 2, 2)),), raises=RuntimeError),
        OpCase("diag_embed", ct.diag_embed, _np_diag_embed, (A((2, 3)),), F + I, gradgrad=True),
        OpCase("diag_embed.offset", lambda x: ct.diag_embed(x, 1), lambda a: _np_diag_embed(a, 1), (A((2, 3)),)),
        OpCase("diag_embed.dims", lambda x: x.diag_embed(-1, 0, 2), lambda a: _np_diag_embed(a, -1, 0, 2),
               (A((2, 3), layout="t"),)),
        OpCase("diag_embed.0d", ct.diag_embed, None, (A(()),), raises=IndexError),
        OpCase("diag_embed.1d", lambda x: x.diag_embed(), _np_diag_embed, (A((3,)),)),
        OpCase("diag_embed.same_dims", lambda x: ct.diag_embed(x, 0, 1, 1), None, (A((2, 3)),), raises=RuntimeError),
        OpCase("diagflat", ct.diagflat, np.diagflat, (A((2, 2)),), F + I),
        OpCase("diagflat.offset", lambda x: x.diagflat(-1), lambda a: np.diagflat(a, -1), (A((3,), layout="s"),)),
        OpCase("diagflat.0d", ct.diagflat, np.diagflat, (A(()),)),
        OpCase("trace", ct.trace, np.trace, (A((4, 5)),), F, gradgrad=True),
        OpCase("trace.int", lambda x: x.trace(), lambda a: np.asarray(np.trace(a), np.int64), (A((3, 3)),), I),
        OpCase("trace.t", ct.trace, np.trace, (A((3, 4), layout="t"),)),
        OpCase("trace.empty", ct.trace, np.trace, (A((0, 3)),)),
        OpCase("trace.3d", ct.trace, None, (A((2, 2, 2)),), raises=RuntimeError),
        OpCase("diagonal_scatter", ct.diagonal_scatter, lambda a, b: _np_diag_scatter(a, b), (A((4, 5)), A((4,))),
               F + I, gradgrad=True),
        OpCase("diagonal_scatter.offset_dims", lambda x, s: x.diagonal_scatter(s, -1, 2, 0),
               lambda a, b: _np_diag_scatter(a, b, -1, 2, 0), (A((3, 2, 4), layout="t"), A((2, 3)))),
        OpCase("diagonal_scatter.size_mismatch", ct.diagonal_scatter, None, (A((4, 5)), A((5,))),
               raises=RuntimeError),
        OpCase("fill_diagonal_", lambda x: x.clone().fill_diagonal_(2.5), lambda a: _np_fill_diag(a, 2.5),
               (A((4, 5)),), F + I),
        OpCase("fill_diagonal_.wrap", lambda x: x.clone().fill_diagonal_(-1, wrap=True),
               lambda a: _np_fill_diag(a, -1, True), (A((7, 3)),), F + I),
        OpCase("fill_diagonal_.nowrap_tall", lambda x: x.clone().fill_diagonal_(-1),
               lambda a: _np_fill_diag(a, -1), (A((7, 3), layout="t"),)),
        OpCase("fill_diagonal_.3d", lambda x: x.clone().fill_diagonal_(0), lambda a: _np_fill_diag(a, 0),
               (A((3, 3, 3)),)),
        OpCase("fill_diagonal_.unequal_3d", lambda x: x.clone().fill_diagonal_(0), None, (A((3, 3, 2)),),
               raises=RuntimeError),
    ]


CASES: list[OpCase] = _tri_cases() + _diag_cases()
