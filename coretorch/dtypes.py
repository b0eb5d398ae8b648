"""dtype objects and PyTorch's type-promotion rules."""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["dtype", "result_type", "promote_types", "can_cast", "finfo", "iinfo", "is_storage"]

# categories: bool < integer < floating (PyTorch's ordering for promotion)
_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:
    """A tensor element type (``coretorch.float32``, ``int64``, ``bool``, ...).

    Attributes: ``is_floating_point``, ``is_signed``, ``itemsize``; ``coretorch.finfo`` / ``iinfo`` give the
    numeric limits.
    """
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "category", "_tname")

    def __init__(self, name: str, np_dtype, category: int, tname: str, itemsize: int = 0):
        self.name = name
        if np_dtype is not None:  # None: bfloat16, whose numpy dtype is loaded on first use (see __getattr__)
            self.np = np.dtype(np_dtype)
        self.itemsize = itemsize or self.np.itemsize
        self.category = category
        self.is_floating_point = category == _FLOAT
        self.is_signed = category == _FLOAT or np.dtype(np_dtype or np.float32).kind == "i"
        self._tname = tname  # legacy type name: torch.FloatTensor etc.

    def __getattr__(self, name: str):
        # reached only while a slot is unset: bfloat16's ``np`` before its first use
        if name == "np" and self.name == "bfloat16":
            return _load_bfloat16()
        raise AttributeError(f"'torch.dtype' object has no attribute '{name}'")

    @property
    def is_complex(self) -> bool:
        """Always False: coretorch has no complex dtypes."""
        return False

    def __repr__(self) -> str:
        return f"coretorch.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> "dtype":
        """The real dtype of this dtype (itself: coretorch has no complex dtypes)."""
        return self


float16 = dtype("float16", np.float16, _FLOAT, "HalfTensor")
float32 = dtype("float32", np.float32, _FLOAT, "FloatTensor")
float64 = dtype("float64", np.float64, _FLOAT, "DoubleTensor")
bfloat16 = dtype("bfloat16", None, _FLOAT, "BFloat16Tensor", 2)  # stored as ml_dtypes' numpy dtype, loaded lazily
uint8 = dtype("uint8", np.uint8, _INT, "ByteTensor")
int8 = dtype("int8", np.int8, _INT, "CharTensor")
int16 = dtype("int16", np.int16, _INT, "ShortTensor")
int32 = dtype("int32", np.int32, _INT, "IntTensor")
int64 = dtype("int64", np.int64, _INT, "LongTensor")
bool_ = dtype("bool", np.bool_, _BOOL, "BoolTensor")

all_dtypes = (float16, float32, float64, uint8, int8, int16, int32, int64, bool_, bfloat16)
_NAMES = {d.name: d for d in all_dtypes}
_FROM_NP = {d.np: d for d in all_dtypes if d is not bfloat16}
_BF16_LISTENERS: list[Callable[[np.dtype], None]] = []
#: what backends hold in place of bfloat16's numpy dtype until ``on_bfloat16`` tells them the real one: no array can
#: have it (no bfloat16 array exists before bfloat16 is first used)
BFLOAT16_NOT_LOADED = np.dtype([("bfloat16 not loaded", np.uint16)])


BFLOAT16_NEEDS = ("bfloat16 tensors are stored as numpy arrays of ml_dtypes' bfloat16, and the ml_dtypes package "
                  "is not installed: pip install ml_dtypes (a dependency of coretorch-cpu, which installs it: "
                  "pip install coretorch-cpu)")


def _load_bfloat16() -> np.dtype:
    """Import ml_dtypes (about 1 s of start-up with ml_dtypes 0.7, so only when bfloat16 is first used) and
    publish its numpy dtype to the core and to the backends that asked through ``on_bfloat16``.

    ml_dtypes is a dependency of the device plugins that store bfloat16 in numpy arrays (coretorch-cpu, hence
    coretorch-opencl), not of the core: without it, the first use raises ModuleNotFoundError saying so."""
    try:
        import ml_dtypes
    except ImportError as e:
        raise ModuleNotFoundError(BFLOAT16_NEEDS, name="ml_dtypes") from e
    npd = np.dtype(ml_dtypes.bfloat16)
    _FROM_NP[npd] = bfloat16
    for fn in _BF16_LISTENERS:
        fn(npd)
    # published last: another thread that sees bfloat16.np set makes bfloat16 arrays, which every backend must
    # already know (the cpu backend's sums would accumulate in bfloat16); until then it loads (and tells) again
    bfloat16.np = npd
    return npd


def on_bfloat16(fn: Callable[[np.dtype], None]) -> None:
    """Call ``fn(numpy_dtype)`` once bfloat16's numpy dtype (ml_dtypes') is loaded: now if it already is.

    For backends that keep the dtype in module-level tables: ml_dtypes is imported on bfloat16's first use, not at
    ``import coretorch``, because importing it costs about a second."""
    _BF16_LISTENERS.append(fn)
    if _is_loaded():
        fn(bfloat16.np)


def _is_loaded() -> bool:
    try:
        object.__getattribute__(bfloat16, "np")
    except AttributeError:
        return False
    return True
aliases = {"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
           "short": int16, "bool": bool_}


def _by_name(name: str) -> dtype:
    return _NAMES[name]


_PY_TYPES = {float: float64, int: int64, bool: bool_}


def from_python_type(d):
    """A ``dtype=`` argument as PyTorch's parser reads it: the Python types float, int and bool are float64, int64
    and bool; anything else is returned as it is (checked by the caller)."""
    return _PY_TYPES.get(d, d) if d.__class__ is type else d


def from_numpy_dtype(npd) -> dtype:
    try:
        return _FROM_NP[np.dtype(npd)]
    except KeyError:
        if np.dtype(npd).name == "bfloat16" and not _is_loaded():  # an ml_dtypes array made before our first use
            _load_bfloat16()
            return _FROM_NP[np.dtype(npd)]
        if not np.dtype(npd).isnative and np.dtype(npd).newbyteorder("=") in _FROM_NP:
            raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                             "between byte orders is currently not supported (convert it first: "
                             "arr.astype(arr.dtype.newbyteorder('=')))")
        raise TypeError(f"can't convert numpy array of type {np.dtype(npd)}; the supported types are: "
                        + ", ".join(d.name for d in all_dtypes)) from None


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        return hi  # float beats any int; int beats bool (torch: int64 + float16 -> float16)
    if a.category == _FLOAT:
        if a.itemsize == b.itemsize:
            return float32  # float16 + bfloat16: neither holds the other
        return a if a.itemsize > b.itemsize else b
    return _FROM_NP.get(np.promote_types(a.np, b.np), int64)  # ints: numpy agrees with torch (u8+i8 -> i16)


_PROMO = {(a, b): _promote_pair(a, b) for a in all_dtypes for b in all_dtypes}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both ``type1`` and ``type2`` convert to without losing category."""
    try:
        return _PROMO[(from_python_type(type1), from_python_type(type2))]  # (float: float64, as PyTorch's)
    except (KeyError, TypeError):
        bad = type1 if not isinstance(type1, dtype) else type2
        raise TypeError(f"promote_types(): argument must be torch.dtype, not {type(bad).__name__}") from None


def can_cast(from_: dtype, to: dtype) -> bool:
    """torch.can_cast: PyTorch's casting rule for in-place ops.  float -> integer and anything but bool -> bool are
    not allowed (bool is a category of its own); everything else, down and up a category, is."""
    from_, to = from_python_type(from_), from_python_type(to)  # (int: int64, as PyTorch's)
    if not isinstance(from_, dtype) or not isinstance(to, dtype):
        bad = from_ if not isinstance(from_, dtype) else to
        raise TypeError(f"can_cast(): argument must be torch.dtype, not {type(bad).__name__}")
    return from_.category <= to.category


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
            return result_type([py_scalar(x) for x in operands], default_float)
        elif isinstance(o, float):  # a float subclass (coretorch.compile's symbolic numbers): a Python float
            wrapped = default_float if wrapped is None else _PROMO[(wrapped, default_float)]
        else:
            raise TypeError(f"unsupported operand type {type(o).__name__}")
    return _combine(dim, _combine(zero, wrapped))


#: the default floating point dtype (torch.get_default_dtype / set_default_dtype)
default = float32


_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
            "float16": "c10::Half", "float32": "float", "float64": "double", "bfloat16": "c10::BFloat16"}
_LIMITS: dict = {}


# the dtypes' names in PyTorch's C++ messages ("expected ... dtype float", "out of bounds for signed char")
_CPP_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
              "int64": "long int", "bool": "bool", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "float32": "float", "float64": "double"}


def cpp_name(d: dtype) -> str:
    """The C++ type name PyTorch's messages print for a dtype ("signed char", "c10::Half", "long int")."""
    return _CPP_NAMES.get(d.name, d.name)


def py_scalar(value):
    """A numpy number as the Python number PyTorch's argument parser makes of it (its ``Scalar``): a numpy
    integer an int, a numpy float a float, and a numpy bool a float too (PyTorch unpacks every non-``bool``,
    non-``int`` number as a double: ``torch.tensor([True]) + np.bool_(True)`` is ``tensor([2.])``); anything
    else as it is."""
    if isinstance(value, np.generic):
        return int(value) if isinstance(value, np.integer) else float(value)
    return value


def fit_scalar(value, d: dtype):
    """PyTorch's checked conversion of a Python number stored into a tensor of dtype ``d`` (fill_, full,
    ``x[i] = v``): RuntimeError "value cannot be converted to type int8_t without overflow".  Returns the
    value to store (a negative int stored into uint8 wraps, as in c10's ``overflows``; a numpy number as a
    Python number, see ``py_scalar``)."""
    if isinstance(value, np.generic):
        value = py_scalar(value)
    if d is bool_ or isinstance(value, bool):
        return value
    lim = _LIMITS.get(d)
    if lim is None:
        if d.category == _INT:
            info = np.iinfo(d.np)
            lim = (int(info.min), int(info.max))
        else:
            info = _finfo(d)
            lim = (float(info.min), float(info.max))
        lim = _LIMITS[d] = lim
    lo, hi = lim
    if lo <= value <= hi:
        if d.itemsize == 2 and d.category == _FLOAT and value.__class__ is float:
            return float(np.float32(value))  # (a double into half/bfloat16 through float, as c10 converts it)
        return value
    if d.category == _FLOAT:
        if value != value or value in (float("inf"), float("-inf")):
            return value
    elif lo == 0 and isinstance(value, int) and -hi <= value < 0:
        return value + hi + 1
    raise RuntimeError(f"value cannot be converted to type {_C_NAMES[d.name]} without overflow")


def is_storage(obj) -> bool:
    """torch.is_storage: whether ``obj`` is a storage (``Tensor.untyped_storage()``, ``Tensor.storage()``)."""
    return getattr(type(obj), "_is_storage", False) is True


# ---- torch.finfo / torch.iinfo ------------------------------------------------------------------
_DIGITS10 = {"float16": 3, "bfloat16": 2, "float32": 6, "float64": 15}  # std::numeric_limits<T>::digits10


def _check_dtype_arg(fn: str, d) -> None:
    if not isinstance(d, dtype):
        raise TypeError(f"{fn}(): argument 'type' must be torch.dtype, not {type(d).__name__}")


class _BFloat16Info:
    """bfloat16's limits (8 exponent bits, 7 stored mantissa bits: float32's range, 2**-7 resolution), known
    without ml_dtypes: numpy's finfo does not know bfloat16, and finfo needs no tensor (nor a plugin)."""
    eps = 2.0 ** -7
    max = (2.0 - 2.0 ** -7) * 2.0 ** 127
    min = -max
    smallest_normal = 2.0 ** -126


def _finfo(d: dtype):
    return _BFloat16Info if d.name == "bfloat16" else np.finfo(d.np)


class finfo:
    """torch.finfo: the numerical properties of a floating point dtype (the default dtype when omitted)."""
    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: dtype | None = None) -> None:  # noqa: A002  (PyTorch's argument name)
        d = default if type is None else type
        _check_dtype_arg("finfo", d)
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = _finfo(d)
        self.bits = d.itemsize * 8
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.tiny = self.smallest_normal  # PyTorch: tiny is smallest_normal (the array API's name)
        self.resolution = 10.0 ** -_DIGITS10[d.name]
        self.dtype = d.name

    def __eq__(self, other) -> bool:
        return self.dtype == other.dtype if isinstance(other, finfo) else NotImplemented

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        # PyTorch formats with a C++ ostream: 6 significant digits, as "%g"
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")

    __str__ = __repr__


class iinfo:
    """torch.iinfo: the numerical properties of an integer dtype."""
    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: dtype) -> None:  # noqa: A002
        _check_dtype_arg("iinfo", type)
        if type is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.category != _INT:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits = type.itemsize * 8
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __eq__(self, other) -> bool:
        return self.dtype == other.dtype if isinstance(other, iinfo) else NotImplemented

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"

    __str__ = __repr__
