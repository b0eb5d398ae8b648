"""The core op table's elementwise cases: operators, comparisons, pointwise functions, where/lerp."""
from __future__ import annotations


import operator
from typing import Any

import numpy as np

import coretorch
from coretorch.testing import (
    DEFAULT_FLOAT,
    FLOAT_DTYPES,
    OpCase,
)

from ._core_refs import (A, INT_DTYPES, _PAIRS, _binary, _binref, _cast, _powi, _promotions, _sigmoid, _unary, _uref,
                         result_type)


def pointwise_cases() -> list[OpCase]:
    ct = coretorch
    F, I, B, H = FLOAT_DTYPES, INT_DTYPES, ("bool",), ("float16",)  # noqa: E741
    add, sub, mul = _binref(np.add), _binref(np.subtract), _binref(np.multiply)
    cases: list[OpCase] = []
    c = cases.extend
    npop: Any  # (loop variables reused across tables of different numpy callables)
    npf: Any

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
    return cases
