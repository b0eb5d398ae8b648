"""dtype objects and PyTorch's type-promotion rules."""
from __future__ import annotations

import numpy as np

__all__ = ["dtype", "result_type", "promote_types"]

# categories: bool < integer < floating (PyTorch's ordering for promotion)
_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "category", "_tname")

    def __init__(self, name: str, np_dtype, category: int, tname: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_floating_point = category == _FLOAT
        self.is_signed = self.np.kind in "fi"
        self._tname = tname  # legacy type name: torch.FloatTensor etc.

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"coretorch.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> "dtype":
        return self


float16 = dtype("float16", np.float16, _FLOAT, "HalfTensor")
float32 = dtype("float32", np.float32, _FLOAT, "FloatTensor")
float64 = dtype("float64", np.float64, _FLOAT, "DoubleTensor")
uint8 = dtype("uint8", np.uint8, _INT, "ByteTensor")
int8 = dtype("int8", np.int8, _INT, "CharTensor")
int16 = dtype("int16", np.int16, _INT, "ShortTensor")
int32 = dtype("int32", np.int32, _INT, "IntTensor")
int64 = dtype("int64", np.int64, _INT, "LongTensor")
bool_ = dtype("bool", np.bool_, _BOOL, "BoolTensor")

all_dtypes = (float16, float32, float64, uint8, int8, int16, int32, int64, bool_)
_NAMES = {d.name: d for d in all_dtypes}
_FROM_NP = {d.np: d for d in all_dtypes}
aliases = {"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
           "short": int16, "bool": bool_}


def _by_name(name: str) -> dtype:
    return _NAMES[name]


def from_numpy_dtype(npd) -> dtype:
    try:
        return _FROM_NP[np.dtype(npd)]
    except KeyError:
        raise TypeError(f"can't convert numpy array of type {np.dtype(npd)}; the supported types are: "
                        + ", ".join(d.name for d in all_dtypes)) from None


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        return hi  # float beats any int; int beats bool (torch: int64 + float16 -> float16)
    if a.category == _FLOAT:
        return a if a.itemsize >= b.itemsize else b
    return _FROM_NP.get(np.promote_types(a.np, b.np), int64)  # ints: numpy agrees with torch (u8+i8 -> i16)


_PROMO = {(a, b): _promote_pair(a, b) for a in all_dtypes for b in all_dtypes}


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types."""
    return _PROMO[(a, b)]


def _combine(higher, lower):
    # c10's combine_categories: a higher-priority operand wins unless a lower one is of a higher category
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _FLOAT:
        return higher
    if higher is bool_ or lower.category == _FLOAT:
        return _PROMO[(higher, lower)]
    return higher


def result_type(operands, default_float: dtype) -> dtype:
    """PyTorch's result_type over tensors (dimensioned / 0-d) and Python scalars."""
    dim = zero = wrapped = None
    for o in operands:
        t = type(o)
        if t is bool:
            d = bool_
            wrapped = d if wrapped is None else _PROMO[(wrapped, d)]
        elif t is int:
            d = int64
            wrapped = d if wrapped is None else _PROMO[(wrapped, d)]
        elif t is float:
            d = default_float
            wrapped = d if wrapped is None else _PROMO[(wrapped, d)]
        elif hasattr(o, "dtype") and isinstance(o.dtype, dtype):
            if o.ndim == 0:
                zero = o.dtype if zero is None else _PROMO[(zero, o.dtype)]
            else:
                dim = o.dtype if dim is None else _PROMO[(dim, o.dtype)]
        elif isinstance(o, (np.floating, np.integer, np.bool_)):
            return result_type([x.item() if isinstance(x, np.generic) else x for x in operands], default_float)
        else:
            raise TypeError(f"unsupported operand type {type(o).__name__}")
    return _combine(dim, _combine(zero, wrapped))


#: the default floating point dtype (torch.get_default_dtype / set_default_dtype)
default = float32


_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
            "float16": "at::Half", "float32": "float", "float64": "double"}
_LIMITS: dict = {}


def fit_scalar(value, d: dtype):
    """PyTorch's checked conversion of a Python number stored into a tensor of dtype ``d`` (fill_, full,
    ``x[i] = v``): RuntimeError "value cannot be converted to type int8_t without overflow".  Returns the
    value to store (a negative int stored into uint8 wraps, as in c10's ``overflows``)."""
    if d is bool_ or isinstance(value, bool):
        return value
    lim = _LIMITS.get(d)
    if lim is None:
        if d.category == _INT:
            info = np.iinfo(d.np)
            lim = (int(info.min), int(info.max))
        else:
            info = np.finfo(d.np)
            lim = (float(info.min), float(info.max))
        lim = _LIMITS[d] = lim
    lo, hi = lim
    if lo <= value <= hi:
        return value
    if d.category == _FLOAT:
        if value != value or value in (float("inf"), float("-inf")):
            return value
    elif lo == 0 and isinstance(value, int) and -hi <= value < 0:
        return value + hi + 1
    raise RuntimeError(f"value cannot be converted to type {_C_NAMES[d.name]} without overflow")
