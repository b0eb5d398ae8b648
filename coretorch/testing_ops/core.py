"""The core op table: elementwise, reduction, shape, indexing, linear-algebra and nn cases with their NumPy
references (the other families live beside it in coretorch/testing_ops)."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

import coretorch
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


def _build_cases() -> list[OpCase]:
    ct = coretorch
    F, I, B, H = FLOAT_DTYPES, INT_DTYPES, ("bool",), ("float16",)  # noqa: E741
    add, sub, mul = _binref(np.add), _binref(np.subtract), _binref(np.multiply)
    cases: list[OpCase] = []
    c = cases.extend
    npop: Any  # (loop variables reused across tables of different numpy callables)
    npf: Any
    ref: Any

    # ---- arithmetic operators (tensor-tensor, broadcasting, 0-d, empty, non-contiguous, scalars) ----
    fsc = (("", 1.5, F + ("int64", "bool")), ("_int", 2, F + I))
    c(_binary("__add__", operator.add, add, dtypes=F + I + B + H, gradgrad=True, scalars=fsc + (("_bool", True, I),)))
    # PyTorch refuses any bool operand of `-` (bool_tensor - 1.5 raises): no bool scalar cases
    c(_binary("__sub__", operator.sub, sub, dtypes=F + I, scalars=(("", 1.5, F + ("int64",)), ("_int", 2, F + I))))
    c(_binary("__mul__", operator.mul, mul, dtypes=F + I + B + H, gradgrad=True, scalars=fsc))
    c(_binary("__truediv__", operator.truediv, _binref(np.true_divide, "div"), ("any", "nonzero"),
              dtypes=F + I, gradgrad=True, scalars=(("", 1.5, F + I), ("_int", 2, F + I))))
    c(_binary("__pow__", operator.pow, _binref(np.power), ("positive", "small"), dtypes=F + I, gradgrad=True,
              scalars=(("", 1.5, F + ("int64",)), ("_int", 2, F + I))))
    c(_binary("__floordiv__", operator.floordiv, _binref(np.floor_divide), ("any", "nonzero"), dtypes=F + I,
              grad=False, nondiff=None, scalars=(("", 1.5, F + ("int64",)), ("_int", 2, F + I))))
    c(_binary("__mod__", operator.mod, _binref(np.remainder), ("any", "nonzero"), dtypes=F + I,
              scalars=(("", 1.5, F + ("int64",)), ("_int", 3, F + I))))
    c(_promotions("__add__", operator.add, add))
    cases += [OpCase("__add__.scalar_0d", lambda x: x + 1.5, lambda a: add(a, 1.5), (A(()),), F + I + B),
              OpCase("__mul__.rscalar_0d", lambda x: 2 * x, lambda a: mul(2, a), (A(()),), F + I + B)]
    c(_promotions("__mul__", operator.mul, mul))
    c(_promotions("__truediv__", operator.truediv, _binref(np.true_divide, "div"), ("any", "nonzero")))
    c(_promotions("__eq__", operator.eq, _binref(np.equal, "cmp"), ("small", "small"), grad=False))
    c(_promotions("maximum", ct.maximum, _binref(np.maximum), ("distinct", "distinct")))
    c(_promotions("__pow__", operator.pow, _binref(np.power), ("positive", "small")))
    for name, f in (("add", ct.add), ("sub", ct.sub), ("mul", ct.mul), ("div", ct.div)):
        npf = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}[name]
        doms = ("any", "nonzero") if name == "div" else ("any", "any")
        c(_binary(name, f, _binref(npf, "div" if name == "div" else "arith"), doms, dtypes=F + I,
                  pairs=_PAIRS[:2] + _PAIRS[7:8], scalars=(("", 2.5, F),)))
    cases += [
        OpCase("add.alpha", lambda x, y: ct.add(x, y, alpha=2), lambda a, b: a + 2 * b, (A(), A()), F + I),
        OpCase("sub.alpha", lambda x, y: ct.sub(x, y, alpha=0.5), lambda a, b: a - 0.5 * b, (A(), A())),
        OpCase("div.floor", lambda x, y: ct.div(x, y, rounding_mode="floor"), _binref(np.floor_divide),
               (A(), A((4, 5), "nonzero")), F + I, grad=False, nondiff=None),
        OpCase("div.trunc", lambda x, y: ct.div(x, y, rounding_mode="trunc"),
               _binref(lambda a, b: np.trunc(a / b).astype(np.result_type(a, b))), (A(), A((4, 5), "nonzero")),
               F + I, grad=False),
        OpCase("pow.tensor_exp", ct.pow, _binref(np.power), (A((3, 4), "any"), A((3, 4), "small", "int64")),
               ("float32", "float64"), grad=True),
        OpCase("__pow__.scalar_neg", lambda x: x ** -2.0, lambda a: _binref(np.power)(a, -2.0),
               (A((3, 4), "nonzero"),), F + I),
        OpCase("__pow__.int_neg_exp", lambda x, y: x ** y, _binref(_powi), (A((3, 4)), A((3, 4), "nonzero")), I,
               grad=False),
        OpCase("pow.int_neg_exp_bcast", ct.pow, _binref(_powi), (A((3, 1)), A((4,), "nonzero")), I, grad=False),
        OpCase("__floordiv__.int_by_zero", lambda x, y: x // y, None, (A((3,)), A((3,), "zeros")), I,
               raises=RuntimeError),
        OpCase("__mod__.int_by_zero", lambda x: x % 0, None, (A((3,)),), I, raises=RuntimeError),
        OpCase("__truediv__.by_zero", lambda x, y: x / y, _binref(np.true_divide, "div"), (A((5,)), A((5,), "zeros")),
               F + I, grad=False),
        OpCase("__floordiv__.float_by_zero", lambda x: x // 0.0, lambda a: _binref(np.floor_divide)(a, 0.0),
               (A((5,)),), F, grad=False, nondiff=None),
        OpCase("__pow__.int_neg_scalar", lambda x: x ** -1, None, (A((3,), "positive"),), I, raises=RuntimeError),
        OpCase("__sub__.bool", lambda x, y: x - y, None, (A((3,)), A((3,))), B, raises=RuntimeError),
        OpCase("__neg__.bool", lambda x: -x, None, (A((3,)),), B, raises=RuntimeError),
        OpCase("__neg__", lambda x: -x, lambda a: -a, (A(),), F + I, gradgrad=True),
        OpCase("__neg__.t", lambda x: -x, lambda a: -a, (A((4, 5), layout="t"),), F + I),
        OpCase("__neg__.0d", lambda x: -x, lambda a: -a, (A(()),), F + I),
    ]
    # matrix product operator
    cases += [OpCase("__matmul__", operator.matmul, np.matmul, (A((3, 4)), A((4, 5))), F + I, gradgrad=True),
              OpCase("__matmul__.t", operator.matmul, np.matmul, (A((3, 4), layout="t"), A((4, 2), layout="s"))),
              OpCase("__rmatmul__", lambda x, y: x.__rmatmul__(y), lambda a, b: b @ a, (A((4, 2)), A((3, 4))))]

    # ---- comparisons and logical/bitwise operators ----
    for name, op, npop in (("__eq__", operator.eq, np.equal), ("__ne__", operator.ne, np.not_equal),
                           ("__lt__", operator.lt, np.less), ("__le__", operator.le, np.less_equal),
                           ("__gt__", operator.gt, np.greater), ("__ge__", operator.ge, np.greater_equal)):
        c(_binary(name, op, _binref(npop, "cmp"), ("small", "small"), dtypes=F + I + B, grad=False,
                  scalars=(("", 0.5, F + I), ("_int", 1, F + I + B))))
    for name, op, npop in (("__and__", operator.and_, np.bitwise_and), ("__or__", operator.or_, np.bitwise_or),
                           ("__xor__", operator.xor, np.bitwise_xor)):
        c(_binary(name, op, _binref(npop), dtypes=B + I + ("uint8",), grad=False,
                  pairs=_PAIRS[:4] + _PAIRS[7:8], scalars=(("", 3, I), ("_bool", True, B + I))))
    cases += [OpCase("__and__.float", operator.and_, None, (A((3,)), A((3,))), F, raises=RuntimeError),
              OpCase("__invert__.float", operator.invert, None, (A((3,)),), F, raises=TypeError)]  # as PyTorch
    c(_unary("__invert__", operator.invert, np.invert, dtypes=B + I + ("uint8",), grad=False))
    for name, f, npf in (("logical_and", ct.logical_and, np.logical_and), ("logical_or", ct.logical_or,
                                                                             np.logical_or),
                         ("logical_xor", ct.logical_xor, np.logical_xor)):
        c(_binary(name, f, _binref(npf, "cmp"), ("small", "small"), dtypes=B + I + F, grad=False,
                  pairs=_PAIRS[:4]))
    c(_unary("logical_not", ct.logical_not, np.logical_not, "small", dtypes=B + I + F, grad=False))

    # ---- pointwise functions ----
    c(_unary("exp", ct.exp, _uref(np.exp, True), dtypes=F + I + H, gradgrad=True))
    c(_unary("log", ct.log, _uref(np.log, True), "positive", dtypes=F + ("int64",), gradgrad=True))
    c(_unary("sqrt", ct.sqrt, _uref(np.sqrt, True), "positive", dtypes=F + ("int64",), gradgrad=True))
    c(_unary("rsqrt", ct.rsqrt, _uref(lambda a: 1 / np.sqrt(a), True), "positive", dtypes=F + ("int64",),
             gradgrad=True))
    c(_unary("abs", ct.abs, _uref(np.abs), "nonzero", dtypes=F + I, gradgrad=True))
    c(_unary("sign", ct.sign, _uref(np.sign), "nonzero", dtypes=F + I))
    c(_unary("neg", ct.neg, _uref(np.negative), dtypes=F + I))
    c(_unary("reciprocal", ct.reciprocal, _uref(np.reciprocal, True), "nonzero", dtypes=F + I, gradgrad=True))
    c(_unary("sin", ct.sin, _uref(np.sin, True), dtypes=F + ("int64",), gradgrad=True))
    c(_unary("cos", ct.cos, _uref(np.cos, True), dtypes=F + ("int64",), gradgrad=True))
    c(_unary("tanh", ct.tanh, _uref(np.tanh, True), dtypes=F + ("int64",), gradgrad=True))
    c(_unary("sigmoid", ct.sigmoid, _uref(_sigmoid, True), dtypes=F + ("int64",), gradgrad=True))
    c(_unary("relu", ct.relu, _uref(lambda a: np.maximum(a, 0)), "nonzero", dtypes=F + I + H, gradgrad=True))
    cases += [
        # kinks: PyTorch's conventions at the non-differentiable point
        OpCase("relu.at0", ct.relu, _uref(lambda a: np.maximum(a, 0)), (A((6,), "zeros"),),
               vjp_ref=lambda g, a: g * (a > 0)),
        OpCase("abs.at0", ct.abs, _uref(np.abs), (A((6,), "zeros"),), vjp_ref=lambda g, a: g * np.sign(a)),
        OpCase("sign.grad", ct.sign, _uref(np.sign), (A((6,), "nonzero"),), vjp_ref=lambda g, a: 0 * g),
        OpCase("sign.at0", ct.sign, _uref(np.sign), (A((6,), "zeros"),), F + I, vjp_ref=lambda g, a: 0 * g),
    ]
    lo, hi = -0.4, 0.8   # "distinct" values are 0.2 + 0.4 k +- 0.05: no element is near a bound
    c(_unary("clamp", lambda x: ct.clamp(x, lo, hi), lambda a: np.clip(a, lo, hi), "distinct", gradgrad=True))
    cases += [
        OpCase("clamp.min", lambda x: ct.clamp(x, min=lo), lambda a: np.maximum(a, lo), (A((4, 5), "distinct"),)),
        OpCase("clamp.max", lambda x: x.clamp(max=hi), lambda a: np.minimum(a, hi), (A((4, 5), "distinct"),)),
        OpCase("clamp.int", lambda x: ct.clamp(x, -2, 3), lambda a: np.clip(a, -2, 3), (A((4, 5)),), I),
        OpCase("clamp.int_float_bound", lambda x: ct.clamp(x, min=0.5), lambda a: np.maximum(a, 0.5)
               .astype(DEFAULT_FLOAT), (A((4, 5)),), I),
        OpCase("clamp.tensor_bounds", lambda x, lo_, hi_: ct.clamp(x, lo_, hi_),
               lambda a, lo_, hi_: np.minimum(np.maximum(a, lo_), hi_),
               (A((4, 5), "distinct"), A((5,), "zeros"), A((4, 1), "positive"))),
        OpCase("clamp.at_bounds", lambda x: ct.clamp(x, -1.0, 1.0), lambda a: np.clip(a, -1.0, 1.0),
               (A((4,), "zeros"),), vjp_ref=lambda g, a: g * ((a >= -1) & (a <= 1))),
        OpCase("clamp.tensor_at_bounds", lambda x, lo_: ct.clamp(x, min=lo_), lambda a, lo_: np.maximum(a, lo_),
               (A((4,), "zeros"), A((4,), "zeros")), vjp_ref=lambda g, a, lo_: (g * (a >= lo_), g * (a < lo_))),
        OpCase("clamp.lo_gt_hi", lambda x: ct.clamp(x, hi, lo), lambda a: np.minimum(np.maximum(a, hi), lo),
               (A((4, 5), "distinct"),)),
        OpCase("clamp.tensor_lo_gt_hi", lambda x, lo_, hi_: ct.clamp(x, lo_ + 1, hi_ - 1),
               lambda a, lo_, hi_: np.minimum(np.maximum(a, lo_ + 1), hi_ - 1),
               (A((4, 5), "distinct"), A((5,), "small"), A((4, 1), "small"))),
        OpCase("clamp.tensor_promote", lambda x, lo_: ct.clamp(x, lo_), lambda a, lo_: np.maximum(a.astype(lo_.dtype),
                                                                                                  lo_),
               (A((4, 5), "distinct", "float32"), A((5,), "zeros", "float64"))),
        OpCase("clamp.tensor_min_only", lambda x, lo_: x.clamp(min=lo_), lambda a, lo_: np.maximum(a, lo_),
               (A((4, 5), "distinct"), A((4, 1), "zeros"))),
        OpCase("clamp.tensor_max_only", lambda x, hi_: ct.clamp(x, max=hi_), lambda a, hi_: np.minimum(a, hi_),
               (A((4, 5), "distinct"), A((), "zeros"))),
        OpCase("clip", lambda x: ct.clip(x, lo, hi), lambda a: np.clip(a, lo, hi), (A((4, 5), "distinct"),)),
        OpCase("clip.method", lambda x: x.clip(lo, hi), lambda a: np.clip(a, lo, hi), (A((4, 5), "distinct"),)),
    ]
    # pow / maximum / minimum as functions (with broadcasting), ties split the gradient
    c(_binary("pow", ct.pow, _binref(np.power), ("positive", "any"), gradgrad=True, pairs=_PAIRS[:4] + _PAIRS[7:]))
    c(_binary("maximum", ct.maximum, _binref(np.maximum), ("distinct", "distinct"), dtypes=F + I + B,
              gradgrad=True))
    c(_binary("minimum", ct.minimum, _binref(np.minimum), ("distinct", "distinct"), dtypes=F + I + B))
    for name, f, npf in (("maximum", ct.maximum, np.maximum), ("minimum", ct.minimum, np.minimum)):
        cases.append(OpCase(f"{name}.ties", f, _binref(npf), (A((4, 5), "distinct"), A((4, 5), "tie0"))))
        cases.append(OpCase(f"{name}.ties_vjp", f, _binref(npf), (A((6,), "distinct"), A((6,), "tie0")),
                            vjp_ref=lambda g, a, b, npf=npf: (
                                g * np.where(a == b, 0.5, npf(a, b) == a), g * np.where(a == b, 0.5, npf(a, b) == b))))
    cases.append(OpCase("max.other", lambda x, y: ct.max(x, y), _binref(np.maximum),
                        (A((4, 5), "distinct"), A((5,), "distinct"))))
    cases.append(OpCase("min.other", lambda x, y: ct.min(x, other=y), _binref(np.minimum),
                        (A((4, 5), "distinct"), A((5,), "distinct"))))

    # where / masked_fill / lerp
    def np_where(cond, a, b):
        dt = result_type(a, b)
        return np.where(cond, _cast(a, dt), _cast(b, dt)).astype(dt)
    cases += [
        OpCase("where", ct.where, np_where, (A((4, 5), "mask"), A(), A()), F + I, gradgrad=True),
        OpCase("where.bcast", ct.where, np_where, (A((4, 1), "mask"), A((5,)), A((4, 5)))),
        OpCase("where.t", ct.where, np_where, (A((4, 5), "mask", layout="t"), A(layout="t"), A(layout="s"))),
        OpCase("where.0d", ct.where, np_where, (A((), "mask"), A(()), A(()))),
        OpCase("where.empty", ct.where, np_where, (A((0, 3), "mask"), A((0, 3)), A((3,)))),
        OpCase("where.scalar", lambda c_, x: ct.where(c_, x, 0.0), lambda c_, a: np_where(c_, a, 0.0),
               (A((4, 5), "mask"), A()), F + I),
        OpCase("where.scalar_lhs", lambda c_, x: ct.where(c_, 2, x), lambda c_, a: np_where(c_, 2, a),
               (A((4, 5), "mask"), A()), F + I),
        OpCase("where.scalars", lambda c_: ct.where(c_, 1.0, 0), lambda c_: np_where(c_, 1.0, 0), (A((4, 5), "mask"),),
               grad=False),
        OpCase("where.int_scalars", lambda c_: ct.where(c_, 1, 0), lambda c_: np_where(c_, 1, 0), (A((4, 5), "mask"),),
               grad=False),
        OpCase("where.promote", ct.where, np_where, (A((3,), "mask"), A((3,), dtype="int32"),
                                                     A((3,), dtype="float64"))),
        OpCase("where.promote_float", ct.where, np_where, (A((3,), "mask"), A((3,), dtype="float32"),
                                                           A((2, 3), dtype="float64"))),
        OpCase("where.method", lambda x, c_, y: x.where(c_, y), lambda a, c_, b: np_where(c_, a, b),
               (A(), A((4, 5), "mask"), A((5,)))),
    ]
    mf = lambda a, m, v: np.asarray(np.where(m, v, a)).astype(a.dtype)  # noqa: E731
    cases += [
        OpCase("masked_fill", lambda x, m: ct.masked_fill(x, m, -1.5), lambda a, m: mf(a, m, -1.5),
               (A(), A((4, 5), "mask")), F),
        OpCase("masked_fill.int", lambda x, m: x.masked_fill(m, 7), lambda a, m: mf(a, m, 7),
               (A(), A((4, 5), "mask")), I + B),
        OpCase("masked_fill.int_float_value", lambda x, m: x.masked_fill(m, -2.5), lambda a, m: mf(a, m, -2.5),
               (A(), A((4, 5), "mask")), I),
        OpCase("masked_fill.bcast", lambda x, m: x.masked_fill(m, 2.0), lambda a, m: mf(a, m, 2.0),
               (A(), A((5,), "mask"))),
        OpCase("masked_fill.t", lambda x, m: x.masked_fill(m, 2.0), lambda a, m: mf(a, m, 2.0),
               (A(layout="t"), A((4, 5), "mask", layout="t"))),
        OpCase("masked_fill.tensor_value", lambda x, m, v: x.masked_fill(m, v), lambda a, m, v: mf(a, m, v),
               (A(), A((4, 5), "mask"), A(()))),
        OpCase("masked_fill.empty", lambda x, m: x.masked_fill(m, 2.0), lambda a, m: mf(a, m, 2.0),
               (A((0, 3)), A((0, 3), "mask"))),
        OpCase("lerp", lambda x, y: ct.lerp(x, y, 0.3), lambda a, b: a + 0.3 * (b - a), (A(), A()),
               gradgrad=True),
        OpCase("lerp.tensor_weight", ct.lerp, lambda a, b, w: a + w * (b - a), (A(), A((5,)), A((4, 1), "small"))),
        OpCase("lerp.t", lambda x, y: x.lerp(y, 0.75), lambda a, b: a + 0.75 * (b - a),
               (A(layout="t"), A(layout="s"))),
        OpCase("lerp.0d", lambda x, y: ct.lerp(x, y, 0.5), lambda a, b: a + 0.5 * (b - a), (A(()), A(()))),
    ]

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

    # ---- shape ops ----
    S = lambda name, fn, ref, args, dtypes=F, **kw: OpCase(name, fn, ref, args, dtypes, **kw)  # noqa: E731
    cases += [
        S("reshape", lambda x: x.reshape(5, 4), lambda a: a.reshape(5, 4), (A(),), F + I + B, gradgrad=True),
        S("reshape.infer", lambda x: ct.reshape(x, (2, -1)), lambda a: a.reshape(2, -1), (A(),)),
        S("reshape.t", lambda x: x.reshape(-1), lambda a: a.reshape(-1), (A(layout="t"),)),
        S("reshape.0d", lambda x: x.reshape(1, 1), lambda a: a.reshape(1, 1), (A(()),)),
        S("reshape.to0d", lambda x: x.reshape(()), lambda a: a.reshape(()), (A((1, 1)),)),
        S("reshape.empty", lambda x: x.reshape(3, 0), lambda a: a.reshape(3, 0), (A((0, 3)),)),
        S("view", lambda x: x.view(2, 10), lambda a: a.reshape(2, 10), (A(),), F + I, props=_shares_input),
        S("view.t_incompatible", lambda x: x.view(-1), None, (A(layout="t"),), raises=RuntimeError),
        S("reshape.expanded", lambda x: x.expand(3, 4, 5).reshape(12, 5),
          lambda a: np.broadcast_to(a, (3, 4, 5)).reshape(12, 5), (A((4, 1)),)),
        S("contiguous.expanded", lambda x: x.expand(3, 4).contiguous(), lambda a: np.broadcast_to(a, (3, 4)),
          (A((4,)),), props=_is_contig),
        S("view.infer", lambda x: x.view(-1, 2), lambda a: a.reshape(-1, 2), (A(),)),
        S("view.strided", lambda x: x.view(3, 2, 2), lambda a: a.reshape(3, 2, 2), (A((3, 4), layout="s"),)),
        S("view_as", lambda x, y: x.view_as(y), lambda a, b: a.reshape(b.shape), (A(), A((5, 4)))),
        S("flatten", ct.flatten, lambda a: a.reshape(-1), (A((2, 3, 4)),), F + I),
        S("flatten.range", lambda x: x.flatten(1, 2), lambda a: a.reshape(2, 12, 1), (A((2, 3, 4, 1)),)),
        S("flatten.0d", ct.flatten, lambda a: a.reshape(1), (A(()),)),
        S("flatten.t", lambda x: x.flatten(), lambda a: a.reshape(-1), (A(layout="t"),)),
        S("unflatten", lambda x: x.unflatten(1, (2, 3)), lambda a: a.reshape(4, 2, 3), (A((4, 6)),)),
        S("unflatten.infer", lambda x: ct.unflatten(x, -1, (-1, 2)), lambda a: a.reshape(4, 3, 2), (A((4, 6)),)),
        S("unflatten.t", lambda x: x.unflatten(0, (2, 2)), lambda a: a.reshape(2, 2, 5), (A(layout="t"),)),
        S("squeeze", ct.squeeze, np.squeeze, (A((4, 1, 5, 1)),), F + I),
        S("squeeze.dim", lambda x: x.squeeze(1), lambda a: np.squeeze(a, 1), (A((4, 1, 5, 1)),)),
        S("squeeze.dim_not1", lambda x: x.squeeze(0), lambda a: a, (A((4, 1, 5)),)),
        S("squeeze.dims", lambda x: x.squeeze((1, -1)), lambda a: np.squeeze(a, (1, 3)), (A((4, 1, 5, 1)),)),
        S("squeeze.0d", ct.squeeze, np.squeeze, (A(()),)),
        S("squeeze.t", lambda x: x.squeeze(1), lambda a: np.squeeze(a, 1), (A((4, 1, 5), layout="t"),)),
        S("squeeze.t0", lambda x: x.squeeze(0), lambda a: np.squeeze(a, 0), (A((1, 4, 5), layout="t"),)),
        S("unsqueeze", lambda x: x.unsqueeze(0), lambda a: a[None], (A(),), F + I),
        S("unsqueeze.neg", lambda x: ct.unsqueeze(x, -1), lambda a: a[..., None], (A(),)),
        S("unsqueeze.mid", lambda x: x.unsqueeze(1), lambda a: a[:, None], (A(layout="t"),)),
        S("unsqueeze.0d", lambda x: x.unsqueeze(0), lambda a: a[None], (A(()),)),
        S("permute", lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), (A((2, 3, 4)),), F + I,
          props=_shares_input),
        S("permute.tuple", lambda x: ct.permute(x, (1, -1, 0)), lambda a: a.transpose(1, 2, 0), (A((2, 3, 4)),)),
        S("permute.t", lambda x: x.permute(1, 0), lambda a: a.T, (A(layout="t"),)),
        S("transpose", lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2), (A((2, 3, 4)),), F + I),
        S("transpose.neg", lambda x: ct.transpose(x, -1, -2), lambda a: np.swapaxes(a, -1, -2), (A(),)),
        S("transpose.0d", lambda x: x.transpose(0, -1), lambda a: a, (A(()),)),
        S("expand", lambda x: x.expand(4, 5), lambda a: np.broadcast_to(a, (4, 5)), (A((4, 1)),), F + I,
          gradgrad=True),
        S("expand.lead", lambda x: x.expand(2, -1, 3), lambda a: np.broadcast_to(a, (2, 4, 3)), (A((4, 1)),)),
        S("expand.0d", lambda x: x.expand(3, 2), lambda a: np.broadcast_to(a, (3, 2)), (A(()),)),
        S("expand.same", lambda x: x.expand(-1, 5), lambda a: a, (A(),)),
        S("expand.strided", lambda x: x.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)),
          (A((3, 4), layout="s"),)),
        S("expand_as", lambda x, y: x.expand_as(y), lambda a, b: np.broadcast_to(a, b.shape), (A((5,)), A())),
        S("repeat", lambda x: x.repeat(2, 3), lambda a: np.tile(a, (2, 3)), (A((2, 3)),), F + I + B,
          gradgrad=True),
        S("repeat.lead", lambda x: x.repeat(2, 1, 2), lambda a: np.tile(a, (2, 1, 2)), (A((2, 3)),)),
        S("repeat.0d", lambda x: x.repeat(3), lambda a: np.tile(a, 3), (A(()),)),
        S("repeat.t", lambda x: x.repeat(1, 2), lambda a: np.tile(a, (1, 2)), (A((3, 4), layout="t"),)),
        S("flip", lambda x: x.flip(0), lambda a: np.flip(a, 0), (A(),), F + I + B),
        S("flip.dims", lambda x: ct.flip(x, (0, -1)), lambda a: np.flip(a, (0, 2)), (A((2, 3, 4)),)),
        S("flip.t", lambda x: x.flip(1), lambda a: np.flip(a, 1), (A(layout="t"),)),
        S("flip.0d", lambda x: x.flip(()), lambda a: a, (A(()),)),
        S("flip.0d_dim0", lambda x: x.flip(0), lambda a: a, (A(()),)),
        S("contiguous", lambda x: x.contiguous(), lambda a: a, (A(layout="t"),), F + I, props=_is_contig),
        S("contiguous.strided", lambda x: x.contiguous(), lambda a: a, (A((3, 4), layout="s"),), props=_is_contig),
        S("contiguous.already", lambda x: x.contiguous(), lambda a: a, (A(),), props=_is_contig),
        S("clone", lambda x: x.clone(), lambda a: a, (A(layout="t"),), F + I),
        S("cat", lambda x, y: ct.cat([x, y]), lambda a, b: np.concatenate([a, b]), (A((2, 5)), A((3, 5))),
          F + I + B, gradgrad=True),
        S("cat.dim1", lambda x, y, z: ct.cat((x, y, z), 1), lambda a, b, c_: np.concatenate([a, b, c_], 1),
          (A((3, 2)), A((3, 1)), A((3, 4)))),
        S("cat.neg", lambda x, y: ct.cat([x, y], -1), lambda a, b: np.concatenate([a, b], -1),
          (A((3, 2), layout="t"), A((3, 4), layout="s"))),
        S("cat.promote", lambda x, y: ct.cat([x, y]), lambda a, b: np.concatenate([a, b.astype(a.dtype)]),
          (A((2, 3)), A((2, 3), dtype="int32")), ("float32", "float64")),
        S("cat.promote_float", lambda x, y: ct.cat([x, y]), lambda a, b: np.concatenate([a.astype(b.dtype), b]),
          (A((2, 3), dtype="float32"), A((1, 3), dtype="float64"))),
        S("cat.empty", lambda x, y: ct.cat([x, y]), lambda a, b: np.concatenate([a, b]), (A((0, 3)), A((2, 3)))),
        S("cat.legacy_empty", lambda x, y: ct.cat([x, y]), lambda a, b: b, (A((0,)), A((2, 3)))),
        S("cat.single", lambda x: ct.cat([x]), lambda a: a, (A(),)),
        S("stack", lambda x, y: ct.stack([x, y]), lambda a, b: np.stack([a, b]), (A(), A()), F + I + B,
          gradgrad=True),
        S("stack.dim", lambda x, y: ct.stack([x, y], -1), lambda a, b: np.stack([a, b], -1),
          (A(layout="t"), A(layout="s"))),
        S("stack.0d", lambda x, y, z: ct.stack([x, y, z]), lambda a, b, c_: np.stack([a, b, c_]),
          (A(()), A(()), A(()))),
        S("split", lambda x: x.split(2), lambda a: tuple(np.split(a, [2, 4])), (A((5, 3)),), F + I),
        S("split.sizes", lambda x: ct.split(x, [1, 3, 1], 1), lambda a: tuple(np.split(a, [1, 4], 1)),
          (A((3, 5)),)),
        S("split.t", lambda x: x.split(3, dim=-1), lambda a: tuple(np.split(a, [3], -1)), (A(layout="t"),)),
        S("split.empty_part", lambda x: ct.split(x, [0, 3], 0), lambda a: (a[:0], a), (A((3, 2)),)),
        S("split.bad_sizes", lambda x: x.split([1, 1]), None, (A((3, 2)),), raises=RuntimeError),
        S("chunk.zero", lambda x: x.chunk(0), None, (A((3, 2)),), raises=RuntimeError),
        S("cat.dim_mismatch", lambda x, y: ct.cat([x, y], 1), None, (A((2, 3)), A((3, 3))), raises=RuntimeError),
        S("cat.0d", lambda x, y: ct.cat([x, y]), None, (A(()), A(())), raises=RuntimeError),
        S("stack.shape_mismatch", lambda x, y: ct.stack([x, y]), None, (A((2, 3)), A((3, 2))),
          raises=RuntimeError),
        S("repeat.too_few", lambda x: x.repeat(2), None, (A((2, 3)),), raises=RuntimeError),
        S("expand.bad", lambda x: x.expand(3, 5), None, (A((4, 1)),), raises=RuntimeError),
        S("flip.dup_dims", lambda x: x.flip((0, -2)), None, (A(),), raises=RuntimeError),
        S("reshape.bad", lambda x: x.reshape(3, -1), None, (A(),), raises=RuntimeError),
        S("chunk", lambda x: x.chunk(3), lambda a: tuple(np.split(a, [2, 4])), (A((5, 3)),), F + I),
        S("chunk.dim", lambda x: ct.chunk(x, 2, 1), lambda a: tuple(np.split(a, [3], 1)), (A((4, 5)),)),
        S("chunk.more_than_size", lambda x: x.chunk(4), lambda a: tuple(np.split(a, [1, 2])), (A((3, 2)),)),
        S("chunk.t", lambda x: x.chunk(2, -1), lambda a: tuple(np.split(a, [3], -1)), (A(layout="t"),)),
    ]

    # ---- indexing ops ----
    cases += [
        S("gather", lambda x, i: ct.gather(x, 1, i), lambda a, i: np.take_along_axis(a, i, 1),
          (A(), A((4, 3), "index:5")), F + I, gradgrad=True),
        S("gather.dim0", lambda x, i: x.gather(0, i), lambda a, i: _np_gather(a, 0, i), (A(), A((2, 3), "index:4"))),
        S("gather.neg", lambda x, i: x.gather(-1, i), lambda a, i: _np_gather(a, 2, i),
          (A((2, 3, 4)), A((2, 2, 6), "index:4"))),
        S("gather.t", lambda x, i: x.gather(1, i), lambda a, i: _np_gather(a, 1, i),
          (A(layout="t"), A((4, 3), "index:5", layout="t"))),
        S("gather.empty", lambda x, i: x.gather(1, i), lambda a, i: _np_gather(a, 1, i), (A(), A((4, 0), "index:5"))),
        S("scatter_add", lambda x, i, s: ct.scatter_add(x, 0, i, s), lambda a, i, s: _np_scatter_add(a, 0, i, s),
          (A(), A((6, 5), "index:4"), A((6, 5))), F + I, gradgrad=True),
        S("scatter_add.dim1", lambda x, i, s: x.scatter_add(1, i, s), lambda a, i, s: _np_scatter_add(a, 1, i, s),
          (A(), A((4, 3), "index:5"), A((4, 4)))),
        S("scatter_add.t", lambda x, i, s: x.scatter_add(-1, i, s), lambda a, i, s: _np_scatter_add(a, 1, i, s),
          (A(layout="t"), A((2, 3), "index:5"), A((3, 4), layout="s"))),
        S("index_select", lambda x, i: ct.index_select(x, 0, i), lambda a, i: np.take(a, i, 0),
          (A(), A((6,), "index:4")), F + I + B, gradgrad=True),
        S("index_select.dim1", lambda x, i: x.index_select(1, i), lambda a, i: np.take(a, i, 1),
          (A(), A((3,), "index:5"))),
        S("index_select.neg", lambda x, i: x.index_select(-1, i), lambda a, i: np.take(a, i, -1),
          (A((2, 3, 4), layout="t"), A((5,), "index:4"))),
        S("index_select.int32", lambda x, i: x.index_select(0, i), lambda a, i: np.take(a, i, 0),
          (A(), A((3,), "index:4", "int32"))),
        S("index_select.0d_index", lambda x, i: x.index_select(0, i), lambda a, i: np.take(a, i.reshape(1), 0),
          (A(), A((), "index:4"))),
        # PyTorch raises RuntimeError for gather/scatter indices out of range
        S("gather.neg_index", lambda x, i: x.gather(1, i - 5), None, (A(), A((4, 3), "index:5")),
          raises=RuntimeError),
        S("gather.out_of_range", lambda x, i: x.gather(1, i + 5), None, (A(), A((4, 3), "index:5")),
          raises=RuntimeError),
        S("scatter_add.neg_index", lambda x, i, s: x.scatter_add(0, i - 4, s), None,
          (A(), A((2, 5), "index:4"), A((2, 5))), raises=RuntimeError),
        S("index_select.neg_index", lambda x, i: x.index_select(0, i - 4), None, (A(), A((2,), "index:4")),
          raises=IndexError),
        S("index_select.empty", lambda x, i: x.index_select(1, i), lambda a, i: np.take(a, i, 1),
          (A(), A((0,), "index:5"))),
    ]
    # __getitem__: ints, slices with steps, None, ..., integer tensors/lists, boolean masks
    GI = (("int", lambda x: x[1]), ("int_neg", lambda x: x[-1, 2]), ("int_int", lambda x: x[1, 2]),
          ("slice", lambda x: x[1:3]), ("slice_step", lambda x: x[::2, 1::3]), ("slice_neg", lambda x: x[-3:, :-1]),
          ("slice_empty", lambda x: x[3:1]), ("slice_big", lambda x: x[1:100]), ("none", lambda x: x[None, :, None]),
          ("ellipsis", lambda x: x[..., 1]), ("ellipsis_none", lambda x: x[..., None, 1:]),
          ("list", lambda x: x[[0, 2, -1]]), ("list_dup", lambda x: x[[1, 1, 0]]),
          ("list_2d", lambda x: x[[0, 3], [1, 4]]), ("list_slice", lambda x: x[1:, [0, 2, 4]]),
          ("list_sep", lambda x: x[[0, 2], 1:3, [1, 0]] if x.ndim == 3 else x[[0, 2], 1:3]),
          ("nested_list", lambda x: x[([[0, 1], [2, 3]],)]), ("int_slice", lambda x: x[2, ::2]),
          ("all", lambda x: x[:]), ("ellipsis_only", lambda x: x[...]))
    for tag, key in GI:
        cases.append(S(f"__getitem__.{tag}", key, key, (A(),), F + I + B if tag in ("int", "list", "slice_step")
                       else F))
    cases += [
        S("__getitem__.3d_sep", lambda x: x[[0, 1], :, [2, 0]], lambda a: a[[0, 1], :, [2, 0]], (A((2, 3, 4)),)),
        S("__getitem__.t", lambda x: x[1:, ::2], lambda a: a[1:, ::2], (A(layout="t"),)),
        S("__getitem__.strided_list", lambda x: x[[0, 2]], lambda a: a[[0, 2]], (A((3, 4), layout="s"),)),
        S("__getitem__.0d_none", lambda x: x[None], lambda a: a[None], (A(()),)),
        S("__getitem__.0d_ellipsis", lambda x: x[...], lambda a: a[...], (A(()),)),
        S("__getitem__.tensor", lambda x, i: x[i], lambda a, i: a[i], (A(), A((3,), "sindex:4")), F + I),
        S("__getitem__.tensor_2d", lambda x, i: x[:, i], lambda a, i: a[:, i], (A(), A((2, 2), "index:5"))),
        S("__getitem__.tensor_pair", lambda x, i, j: x[i, j], lambda a, i, j: a[i, j],
          (A(), A((3, 1), "index:4"), A((2,), "index:5"))),
        S("__getitem__.tensor_0d", lambda x, i: x[i], lambda a, i: a[i], (A(), A((), "index:4"))),
        S("__getitem__.tensor_int32", lambda x, i: x[i], lambda a, i: a[i], (A(), A((3,), "index:4", "int32"))),
        S("__getitem__.mask", lambda x, m: x[m], lambda a, m: a[m], (A(), A((4, 5), "mask")), F + I + B),
        S("__getitem__.mask_rows", lambda x, m: x[m], lambda a, m: a[m], (A(), A((4,), "mask"))),
        S("__getitem__.mask_cols", lambda x, m: x[:, m], lambda a, m: a[:, m], (A(layout="t"), A((5,), "mask"))),
        S("__getitem__.mask_none", lambda x, m: x[m & False], lambda a, m: a[m & False], (A(), A((4, 5), "mask"))),
        S("__getitem__.mask_cmp", lambda x: x[x > 0], lambda a: a[a > 0], (A(),)),
        S("__getitem__.mask_3d", lambda x, m: x[m, 1], lambda a, m: a[m, 1], (A((2, 3, 4)), A((2, 3), "mask"))),
        S("__getitem__.empty", lambda x: x[:, 1], lambda a: a[:, 1], (A((0, 3)),)),
        S("__getitem__.true", lambda x: x[True], lambda a: a[True], (A(),)),
        S("__getitem__.false", lambda x: x[False], lambda a: a[False], (A(),)),
        S("__getitem__.tensor_int", lambda x, i: x[i, 2], lambda a, i: a[i, 2], (A(), A((3,), "index:4"))),
        S("__getitem__.numpy_int", lambda x: x[np.int64(2), 1:], lambda a: a[2, 1:], (A(),)),
        S("__getitem__.mask_mismatch", lambda x, m: x[m], None, (A(), A((5,), "mask")), raises=IndexError),
        S("__getitem__.neg_step", lambda x: x[::-1], None, (A(),), raises=ValueError),
        S("__getitem__.out_of_range", lambda x: x[4], None, (A(),), raises=IndexError),
        S("__getitem__.list_out_of_range", lambda x: x[:, [0, 5]], None, (A(),), raises=IndexError),
        S("__getitem__.too_many", lambda x: x[0, 0, 0], None, (A(),), raises=IndexError),
    ]
    return cases


CASES = _build_cases()
