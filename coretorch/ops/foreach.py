"""PyTorch's ``torch._foreach_*`` list ops, as optimizers (``_multi_tensor_sgd``, third-party optimizer packages),
EMA helpers and ``clip_grad_norm_`` use them: ``_foreach_X(tensors, ...)`` returns a tuple of new tensors,
``_foreach_X_(tensors, ...)`` updates each tensor in place and returns the list.

Each element is the ordinary tensor op (the same kernels, dtype promotion, broadcasting, autograd and errors as
``t.X(...)``); PyTorch's fused list kernels give the same values.  ``_foreach_add_`` sends a same-shape float pair
outside autograd straight to ``axpy_`` (an optimizer's hot path); every other pair takes the ordinary path.
Errors are PyTorch's: an empty list, lists of different lengths, a scalar list of another length, ``alpha`` with a
scalar.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable

from ..autograd.grad_mode import state as _gs
from ..tensor import Tensor
from . import inplace as _IP, pointwise as _P

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")


def _check_list(op: str, tensors) -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument 'self' (position 1) must be tuple of Tensors, not "
                            f"{type(t).__name__}")
    return tensors


def _others(op: str, self: list, other: Any, alpha: Any = 1) -> list:
    """``other`` per element: a scalar, a scalar list, a tensor list, or one tensor (0-d: a scalar for all)."""
    if isinstance(other, (list, tuple)):
        if other and all(isinstance(o, Tensor) for o in other):
            if len(other) != len(self):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(self)} and "
                                   f"{len(other)}")
            return list(other)
        if len(other) != len(self):
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        if alpha != 1:
            raise TypeError(f"{op}(): argument 'other' (position 2) must be tuple of Tensors, not "
                            f"{type(other).__name__}")
        return list(other)
    if alpha != 1 and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): argument 'other' (position 2) must be tuple of Tensors, not {type(other).__name__}")
    return [other] * len(self)


def _values(op: str, self: list, value: Any) -> list:
    """addcmul/addcdiv's ``value``: a scalar, a scalar list, or a 1-D tensor of one scalar per tensor."""
    if isinstance(value, Tensor):
        if value.dim() != 1 or value.numel() != len(self):
            raise RuntimeError(f"{op}: the scalars tensor must be 1-D with one value per tensor ({len(self)}), got "
                               f"shape {list(value.shape)}")
        return value.tolist()
    if isinstance(value, (list, tuple)):
        if len(value) != len(self):
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(value)
    return [value] * len(self)


def _unary(name: str) -> tuple[Callable, Callable]:
    def out_of_place(self) -> tuple:
        return tuple(getattr(t, name)() for t in _check_list(f"_foreach_{name}", self))

    def in_place(self) -> list:
        for t in _check_list(f"_foreach_{name}_", self):
            getattr(t, name + "_")()
        return self
    out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{name}_"
    out_of_place.__doc__ = f"``tuple(t.{name}() for t in self)``."
    in_place.__doc__ = f"``t.{name}_()`` for every tensor; returns ``self``."
    return out_of_place, in_place


def _binary(name: str, fn: Callable, ifn: Callable, takes_alpha: bool = False) -> tuple[Callable, Callable]:
    op = f"_foreach_{name}"
    if takes_alpha:
        def out_of_place(self, other, *, alpha=1) -> tuple:
            self = _check_list(op, self)
            return tuple(fn(t, o, alpha=alpha) if alpha != 1 else fn(t, o)
                         for t, o in zip(self, _others(op, self, other, alpha)))

        def in_place(self, other, *, alpha=1) -> list:
            ts = _check_list(op + "_", self)
            for t, o in zip(ts, _others(op + "_", ts, other, alpha)):
                if alpha != 1:
                    ifn(t, o, alpha=alpha)
                else:
                    ifn(t, o)
            return self
    else:
        def out_of_place(self, other) -> tuple:  # type: ignore[misc]
            self = _check_list(op, self)
            return tuple(fn(t, o) for t, o in zip(self, _others(op, self, other)))

        def in_place(self, other) -> list:  # type: ignore[misc]
            ts = _check_list(op + "_", self)
            for t, o in zip(ts, _others(op + "_", ts, other)):
                ifn(t, o)
            return self
    out_of_place.__name__, in_place.__name__ = op, op + "_"
    out_of_place.__doc__ = f"``{name}`` of each tensor with ``other`` (a scalar, a scalar list or a tensor list)."
    in_place.__doc__ = f"``{name}`` of each tensor with ``other`` in place; returns ``self``."
    return out_of_place, in_place


def _maximum(t, o):
    return t.clamp(min=o) if not isinstance(o, Tensor) else _P.maximum(t, o)


def _minimum(t, o):
    return t.clamp(max=o) if not isinstance(o, Tensor) else _P.minimum(t, o)


def _maximum_(t, o):
    return t.clamp_(min=o) if not isinstance(o, Tensor) else t.copy_(_P.maximum(t, o))


def _minimum_(t, o):
    return t.clamp_(max=o) if not isinstance(o, Tensor) else t.copy_(_P.minimum(t, o))


_BINARY = {
    "add": (lambda t, o, **k: t.add(o, **k), lambda t, o, **k: t.add_(o, **k), True),
    "sub": (lambda t, o, **k: t.sub(o, **k), lambda t, o, **k: t.sub_(o, **k), True),
    "mul": (lambda t, o: t.mul(o), lambda t, o: t.mul_(o), False),
    "div": (lambda t, o: t.div(o), lambda t, o: t.div_(o), False),
    "maximum": (_maximum, _maximum_, False),
    "minimum": (_minimum, _minimum_, False),
    "clamp_max": (lambda t, o: t.clamp(max=o), lambda t, o: t.clamp_(max=o), False),
    "clamp_min": (lambda t, o: t.clamp(min=o), lambda t, o: t.clamp_(min=o), False),
}

__all__: list[str] = []
_NS: dict[str, Any] = {}
for _n in _UNARY:
    _NS[f"_foreach_{_n}"], _NS[f"_foreach_{_n}_"] = _unary(_n)
for _n, (_f, _i, _a) in _BINARY.items():
    _NS[f"_foreach_{_n}"], _ip = _binary(_n, _f, _i, _a)
    if _n != "add":  # (_foreach_add_: its own below, with the axpy fast path)
        _NS[f"_foreach_{_n}_"] = _ip


def _foreach_add_(self: list, other, *, alpha=1) -> list:
    """``self[i].add_(other[i], alpha=alpha)`` for every i (``other`` a tensor list, a scalar list or one scalar);
    returns ``self``."""
    ts = _check_list("_foreach_add_", self)
    others = _others("_foreach_add_", ts, other, alpha)
    plain = not _gs.enabled  # outside autograd a same-shape float pair needs no graph and no promotion
    for t, o in zip(ts, others):
        # the pair binary_inplace would send to axpy_ anyway, without its per-call dispatch (2.4 % of a small
        # nn training step's instructions); every other pair goes through it
        be = t._be
        if plain and o.__class__ is Tensor and be is o._be and be.has_axpy and t.dtype is o.dtype \
                and t.dtype.is_floating_point and t._data.shape == o._data.shape:
            be.axpy_(t._data, alpha, o._data)
            t._vc[0] += 1
        else:
            _IP.binary_inplace(t, "add_", _P.add, o, alpha)
    return self


_NS["_foreach_add_"] = _foreach_add_


def _foreach_pow(self, exponent) -> tuple:
    """``t ** e`` for each tensor (``exponent`` a scalar, scalar list or tensor list), or ``self ** e`` for a scalar
    ``self`` and a tensor list of exponents."""
    if isinstance(self, numbers.Number):
        exps = _check_list("_foreach_pow", exponent)
        return tuple(_P.pow(self, e) for e in exps)
    ts = _check_list("_foreach_pow", self)
    return tuple(_P.pow(t, e) for t, e in zip(ts, _others("_foreach_pow", ts, exponent)))


def _foreach_pow_(self, exponent) -> list:
    ts = _check_list("_foreach_pow_", self)
    for t, e in zip(ts, _others("_foreach_pow_", ts, exponent)):
        t.pow_(e)
    return self


def _pointwise_with_value(name: str, what: str) -> tuple[Callable, Callable]:
    """``_foreach_addcmul``/``_foreach_addcdiv`` and their in-place forms: ``self[i] + value * tensor1[i] {what}
    tensor2[i]`` (``value`` a scalar, scalar list or 1-D tensor of scalars)."""
    op = f"_foreach_{name}"

    def operands(fname: str, self, tensor1, tensor2, value) -> tuple:
        ts = _check_list(fname, self)
        return (ts, _others(fname, ts, list(tensor1)), _others(fname, ts, list(tensor2)),
                _values(fname, ts, value))

    def out_of_place(self, tensor1, tensor2, value=1) -> tuple:
        ts, a, b, vs = operands(op, self, tensor1, tensor2, value)
        return tuple(getattr(t, name)(x, y, value=v) for t, x, y, v in zip(ts, a, b, vs))

    def in_place(self, tensor1, tensor2, value=1) -> list:
        ts, a, b, vs = operands(op + "_", self, tensor1, tensor2, value)
        for t, x, y, v in zip(ts, a, b, vs):
            getattr(t, name + "_")(x, y, value=v)
        return self
    out_of_place.__name__, in_place.__name__ = op, op + "_"
    out_of_place.__doc__ = f"``self[i] + value * tensor1[i] {what} tensor2[i]`` (``value``: a scalar, a scalar list " \
        "or a 1-D tensor of scalars)."
    in_place.__doc__ = f"``{name}`` of each tensor in place; returns ``self``."
    return out_of_place, in_place


_foreach_addcmul, _foreach_addcmul_ = _pointwise_with_value("addcmul", "*")
_foreach_addcdiv, _foreach_addcdiv_ = _pointwise_with_value("addcdiv", "/")


def _foreach_lerp(self, tensors1, weight) -> tuple:
    """``self[i] + weight * (tensors1[i] - self[i])`` (``weight`` a scalar, scalar list or tensor list)."""
    ts = _check_list("_foreach_lerp", self)
    ends = _others("_foreach_lerp", ts, list(tensors1))
    return tuple(t.lerp(e, w) for t, e, w in zip(ts, ends, _others("_foreach_lerp", ts, weight)))


def _foreach_lerp_(self, tensors1, weight) -> list:
    ts = _check_list("_foreach_lerp_", self)
    ends = _others("_foreach_lerp_", ts, list(tensors1))
    for t, e, w in zip(ts, ends, _others("_foreach_lerp_", ts, weight)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None) -> tuple:
    """``linalg.vector_norm(t, ord, dtype=dtype)`` of each tensor (0-d tensors)."""
    from ..linalg import vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _check_list("_foreach_norm", self))


def _foreach_max(self) -> tuple:
    """The largest element of each tensor (0-d tensors)."""
    out = []
    for t in _check_list("_foreach_max", self):
        if t.numel() == 0:
            raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max over zero elements "
                               "is undefined.")
        out.append(t.max())
    return tuple(out)


def _foreach_zero_(self) -> list:
    for t in _check_list("_foreach_zero_", self):
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking: bool = False) -> list:
    ts = _check_list("_foreach_copy_", self)
    for t, s in zip(ts, _others("_foreach_copy_", ts, list(src))):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_clone(self) -> tuple:
    return tuple(t.clone() for t in _check_list("_foreach_clone", self))


for _fn in (_foreach_pow, _foreach_pow_, _foreach_addcmul, _foreach_addcmul_, _foreach_addcdiv, _foreach_addcdiv_,
            _foreach_lerp, _foreach_lerp_, _foreach_norm, _foreach_max, _foreach_zero_, _foreach_copy_,
            _foreach_clone):
    _NS[_fn.__name__] = _fn
globals().update(_NS)
_foreach_mul_ = _NS["_foreach_mul_"]  # (named statically: the optimizers import it)
__all__ = sorted(_NS)
