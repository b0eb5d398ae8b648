"""The core op table's NumPy references (with PyTorch's type promotion) and case builders (``_unary``,
``_binary``, ``_reduction``, ...), shared by its parts and by the other families' tables."""
from __future__ import annotations

import math

import numpy as np

from coretorch.testing import (
    DEFAULT_FLOAT,
    FLOAT_DTYPES,
    Arg,
    OpCase,
)

# ---------------------------------------------------------------------------------------------
# NumPy references with PyTorch's type promotion
# ---------------------------------------------------------------------------------------------
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        return a if a.itemsize >= b.itemsize else b
    return a if ca == 0 else np.promote_types(a, b)


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None or higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return _promote(higher, lower)
    return higher


def result_type(*operands) -> np.dtype:
    """PyTorch's result type of ndarrays (dimensioned, 0-d) and Python scalars (independent of coretorch)."""
    dim = zero = wrapped = None
    for o in operands:
        if isinstance(o, (bool, int, float)):
            d = np.dtype(bool) if isinstance(o, bool) else np.dtype(np.int64) if isinstance(o, int) \
                else DEFAULT_FLOAT
            wrapped = d if wrapped is None else _promote(wrapped, d)
        elif np.ndim(o) == 0:
            zero = o.dtype if zero is None else _promote(zero, o.dtype)
        else:
            dim = o.dtype if dim is None else _promote(dim, o.dtype)
    return _combine(dim, _combine(zero, wrapped))


def _cast(x, dt):
    return x.astype(dt) if isinstance(x, np.ndarray) else x


def _binref(npop, kind: str = "arith"):
    """Reference of a binary op: promote as PyTorch does, then apply ``npop`` in the result dtype."""
    def ref(a, b):
        dt = result_type(a, b)
        if kind == "div" and dt.kind != "f":
            dt = DEFAULT_FLOAT
        r = np.asarray(npop(_cast(a, dt), _cast(b, dt)))
        return r if kind == "cmp" else r.astype(dt)
    return ref


def _powi(a, b):
    """np.power with PyTorch's integer powi for a negative exponent: 1 ** -n == 1, (-1) ** -n == -1 for odd n else
    1, any other base 0 (numpy raises ValueError there)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        return np.power(a, b)
    r = np.power(a, np.maximum(b, 0))
    small = np.where(a == -1, np.where(b % 2 == 0, 1, -1), np.where(a == 1, 1, 0))
    return np.where(b < 0, small, r).astype(r.dtype)


def _uref(npop, float_only: bool = False):
    def ref(a):
        if float_only and a.dtype.kind != "f":
            a = a.astype(DEFAULT_FLOAT)
        return np.asarray(npop(a)).astype(a.dtype)
    return ref


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


# ---------------------------------------------------------------------------------------------
# case builders: the input variants
# ---------------------------------------------------------------------------------------------
A = Arg
INT_DTYPES = ("int64", "int32")


def _unary(name, fn, ref, domain="any", dtypes=FLOAT_DTYPES, grad=True, gradgrad=False, **kw) -> list:
    mk = lambda suffix, shape, layout="c", **k: OpCase(  # noqa: E731
        name + suffix, fn, ref, (A(shape, domain, layout=layout),), dtypes, grad=grad, **{**kw, **k})
    return [mk("", (4, 5), gradgrad=gradgrad), mk(".0d", ()), mk(".empty", (0, 3)), mk(".t", (4, 5), "t"),
            mk(".strided", (3, 4), "s"), mk(".1d", (7,))]


_PAIRS = (("", (4, 5), (4, 5), "c", "c"), (".bcast", (4, 1), (5,), "c", "c"),
          (".bcast3d", (2, 1, 3), (4, 1), "c", "c"), (".0d", (), (), "c", "c"),
          (".0d_rhs", (3, 4), (), "c", "c"), (".0d_lhs", (), (3,), "c", "c"),
          (".empty", (0, 3), (3,), "c", "c"), (".t", (4, 5), (4, 5), "t", "s"),
          (".t_bcast", (3, 4), (4,), "t", "s"))


def _binary(name, fn, ref, doms=("any", "any"), dtypes=FLOAT_DTYPES, grad=True, gradgrad=False,
            scalars=(), pairs=_PAIRS, **kw) -> list:
    """Tensor-tensor variants from ``pairs``; ``scalars``: (suffix, scalar, dtypes) run ``x op s`` and
    ``s op x`` (``fn``/``ref`` must then accept Python scalars on either side)."""
    out = []
    for suffix, sa, sb, la, lb in pairs:
        out.append(OpCase(name + suffix, fn, ref, (A(sa, doms[0], layout=la), A(sb, doms[1], layout=lb)),
                          dtypes, grad=grad, gradgrad=gradgrad and not suffix, **kw))
    for suffix, s, sdtypes in scalars:
        out.append(OpCase(f"{name}.scalar{suffix}", lambda x, s=s: fn(x, s), lambda a, s=s: ref(a, s),
                          (A((3, 4), doms[0]),), sdtypes, grad=grad, **kw))
        out.append(OpCase(f"{name}.rscalar{suffix}", lambda x, s=s: fn(s, x), lambda a, s=s: ref(s, a),
                          (A((3, 4), doms[1]),), sdtypes, grad=grad, **kw))
    return out


def _promotions(name, fn, ref, doms=("any", "any"), grad=True) -> list:
    """Mixed-dtype operands: dimensioned tensors promote, 0-d tensors only across categories."""
    combos = [("i32_i64", (3,), "int32", (3,), "int64"), ("u8_i8", (3,), "uint8", (3,), "int8"),
              ("b_i32", (3,), "bool", (3,), "int32"), ("i64_f32", (3,), "int64", (3,), "float32"),
              ("f32_f64", (3,), "float32", (3,), "float64"), ("f16_f32", (3,), "float16", (3,), "float32"),
              ("f32_0d_f64", (3,), "float32", (), "float64"), ("i32_0d_i64", (3,), "int32", (), "int64"),
              ("i64_0d_f64", (3,), "int64", (), "float64"), ("b_0d_i64", (3,), "bool", (), "int64"),
              ("0d_f64_f16", (), "float64", (3,), "float16"), ("0d_0d", (), "int32", (), "float64")]
    return [OpCase(f"{name}.promote_{tag}", fn, ref, (A(sa, doms[0], da), A(sb, doms[1], db)), ("float32",),
                   grad=grad and "f" in da + db) for tag, sa, da, sb, db in combos]


def _ref0d(ref):
    """NumPy has no axis 0 on a 0-d array; PyTorch treats a 0-d tensor as having one (dim 0 or -1)."""
    def r(a, **k):
        if a.ndim or k.get("dim") is None:
            return ref(a, **k)
        out = ref(a.reshape(1), **dict(k, dim=(0,) if isinstance(k["dim"], tuple) else 0))
        if isinstance(out, tuple):
            return tuple(np.asarray(o).reshape(()) for o in out)
        return np.asarray(out).reshape(())
    return r


def _reduction(name, fn, ref, variants, domain="any", dtypes=FLOAT_DTYPES, grad=True, gradgrad=False,
               **kw) -> list:
    """``variants``: (suffix, shape, kwargs) -> fn(x, **kwargs) vs ref(a, **kwargs)."""
    out = []
    ref = _ref0d(ref)
    for suffix, shape, kwargs in variants:
        layout = "t" if suffix.endswith(".t") else "c"
        out.append(OpCase(name + suffix, lambda x, k=kwargs: fn(x, **k), lambda a, k=kwargs: ref(a, **k),
                          (A(shape, domain, layout=layout),), dtypes, grad=grad,
                          gradgrad=gradgrad and suffix == "", **kw))
    return out


_RED: tuple = (("", (4, 5), {}), (".dim1", (4, 5), {"dim": 1}), (".dim0.keepdim", (4, 5), {"dim": 0, "keepdim": True}),
        (".dim_neg1", (4, 5), {"dim": -1}), (".dims02", (2, 3, 4), {"dim": (0, 2)}),
        (".dims_neg.keepdim", (2, 3, 4), {"dim": (-1, 1), "keepdim": True}), (".0d", (), {}),
        (".0d.dim0", (), {"dim": 0}), (".keepdim.t", (4, 5), {"dim": 0, "keepdim": True}),
        (".t", (4, 5), {"dim": 1}))
_RED_EMPTY: tuple = ((".empty", (0, 3), {}), (".empty.dim0", (0, 3), {"dim": 0}), (".empty.dim1", (0, 3), {"dim": 1}))


def _npaxis(dim):
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


def _np_sum(a, dim=None, keepdim=False, dtype=None):
    r = np.sum(a if dtype is None else a.astype(dtype), axis=_npaxis(dim), keepdims=keepdim)
    r = np.asarray(r)
    if dtype is not None:
        return r.astype(dtype)
    return r if a.dtype.kind == "f" else r.astype(np.int64)


def _np_var(a, dim=None, correction=1, keepdim=False):
    return np.asarray(np.var(a, axis=_npaxis(dim), ddof=correction, keepdims=keepdim)).astype(a.dtype)


def _np_norm(a, p="fro", dim=None, keepdim=False):
    ax = _npaxis(dim)
    x = np.abs(a)
    if p in ("fro", 2):
        r = np.sqrt(np.sum(x * x, axis=ax, keepdims=keepdim))
    elif p == 1:
        r = np.sum(x, axis=ax, keepdims=keepdim)
    elif p == math.inf:
        r = np.max(x, axis=ax, keepdims=keepdim)
    elif p == 0:
        r = np.sum(x != 0, axis=ax, keepdims=keepdim)
    else:
        r = np.sum(x ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)
    return np.asarray(r).astype(a.dtype)


def _np_logsumexp(a, dim, keepdim=False):
    ax = _npaxis(dim)
    m = np.max(a, axis=ax, keepdims=True)
    m = np.where(np.isinf(m), 0, m)  # rows of all -inf give -inf, not nan
    r = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
    return r if keepdim else np.squeeze(r, axis=ax)


def _np_maxdim(npf, npa):
    def ref(a, dim, keepdim=False):
        return (np.asarray(npf(a, axis=dim, keepdims=keepdim)),
                np.asarray(npa(a, axis=dim, keepdims=keepdim)).astype(np.int64))
    return ref


def _np_arg(npa):
    def ref(a, dim=None, keepdim=False):
        return np.asarray(npa(a, axis=dim, keepdims=keepdim)).astype(np.int64)
    return ref


def _np_cumsum(a, dim):
    r = np.cumsum(a, axis=dim) if a.ndim else a.copy()
    return r if a.dtype.kind == "f" else r.astype(np.int64)


def _np_prod(a, dim=None, keepdim=False):
    r = np.asarray(np.prod(a, axis=dim, keepdims=keepdim))
    return r if a.dtype.kind == "f" else r.astype(np.int64)


def _np_scatter_add(a, dim, index, src):
    out = a.copy()
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    np.add.at(out, tuple(grid), src[tuple(slice(0, s) for s in index.shape)])
    return out


def _np_gather(a, dim, index):
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return a[tuple(grid)]


def _amax_vjp(dim=None, fn=np.max):
    def vjp(g, a):
        m = fn(a, axis=dim, keepdims=True)
        mask = (a == m).astype(np.float64)
        gg = g if dim is None else np.expand_dims(g, dim)
        return gg * mask / mask.sum(axis=dim, keepdims=True)
    return vjp


def _is_contig(out, *inputs):
    assert out.is_contiguous(), "contiguous() returned a non-contiguous tensor"


def _shares_input(out, x, *rest):
    assert out._base is (x._base if x._base is not None else x), "expected a view of the input"
