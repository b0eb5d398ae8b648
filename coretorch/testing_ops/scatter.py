"""OpCases of the scatter family (coretorch.ops.scatter); part of coretorch.testing.CASES."""
from __future__ import annotations

import numpy as np

import coretorch as ct
from coretorch.testing import Arg as A, OpCase

F, I, B = ("float32", "float64"), ("int64", "int32"), ("bool",)  # noqa: E741


def _uidx(in_size: int, dim: int, ishape: tuple, seed: int) -> np.ndarray:
    """An int64 index of shape ``ishape`` whose entries along ``dim`` are distinct values in [0, in_size)."""
    rng = np.random.default_rng(seed)
    full = list(ishape)
    full[dim] = in_size
    perm = np.argsort(rng.random(full), axis=dim)
    return np.take(perm, np.arange(ishape[dim]), axis=dim).astype(np.int64)


def _ridx(hi: int, shape: tuple, seed: int) -> np.ndarray:
    """An int64 index with repeats: values in [0, hi)."""
    return np.random.default_rng(seed).integers(0, hi, shape).astype(np.int64)


def _dev(arr: np.ndarray, like) -> ct.Tensor:
    return ct.tensor(arr, device=like.device)


def _grid(index: np.ndarray, dim: int) -> tuple:
    g: list = list(np.indices(index.shape, sparse=True))
    g[dim] = index
    return tuple(g)


def np_scatter(a, dim, index, src, reduce=None):
    out = a.copy()
    if a.ndim == 0:
        out, index = out.reshape(1), index.reshape(1)
        src = src.reshape(1) if isinstance(src, np.ndarray) else src
    g = _grid(index, dim)
    vals = src[tuple(slice(0, s) for s in index.shape)] if isinstance(src, np.ndarray) else src
    if reduce is None:
        out[g] = vals
    elif reduce == "add":
        np.add.at(out, g, vals)
    else:
        np.multiply.at(out, g, vals)
    return out.reshape(a.shape)


_IDENT = {"sum": 0, "mean": 0, "prod": 1}


def np_scatter_reduce(a, dim, index, src, reduce, include_self=True):
    out = a.copy()
    g = _grid(index, dim)
    vals = src[tuple(slice(0, s) for s in index.shape)]
    if not include_self:
        if reduce in _IDENT:
            out[g] = _IDENT[reduce]
        elif a.dtype.kind == "f":
            out[g] = -np.inf if reduce == "amax" else np.inf
        else:
            out[g] = np.iinfo(a.dtype).min if reduce == "amax" else np.iinfo(a.dtype).max
    uf = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    uf.at(out, g, vals)
    if reduce == "mean":
        cnt = np.ones(a.shape, np.int64)
        if not include_self:
            cnt[g] = 0
        np.add.at(cnt, g, 1)
        out = (out / cnt).astype(a.dtype) if a.dtype.kind == "f" else (out // cnt).astype(a.dtype)
    return out


def _scatter_cases() -> list:
    i0 = _uidx(4, 0, (3, 5), 1)          # into (4, 5) along dim 0, distinct per column
    i1 = _uidx(5, 1, (4, 3), 2)          # into (4, 5) along dim 1
    ir = _ridx(4, (6, 5), 3)             # repeats along dim 0
    out = [
        OpCase("scatter", lambda x, s: ct.scatter(x, 0, _dev(i0, x), s), lambda a, s: np_scatter(a, 0, i0, s),
               (A((4, 5)), A((4, 6))), F + I, gradgrad=True),
        OpCase("scatter.dim_neg", lambda x, s: x.scatter(-1, _dev(i1, x), s), lambda a, s: np_scatter(a, 1, i1, s),
               (A((4, 5)), A((4, 3)))),
        OpCase("scatter.value", lambda x: x.scatter(0, _dev(i0, x), 2.5), lambda a: np_scatter(a, 0, i0, 2.5),
               (A((4, 5)),)),
        OpCase("scatter.value_kw", lambda x: ct.scatter(x, 1, _dev(i1, x), value=-1),
               lambda a: np_scatter(a, 1, i1, -1), (A((4, 5)),), F + I + B),
        OpCase("scatter.t", lambda x, s: x.scatter(0, _dev(i0, x), s), lambda a, s: np_scatter(a, 0, i0, s),
               (A((4, 5), layout="t"), A((4, 5), layout="s"))),
        OpCase("scatter.0d", lambda x, s: x.scatter(0, _dev(np.array(0), x), s),
               lambda a, s: np_scatter(a, 0, np.array(0), s), (A(()), A(()))),
        OpCase("scatter.empty_index", lambda x, s: x.scatter(0, _dev(np.zeros((0, 5), np.int64), x), s),
               lambda a, s: a.copy(), (A((4, 5)), A((2, 5)))),
        OpCase("scatter.bool", lambda x, s: x.scatter(0, _dev(i0, x), s), lambda a, s: np_scatter(a, 0, i0, s),
               (A((4, 5)), A((3, 5))), B),
        OpCase("scatter.reduce_add", lambda x, s: x.scatter(0, _dev(ir, x), s, reduce="add"),
               lambda a, s: np_scatter(a, 0, ir, s, "add"), (A((4, 5)), A((6, 5))), F + I, grad=False),
        OpCase("scatter.reduce_multiply", lambda x, s: x.scatter(0, _dev(ir, x), s, reduce="multiply"),
               lambda a, s: np_scatter(a, 0, ir, s, "multiply"), (A((4, 5)), A((6, 5))), F + I, grad=False),
        OpCase("scatter_.inplace", lambda x, s: x.clone().scatter_(0, _dev(i0, x), s),
               lambda a, s: np_scatter(a, 0, i0, s), (A((4, 5)), A((3, 5)))),
        OpCase("scatter_.value_reduce", lambda x: x.clone().scatter_(0, _dev(ir, x), 2.0, reduce="multiply"),
               lambda a: np_scatter(a, 0, ir, 2.0, "multiply"), (A((4, 5)),), grad=False),
        OpCase("scatter.index_out_of_range", lambda x, s: x.scatter(0, _dev(i0 + 4, x), s), None,
               (A((4, 5)), A((3, 5))), raises=RuntimeError),  # PyTorch's class for gather/scatter
        OpCase("scatter.negative_index", lambda x, s: x.scatter(0, _dev(i0 - 4, x), s), None,
               (A((4, 5)), A((3, 5))), raises=RuntimeError),
        OpCase("scatter.src_too_small", lambda x, s: x.scatter(0, _dev(i0, x), s), None,
               (A((4, 5)), A((2, 5))), raises=RuntimeError),
        OpCase("scatter.int32_index", lambda x, s: x.scatter(0, _dev(i0, x).int(), s),  # PyTorch 2.13 takes int32
               lambda a, s: np_scatter(a, 0, i0, s), (A((4, 5)), A((3, 5)))),
        OpCase("scatter.dtype_mismatch", lambda x, s: x.scatter(0, _dev(i0, x), s), None,
               (A((4, 5)), A((3, 5), dtype="float64")), ("float32",), raises=RuntimeError),
        OpCase("scatter.bad_reduce", lambda x, s: x.scatter(0, _dev(i0, x), s, reduce="max"), None,
               (A((4, 5)), A((3, 5))), raises=RuntimeError),
    ]
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            sfx = "" if inc else ".exclude_self"
            out.append(OpCase(
                f"scatter_reduce.{red}{sfx}",
                lambda x, s, r=red, i=inc: x.scatter_reduce(0, _dev(ir, x), s, r, include_self=i),
                lambda a, s, r=red, i=inc: np_scatter_reduce(a, 0, ir, s, r, i),
                (A((4, 5), "distinct"), A((7, 5), "distinct")), F + I if red != "mean" or inc else F,
                gradgrad=inc))
    zmask = np.ones((6, 5))
    zmask[0, 0] = zmask[1, 1] = zmask[2, 1] = 0  # one zero in a group, two zeros in another
    out += [
        OpCase("scatter_reduce.mean_int_floor", lambda x, s: x.scatter_reduce(1, _dev(i1, x), s, "mean"),
               lambda a, s: np_scatter_reduce(a, 1, i1, s, "mean"), (A((4, 5)), A((4, 3))), I),
        OpCase("scatter_reduce.prod_zeros",
               lambda x, s: ct.scatter_reduce(x, 0, _dev(ir, x), s * _dev(zmask, s).to(s.dtype), "prod"),
               lambda a, s: np_scatter_reduce(a, 0, ir, s * zmask.astype(s.dtype), "prod"),
               (A((4, 5), "nonzero"), A((6, 5), "nonzero"))),
        OpCase("scatter_reduce.amax.t", lambda x, s: x.scatter_reduce(-1, _dev(i1, x), s, "amax"),
               lambda a, s: np_scatter_reduce(a, 1, i1, s, "amax"), (A((4, 5), "distinct", layout="t"),
                                                                     A((4, 3), "distinct", layout="s"))),
        OpCase("scatter_reduce_.inplace", lambda x, s: x.clone().scatter_reduce_(0, _dev(ir, x), s, "sum"),
               lambda a, s: np_scatter_reduce(a, 0, ir, s, "sum"), (A((4, 5)), A((6, 5)))),
        OpCase("scatter_reduce.bad_reduce", lambda x, s: x.scatter_reduce(0, _dev(ir, x), s, "median"), None,
               (A((4, 5)), A((6, 5))), raises=RuntimeError),
        OpCase("scatter_reduce.index_out_of_range", lambda x, s: x.scatter_reduce(0, _dev(ir + 4, x), s, "sum"),
               None, (A((4, 5)), A((6, 5))), raises=RuntimeError),
    ]
    return out


def np_index_reduce(a, dim, index, src, reduce, include_self=True):
    vs = [1] * src.ndim
    vs[dim] = index.size
    return np_scatter_reduce(a, dim, np.broadcast_to(index.reshape(vs), src.shape), src, reduce, include_self)


def _index_reduce_cases() -> list:
    r0 = _ridx(4, (6,), 5)
    out = []
    for red in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            sfx = "" if inc else ".exclude_self"
            out.append(OpCase(
                f"index_reduce.{red}{sfx}",
                lambda x, s, r=red, i=inc: x.index_reduce(0, _dev(r0, x), s, r, include_self=i),
                lambda a, s, r=red, i=inc: np_index_reduce(a, 0, r0, s, r, i),
                (A((4, 3), "distinct"), A((6, 3), "distinct")), F + I if red != "mean" or inc else F,
                gradgrad=inc and red != "mean"))
    out += [
        OpCase("index_reduce.dim_neg", lambda x, s: ct.index_reduce(x, -1, _dev(r0, x), s, "amax"),
               lambda a, s: np_index_reduce(a, 1, r0, s, "amax"), (A((2, 4), "distinct", layout="t"),
                                                                   A((2, 6), "distinct"))),
        OpCase("index_reduce_.inplace", lambda x, s: x.clone().index_reduce_(0, _dev(r0, x), s, "prod"),
               lambda a, s: np_index_reduce(a, 0, r0, s, "prod"), (A((4, 3)), A((6, 3)))),
        OpCase("index_reduce.sum", lambda x, s: x.index_reduce(0, _dev(r0, x), s, "sum"), None,
               (A((4, 3)), A((6, 3))), raises=RuntimeError),
        OpCase("index_reduce.size_mismatch", lambda x, s: x.index_reduce(0, _dev(r0, x), s, "prod"), None,
               (A((4, 3)), A((5, 3))), raises=RuntimeError),
    ]
    return out


def _np_put(a, key, v, acc):
    out = a.copy()
    if acc:
        np.add.at(out, key, v)
    else:
        out[key] = v
    return out


def _index_cases() -> list:
    r0 = _ridx(4, (6,), 4)
    u0 = np.array([3, 0, 2], np.int64)
    u1 = np.array([4, 1], np.int64)
    rows, cols = np.array([0, 2, 3, 0]), np.array([1, 4, 0, 1])
    mask_src = np.array([[1, 0, 1, 1, 0]], bool)
    mask_big = np.array([[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 0, 0, 0]], bool)  # larger than self: broadcasts
    return [
        OpCase("index_put", lambda x, v: x.index_put((_dev(u0, x),), v),
               lambda a, v: _np_put(a, (u0,), v, False), (A((4, 5)), A((3, 5))), F + I, gradgrad=True),
        OpCase("index_put.accumulate", lambda x, v: ct.index_put(x, (_dev(r0, x),), v, accumulate=True),
               lambda a, v: _np_put(a, (r0,), v, True), (A((4, 5)), A((6, 5))), F + I),
        OpCase("index_put.two_indices_acc", lambda x, v: x.index_put((_dev(rows, x), _dev(cols, x)), v, True),
               lambda a, v: _np_put(a, (rows, cols), v, True), (A((4, 5)), A((4,)))),
        OpCase("index_put.bcast_value", lambda x, v: x.index_put((_dev(u0, x),), v),
               lambda a, v: _np_put(a, (u0,), v, False), (A((4, 5), layout="t"), A((5,)))),
        OpCase("index_put.0d_value_acc", lambda x, v: x.index_put((_dev(r0, x),), v, accumulate=True),
               lambda a, v: _np_put(a, (r0,), v, True), (A((4, 5)), A(()))),
        OpCase("index_put_.inplace", lambda x, v: x.clone().index_put_((_dev(r0, x),), v, accumulate=True),
               lambda a, v: _np_put(a, (r0,), v, True), (A((4, 5)), A((6, 5)))),
        OpCase("index_put.out_of_range", lambda x, v: x.index_put((_dev(u0 + 2, x),), v), None,
               (A((4, 5)), A((3, 5))), raises=IndexError),
        OpCase("index_put.shape_mismatch", lambda x, v: x.index_put((_dev(u0, x),), v), None,
               (A((4, 5)), A((2, 5))), raises=RuntimeError),
        OpCase("index_put.dtype_mismatch", lambda x, v: x.index_put((_dev(u0, x),), v), None,
               (A((4, 5)), A((3, 5), dtype="float64")), ("float32",), raises=RuntimeError),
        OpCase("index_copy", lambda x, s: x.index_copy(0, _dev(u0, x), s),
               lambda a, s: _np_put(a, (u0,), s, False), (A((4, 5)), A((3, 5))), F + I, gradgrad=True),
        OpCase("index_copy.dim_neg", lambda x, s: ct.index_copy(x, -1, _dev(u1, x), s),
               lambda a, s: _np_put(a, (slice(None), u1), s, False), (A((4, 5), layout="t"), A((4, 2)))),
        OpCase("index_copy_.inplace", lambda x, s: x.clone().index_copy_(1, _dev(u1, x), s),
               lambda a, s: _np_put(a, (slice(None), u1), s, False), (A((4, 5)), A((4, 2), layout="s"))),
        OpCase("index_copy.0d", lambda x, s: x.index_copy(0, _dev(np.array(0), x), s), lambda a, s: s.copy(),
               (A(()), A(()))),
        OpCase("index_copy.size_mismatch", lambda x, s: x.index_copy(0, _dev(u0, x), s), None,
               (A((4, 5)), A((2, 5))), raises=IndexError),  # (PyTorch: a count mismatch is an IndexError)
        OpCase("index_copy.slice_mismatch", lambda x, s: x.index_copy(0, _dev(u0, x), s), None,
               (A((4, 5)), A((3, 4))), raises=RuntimeError),
        OpCase("index_copy.out_of_range", lambda x, s: x.index_copy(0, _dev(u0 + 2, x), s), None,
               (A((4, 5)), A((3, 5))), raises=IndexError),
        OpCase("index_fill", lambda x: x.index_fill(1, _dev(u1, x), -2.0),
               lambda a: _np_put(a, (slice(None), u1), -2, False), (A((4, 5)),), F + I),
        OpCase("index_fill.tensor_value", lambda x, v: ct.index_fill(x, 0, _dev(u0, x), v),
               lambda a, v: _np_put(a, (u0,), v, False), (A((4, 5), layout="t"), A(()))),
        OpCase("index_fill_.inplace", lambda x: x.clone().index_fill_(0, _dev(r0, x), 1.5),
               lambda a: _np_put(a, (r0,), 1.5, False), (A((4, 5)),)),
        OpCase("index_fill.bool", lambda x: x.index_fill(0, _dev(u0, x), True),
               lambda a: _np_put(a, (u0,), True, False), (A((4, 5)),), B),
        OpCase("index_fill.1d_value", lambda x, v: x.index_fill(0, _dev(u0, x), v), None,
               (A((4, 5)), A((2,))), raises=RuntimeError),
        OpCase("masked_scatter", lambda x, m, s: x.masked_scatter(m, s),
               lambda a, m, s: _np_put(a, m, s.reshape(-1)[:m.sum()], False),
               (A((4, 5)), A((4, 5), "mask"), A((5, 5))), F + I),
        OpCase("masked_scatter.bcast", lambda x, s: ct.masked_scatter(x, _dev(mask_src, x), s),
               lambda a, s: _np_put(a, np.broadcast_to(mask_src, a.shape), s.reshape(-1)[:12], False),
               (A((4, 5), layout="t"), A((3, 4)))),
        OpCase("masked_scatter.bcast_self", lambda x, s: ct.masked_scatter(x, _dev(mask_big, x), s),
               lambda a, s: _np_put(np.broadcast_to(a, mask_big.shape), mask_big, s.reshape(-1)[:8], False),
               (A((5,)), A((2, 5), layout="t"))),
        OpCase("masked_scatter_.bcast_self_inplace", lambda x, s: x.clone().masked_scatter_(_dev(mask_big, x), s),
               None, (A((5,)), A((15,))), raises=RuntimeError),
        OpCase("masked_scatter_.inplace", lambda x, m, s: x.clone().masked_scatter_(m, s),
               lambda a, m, s: _np_put(a, m, s.reshape(-1)[:m.sum()], False),
               (A((3, 4)), A((3, 4), "mask"), A((12,)))),
        OpCase("masked_scatter.source_too_small", lambda x, s: x.masked_scatter(ct.ones_like(x).bool(), s), None,
               (A((4, 5)), A((5,))), raises=RuntimeError),
        OpCase("put", lambda x, s: x.put(_dev(np.array([[7, -1], [0, 3]]), x), s),
               lambda a, s: _np_put(a.reshape(-1), np.array([7, -1, 0, 3]), s.reshape(-1), False).reshape(a.shape),
               (A((4, 5)), A((2, 2))), F + I),
        OpCase("put.accumulate", lambda x, s: x.put(_dev(np.array([1, 1, 5, -20]), x), s, accumulate=True),
               lambda a, s: _np_put(a.reshape(-1), np.array([1, 1, 5, 0]), s, True).reshape(a.shape),
               (A((4, 5), layout="t"), A((4,)))),
        OpCase("put_.inplace", lambda x, s: x.clone().put_(_dev(np.array([2, 0]), x), s),
               lambda a, s: _np_put(a.reshape(-1), np.array([2, 0]), s, False).reshape(a.shape), (A((2, 3)), A((2,)))),
        OpCase("put.out_of_range", lambda x, s: x.put(_dev(np.array([20]), x), s), None, (A((4, 5)), A((1,))),
               raises=IndexError),
        OpCase("put.numel_mismatch", lambda x, s: x.put(_dev(np.array([1, 2]), x), s), None, (A((4, 5)), A((3,))),
               raises=IndexError),  # (PyTorch's put_ raises an IndexError here)
        OpCase("take", lambda x, i: ct.take(x, i), lambda a, i: a.reshape(-1)[i], (A((4, 5)), A((2, 3), "sindex:20")),
               F + I, gradgrad=True),
        OpCase("take.t", lambda x, i: x.take(i), lambda a, i: a.reshape(-1)[i], (A((4, 5), layout="t"),
                                                                                 A((7,), "index:20"))),
        OpCase("take.0d", lambda x, i: x.take(i), lambda a, i: a.reshape(-1)[i], (A(()), A((), "index:1"))),
        OpCase("take.empty_index", lambda x, i: x.take(i), lambda a, i: a.reshape(-1)[i], (A((4, 5)),
                                                                                           A((0,), "index:1"))),
        OpCase("take.out_of_range", lambda x, i: x.take(i + 20), None, (A((4, 5)), A((3,), "index:20")),
               raises=IndexError),
        OpCase("take_along_dim", lambda x, i: ct.take_along_dim(x, i, 1),
               lambda a, i: np.take_along_axis(a, i, 1), (A((4, 5)), A((4, 3), "index:5")), F + I),
        OpCase("take_along_dim.bcast", lambda x, i: x.take_along_dim(i, dim=-1),
               lambda a, i: np.take_along_axis(a, np.broadcast_to(i, (4, 3)), 1), (A((4, 5)), A((1, 3), "index:5"))),
        OpCase("take_along_dim.bcast_input", lambda x, i: x.take_along_dim(i, dim=0),
               lambda a, i: np.take_along_axis(np.broadcast_to(a, (3, 4)), i, 0), (A((3, 1)), A((2, 4), "index:3"))),
        OpCase("take_along_dim.none", lambda x, i: ct.take_along_dim(x, i),
               lambda a, i: a.reshape(-1)[i.reshape(-1)], (A((4, 5), layout="t"), A((2, 3), "index:20"))),
        OpCase("take_along_dim.ndim_mismatch", lambda x, i: ct.take_along_dim(x, i, 0), None,
               (A((4, 5)), A((3,), "index:4")), raises=RuntimeError),
        OpCase("slice_scatter", lambda x, s: ct.slice_scatter(x, s, 1, 1, None, 2),
               lambda a, b: _np_put(a, (slice(None), slice(1, None, 2)), b, False), (A((4, 5)), A((4, 2))), F + I,
               gradgrad=True),
        OpCase("slice_scatter.default", lambda x, s: x.slice_scatter(s, start=-2),
               lambda a, b: _np_put(a, (slice(-2, None),), b, False), (A((4, 5), layout="t"), A((2, 5)))),
        OpCase("slice_scatter.size_mismatch", lambda x, s: ct.slice_scatter(x, s, 0, 0, 2), None,
               (A((4, 5)), A((3, 5))), raises=RuntimeError),
        OpCase("select_scatter", lambda x, s: ct.select_scatter(x, s, 0, -1),
               lambda a, b: _np_put(a, (-1,), b, False), (A((4, 5)), A((5,))), F + I),
        OpCase("select_scatter.dim1", lambda x, s: x.select_scatter(s, 1, 2),
               lambda a, b: _np_put(a, (slice(None), 2), b, False), (A((4, 5), layout="s"), A((4,), layout="s"))),
        OpCase("select_scatter.out_of_range", lambda x, s: ct.select_scatter(x, s, 0, 4), None,
               (A((4, 5)), A((5,))), raises=IndexError),
        OpCase("unravel_index", lambda i: ct.unravel_index(i, (4, 5)),
               lambda i: tuple(np.asarray(v, np.int64) for v in np.unravel_index(i, (4, 5))),
               (A((2, 3), "index:20"),), grad=False),
        OpCase("unravel_index.negative", lambda i: ct.unravel_index(i - 20, (2, 2, 5)),
               lambda i: tuple(np.asarray(v, np.int64) for v in np.unravel_index(i, (2, 2, 5))),
               (A((7,), "index:20"),), grad=False),
        OpCase("unravel_index.out_of_range", lambda i: ct.unravel_index(i + 20, (4, 5)), None,
               (A((3,), "index:20"),), raises=RuntimeError),
        OpCase("argwhere", ct.argwhere, lambda m: np.argwhere(m).astype(np.int64), (A((4, 5), "mask"),), B,
               grad=False),
        OpCase("argwhere.int", lambda x: x.argwhere(), lambda a: np.argwhere(a).astype(np.int64),
               (A((3, 4), "small"),), I, grad=False),
        OpCase("argwhere.0d", ct.argwhere, lambda m: np.argwhere(m).astype(np.int64), (A((), "mask"),), B,
               grad=False),
        OpCase("where.one_arg", lambda m: ct.where(m), lambda m: tuple(i.astype(np.int64) for i in np.nonzero(m)),
               (A((3, 4, 2), "mask"),), B, grad=False),
        OpCase("nonzero.as_tuple", lambda x: x.nonzero(as_tuple=True),
               lambda a: tuple(i.astype(np.int64) for i in np.nonzero(a)), (A((3, 4), "small", layout="t"),), I,
               grad=False),
    ]


CASES: list[OpCase] = _scatter_cases() + _index_reduce_cases() + _index_cases()
