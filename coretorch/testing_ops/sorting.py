"""OpCases of the sorting family (coretorch.ops.sorting and coretorch.ops.statistics); part of coretorch.testing.CASES.

Ties: a stable sort's indices are compared exactly; where PyTorch leaves the index of tied elements open (unstable
sort, topk, mode) the case checks the values against numpy and, in ``props``, that each index points at an element
holding its value.
"""
from __future__ import annotations

import numpy as np

import coretorch as ct
from coretorch.testing import Arg, OpCase

A = Arg
I64 = np.int64
FI = ("float32", "float64", "int64", "int32")


def _key(a):
    """Sort keys of a: NaN as the largest value."""
    f = a.astype(np.float64)
    return np.where(np.isnan(f), np.inf, f) + np.where(np.isnan(f), 1.0, 0.0)


def _np_argsort(a, dim=-1, desc=False):
    """Stable argsort along dim with PyTorch's NaN and descending-tie rules."""
    if a.ndim == 0:
        return np.zeros((), I64)
    k = np.moveaxis(_key(a), dim, -1)
    if desc:
        n = k.shape[-1]
        i = (n - 1) - np.argsort(k[..., ::-1], -1, kind="stable")[..., ::-1]
    else:
        i = np.argsort(k, -1, kind="stable")
    return np.moveaxis(i, -1, dim).astype(I64)


def _np_sort(a, dim=-1, desc=False):
    i = _np_argsort(a, dim, desc)
    return (a.copy(), i) if a.ndim == 0 else (np.take_along_axis(a, i, dim), i)


def _np_topk(a, k, dim=-1, largest=True):
    v, i = _np_sort(a, dim, largest)
    if a.ndim == 0:
        return v, i
    sl = [slice(None)] * a.ndim
    sl[dim] = slice(0, k)
    return v[tuple(sl)], i[tuple(sl)]


def _np_pick(a, pos, dim, keepdim):
    """Element ``pos`` of the stable ascending sort along dim (values, indices)."""
    v, i = _np_sort(a, dim)
    v, i = np.take(v, [pos], dim), np.take(i, [pos], dim)
    return (v, i) if keepdim else (np.squeeze(v, dim), np.squeeze(i, dim))


def _points_at(out, x, dim=-1, keepdim=True):
    """props: the indices of a (values, indices) result point at elements holding those values."""
    v, i = out[0], out[1]
    if x.ndim == 0:
        return
    if not keepdim:
        v, i = v.unsqueeze(dim), i.unsqueeze(dim)
    got = ct.gather(x, dim, i).cpu().numpy()
    np.testing.assert_array_equal(got, v.cpu().numpy())


def _np_cum(a, dim, op):
    if a.ndim == 0:
        return a.copy(), np.zeros((), I64)
    x = np.moveaxis(a, dim, -1)
    v, idx = np.empty_like(x), np.zeros(x.shape, I64)
    for r in np.ndindex(*x.shape[:-1]):
        acc, ai = None, 0
        for j in range(x.shape[-1]):
            e = x[r + (j,)]
            if j == 0 or np.isnan(e) or (not np.isnan(acc) and (e >= acc if op == "max" else e <= acc)):
                acc, ai = e, j
            v[r + (j,)], idx[r + (j,)] = acc, ai
    return np.moveaxis(v, -1, dim), np.moveaxis(idx, -1, dim)


def _np_mode(a, dim):
    x = np.moveaxis(a, dim, -1)
    out = np.empty(x.shape[:-1], a.dtype)
    for r in np.ndindex(*x.shape[:-1]):
        u, c = np.unique(x[r], return_counts=True)
        out[r] = u[np.argmax(c)]  # the smallest of the most frequent
    return out


def _np_unique_consecutive(a, return_inverse=False, return_counts=False):
    f = a.reshape(-1)
    starts = np.concatenate([[True], f[1:] != f[:-1]]) if f.size else np.zeros(0, bool)
    res = [f[starts]]
    if return_inverse:
        res.append((np.cumsum(starts) - 1).reshape(a.shape).astype(I64))
    if return_counts:
        pos = np.flatnonzero(starts)
        res.append(np.diff(np.append(pos, f.size)).astype(I64))
    return res[0] if len(res) == 1 else tuple(res)


def _np_unique(a, return_inverse=False, return_counts=False, dim=None):
    r = np.unique(a, return_inverse=return_inverse, return_counts=return_counts, axis=dim)
    if not (return_inverse or return_counts):
        return r
    r = list(r)
    if return_inverse:
        r[1] = r[1].reshape(a.shape if dim is None else (-1,)).astype(I64)
    if return_counts:
        r[-1] = r[-1].astype(I64)
    return tuple(r)


def _np_searchsorted(s, v, right=False, dt=I64):
    side = "right" if right else "left"
    if s.ndim == 1:
        return np.searchsorted(s, v, side=side).astype(dt)
    out = np.empty(v.shape, dt)
    for r in np.ndindex(*s.shape[:-1]):
        out[r] = np.searchsorted(s[r], v[r], side=side)
    return out


def _lcse(a, dim):
    return a.copy() if a.ndim == 0 else np.logaddexp.accumulate(a, axis=dim)


CASES: list[OpCase] = []
c = CASES.append

# ---- sort / argsort / msort ----
for sfx, shape, dim, desc, lay in ((".dim1", (4, 5), 1, False, "c"), (".dim0.desc", (4, 5), 0, True, "c"),
                                   (".t", (4, 5), -1, False, "t"), (".strided.desc", (3, 6), 1, True, "s"),
                                   (".3d", (2, 3, 4), 1, False, "c"), (".1d", (9,), 0, True, "c"),
                                   (".0d", (), 0, False, "c"), (".empty", (0, 3), 1, False, "c"),
                                   (".empty_dim", (3, 0), 1, True, "c")):
    c(OpCase("sort" + sfx, lambda x, d=dim, ds=desc: ct.sort(x, d, ds, stable=True),
             lambda a, d=dim, ds=desc: _np_sort(a, d, ds), (A(shape, "distinct", layout=lay),), FI))
c(OpCase("sort.method_desc_kw", lambda x: x.sort(descending=True, stable=True),
         lambda a: _np_sort(a, -1, True), (A((4, 5), "distinct"),)))
c(OpCase("sort.stable_ties", lambda x: ct.sort(x, stable=True), lambda a: _np_sort(a), (A((4, 6), "ties3"),), FI,
         grad=False))
c(OpCase("sort.stable_ties_desc", lambda x: ct.sort(x, 0, True, stable=True), lambda a: _np_sort(a, 0, True),
         (A((6, 4), "ties"),), FI, grad=False))
c(OpCase("sort.unstable_ties", lambda x: ct.sort(x)[0], lambda a: np.sort(a, -1), (A((4, 7), "ties3"),), FI,
         grad=False, props=lambda out, x: _points_at(ct.sort(x), x)))
c(OpCase("sort.float16", lambda x: ct.sort(x, descending=True, stable=True), lambda a: _np_sort(a, -1, True),
         (A((3, 9), "ties", "float16", requires_grad=False),), grad=False))
c(OpCase("sort.int8_uint8", lambda x, y: (ct.sort(x, stable=True), ct.sort(y, 0, True, stable=True)),
         lambda a, b: (_np_sort(a), _np_sort(b, 0, True)), (A((3, 5), "any", "int8"), A((5, 2), "small", "uint8")),
         grad=False))
c(OpCase("sort.bool", lambda x: ct.sort(x, stable=True), lambda a: _np_sort(a), (A((3, 5), "mask", "bool"),),
         grad=False))
c(OpCase("sort.bad_dim", lambda x: ct.sort(x, 2), None, (A((3, 4)),), raises=IndexError))
c(OpCase("argsort", lambda x: ct.argsort(x, 1, stable=True), lambda a: _np_argsort(a, 1), (A((4, 5), "ties"),), FI,
         grad=False))
c(OpCase("argsort.desc.method", lambda x: x.argsort(0, descending=True), lambda a: _np_argsort(a, 0, True),
         (A((5, 3), "distinct", layout="t"),), FI, grad=False))
c(OpCase("msort", ct.msort, lambda a: np.sort(a, 0), (A((5, 3), "distinct"),), FI))
c(OpCase("msort.method", lambda x: x.msort(), lambda a: np.sort(a, 0), (A((5, 3), "distinct", layout="t"),)))

# ---- topk / kthvalue ----
for sfx, shape, k, dim, largest, lay in ((".k2", (4, 6), 2, -1, True, "c"), (".smallest", (4, 6), 3, 1, False, "c"),
                                         (".dim0", (5, 4), 2, 0, True, "t"), (".all", (3, 4), 4, 1, True, "s"),
                                         (".k0", (3, 4), 0, 1, True, "c"), (".1d", (30,), 5, 0, False, "c"),
                                         (".0d", (), 1, 0, True, "c")):
    c(OpCase("topk" + sfx, lambda x, k=k, d=dim, lg=largest: ct.topk(x, k, d, lg),
             lambda a, k=k, d=dim, lg=largest: _np_topk(a, k, d, lg), (A(shape, "distinct", layout=lay),), FI))
c(OpCase("topk.float16", lambda x: ct.topk(x, 3), lambda a: _np_topk(a, 3), (A((3, 40), "distinct", "float16",
                                                                            requires_grad=False),), grad=False))
c(OpCase("topk.gradgrad", lambda x: ct.topk(x, 2, 0).values * 2, lambda a: _np_topk(a, 2, 0)[0] * 2,
         (A((5, 3), "distinct"),), gradgrad=True))
c(OpCase("sort.gradgrad", lambda x: ct.sort(x, 1)[0] ** 2, lambda a: np.sort(a, 1) ** 2, (A((3, 4), "distinct"),),
         gradgrad=True))
c(OpCase("topk.method_kw", lambda x: x.topk(k=2, largest=False, sorted=True), lambda a: _np_topk(a, 2, -1, False),
         (A((3, 5), "distinct"),)))
c(OpCase("topk.ties", lambda x: ct.topk(x, 3)[0], lambda a: -np.sort(-a, -1)[..., :3], (A((4, 6), "ties3"),), FI,
         grad=False, props=lambda out, x: _points_at(ct.topk(x, 3), x)))
c(OpCase("topk.k_too_big", lambda x: ct.topk(x, 5), None, (A((3, 4)),), raises=RuntimeError))
for sfx, shape, k, dim, keep, lay in ((".k2", (4, 6), 2, -1, False, "c"), (".keepdim", (4, 6), 4, 0, True, "t"),
                                      (".last", (3, 5), 5, 1, False, "s"), (".0d", (), 1, 0, False, "c")):
    c(OpCase("kthvalue" + sfx, lambda x, k=k, d=dim, kp=keep: ct.kthvalue(x, k, d, kp),
             lambda a, k=k, d=dim, kp=keep: _np_pick(a, k - 1, d, kp) if a.ndim else (a.copy(), np.zeros((), I64)),
             (A(shape, "distinct", layout=lay),), FI))
c(OpCase("kthvalue.ties.method", lambda x: x.kthvalue(4)[0], lambda a: np.sort(a, -1)[..., 3],
         (A((3, 6), "ties3"),), FI, grad=False, props=lambda out, x: _points_at(ct.kthvalue(x, 4, -1, True), x)))
c(OpCase("kthvalue.bad_k", lambda x: ct.kthvalue(x, 0), None, (A((3, 4)),), raises=RuntimeError))
c(OpCase("kthvalue.empty_dim", lambda x: ct.kthvalue(x, 1, 1), None, (A((3, 0)),), raises=IndexError))

# ---- median / nanmedian / mode ----
c(OpCase("median", ct.median, lambda a: np.sort(a.reshape(-1))[(a.size - 1) // 2], (A((4, 5), "distinct"),), FI))
c(OpCase("median.even_ties", lambda x: x.median(), lambda a: np.sort(a.reshape(-1))[(a.size - 1) // 2],
         (A((3, 4), "ties3"),), FI, grad=False))
c(OpCase("median.dim", lambda x: ct.median(x, 1), lambda a: _np_pick(a, (a.shape[1] - 1) // 2, 1, False),
         (A((4, 6), "distinct"),), FI))
c(OpCase("median.dim0.keepdim.t", lambda x: ct.median(x, 0, keepdim=True),
         lambda a: _np_pick(a, (a.shape[0] - 1) // 2, 0, True), (A((5, 3), "distinct", layout="t"),), FI))
c(OpCase("median.ties.dim", lambda x: ct.median(x, -1)[0], lambda a: np.sort(a, -1)[..., (a.shape[-1] - 1) // 2],
         (A((4, 6), "ties3"),), FI, grad=False,
         props=lambda out, x: _points_at(ct.median(x, -1, True), x)))
c(OpCase("median.empty_dim", lambda x: ct.median(x, 1), None, (A((3, 0)),), raises=IndexError))
c(OpCase("nanmedian", ct.nanmedian, lambda a: np.sort(a.reshape(-1))[(a.size - 1) // 2], (A((3, 5), "distinct"),)))
c(OpCase("nanmedian.dim.method", lambda x: x.nanmedian(0), lambda a: _np_pick(a, (a.shape[0] - 1) // 2, 0, False),
         (A((5, 4), "distinct"),), FI))
c(OpCase("mode", lambda x: ct.mode(x, 1)[0], lambda a: _np_mode(a, 1), (A((4, 8), "small"),),
         ("int64", "float32", "float64"), grad=False, props=lambda out, x: _points_at(ct.mode(x, 1, True), x, 1)))
c(OpCase("mode.dim0.keepdim.method", lambda x: x.mode(0, keepdim=True)[0],
         lambda a: np.expand_dims(_np_mode(a, 0), 0), (A((7, 3), "small", layout="t"),), ("int32", "float64"),
         grad=False))
c(OpCase("mode.grad", lambda x: ct.mode(x, 1), lambda a: (a[:, 0], np.zeros(a.shape[0], I64)),
         (A((3, 1), "distinct"),)))

# ---- cummax / cummin / logcumsumexp ----
for op in ("cummax", "cummin"):
    f = getattr(ct, op)
    for sfx, shape, dim, dom, lay in (("", (4, 6), 1, "distinct", "c"), (".dim0.t", (5, 3), 0, "distinct", "t"),
                                      (".ties", (4, 6), -1, "ties3", "c"), (".s", (3, 5), 1, "distinct", "s"),
                                      (".0d", (), 0, "distinct", "c"), (".empty", (0, 3), 1, "distinct", "c")):
        c(OpCase(op + sfx, lambda x, f=f, d=dim: f(x, d), lambda a, d=dim, o=op[3:]: _np_cum(a, d, o),
                 (A(shape, dom, layout=lay),), FI, grad=dom == "distinct"))
    c(OpCase(op + ".method", lambda x, o=op: getattr(x, o)(dim=0), lambda a, o=op[3:]: _np_cum(a, 0, o),
             (A((4, 3), "distinct"),)))
for sfx, shape, dim, lay in (("", (4, 6), 1, "c"), (".dim0.t", (5, 3), 0, "t"), (".s", (3, 5), -1, "s"),
                             (".0d", (), 0, "c"), (".empty", (0, 3), 1, "c")):
    c(OpCase("logcumsumexp" + sfx, lambda x, d=dim: ct.logcumsumexp(x, d), lambda a, d=dim: _lcse(a, d),
             (A(shape, layout=lay),)))
c(OpCase("logcumsumexp.method", lambda x: x.logcumsumexp(0), lambda a: _lcse(a, 0), (A((6, 2)),), gradgrad=True))
c(OpCase("logcumsumexp.int", lambda x: ct.logcumsumexp(x, 0), None, (A((3,), dtype="int64"),),
         raises=RuntimeError))

# ---- unique / unique_consecutive ----
for sfx, kw in (("", {}), (".inverse", {"return_inverse": True}), (".counts", {"return_counts": True}),
                (".both", {"return_inverse": True, "return_counts": True})):
    c(OpCase("unique" + sfx, lambda x, kw=kw: ct.unique(x, **kw), lambda a, kw=kw: _np_unique(a, **kw),
             (A((4, 6), "small"),), ("int64", "float32"), grad=False))
    c(OpCase("unique_consecutive" + sfx, lambda x, kw=kw: ct.unique_consecutive(x, **kw),
             lambda a, kw=kw: _np_unique_consecutive(a, **kw), (A((15,), "small"),), ("int64", "float64"),
             grad=False))
c(OpCase("unique.dim0", lambda x: ct.unique(x, dim=0, return_inverse=True, return_counts=True),
         lambda a: _np_unique(a, True, True, 0),
         (A((9, 2), "index:2", "int64"),), grad=False))
c(OpCase("unique.dim1.method", lambda x: x.unique(dim=1), lambda a: np.unique(a, axis=1),
         (A((2, 8), "index:2"),), ("float32", "int32"), grad=False))
c(OpCase("unique.empty", lambda x: ct.unique(x, return_counts=True), lambda a: _np_unique(a, return_counts=True),
         (A((0,), dtype="int64"),), grad=False))
c(OpCase("unique_consecutive.dim0", lambda x: ct.unique_consecutive(x, return_counts=True, dim=0),
         lambda a: _np_uc_dim0(a), (A((8, 2), "index:2", "int64"),), grad=False))


def _np_uc_dim0(a):
    keep = np.concatenate([[True], np.any(a[1:] != a[:-1], axis=1)])
    pos = np.flatnonzero(keep)
    return a[keep], np.diff(np.append(pos, len(a))).astype(I64)


# ---- searchsorted / bucketize ----
def _sorted_rows(shape):
    return A(shape, "distinct", requires_grad=False)


c(OpCase("searchsorted", lambda s, v: ct.searchsorted(ct.sort(s)[0], v), lambda s, v: _np_searchsorted(np.sort(s), v),
         (_sorted_rows((10,)), A((3, 4), requires_grad=False)), FI, grad=False))
c(OpCase("searchsorted.right_int32", lambda s, v: ct.searchsorted(ct.sort(s)[0], v, right=True, out_int32=True),
         lambda s, v: _np_searchsorted(np.sort(s), v, True, np.int32),
         (A((12,), "small", requires_grad=False), A((7,), "small", requires_grad=False)), FI, grad=False))
c(OpCase("searchsorted.batched_side", lambda s, v: ct.searchsorted(ct.sort(s)[0], v, side="right"),
         lambda s, v: _np_searchsorted(np.sort(s, -1), v, True),
         (A((2, 3, 6), "small", requires_grad=False), A((2, 3, 4), "small", requires_grad=False)), FI, grad=False))
c(OpCase("searchsorted.sorter", lambda s: ct.searchsorted(s, s[:3], sorter=ct.argsort(s)),
         lambda s: np.searchsorted(s, s[:3], sorter=np.argsort(s, kind="stable")).astype(I64),
         (A((8,), "distinct", requires_grad=False),), FI, grad=False))
c(OpCase("searchsorted.scalar", lambda s: ct.searchsorted(ct.sort(s)[0], 0.5),
         lambda s: np.asarray(np.searchsorted(np.sort(s), 0.5), I64), (A((8,), requires_grad=False),), grad=False))
c(OpCase("searchsorted.bad_shape", lambda s, v: ct.searchsorted(s, v), None, (A((2, 5)), A((3, 4))),
         raises=RuntimeError))
c(OpCase("bucketize", lambda v, b: ct.bucketize(v, ct.sort(b)[0]), lambda v, b: np.searchsorted(np.sort(b), v)
         .astype(I64), (A((3, 5), requires_grad=False), A((6,), "distinct", requires_grad=False)), FI, grad=False))
c(OpCase("bucketize.right_int32", lambda v, b: ct.bucketize(v, ct.sort(b)[0], right=True, out_int32=True),
         lambda v, b: np.searchsorted(np.sort(b), v, "right").astype(np.int32),
         (A((9,), "small", requires_grad=False), A((5,), "small", requires_grad=False)), FI, grad=False))
c(OpCase("bucketize.2d_boundaries", lambda v, b: ct.bucketize(v, b), None, (A((3,)), A((2, 2))), raises=RuntimeError))

# ---- quantile / nanquantile ----
for interp in ("linear", "lower", "higher", "midpoint", "nearest"):
    c(OpCase(f"quantile.{interp}", lambda x, i=interp: ct.quantile(x, 0.35, 1, interpolation=i),
             lambda a, i=interp: np.quantile(a, 0.35, axis=1, method=i).astype(a.dtype), (A((4, 7), "distinct"),)))
c(OpCase("quantile.all", lambda x: ct.quantile(x, 0.6), lambda a: np.asarray(np.quantile(a, 0.6), a.dtype),
         (A((3, 5), "distinct", layout="t"),)))
c(OpCase("quantile.qtensor.keepdim", lambda x: ct.quantile(x, ct.tensor([0.0, 0.25, 1.0], dtype=x.dtype,
                                                                      device=x.device), 0, keepdim=True),
         lambda a: np.quantile(a, [0.0, 0.25, 1.0], axis=0, keepdims=True).astype(a.dtype), (A((5, 3), "distinct"),)))
c(OpCase("quantile.method", lambda x: x.quantile(0.5, dim=-1), lambda a: np.quantile(a, 0.5, -1).astype(a.dtype),
         (A((2, 3, 4), "distinct", layout="s"),)))
c(OpCase("quantile.bad_q", lambda x: ct.quantile(x, 1.5), None, (A((3,)),), raises=RuntimeError))
c(OpCase("quantile.int", lambda x: ct.quantile(x, 0.5), None, (A((3,), dtype="int64"),), raises=RuntimeError))
c(OpCase("nanquantile", lambda x: ct.nanquantile(x, 0.3, 1), lambda a: np.nanquantile(a, 0.3, 1).astype(a.dtype),
         (A((4, 6), "distinct"),)))
c(OpCase("nanquantile.method_all", lambda x: x.nanquantile(0.75, interpolation="midpoint"),
         lambda a: np.asarray(np.nanquantile(a, 0.75, method="midpoint"), a.dtype), (A((3, 4), "distinct"),)))

# ---- histc / bincount / count_nonzero / aminmax ----
c(OpCase("histc", lambda x: ct.histc(x, 7), lambda a: np.histogram(a, 7)[0].astype(a.dtype),
         (A((5, 6), "distinct"),), grad=False, nondiff=True))
c(OpCase("histc.range.method", lambda x: x.histc(bins=4, min=-1, max=1),
         lambda a: np.histogram(a, 4, (-1, 1))[0].astype(a.dtype), (A((40,), "distinct"),), grad=False,
         nondiff=True))
c(OpCase("histc.int", lambda x: ct.histc(x), None, (A((3,), dtype="int64"),), raises=RuntimeError))
c(OpCase("bincount", lambda x: ct.bincount(x), lambda a: np.bincount(a).astype(I64),
         (A((20,), "index:7", "int64"),), grad=False))
c(OpCase("bincount.minlength.method", lambda x: x.bincount(minlength=12), lambda a: np.bincount(a, minlength=12)
         .astype(I64), (A((9,), "index:4", "int32"),), grad=False))
c(OpCase("bincount.weights", lambda x, w: ct.bincount(x, w), lambda a, w: np.bincount(a, w).astype(w.dtype),
         (A((15,), "index:5", "int64"), A((15,), requires_grad=False)), grad=False))
c(OpCase("bincount.float", lambda x: ct.bincount(x), None, (A((3,)),), raises=RuntimeError))
c(OpCase("count_nonzero", ct.count_nonzero, lambda a: np.asarray(np.count_nonzero(a), I64),
         (A((4, 5), "small"),), FI, grad=False))
c(OpCase("count_nonzero.dims.method", lambda x: x.count_nonzero((0, 2)),
         lambda a: np.count_nonzero(a, axis=(0, 2)).astype(I64), (A((2, 3, 4), "small", layout="s"),), FI,
         grad=False))
c(OpCase("aminmax", ct.aminmax, lambda a: (np.min(a), np.max(a)), (A((4, 5), "distinct"),), FI))
c(OpCase("aminmax.dim.keepdim.method", lambda x: x.aminmax(dim=0, keepdim=True),
         lambda a: (np.min(a, 0, keepdims=True), np.max(a, 0, keepdims=True)), (A((4, 5), "distinct", layout="t"),),
         FI))

# ---- diff / gradient ----
c(OpCase("diff", ct.diff, lambda a: np.diff(a), (A((4, 6)),), FI))
c(OpCase("diff.n2.dim0.method", lambda x: x.diff(2, 0), lambda a: np.diff(a, 2, 0), (A((5, 3), layout="t"),), FI))
c(OpCase("diff.prepend_append", lambda x, p, q: ct.diff(x, 1, 1, p, q), lambda a, p, q: np.diff(a, 1, 1, p, q),
         (A((3, 4)), A((3, 2)), A((3, 1)))))
c(OpCase("diff.bool", ct.diff, lambda a: np.diff(a), (A((7,), dtype="bool"),), grad=False))
c(OpCase("diff.0d", ct.diff, None, (A(()),), raises=RuntimeError))
c(OpCase("gradient", lambda x: ct.gradient(x), lambda a: tuple(np.gradient(a)), (A((4, 6)),)))
c(OpCase("gradient.edge2_spacing_dim", lambda x: ct.gradient(x, spacing=0.5, dim=1, edge_order=2),
         lambda a: (np.gradient(a, 0.5, axis=1, edge_order=2),), (A((3, 5), layout="t"),)))
c(OpCase("gradient.coords", lambda x, t: ct.gradient(x, spacing=(ct.cumsum(t.abs() + 0.5, 0),), dim=0),
         lambda a, t: (np.gradient(a, np.cumsum(np.abs(t) + 0.5), axis=0),), (A((5, 3)), A((5,), requires_grad=False))))
c(OpCase("gradient.coords_edge2", lambda x, t: ct.gradient(x, spacing=[ct.cumsum(t.abs() + 0.5, 0)], dim=-1,
                                                           edge_order=2),
         lambda a, t: (np.gradient(a, np.cumsum(np.abs(t) + 0.5), axis=-1, edge_order=2),),
         (A((2, 6)), A((6,), requires_grad=False))))
c(OpCase("gradient.too_short", lambda x: ct.gradient(x, edge_order=2), None, (A((2, 5)),), raises=RuntimeError))

# ---- cov / corrcoef; std_mean / var_mean ----
c(OpCase("cov", ct.cov, lambda a: np.cov(a).astype(a.dtype), (A((3, 6)),)))
c(OpCase("cov.1d", ct.cov, lambda a: np.asarray(np.cov(a), a.dtype), (A((6,)),)))
c(OpCase("cov.weights", lambda x, f, w: ct.cov(x, correction=0, fweights=f, aweights=w),
         lambda a, f, w: np.cov(a, ddof=0, fweights=f, aweights=w).astype(a.dtype),
         (A((3, 5), layout="t"), A((5,), "positive", "int64"), A((5,), "positive", requires_grad=False))))
c(OpCase("cov.method", lambda x: x.cov(correction=2), lambda a: np.cov(a, ddof=2).astype(a.dtype), (A((2, 6)),)))
c(OpCase("cov.one_row", ct.cov, lambda a: np.asarray(np.cov(a), a.dtype), (A((1, 6)),)))
c(OpCase("cov.bool", ct.cov, None, (A((2, 3), dtype="bool"),), raises=RuntimeError))
c(OpCase("cov.int", ct.cov, lambda a: np.cov(a).astype(np.float32), (A((2, 5), dtype="int64"),), grad=False))
c(OpCase("corrcoef", ct.corrcoef, lambda a: np.corrcoef(a).astype(a.dtype), (A((3, 6)),)))
c(OpCase("corrcoef.method", lambda x: x.corrcoef(), lambda a: np.corrcoef(a).astype(a.dtype),
         (A((4, 5), layout="t"),)))
c(OpCase("std_mean.dims", lambda x: ct.std_mean(x, (0, 2)), lambda a: (np.std(a, (0, 2), ddof=1), np.mean(a, (0, 2))),
         (A((2, 3, 4)),)))
c(OpCase("var_mean.dim.keepdim", lambda x: ct.var_mean(x, 1, keepdim=True, correction=0),
         lambda a: (np.var(a, 1, keepdims=True), np.mean(a, 1, keepdims=True)), (A((3, 5), layout="t"),)))
c(OpCase("amax.dims3", lambda x: ct.amax(x, (0, 2, 3)), lambda a: np.max(a, (0, 2, 3)), (A((2, 3, 2, 4), "distinct"),),
         FI))
c(OpCase("amin.dims.keepdim", lambda x: ct.amin(x, (-1, 0), keepdim=True), lambda a: np.min(a, (-1, 0), keepdims=True),
         (A((3, 2, 4), "distinct", layout="s"),), FI))


# ---- cumprod (zeros: the gradient at and after a slice's first zero) ----
def _np_cumprod(a, dim):
    r = np.cumprod(a, axis=dim) if a.ndim else a.copy()
    return r if a.dtype.kind == "f" else r.astype(I64)


def _cumprod_vjp(g, a, dim=1):
    """d/dx_i of sum_j g_j cumprod(x)_j = sum_{j >= i} g_j prod_{k <= j, k != i} x_k (direct, O(n^2))."""
    x, gm = np.moveaxis(a, dim, -1), np.moveaxis(g, dim, -1)
    out = np.zeros_like(x)
    n = x.shape[-1]
    for i in range(n):
        xi = x.copy()
        xi[..., i] = 1.0
        p = np.cumprod(xi, -1)
        out[..., i] = (gm[..., i:] * p[..., i:]).sum(-1)
    return np.moveaxis(out, -1, dim)


for sfx, shape, dim, lay in (("", (4, 5), 1, "c"), (".dim0.t", (5, 3), 0, "t"), (".s", (3, 4), -1, "s"),
                             (".0d", (), 0, "c"), (".empty", (0, 3), 1, "c")):
    c(OpCase("cumprod" + sfx, lambda x, d=dim: ct.cumprod(x, d), lambda a, d=dim: _np_cumprod(a, d),
             (A(shape, "nonzero", layout=lay),), ("float32", "float64", "int64")))
c(OpCase("cumprod.method_gradgrad", lambda x: x.cumprod(0), lambda a: np.cumprod(a, 0), (A((5, 2), "nonzero"),),
         gradgrad=True))
c(OpCase("cumprod.zeros", lambda x, z: ct.cumprod(x * z.to(x.dtype), 1), lambda a, z: np.cumprod(a * z, 1),
         (A((3, 6), "nonzero"), A((3, 6), "mask", "bool", requires_grad=False)),
         vjp_ref=lambda g, a, z: (_cumprod_vjp(g, a * z, 1) * z,)))
c(OpCase("cumprod.dtype", lambda x: ct.cumprod(x, 0, dtype=ct.float64), lambda a: np.cumprod(a, 0).astype(np.float64),
         (A((4,), "nonzero", "int32"),), grad=False))
