"""``out=`` on the top-level functions whose implementations predate the keyword (``torch.add(a, b, out=c)``).

Each listed ``coretorch.<name>`` is wrapped once, at import: without ``out`` the wrapper calls the op directly;
with it, the result is written by ``ops._out.write_out`` (PyTorch's rules: same device, castable dtype, resize with
its warning, no autograd).  Tensor methods and operators are not wrapped, so ``a + b`` pays nothing."""
from __future__ import annotations

import functools

from ..dtypes import bool_ as _bool, float32 as _f32, uint8 as _u8
from ..tensor import Tensor
from ._out import write_out

__all__ = ["install"]

# ops whose kernels check the out tensor's dtype exactly in PyTorch (indices, sorting, the where/cat family is
# castable)
_EXACT = frozenset(("argsort", "argmax", "argmin", "nonzero", "scatter_add", "index_add", "float_power", "amax", "amin",
                    "norm", "where", "index_select", "gather", "masked_select", "take", "index_copy", "slice_scatter",
                    "alias_copy", "detach_copy", "diagonal_copy", "squeeze_copy", "t_copy", "unfold_copy",
                    "unsqueeze_copy"))
# ops whose (values, indices) overload checks both dtypes exactly (the full reduction's single out is castable)
_EXACT_TUPLE = frozenset(("max", "min"))
# the unary ops PyTorch builds with one dtype for input and out (no cast: "Found dtype Double but expected Float")
_SAME_DTYPE = frozenset(("neg", "negative", "sign", "round", "floor", "ceil", "trunc", "fix", "abs", "absolute",
                         "bitwise_not", "clamp", "clip", "clamp_min", "clamp_max", "sgn", "conj_physical",
                         "hardshrink"))

NAMES = ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "maximum",
         "minimum", "pow", "remainder", "fmod", "exp", "log", "sqrt", "abs", "absolute", "neg", "negative",
         "sigmoid", "tanh", "clamp", "clip", "clamp_min", "clamp_max", "floor", "ceil", "round", "trunc", "fix",
         "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
         "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
         "bitwise_not", "where", "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "any",
         "all", "cat", "concat", "concatenate", "stack", "sin", "cos", "rsqrt", "reciprocal", "sign", "lerp",
         "expm1", "log1p", "erf", "square", "std", "var", "norm",
         "logsumexp", "index_select", "gather", "masked_select", "nonzero", "take", "argsort",
         "asin", "acos", "atan", "sinh", "cosh", "exp2", "log2", "log10", "median", "cummax", "cummin",
         "nansum", "scatter_add", "index_add", "float_power",
         # (found by review 24e's sweep: PyTorch takes out= on these too)
         "sgn", "conj_physical", "hardshrink", "ger", "index_copy", "slice_scatter", "alias_copy",
         "detach_copy", "diagonal_copy", "squeeze_copy", "t_copy", "unfold_copy", "unsqueeze_copy")


# ops whose PyTorch kernels do not check ``out`` against the inputs for memory overlap (reductions, index results)
_UNCHECKED = frozenset(("sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "any", "all", "std", "var", "norm",
                        "logsumexp", "nonzero", "argsort", "cummax", "cummin", "nansum"))


def _tensors(args, kwargs) -> list:
    """The tensor arguments (one level into lists and tuples: cat's and stack's sequences)."""
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found += [t for t in a if isinstance(t, Tensor)]
    return found


# reductions whose PyTorch out= kernels compute in the out tensor's dtype when no dtype is given (sum of floats into
# an int64 out sums the truncated values: 1.5 + 1.7 -> 2; mean of float32 into a float64 out is a float64 mean): the
# names mapped to whether an integer out qualifies (mean's does not: PyTorch's cast error)
_OUT_DTYPE = {"sum": True, "prod": True, "mean": False, "nansum": False}
# reductions without a ``dtype`` whose PyTorch out= kernels cast the input to a floating out tensor's dtype first
# (std of float32 into a float64 out is a float64 std): the names mapped to whether an integer input is cast too
_OUT_CAST = frozenset(("std", "var"))


def _wrap(name: str, fn):
    exact = name in _EXACT
    checked = name not in _UNCHECKED
    overload = _OUT_OVERLOADS.get(name)  # (chosen here, once: nothing to look up per call)
    out_dtype = _OUT_DTYPE.get(name)
    out_cast = name in _OUT_CAST
    lse = name == "logsumexp"
    logical = name in ("all", "any")
    tuple_exact = name in _EXACT_TUPLE
    same_dtype = name in _SAME_DTYPE

    @functools.wraps(fn)
    def op(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if overload is not None:
            overload(args, kwargs)
        if out_dtype is not None and kwargs.get("dtype") is None and isinstance(out, Tensor) \
                and (out_dtype or out.dtype.is_floating_point and args and isinstance(args[0], Tensor)
                     and args[0].dtype.is_floating_point):
            # (mean into a half out: PyTorch's float32 mean of the input as it is, rounded once into the out)
            kwargs["dtype"] = _f32 if name == "mean" and out.dtype.itemsize == 2 else out.dtype
        elif (out_cast or lse) and args and isinstance(out, Tensor) and isinstance(args[0], Tensor) \
                and out.dtype.is_floating_point and out.dtype is not args[0].dtype \
                and (lse or args[0].dtype.is_floating_point):
            if lse:  # (its exp in the input's dtype, the sum and log in the out's)
                return write_out(name, out, _logsumexp_into(args, kwargs, out.dtype), inputs=())
            args = (args[0].to(out.dtype), *args[1:])
        res = fn(*args, **kwargs)
        if logical and isinstance(out, Tensor) and isinstance(res, Tensor):
            res = _logical_result(name, out, res)
        if same_dtype and isinstance(out, Tensor) and isinstance(res, Tensor) and out.dtype is not res.dtype:
            raise RuntimeError(f"Found dtype {out.dtype._tname[:-6]} but expected {res.dtype._tname[:-6]}")
        return write_out(name, out, res, exact_dtype=exact or (tuple_exact and not isinstance(res, Tensor)),
                         inputs=_tensors(args, kwargs) if checked else ())

    setattr(op, "__wrapped_out__", True)
    return op


def _logical_result(name: str, out: Tensor, res: Tensor) -> Tensor:
    """PyTorch's all/any out= kernels take a bool or uint8 out only, whatever the input (a uint8 input's uint8
    result goes into a bool out as truth values)."""
    if out.dtype is _bool:
        return res if res.dtype is _bool else res.bool()
    if out.dtype is not _u8:
        raise RuntimeError(f"{name} only supports bool tensor for result, got: {out.dtype._tname[:-6]}")
    return res


def _logsumexp_into(args, kwargs, dt):
    """PyTorch's ``logsumexp(input, dim, keepdim, out=)`` into a floating out of another dtype."""
    from ._reduction_norm import logsumexp_into

    def call(input, dim, keepdim=False):
        return logsumexp_into(input, dim, keepdim, dt)
    return call(*args, **kwargs)


def _argsort_out_overload(args, kwargs) -> None:
    """PyTorch's one ``argsort`` overload with ``out`` takes ``stable`` as a keyword (and no positional ``dim``)."""
    if len(args) <= 1 and "stable" in kwargs:
        return
    got = ", ".join(["Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in args]
                    + [f"{k}={type(v).__name__}" for k, v in kwargs.items()] + ["out=Tensor"])
    raise TypeError(f"argsort() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                    " * (Tensor input, *, bool stable, int dim = -1, bool descending = False, Tensor out = None)\n"
                    " * (Tensor input, int dim = -1, bool descending = False)")


def _where_out_operands(args, kwargs) -> None:
    """PyTorch's ``where`` overload with ``out`` (where.self_out) takes tensors only: a Python scalar operand is its
    TypeError."""
    for pos, key in ((1, "input"), (2, "other")):
        v = args[pos] if len(args) > pos else kwargs.get(key)
        if v is not None and not isinstance(v, Tensor):
            raise TypeError(f"where(): argument '{key}' (position {pos + 1}) must be Tensor, not {type(v).__name__}")


# the ops whose PyTorch overload taking ``out`` accepts fewer argument forms than the op: their check, raising
# PyTorch's TypeError
_OUT_OVERLOADS = {"argsort": _argsort_out_overload, "where": _where_out_operands}


def install(namespace: dict) -> None:
    """Wrap the listed functions of ``namespace`` (the coretorch module's globals) that take no ``out`` yet."""
    import inspect
    for name in NAMES:
        fn = namespace.get(name)
        if fn is None or getattr(fn, "__wrapped_out__", False):
            continue
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if "out" in params:
            continue
        namespace[name] = _wrap(name, fn)
