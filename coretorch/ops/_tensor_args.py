"""PyTorch's argument check of the binary ops that take only Tensors: ``torch.maximum(x, 2)`` raises
``TypeError: maximum(): argument 'other' (position 2) must be Tensor, not int`` (PyTorch has no Scalar overload for
them, unlike add/mul/pow/remainder/fmod/copysign/xlogy, which accept numbers and are not listed here).

The public functions (``coretorch.<name>``) and Tensor methods are wrapped once, at import; the op layer's own
functions stay permissive (internal code passes Python numbers to them) and the operators pay nothing."""
from __future__ import annotations

import functools

from ..tensor import Tensor

__all__ = ["install"]

# op -> the name PyTorch gives its second argument
NAMES = {"maximum": "other", "minimum": "other", "fmax": "other", "fmin": "other", "atan2": "other",
         "arctan2": "other", "logical_and": "other", "logical_or": "other", "logical_xor": "other",
         "hypot": "other", "ldexp": "other", "logaddexp": "other", "logaddexp2": "other", "dist": "other",
         "isclose": "other", "equal": "other", "allclose": "other", "kron": "other", "inner": "other",
         "cross": "other", "vdot": "other", "heaviside": "values", "dot": "tensor", "outer": "vec2", "ger": "vec2",
         "mv": "vec"}  # (not matmul/mm/bmm: hot paths, kept free of a wrapper; matmul raises a TypeError already)
INPLACE = ("atan2", "arctan2", "logical_and", "logical_or", "logical_xor", "hypot", "ldexp", "heaviside")


# ops with a Tensor and a Number overload but none for a number first: torch.eq(2, x) raises (x.eq(2), 2 == x work)
FIRST_TENSOR = ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
                "copysign", "fmod")


def _first_tensor(op: str, fn):
    @functools.wraps(fn)
    def f(*args, **kwargs):
        if args and args[0].__class__ is not Tensor and not isinstance(args[0], Tensor):
            got = ", ".join(type(a).__name__ for a in args)
            raise TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected one "
                            "of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, Number "
                            "other, *, Tensor out = None)")
        return fn(*args, **kwargs)
    return f


def _error(op: str, name: str, pos, value) -> TypeError:
    where = f" (position {pos})" if pos else ""
    return TypeError(f"{op}(): argument '{name}'{where} must be Tensor, not {type(value).__name__}")


def _function(op: str, name: str, fn):
    @functools.wraps(fn)
    def f(*args, **kwargs):
        if not args and "input" in kwargs:  # (by keyword too, torch.atan2(input=x, other=y): PyTorch's name)
            args = (kwargs.pop("input"),)
        if args and args[0].__class__ is not Tensor and not isinstance(args[0], Tensor):
            raise _error(op, "input", 1, args[0])
        if len(args) > 1:
            if args[1].__class__ is not Tensor and not isinstance(args[1], Tensor):
                raise _error(op, name, 2, args[1])
        elif name in kwargs:  # by keyword, PyTorch's name (whatever the op layer calls the parameter)
            v = kwargs.pop(name)
            if not isinstance(v, Tensor):
                raise _error(op, name, None, v)
            args = (*args, v)
        return fn(*args, **kwargs)
    return f


def _method(op: str, name: str, fn):
    @functools.wraps(fn)
    def m(self, *args, **kwargs):
        if args:
            if args[0].__class__ is not Tensor and not isinstance(args[0], Tensor):
                raise _error(op, name, 1, args[0])
        elif name in kwargs:
            v = kwargs.pop(name)
            if not isinstance(v, Tensor):
                raise _error(op, name, None, v)
            args = (v,)
        return fn(self, *args, **kwargs)
    return m


def install(namespace: dict) -> None:
    """Wrap the listed functions of ``namespace`` (the coretorch module's globals) and the Tensor methods."""
    for op in FIRST_TENSOR:
        fn = namespace.get(op)
        if fn is not None:
            namespace[op] = _first_tensor(op, fn)
    for op, name in NAMES.items():
        fn = namespace.get(op)
        if fn is not None:
            namespace[op] = _function(op, name, fn)
        for meth in (op, op + "_") if op in INPLACE else (op,):
            fm = Tensor.__dict__.get(meth)
            if fm is not None and callable(fm):
                setattr(Tensor, meth, _method(meth, name, fm))
