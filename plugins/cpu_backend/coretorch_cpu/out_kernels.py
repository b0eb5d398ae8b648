"""The ``compile_out`` hook of the cpu kernel table: out variants of its elementwise, cast and matmul kernels for
coretorch.compile's planned temporaries (coretorch/_compile/plan.py).

An out variant ``fn(out, *args)`` writes into ``out`` exactly what the kernel returns: the same numpy ufunc (or the
same ufunc steps of a composite kernel) with ``out=``, so a replay stays bitwise equal to eager.  It is offered only
where that holds for sure: operands of the result's dtype (or Python numbers, which numpy treats as weak), dtypes
that the bfloat16/float16 wrappers of dtypes.py leave alone, and none of the kernels whose eager path branches on
values (integer powers, ``sign``) or whose eager path is cheaper than any ``out=`` form (``where``:
its bit masks beat ``np.copyto(..., where=)`` tenfold).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from coretorch._fpquiet import quiet_call as _quiet_call

_nd = np.ndarray
# dtypes whose kernels are the plain numpy calls (float16 and bfloat16 go through dtypes.py's float32 wrappers)
_PLAIN = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                         np.uint16, np.uint32, np.uint64, np.bool_))
_FLOAT = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _ufunc(uf: np.ufunc) -> Callable:
    """``uf`` into ``out`` (out as a positional argument: the cheapest ufunc call, below a fresh result's)."""
    if uf.nin == 1:
        def k1(out, x):
            uf(x, out)
            return out
        return k1
    if uf is np.maximum or uf is np.minimum:  # (numpy deprecates a positional out for these two)
        def kw(out, a, b):
            uf(a, b, out=out)
            return out
        return kw

    def k2(out, a, b):
        uf(a, b, out)
        return out
    return k2


def _into(uf: Callable, out, *args) -> None:
    uf(*args, out=out)


def _quiet(uf: Callable) -> Callable:
    def k(out, *args):
        _quiet_call(_into, uf, out, *args)
        return out
    return k


def _relu(out, x):
    np.maximum(0, x, out=out, dtype=x.dtype)  # (see backend._relu)
    return out


def _sigmoid(out, x):
    """backend._sigmoid's steps (1 / (1 + exp(-x))) into ``out``."""
    np.negative(x, out=out)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def _rsqrt_steps(x, out):
    np.sqrt(x, out=out)
    np.reciprocal(out, out=out)


def _rsqrt(out, x):
    _quiet_call(_rsqrt_steps, x, out)
    return out


_true_divide_quiet = _quiet(np.true_divide)


def _div(out, a, b):
    """backend._div: a divisor of magnitude >= 1 needs no error state."""
    if (b.__class__ is float or b.__class__ is int) and (b >= 1 or b <= -1):
        np.true_divide(a, b, out=out)
        return out
    return _true_divide_quiet(out, a, b)


def _cast(out, x, dt):
    if out.dtype == np.float32 and x.dtype == np.float64:  # as dtypes._cast: overflow to inf silently
        with np.errstate(invalid="ignore", over="ignore"):
            np.copyto(out, x, casting="unsafe")
    elif out.dtype == np.uint8 and x.dtype == np.float64:  # through int64, as dtypes._cast
        np.copyto(out, x.astype(np.int64), casting="unsafe")
    else:
        np.copyto(out, x, casting="unsafe")
    return out


def _linear(out, x, w, b):
    np.matmul(x, w.T, out=out)
    if b is not None:
        out += b
    return out


def _matmul(out, a, b):
    np.matmul(a, b, out=out)
    return out


def _clamp(out, x, lo, hi):
    if lo is None and hi is None:
        np.copyto(out, x)
        return out
    r = x
    if lo is not None:  # (bound first: a tie gives x, see backend._clamp)
        r = np.maximum(lo, x, out=out)
    if hi is not None:
        np.minimum(hi, r, out=out)
    return out


_UNARY = {"neg": _ufunc(np.negative), "abs": _ufunc(np.abs), "tanh": _ufunc(np.tanh),
          "logical_not": _ufunc(np.logical_not), "bitwise_not": _ufunc(np.invert), "isnan": _ufunc(np.isnan),
          "log": _quiet(np.log), "sqrt": _quiet(np.sqrt), "reciprocal": _quiet(np.reciprocal),
          "log1p": _quiet(np.log1p), "sin": _quiet(np.sin), "cos": _quiet(np.cos), "exp": _quiet(np.exp),
          "expm1": _quiet(np.expm1), "relu": _relu, "rsqrt": _rsqrt}
_FLOAT_UNARY = {"floor": _ufunc(np.floor), "ceil": _ufunc(np.ceil), "trunc": _ufunc(np.trunc),
                "sigmoid": _sigmoid}  # (integer floor & co. are copies; sigmoid only float32/64 here)
_BINARY = {"add": _ufunc(np.add), "sub": _ufunc(np.subtract), "mul": _ufunc(np.multiply),
           "maximum": _ufunc(np.maximum), "minimum": _ufunc(np.minimum), "eq": _ufunc(np.equal),
           "ne": _ufunc(np.not_equal), "lt": _ufunc(np.less), "le": _ufunc(np.less_equal), "gt": _ufunc(np.greater),
           "ge": _ufunc(np.greater_equal), "logical_and": _ufunc(np.logical_and), "logical_or": _ufunc(np.logical_or),
           "logical_xor": _ufunc(np.logical_xor), "bitwise_and": _ufunc(np.bitwise_and),
           "bitwise_or": _ufunc(np.bitwise_or), "bitwise_xor": _ufunc(np.bitwise_xor), "div": _div,
           "floor_divide": _quiet(np.floor_divide)}
_COMPARE = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "isnan",
                      "logical_not"))


def _weak(v: Any) -> bool:
    """A Python number (numpy types it by the array operand, NEP 50)."""
    return isinstance(v, (bool, int, float)) and not isinstance(v, np.generic)


def compile_out(name: str, args: tuple, kwargs: dict, result: Any):
    """The out variant of launch ``name(*args)`` whose result was ``result``, or None (see the module docstring)."""
    if kwargs or result.__class__ is not _nd or result.dtype not in _PLAIN or result.base is not None \
            or not (result.flags.c_contiguous or result.flags.f_contiguous):
        return None
    arrays = [a for a in args if a.__class__ is _nd]
    if any(not (a.__class__ is _nd or _weak(a) or a is None) for a in args):
        if name != "cast":
            return None
    dt = result.dtype
    if name in _UNARY or name in _FLOAT_UNARY or name in _BINARY:
        fn = _UNARY.get(name) or _FLOAT_UNARY.get(name) or _BINARY.get(name)
        src = arrays[0].dtype if arrays else None
        if src is None or any(a.dtype != src for a in arrays) or src not in _PLAIN:
            return None
        if name in _COMPARE:
            return fn if dt == np.bool_ else None
        if name in _FLOAT_UNARY and dt not in _FLOAT:
            return None
        return fn if src == dt else None
    if name == "cast":
        if len(args) != 2 or args[0].__class__ is not _nd or args[0].dtype not in _PLAIN:
            return None
        return _cast
    if name in ("matmul", "linear"):
        if dt not in _FLOAT or any(a.dtype != dt for a in arrays) or len(arrays) < 2 or arrays[0].ndim < 2 \
                or arrays[1].ndim < 2 or not result.flags.c_contiguous:
            return None
        return _matmul if name == "matmul" else _linear
    if name == "clamp":
        if dt not in _FLOAT or arrays[0].dtype != dt or not all(v is None or _weak(v) for v in args[1:]):
            return None
        return _clamp
    return None


def _empty_like(x: Any) -> Any:
    r = np.empty_like(x)
    if r.strides != x.strides:  # (empty_like keeps a dense layout's strides: the plan only offers dense ones)
        if any(a != b and n != 1 for n, a, b in zip(x.shape, x.strides, r.strides)):
            raise ValueError("coretorch-cpu: compile_out.empty_like could not keep the strides")
        # a size-1 dim's stride addresses nothing (numpy keeps what an operand had, x[:, None] of a (4,) view):
        # the same memory viewed with x's strides, as eager's result has them
        r = np.lib.stride_tricks.as_strided(r, x.shape, x.strides)
    return r


compile_out.empty_like = _empty_like  # type: ignore[attr-defined]
# numpy's results follow their operands' layouts (order K): a planned buffer has the capture's (plan.py checks the
# persistent arrays a replay loads)
compile_out.follows_operands = True  # type: ignore[attr-defined]
